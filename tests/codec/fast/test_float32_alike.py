"""float64 input on the float32 fast paths (issue 25): narrowed to float32 values that round
alike, then encoded by the float32 kernels. Held to exact Fraction arithmetic
(tests/reference.py), to ml_dtypes 0.7 (which rounds float64 once) and to the generic kernel,
on values placed just off every decision point of each format (its values and the midpoints
between them), in float32's subnormal range and beyond its largest value.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.codec import encode_path, options
from fpemu.codec import generic_kernel as kernel
from fpemu.codec.fast.float32_alike import float64_to_float32_alike, _float64_to_float32_odd
from reference import ml_dtypes_has, oracle_type, ref_encode
from fpemu import encode

FORMATS = ["e4m3", "e5m2", "e2m1", "e3m2", "e2m3", "e8m0", "e4m3fnuz", "binary8p3", "bf16", "tf32"]
MODES = ("rne", "rz", "ru", "rd", "rna", "odd")


def decision_points(fmt: fpemu.Format) -> np.ndarray:
    """Every finite value of fmt, every midpoint between neighbours, and the midpoint past the
    largest, as float64 (exact: at most 24 significant bits)."""
    if fmt.bits <= 16:
        codes = np.arange(1 << fmt.bits, dtype=np.uint64)
        values = np.unique(np.abs(kernel.decode_generic(codes, fmt)))
        values = values[np.isfinite(values)]
    else:  # tf32: its values around a few binades, its smallest and its largest
        grid = np.arange(1 << fmt.mantissa_bits, dtype=np.float64) * 2.0**-fmt.mantissa_bits
        values = np.concatenate([(1 + grid) * 2.0**e for e in (-126, -1, 0, 1, 127)] + [grid * 2.0**-126])
    values = np.sort(values)
    top = values[-1] + (values[-1] - values[-2]) / 2
    return np.concatenate([values, (values[1:] + values[:-1]) / 2, [top, 2 * values[-1]]])


def near(points: np.ndarray) -> np.ndarray:
    """Each point exactly, one and a few float64 ulps either side, and a relative 2**-30 either
    side (inside one float32 ulp), with both signs; NaN, Inf, and float32's edges."""
    steps = [np.nextafter(points, np.inf), np.nextafter(points, -np.inf),
             points * (1 + 2.0**-50), points * (1 - 2.0**-50), points * (1 + 2.0**-30), points * (1 - 2.0**-30)]
    edges = np.array([0.0, 2.0**-149, 2.0**-150, 1.5 * 2.0**-150, 2.0**-160, 2.0**-126, 2.0**-126 * (1 - 2.0**-30),
                      3.4028234663852886e38, 3.4028235e38 * (1 + 2.0**-30), 2.0**128, 1e300, np.inf, np.nan])
    x = np.concatenate([points] + steps + [edges])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name", FORMATS)
def test_float64_near_decision_points_matches_fractions(name):
    """encode of float64 just off every value and midpoint equals one exact rounding of it,
    in every deterministic mode (a sample of 1500 per mode: the Fraction model is slow)."""
    fmt = fpemu.get_format(name)
    x = near(decision_points(fmt))
    rng = np.random.default_rng(1)
    sample = np.concatenate([x[-30:], rng.choice(x, min(1500, x.size), replace=False)])
    sparse = np.full(sample.size * 40, 1.1)  # (1.1: no decision point is its nearest float32)
    sparse[::40] = sample  # few values to replace in a chunk, and a chunk of them (dense)
    nan = None if fmt.has_nan else "zero"
    for mode in MODES:
        want = np.array([ref_encode(float(v), fmt, rounding=mode, nan=nan) for v in sample])
        for x, step in ((sample, 1), (sparse, 40)):
            got = fpemu.encode(x, fmt, rounding=mode, nan=nan, workers=1)[::step]
            bad = np.flatnonzero(got != want.astype(got.dtype))
            assert bad.size == 0, (name, mode, step, sample[bad[:3]], got[bad[:3]], want[bad[:3]])


