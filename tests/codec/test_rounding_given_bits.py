"""Stochastic rounding with given random bits (IEEE P3109 v4.0 section 4.7.4: StochasticA, B
and C with N random bits R), checked exhaustively on small formats against the exact reference:
every gap between neighbouring codes (subnormal, normal, the overflow gap, both signs), every
position in it on a grid finer than 2**-N of the gap, every R in [0, 2**N), for several N.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import decode, encode, get_format
from reference import magnitude_value, max_magnitude_code, ref_encode

MODES = {"stochastic_a": "sra", "stochastic_b": "srb", "stochastic_c": "src"}


def gap_points(fmt, ks, n: int) -> list[float]:
    """Points k + j / 2**(n + 2) of the gaps after magnitude codes ks, as floats (exact)."""
    out = []
    for k in ks:
        lo, hi = magnitude_value(k, fmt), magnitude_value(k + 1, fmt)
        out += [float(lo + (hi - lo) * Fraction(j, 2 ** (n + 2))) for j in range(1, 2 ** (n + 2))]
    return out


@pytest.mark.parametrize("name, ks", [
    ("e2m1", range(0, 8)),                       # every gap, the overflow gap (6..8) too
    ("e4m3", [0, 1, 7, 8, 9, 60, 125, 126]),     # subnormals, the first normals, the top
    ("binary8p3se", [0, 3, 4, 64, 125, 126]),    # P3109's own, Inf on the next code
    ("e8m0", [0, 1, 126, 253, 254]),             # no mantissa bits: parity of the exponent
])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("mode", list(MODES))
def test_every_position_and_every_random_value(name, ks, n, mode):
    fmt = get_format(name)
    ks = [k for k in ks if k <= max_magnitude_code(fmt)]
    points = gap_points(fmt, ks, n)
    xs = np.array([s * v for v in points for s in ((1.0, -1.0) if fmt.signed else (1.0,))])
    overflow = "saturate" if name == "e2m1" else None
    nan = None
    for r in range(2**n):
        got = encode(xs, fmt, rounding=mode, sr_bits=n, random_bits=r, overflow=overflow)
        want = [ref_encode(float(x), fmt, rounding=MODES[mode], overflow=overflow, nan=nan, sr_bits=n, r=r)
                for x in xs]
        bad = [(float(x), hex(g), hex(w)) for x, g, w in zip(xs, got.tolist(), want) if g != w]
        assert not bad, f"{mode} N={n} R={r}: {len(bad)} differ, e.g. {bad[:3]}"


@pytest.mark.parametrize("mode", list(MODES))
def test_probability_of_rounding_away_is_the_dropped_fraction(mode):
    """Over all R, A rounds away exactly floor(nu * 2**N) times; B and C average to nu within
    one step of 2**-N; none rounds an exact value."""
    fmt = get_format("e4m3")
    n = 4
    x = 1.0 + 0.125 * (5 / 16 + 1 / 64)  # nu = 5/16 + 1/64 of the gap above 1.0
    r = np.arange(2**n)
    ups = int(np.count_nonzero(encode(np.full(r.size, x), fmt, rounding=mode, sr_bits=n, random_bits=r) == 0x39))
    nu = 5 / 16 + 1 / 64
    assert abs(ups - nu * 2**n) <= 1
    if mode == "stochastic_a":
        assert ups == int(nu * 2**n)
    exact = encode(np.full(r.size, 1.125), fmt, rounding=mode, sr_bits=n, random_bits=r)
    assert set(exact.tolist()) == {0x39}


def test_random_bits_are_checked():
    with pytest.raises(ValueError, match=r"random_bits must lie in \[0, 2\*\*3\)"):
        encode([1.0], "e4m3", rounding="stochastic_a", sr_bits=3, random_bits=[8])
    with pytest.raises(TypeError, match="random_bits must be integers"):
        encode([1.0], "e4m3", rounding="stochastic_a", sr_bits=3, random_bits=[0.5])
    with pytest.raises(ValueError, match="do not match"):
        encode([1.0, 2.0], "e4m3", rounding="stochastic_a", sr_bits=3, random_bits=[1, 2, 3])
    with pytest.raises(ValueError, match="needs sr_bits"):
        encode([1.0], "e4m3", rounding="stochastic_b")
    with pytest.raises(ValueError, match="random_bits apply to"):
        encode([1.0], "e4m3", random_bits=[1])
    with pytest.raises(ValueError, match="sr_bits applies to"):
        encode([1.0], "e4m3", sr_bits=4)


def test_drawn_bits_are_seeded():
    x = np.linspace(1, 2, 1000)
    a = encode(x, "e4m3", rounding="stochastic_c", sr_bits=5, rng=7)
    b = encode(x, "e4m3", rounding="stochastic_c", sr_bits=5, rng=7)
    assert a.tolist() == b.tolist()
    assert decode(a, "e4m3").mean() == pytest.approx(x.mean(), abs=0.01)


@pytest.mark.parametrize("name", ["e4m3", "e2m1", "bf16", "int8"])
@pytest.mark.parametrize("mode", ["stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd"])
def test_narrow_given_bits_give_the_codes_of_their_uint64_values(name, mode):
    """Given bits are kept in the caller's width (broadcast_random_bits): uint8/16 and int16
    bits round as the same values in uint64 do, on every path (fields, generic, exact)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(3000) * 4
    bits = rng.integers(0, 1 << 7, x.size, dtype=np.uint64)
    want = fpemu.encode(x, name, rounding=mode, sr_bits=7, random_bits=bits)
    for dtype in (np.uint8, np.uint16, np.int16):
        narrow = bits.astype(dtype)
        assert np.array_equal(fpemu.encode(x, name, rounding=mode, sr_bits=7, random_bits=narrow), want)
        assert np.array_equal(fpemu.encode(x.astype(np.float32), name, rounding=mode, sr_bits=7, random_bits=narrow),
                              fpemu.encode(x.astype(np.float32), name, rounding=mode, sr_bits=7, random_bits=bits))
        assert np.array_equal(fpemu.encode(x[:200].astype(object), name, rounding=mode, sr_bits=7,
                                           random_bits=narrow[:200]), want[:200])
