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

from mx_helpers import MAXV, MX_FORMATS, check, exact_quotient, expected_codes, floor_log2, oracle_scale, round_to_f32, wide_blocks  # noqa: F401

ROUNDINGS = list(ELEMENT_ROUNDINGS)
COMBOS = [(f, r, s) for f in MX_FORMATS for r in ROUNDINGS for s in mx.SCALE_ROUNDINGS]


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
