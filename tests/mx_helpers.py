"""Helpers and constants shared by the MX test files (tests/mx/ and the other folders), and the
exact MX oracle (Fractions: each block's scale under every rule, and the codes of the exact
quotients) that tests/mx/test_mx_quantization.py and tests/codec/test_scaled_blocks.py hold
mx.quantize to.

Tests import them as ``from mx_helpers import ...``, as they import ``reference``.

ml_dtypes is imported only when a helper that needs it is used (``ML_ELEMENT[fmt]``,
``element_value``, ``e2m1``, ``e4m3``), never when this module is imported: test files that
do not need ml_dtypes must not start skipping (or failing) where it is missing, and the files
that do need it keep their own ``pytest.importorskip("ml_dtypes")``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from functools import cache

import numpy as np
from hypothesis import strategies as st

import fpemu
from fpemu import mx

MX_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8"]
ALL_FORMATS = MX_FORMATS + ["nvfp4"]
f32 = np.float32

EMAX = {"mxfp8_e4m3": 8, "mxfp8_e5m2": 15, "mxfp6_e3m2": 4, "mxfp6_e2m3": 2, "mxfp4": 2, "mxint8": 0}
MAXV = {"mxfp8_e4m3": 448.0, "mxfp8_e5m2": 57344.0, "mxfp6_e3m2": 28.0, "mxfp6_e2m3": 7.5,
        "mxfp4": 6.0, "mxint8": 127 / 64}  # fmt: skip
MBITS = {"mxfp8_e4m3": 3, "mxfp8_e5m2": 2, "mxfp6_e3m2": 2, "mxfp6_e2m3": 3, "mxfp4": 1, "mxint8": 6}

# SPEC section 4's NVFP4 example block.
NV_X = np.array([100, -37, 5] + [0] * 13 + [0.001, -0.0004] + [0] * 14, np.float32)


def block_array(codes, scales, fmt, axis, block_size, **fields):
    """The block array of ``fmt``'s family (mx.MXArray or mx.NVFP4Array) from its parts, for the
    tests that run one body over both families."""
    from fpemu import mx

    family = mx.NVFP4Array if mx.get_block_format(fmt).is_nvfp4 else mx.MXArray
    return family(codes, scales, fmt, axis, block_size, **fields)


@cache
def _ml_element() -> dict[str, type]:
    import ml_dtypes

    return {
        "mxfp8_e4m3": ml_dtypes.float8_e4m3fn,
        "mxfp8_e5m2": ml_dtypes.float8_e5m2,
        "mxfp6_e3m2": ml_dtypes.float6_e3m2fn,
        "mxfp6_e2m3": ml_dtypes.float6_e2m3fn,
        "mxfp4": ml_dtypes.float4_e2m1fn,
    }


class _MLElement(Mapping):
    """The ml_dtypes type of each MX float element format, read on first use."""

    def __getitem__(self, fmt: str) -> type:
        return _ml_element()[fmt]

    def __iter__(self) -> Iterator[str]:
        return iter(_ml_element())

    def __len__(self) -> int:
        return len(_ml_element())


ML_ELEMENT = _MLElement()


def block_of(values, n=32, dtype=np.float32):
    x = np.zeros(n, dtype=dtype)
    x[: len(values)] = values
    return x


def element_value(code: int, fmt: str) -> float:
    fmt = "mxfp4" if fmt == "nvfp4" else fmt
    if fmt == "mxint8":
        return (code - 256 if code > 127 else code) / 64
    return float(np.array([code], np.uint8).view(ML_ELEMENT[fmt])[0])


def e2m1(codes) -> np.ndarray:
    import ml_dtypes

    return np.asarray(codes, np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def e4m3(codes) -> np.ndarray:
    import ml_dtypes

    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def round24(fr: Fraction) -> Fraction:
    """fr rounded to 24 significant bits, ties to even, with no exponent limits: float32
    arithmetic as it would be without overflow or subnormals."""
    if fr == 0:
        return fr
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    e -= Fraction(2) ** e > abs(fr)
    q = Fraction(2) ** (e - 23)
    n, r = divmod(fr / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    return n * q


# ---- the exact MX oracle (Fractions): scales and element codes of x / 2**scale exponent -------
ELEMENT = {"mxfp8_e4m3": "e4m3", "mxfp8_e5m2": "e5m2", "mxfp6_e3m2": "e3m2", "mxfp6_e2m3": "e2m3",
           "mxfp4": "e2m1", "mxint8": "int8"}  # fmt: skip


def floor_log2(fr: Fraction) -> int:
    """floor(log2(fr)) of a positive Fraction, exactly."""
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > fr else e


def round_to_f32(fr: Fraction) -> Fraction:
    """A non-negative Fraction rounded to float32 (RNE, subnormals, Inf as 2**128)."""
    if fr == 0:
        return fr
    q = Fraction(2) ** (max(floor_log2(fr), -126) - 23)
    r = fr / q
    n = math.floor(r)
    if r - n > Fraction(1, 2) or (r - n == Fraction(1, 2) and n % 2):
        n += 1
    return min(n * q, Fraction(2) ** 128)


def oracle_scale(amax: Fraction, fmt: str, rule: str) -> int:
    """E8M0 code of a finite block's amax under each rule, in exact arithmetic."""
    if amax == 0:
        return 0
    if rule == "floor":
        e = floor_log2(amax)
    elif rule == "ceil":
        e = floor_log2(amax) + (Fraction(2) ** floor_log2(amax) != amax)
    elif rule == "even":  # round to MBITS + 1 significant bits, ties away, then floor
        fl = floor_log2(amax)
        step = Fraction(2) ** (fl - MBITS[fmt])
        e = floor_log2(math.floor(amax / step + Fraction(1, 2)) * step)
    else:  # rceil: v = fp32(amax * fp32(1/max)), then NVIDIA's round-up on the fp32 pattern
        c = Fraction(float(np.float32(1) / np.float32(MAXV[fmt])))
        v = round_to_f32(amax * c)
        if v == 0:
            return 0
        fl = floor_log2(v)
        if fl < -126:  # fp32 subnormal: 2**-127 and below stay, above it round up to -126
            e = -126 if v > Fraction(2) ** -127 else -127
        else:
            e = fl + (Fraction(2) ** fl != v)
        e += EMAX[fmt]
    return min(max(e - EMAX[fmt] + 127, 0), 254)