@pytest.mark.parametrize("name", FORMATS)
def test_float64_paths_equal_generic_kernel(name):
    """All of those values, and random float64 patterns, in every deterministic mode and
    overflow rule: the fast path's codes are the generic kernel's (tested against Fractions
    in test_codec_exhaustive), chunk boundaries and the rounded-to-odd fallback included."""
    fmt = fpemu.get_format(name)
    rng = np.random.default_rng(2)
    random = rng.integers(0, 2**64, 100_000, dtype=np.uint64).view(np.float64)
    x = np.concatenate([near(decision_points(fmt)), random, rng.standard_normal(150_000)])
    x = x[rng.permutation(x.size)]
    nan = None if fmt.has_nan else "zero"
    for mode in MODES:
        for overflow in (None, "saturate", "saturate_propagate"):
            try:
                opts = options.resolved_options(fmt, mode, overflow, nan)
            except ValueError:
                continue
            assert encode_path(fmt, opts, np.dtype(np.float64)) in ("top_half", "fp32_table", "prefix_rne", "prefix_directed", "in_range", "float_fields", "generic")
            got = fpemu.encode(x, fmt, rounding=mode, overflow=overflow, nan=nan, workers=1)
            want = kernel.encode_generic(x, fmt, opts).astype(got.dtype)
            if fmt.code_shift:
                want = want << want.dtype.type(fmt.code_shift)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (name, mode, overflow, x[bad[:3]])


@pytest.mark.parametrize("name", ["bf16", "e4m3", "e5m2", "e2m1", "e3m2", "e2m3", "e8m0"])
def test_float64_encode_matches_ml_dtypes(name):
    """ml_dtypes 0.7 casts float64 in one rounding: the same codes as fpemu's float64 path."""
    ml = pytest.importorskip("ml_dtypes")
    if tuple(int(p) for p in ml.__version__.split(".")[:2]) < (0, 7) or not ml_dtypes_has(name):
        pytest.skip("needs ml_dtypes 0.7 (float64 rounded once)")
    fmt = fpemu.get_format(name)
    x = near(decision_points(fmt))
    x = x[~np.isnan(x)]  # (NaN payloads: the codec's NaN tests)
    like = fpemu.like("ml_dtypes-0.7", name)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(oracle_type(name)).view(np.uint8 if fmt.bits <= 8 else np.uint16)
    got = fpemu.encode(x, fmt, workers=1, **like)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (name, x[bad[:3]], got[bad[:3]], want[bad[:3]])


def _odd_fraction(v: float) -> int:
    """The float32 pattern of v rounded to odd, from exact arithmetic (finite v, |v| < 2**128)."""
    a, negative = abs(Fraction(v)), v < 0 or (v == 0 and np.signbit(v))
    if a == 0:
        return int(negative) << 31
    e = max(a.numerator.bit_length() - a.denominator.bit_length(), -126)
    while a >= Fraction(2) ** (e + 1):
        e += 1
    while e > -126 and a < Fraction(2) ** e:
        e -= 1
    quantum = Fraction(2) ** (e - 23)
    k = a // quantum
    if k * quantum != a:
        k |= 1
    mag = int(k) if k < 1 << 23 else ((e + 127) << 23) | (int(k) - (1 << 23))
    if e == -126 and k < 1 << 23:
        mag = int(k)
    return (int(negative) << 31) | min(mag, 0x7F7FFFFF)


def test_float64_to_float32_odd_matches_fractions():
    """The bit-pattern rounding to odd, and its fallback in float32's subnormal range and
    beyond its largest value, against exact arithmetic on random float64 patterns."""
    rng = np.random.default_rng(3)
    u = rng.integers(0, 2**64, 20_000, dtype=np.uint64)
    exponent = rng.integers(1023 - 160, 1023 + 130, u.size).astype(np.uint64) << np.uint64(52)
    x = ((u & np.uint64((1 << 52) - 1 | 1 << 63)) | exponent).view(np.float64)
    x = np.concatenate([x, [0.0, -0.0, 2.0**-149 * 1.5, 2.0**-126 * (1 - 2.0**-40), 2.0**128, -1e300]])
    got = _float64_to_float32_odd(x).view(np.uint32)
    want = np.array([_odd_fraction(float(v)) for v in x], dtype=np.uint32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:3]]


