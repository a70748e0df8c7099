"""MX quantization is exact whatever the input precision (issue 9, item 1).

float32 input and float64 input holding the same values must give the same scales and codes
for every element rounding, block format and scale rule, and those codes must be the
rounding of the *exact* quotient x / 2**scale_exponent (fpemu.encode of it, the quotient
computed with Fractions; MXINT8 too, every rounding, the quotient first clamped to +-127/64 as
OCP MX requires, so code 0x80 = -2.0 never comes out). Scales are checked against Fraction
arithmetic too (rceil: the exact product amax * fp32(1/max) rounded to float32 by hand).

The regression behind it: float32 ``rows * 2**-s`` underflowed below 2**-150 and rounding
'up', 'down' or 'odd' then saw a zero instead of a tiny nonzero value.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fpemu
from fpemu import mx
from fpemu.mx.inputs import ELEMENT_ROUNDINGS

from mx_helpers import EMAX, MAXV, MBITS, MX_FORMATS

ROUNDINGS = list(ELEMENT_ROUNDINGS)
COMBOS = [(f, r, s) for f in MX_FORMATS for r in ROUNDINGS for s in mx.SCALE_ROUNDINGS]
ELEMENT = {"mxfp8_e4m3": "e4m3", "mxfp8_e5m2": "e5m2", "mxfp6_e3m2": "e3m2", "mxfp6_e2m3": "e2m3",
           "mxfp4": "e2m1", "mxint8": "int8"}  # fmt: skip


# ---- oracles (Fractions) ------------------------------------------------------------------------
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


# ---- the property ------------------------------------------------------------------------------
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=wide_blocks(), combo=st.sampled_from(COMBOS), seed=st.integers(0, 2**32 - 1))
def test_float32_and_float64_give_the_exact_quotients_codes(x, combo, seed):
    check(x, *combo, seed)


@pytest.mark.slow
@pytest.mark.parametrize("fmt, rounding, rule", COMBOS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=wide_blocks(), seed=st.integers(0, 2**32 - 1))
def test_float32_and_float64_give_the_exact_quotients_codes_long(fmt, rounding, rule, x, seed):
    check(x, fmt, rounding, rule, seed)


# ---- the reported case ---------------------------------------------------------------------------
@pytest.mark.parametrize("rounding, code_pos, code_neg", [
    ("up", 0x01, 0x80), ("down", 0x00, 0x81), ("odd", 0x01, 0x81),
    ("toward_zero", 0x00, 0x80), ("nearest_even", 0x00, 0x80), ("nearest_away", 0x00, 0x80),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiny_element_beside_huge_amax(rounding, code_pos, code_neg, dtype):
    """[2**127, 2**-149, -2**-149, 0, ...]: the scale is 2**119 and the quotients +-2**-268
    are tiny but not zero, so 'up' gives +2**-9 (0x01) for the positive one and -0 (0x80) for
    the negative one; float32 input used to give 0x00 (its product underflowed to 0)."""
    blk = np.zeros(32)
    blk[0], blk[1], blk[2] = 2.0**127, 2.0**-149, -(2.0**-149)
    q = mx.quantize(blk.astype(dtype), "mxfp8_e4m3", rounding=rounding)
    assert q.scales.tolist() == [127 + 127 - 8]
    assert q.codes[1:3].tolist() == [code_pos, code_neg]
    exact = [fpemu.encode(v * 2.0**-268, "e4m3", rounding=rounding, overflow="saturate") for v in (1, -1)]
    assert q.codes[1:3].tolist() == [int(c) for c in exact]


@pytest.mark.parametrize("rounding", ["up", "down", "odd"])
def test_float64_subnormal_beside_huge_amax(rounding):
    """float64 underflows too: 5e-324 / 2**127 is below float64's range."""
    x = np.zeros(32)
    x[0], x[1], x[2] = 1e300, 5e-324, -5e-324
    q = mx.quantize(x, "mxfp8_e5m2", rounding=rounding)
    assert q.scales.tolist() == [254]
    up, down, odd = [0x01, 0x80], [0x00, 0x81], [0x01, 0x81]
    assert q.codes[1:3].tolist() == {"up": up, "down": down, "odd": odd}[rounding]


# ---- float64 values that float32 cannot hold ---------------------------------------------------
@st.composite
def element64(draw, base: int) -> float:
    """A float64 value float32 cannot hold: 53-bit mantissas over the whole float64 range,
    float64 subnormals, zeros, and element maxima times 2**e nudged by less than a float32
    ulp (where rceil's float32 product decides between two powers of two)."""
    kind = draw(st.sampled_from(["any", "any", "near_max", "subnormal", "zero"]))
    sign = draw(st.sampled_from([1.0, -1.0]))
    if kind == "zero":
        return sign * 0.0
    if kind == "subnormal":
        return sign * draw(st.integers(1, 2**52 - 1)) * 2.0**-1074
    e = draw(st.integers(max(base - 60, -1070), base))
    if kind == "near_max":
        top = draw(st.sampled_from(sorted(set(MAXV.values()))))
        nudge = draw(st.integers(-(2**26), 2**26)) * 2.0**-52
        return sign * math.ldexp(top * (1 + nudge), min(e, 1015) - 8)  # top < 2**16: finite
    return sign * math.ldexp(draw(st.floats(1, 2, exclude_max=True)), e)