def exact_quotient(x: float, scale_code: int) -> float:
    """x / 2**(scale_code - 127) as a float64, exactly; a quotient below float64's range
    (only far below every element format's smallest step, >= 2**-17, where every rounding
    mode treats all nonzero magnitudes alike) is represented by +-2**-1074."""
    q = Fraction(x) / Fraction(2) ** (scale_code - 127)
    f = float(q)
    if q == 0:
        return math.copysign(0.0, x)
    if Fraction(f) != q:
        assert abs(q) < Fraction(2) ** -1000
        return math.copysign(2.0**-1074, x)
    return f


def expected_codes(x: np.ndarray, scales: np.ndarray, fmt: str, rounding: str, seed: int) -> np.ndarray:
    """Codes of the exact quotients, elements in data order (one encode call, so stochastic
    rounding draws the same random numbers as mx.quantize does with the same seed)."""
    sc = np.repeat(scales.astype(int), 32)[: x.size]
    y = np.array([exact_quotient(float(v), int(s)) for v, s in zip(x, sc)], np.float64)
    if fmt == "mxint8":  # OCP: clamp to +-max (127/64), sign kept; the codec's int8 would give -2
        y = np.clip(y, -MAXV[fmt], MAXV[fmt])
    seed = seed if rounding == "stochastic" else None  # rng is refused for the other roundings
    return fpemu.encode(y, ELEMENT[fmt], rounding=rounding, overflow="saturate", rng=seed)


# ---- strategies ---------------------------------------------------------------------------------
@st.composite
def element32(draw, base: int, spread: int) -> float:
    """One float32 value: zeros, subnormals, few-bit mantissas (ties for every element
    format), values near the element maxima, or any float32 at all."""
    kind = draw(st.sampled_from(["zero", "few_bits", "few_bits", "subnormal", "near_max", "any"]))
    sign = draw(st.sampled_from([1.0, -1.0]))
    if kind == "zero":
        return sign * 0.0
    if kind == "subnormal":
        return sign * draw(st.integers(1, 2**23 - 1)) * 2.0**-149
    if kind == "any":
        return float(draw(st.floats(width=32, allow_nan=False, allow_infinity=False)))
    e = draw(st.integers(max(base - spread, -149), base))
    if kind == "near_max":
        top = draw(st.sampled_from(sorted(set(MAXV.values()))))
        v = float(np.float32(min(top * 2.0 ** (e - 8), 2.0**127)))  # stays finite
        return sign * float(np.nextafter(np.float32(v), np.float32(draw(st.sampled_from([0, np.inf])))))
    bits = draw(st.integers(0, 6))
    mant = 1 + draw(st.integers(0, 2**bits - 1)) / 2**bits + draw(st.sampled_from([0.0, 2.0**-23]))
    return sign * float(np.float32(math.ldexp(mant, e)))


@st.composite
def wide_blocks(draw) -> np.ndarray:
    """float32 arrays of 1..70 values (up to three blocks, the last one short) whose exponents
    cluster below a random top or spread over all of 2**-149 .. 2**127."""
    n = draw(st.integers(1, 70))
    base = draw(st.integers(-149, 127))
    spread = draw(st.sampled_from([0, 3, 12, 40, 280]))
    values = draw(st.lists(element32(base, spread), min_size=n, max_size=n))
    x = np.array(values, np.float32)
    assert np.isfinite(x).all()
    return x


def check(x32: np.ndarray, fmt: str, rounding: str, rule: str, seed: int) -> None:
    kw = {"rounding": rounding, "scale_rounding": rule, "rng": seed if rounding == "stochastic" else None}
    q32 = mx.quantize(x32, fmt, **kw)
    q64 = mx.quantize(x32.astype(np.float64), fmt, **kw)
    assert np.array_equal(q32.scales, q64.scales)
    assert np.array_equal(q32.codes, q64.codes)
    blocks = [x32[i : i + 32] for i in range(0, x32.size, 32)]
    want_scales = [oracle_scale(max(Fraction(float(abs(v))) for v in b), fmt, rule) for b in blocks]
    assert q32.scales.tolist() == want_scales
    assert q32.codes.tolist() == expected_codes(x32, q32.scales, fmt, rounding, seed).tolist()