def test_float64_to_float32_alike_keeps_input_and_flags_huge():
    """The input is not modified; inputs beyond float32's range are among the positions
    reported; ordinary values are numpy's nearest float32."""
    x = np.concatenate([np.full(100, 1.1), [1e300, -1e300, 1.0 + 2.0**-8 + 2.0**-30]])
    before = x.copy()
    specials: list = []
    y = float64_to_float32_alike(x, 15, specials)
    assert np.array_equal(x, before)
    assert {100, 101} <= set(specials[0].tolist())
    assert np.array_equal(y[:100], x[:100].astype(np.float32))
    assert y.view(np.uint32)[102] == 0x3F808001  # a bf16 midpoint as nearest: to odd instead


def test_float16_and_integer_input_take_the_fast_paths():
    """float16 into bf16 takes the prefix path (widened exactly); the codes of float16 and
    integer input are those of the same values as float64."""
    x16 = np.random.default_rng(4).standard_normal(10_000).astype(np.float16)
    ints = np.arange(-3000, 3000, dtype=np.int32) * 7919
    for name in ("bf16", "e4m3", "e2m1"):
        opts = options.resolved_options(fpemu.get_format(name), "rne", None, None if name != "e2m1" else "zero")
        assert encode_path(fpemu.get_format(name), opts, np.dtype(np.float16)) in ("top_half", "fp32_table", "prefix_rne")
        assert np.array_equal(fpemu.encode(x16, name), fpemu.encode(x16.astype(np.float64), name))
        sat = {"overflow": "saturate"}
        assert np.array_equal(fpemu.encode(ints, name, **sat), fpemu.encode(ints.astype(np.float64), name, **sat))


@pytest.mark.parametrize("name", ["e4m3", "bf16", "e2m1"])
def test_float64_on_a_grid_with_a_few_off_it(name):
    """Data mostly on the format's grid (exact float32 values, all of them suspects) with one
    value in 50 just off a decision point: the exact ones are kept, the others rounded to
    odd, and every code is one exact rounding (Fractions) in every deterministic mode."""
    fmt = fpemu.get_format(name)
    rng = np.random.default_rng(5)
    x = rng.choice(decision_points(fmt), 20_000) * np.where(rng.random(20_000) < 0.5, -1, 1)
    off = np.arange(0, x.size, 50)
    x[off] = x[off] * (1 + np.where(off % 100 == 0, 2.0**-30, -(2.0**-30)))
    ints = np.arange(-20_000, 20_000, 2, dtype=np.int64)  # integers: float32 values, all suspects
    nan = None if fmt.has_nan else "zero"
    for mode in MODES:
        got = fpemu.encode(x, fmt, rounding=mode, nan=nan, workers=1)
        want = [ref_encode(float(v), fmt, rounding=mode, nan=nan) for v in x[off]]
        assert np.array_equal(got[off], np.array(want, dtype=got.dtype)), (name, mode)
        opts = options.resolved_options(fmt, mode, None, nan)
        assert np.array_equal(got, kernel.encode_generic(x, fmt, opts).astype(got.dtype)), (name, mode)
        sat = options.resolved_options(fmt, mode, "saturate", nan)
        got = fpemu.encode(ints.astype(np.float64), fmt, rounding=mode, overflow="saturate", nan=nan, workers=1)
        assert np.array_equal(got, kernel.encode_generic(ints.astype(np.float64), fmt, sat).astype(got.dtype))


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_float64_beyond_float32_on_the_table_path():
    # Found by comparing with gfloat: float64 input goes through float32 (rounded to odd) on
    # the table path, where 2^128 and beyond have no float32. A format whose largest value is
    # (2 - 2^-M) 2^127 overflows there; under P3109's rule round-to-odd is not spared.
    assert hex(int(encode(2.0**128, "binary11p3sf", rounding="odd", directed_overflow="p3109"))) == "0x400"
    assert int(encode(2.0**128, "e8m0", rounding="toward_zero", directed_overflow="none")) == 0xFF
    assert int(encode(2.0**128, "e8m0", rounding="toward_zero")) == 0xFE  # IEEE: spared
    assert encode([1e300, -1e300, 3.0], "e4m3", overflow="saturate").tolist() == [0x7E, 0xFE, 0x44]