@st.composite
def float64_blocks(draw) -> np.ndarray:
    n = draw(st.integers(1, 40))
    base = draw(st.integers(-1070, 1023))
    return np.array(draw(st.lists(element64(base), min_size=n, max_size=n)), np.float64)


@settings(max_examples=100, deadline=None)
@given(x=float64_blocks(), combo=st.sampled_from(COMBOS), seed=st.integers(0, 2**32 - 1))
def test_float64_input_is_exact(x, combo, seed):
    """Full float64 range, 53-bit mantissas: scales and codes from exact arithmetic (rceil:
    the exact product amax * fp32(1/max) rounded once to float32)."""
    fmt, rounding, rule = combo
    q = mx.quantize(x, fmt, rounding=rounding, scale_rounding=rule, rng=seed if rounding == "stochastic" else None)
    blocks = [x[i : i + 32] for i in range(0, x.size, 32)]
    want = [oracle_scale(max(Fraction(abs(float(v))) for v in b), fmt, rule) for b in blocks]
    assert q.scales.tolist() == want
    assert q.codes.tolist() == expected_codes(x, q.scales, fmt, rounding, seed).tolist()


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_rceil_float64_rounds_the_exact_product_once(fmt):
    """amax = max_elem * 2**k * (1 + d) with d below a float32 ulp: fp32(amax * fp32(1/max))
    is 2**k or the float32 just above it, decided by the exact product rounded once to
    float32. Computing the product in float64 (with 1/max in float64, as fpemu once did) puts
    it above 2**k and rounds the scale up one step too far."""
    nudges = [d * 2.0**-30 for d in range(-40, 41, 3)]
    x = np.zeros((40 * len(nudges), 32))
    x[:, 0] = [MAXV[fmt] * 2.0**k * (1 + d) for k in range(-20, 20) for d in nudges]
    q = mx.quantize(x, fmt, scale_rounding="rceil")
    want = [oracle_scale(Fraction(float(a)), fmt, "rceil") for a in x[:, 0]]
    assert q.scales[:, 0].tolist() == want


def test_rceil_matches_float32_arithmetic_for_float32_values():
    """NVIDIA computes fp32(amax * fp32(1/max)) in float32: for float32-representable amax the
    float64 path must reproduce numpy's float32 multiplication bit for bit."""
    rng = np.random.default_rng(5)
    amax = (rng.random(4000) * np.exp2(rng.integers(-140, 127, 4000))).astype(np.float32)
    for fmt in MX_FORMATS:
        c = np.float32(1) / np.float32(MAXV[fmt])
        with np.errstate(over="ignore"):
            v = amax * c
        bits = v.view(np.uint32).astype(np.int64)
        efield, mant = bits >> 23, bits & 0x7FFFFF
        e = np.where(efield == 0, (mant > 0x400000) - 127, efield - 127 + (mant != 0))
        want = np.clip(e + 127, 0, 254)
        want[amax == 0] = 0
        for dtype in (np.float32, np.float64):
            x = np.zeros((4000, 32), dtype)
            x[:, 0] = amax
            q = mx.quantize(x, fmt, scale_rounding="rceil")
            assert np.array_equal(q.scales[:, 0], want), (fmt, dtype)


def test_integer_input_beyond_2_53_is_exact_or_refused():
    """Integers are converted by rounding to odd: an element just above an E4M3 tie still
    rounds up (a plain float64 conversion would land on the tie and round to even)."""
    tie = 2**62 + 2**58  # halfway between the E4M3 values 2**62 and 1.125 * 2**62
    x = np.array([tie + 1, 2**62], np.int64)
    q = mx.quantize(x, "mxfp8_e4m3")
    assert q.scales[0] == 127 + 62 - 8  # quotients: 256 + 16 + 2**-54 and 256
    assert q.codes.tolist() == [int(fpemu.encode(288.0, "e4m3")), int(fpemu.encode(256.0, "e4m3"))]
    assert fpemu.encode(float(tie + 1) / 2.0**54, "e4m3") == fpemu.encode(256.0, "e4m3")
    with pytest.raises(ValueError, match="rceil"):
        mx.quantize(x, "mxfp8_e4m3", scale_rounding="rceil")
    small = np.arange(-5, 5)
    assert np.array_equal(mx.quantize(small, "mxfp4", scale_rounding="rceil").codes,
                          mx.quantize(small.astype(np.float32), "mxfp4", scale_rounding="rceil").codes)


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_nvfp4_float32_and_float64_agree(rounding):
    """NVFP4 computes in float32: float64 input holding float32 values gives the same result
    (same seed for stochastic rounding)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(200) * np.exp2(rng.integers(-30, 30, 200))).astype(np.float32)
    seed = 1 if rounding == "stochastic" else None  # rng is refused for the other roundings
    a = mx.quantize(x, "nvfp4", rounding=rounding, rng=seed)
    b = mx.quantize(x.astype(np.float64), "nvfp4", rounding=rounding, rng=seed)
    assert np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales)
    assert a.global_scale == b.global_scale and a.global_amax == b.global_amax
