"""Tests of fpemu.mx: SPEC section 3-4 vectors, independent oracles, properties, layouts.

Oracles: element rounding from ml_dtypes (or exact Fractions for MXINT8), scale rules from
math.frexp / Fraction on Python floats, NVFP4 steps with numpy float32 scalars and ml_dtypes
casts, dot products with exact Fractions rounded to float32 by hand.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fpemu import mx

ml_dtypes = pytest.importorskip("ml_dtypes")

ML_ELEMENT = {
    "mxfp8_e4m3": ml_dtypes.float8_e4m3fn,
    "mxfp8_e5m2": ml_dtypes.float8_e5m2,
    "mxfp6_e3m2": ml_dtypes.float6_e3m2fn,
    "mxfp6_e2m3": ml_dtypes.float6_e2m3fn,
    "mxfp4": ml_dtypes.float4_e2m1fn,
}
EMAX = {"mxfp8_e4m3": 8, "mxfp8_e5m2": 15, "mxfp6_e3m2": 4, "mxfp6_e2m3": 2, "mxfp4": 2, "mxint8": 0}
MAXV = {"mxfp8_e4m3": 448.0, "mxfp8_e5m2": 57344.0, "mxfp6_e3m2": 28.0, "mxfp6_e2m3": 7.5,
        "mxfp4": 6.0, "mxint8": 127 / 64}  # fmt: skip
MBITS = {"mxfp8_e4m3": 3, "mxfp8_e5m2": 2, "mxfp6_e3m2": 2, "mxfp6_e2m3": 3, "mxfp4": 1, "mxint8": 6}
MX_FORMATS = list(EMAX)


def block_of(values, n=32, dtype=np.float32):
    x = np.zeros(n, dtype=dtype)
    x[: len(values)] = values
    return x


# ---- oracles ------------------------------------------------------------------------------------
def oracle_scale(amax: float, fmt: str, rule: str) -> int:
    """E8M0 scale code of one finite block from its amax (a float32 value)."""
    if amax == 0:
        return 0
    emax = EMAX[fmt]
    if rule == "rceil":
        v = float(np.float32(amax) * np.float32(1 / np.float32(MAXV[fmt])))
        if v == 0:  # the float32 product underflowed
            return 0
        m, e = math.frexp(v)
        return min(max((e - 1 if m == 0.5 else e) + 127, 0), 254)
    m, e = math.frexp(amax)  # amax = m * 2**e, 0.5 <= m < 1
    if rule == "floor":
        lg = e - 1
    elif rule == "ceil":
        lg = e - 1 if m == 0.5 else e
    elif rule == "even":
        # round amax to MBITS+1 significant bits, ties away (half-up on the magnitude)
        q = Fraction(amax) / Fraction(2) ** (e - 1 - MBITS[fmt])
        r = math.floor(q + Fraction(1, 2))
        lg = e - 1 + (1 if r >= 2 ** (MBITS[fmt] + 1) else 0)
    return min(max(lg - emax + 127, 0), 254)


def oracle_codes(block: np.ndarray, fmt: str, scale_code: int) -> list[int]:
    """Element codes of a finite block given its scale code, via ml_dtypes / Fractions."""
    X = Fraction(2) ** (scale_code - 127)
    out = []
    for v in block.astype(np.float64):
        y = Fraction(float(v)) / X
        if fmt == "mxint8":
            q = max(-127, min(127, round(y * 64)))  # Python rounds Fractions half-to-even
            out.append(q & 0xFF)
            continue
        mx_ = Fraction(MAXV[fmt])
        y = max(-mx_, min(mx_, y))
        yf = float(y) if y != 0 else math.copysign(0.0, float(v))  # -0 and underflow keep the sign
        assert Fraction(yf) == y or abs(yf) < 2.0**-900, "the scaled value must be exact"
        code = int(np.array([yf], dtype=np.float64).astype(ML_ELEMENT[fmt]).view(np.uint8)[0])
        out.append(code)
    return out


def element_value(code: int, fmt: str) -> float:
    fmt = "mxfp4" if fmt == "nvfp4" else fmt
    if fmt == "mxint8":
        return (code - 256 if code > 127 else code) / 64
    return float(np.array([code], np.uint8).view(ML_ELEMENT[fmt])[0])


def fraction_to_f32(fr: Fraction) -> np.float32:
    """Round an exact rational to float32, nearest-even, by hand."""
    if fr == 0:
        return np.float32(0.0)
    sign = -1 if fr < 0 else 1
    a = abs(fr)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, -126) - 23
    r = round(a / Fraction(2) ** q)
    if r * Fraction(2) ** q >= Fraction(2) ** 128:
        return np.float32(sign * np.inf)
    return np.float32(sign * math.ldexp(r, q))


# ---- SPEC section 3 vectors ------------------------------------------------------------------------
SPEC3 = [
    ("mxfp8_e4m3", [500, -3, 0.1, 0.001, 1], "floor", 0x7F, [0x7E, 0xC4, 0x1D, 0x01, 0x38]),
    ("mxfp8_e4m3", [500, -3, 0.1, 0.001, 1], "rceil", 0x80, [0x78, 0xBC, 0x15, 0x00, 0x30]),
    ("mxfp4", [7, 3, 1, 0.4, -0.24, 0.26, 5], "floor", 0x7F, [7, 5, 2, 1, 8, 1, 6]),
    ("mxfp4", [7, 3, 1, 0.4, -0.24, 0.26, 5], "rceil", 0x80, [6, 3, 1, 0, 8, 0, 4]),
    ("mxfp8_e4m3", [150, 1], "floor", 0x7E, [0x79, 0x40]),
    ("mxfp8_e4m3", [150, 1], "rceil", 0x7E, [0x79, 0x40]),
    ("mxint8", [1, -0.5, 0.3, 1.99, 2.5 / 64], "floor", 0x7F, [0x40, 0xE0, 0x13, 0x7F, 0x02]),
]


@pytest.mark.parametrize("fmt, values, rule, scale, codes", SPEC3)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spec_mx_vectors(fmt, values, rule, scale, codes, dtype):
    q = mx.quantize(block_of(values, dtype=dtype), fmt, scale_rounding=rule)
    assert q.scales.tolist() == [scale]
    assert q.codes[: len(codes)].tolist() == codes
    assert not q.codes[len(codes):].any()


@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("rule", mx.SCALE_ROUNDINGS)
def test_spec_all_zero_block(fmt, rule):
    q = mx.quantize(np.zeros(64, np.float32), fmt, scale_rounding=rule)
    assert q.scales.tolist() == [0, 0]
    assert not q.codes.any()
    assert not q.dequantize().any()


# ---- SPEC section 4 vectors (NVFP4) ---------------------------------------------------------------
NV_X = np.array([100, -37, 5] + [0] * 13 + [0.001, -0.0004] + [0] * 14, np.float32)


def test_spec_nvfp4_transformer_engine():
    q = mx.quantize(NV_X, "nvfp4")
    assert q.scales.tolist() == [0x7E, 0x02]
    assert q.codes[:3].tolist() == [0x7, 0xC, 0x1] and not q.codes[3:16].any()
    assert q.codes[16:18].tolist() == [0x7, 0xD] and not q.codes[18:].any()
    s_enc = np.float32(2688) / np.float32(100)
    assert s_enc == np.float32(26.88) and q.global_scale == np.float32(1) / s_enc
    assert q.global_amax == np.float32(100)


def test_spec_nvfp4_torchao():
    q = mx.quantize(NV_X, "nvfp4", variant="torchao")
    assert q.scales.tolist() == [0x7E, 0x08]
    assert q.codes[:3].tolist() == [0x7, 0xC, 0x1]
    assert q.codes[16:18].tolist() == [0x3, 0x9]
    assert q.global_scale == np.float32(100) / np.float32(2688)


def oracle_nvfp4_te(x: np.ndarray, block: int = 16):
    """TransformerEngine's four steps on numpy float32 scalars with ml_dtypes casts."""
    f32 = np.float32
    amax = f32(np.max(np.abs(x)))
    with np.errstate(divide="ignore", over="ignore"):  # a tiny amax: 2688/amax overflows
        s_enc = min(f32(2688) / amax, np.finfo(np.float32).max) if amax else f32(1)
    s_enc = f32(1) if (amax == 0 or s_enc == 0) else f32(s_enc)
    scales, codes = [], []
    for j in range(0, x.size, block):
        b = x[j : j + block]
        sb = f32(np.max(np.abs(b))) * f32(s_enc * f32(f32(1) / f32(6)))
        sb = min(sb, f32(448))
        s8 = np.array([sb], np.float32).astype(ml_dtypes.float8_e4m3fn)
        scales.append(int(s8.view(np.uint8)[0]))
        with np.errstate(divide="ignore"):
            enc = min(f32(1) / (f32(s8.astype(np.float32)[0]) * f32(f32(1) / s_enc)), np.finfo(np.float32).max)
        y = np.clip(b * f32(enc), f32(-6), f32(6))
        codes += y.astype(ml_dtypes.float4_e2m1fn).view(np.uint8).tolist()
    return scales, [c & 0xF for c in codes], s_enc


def oracle_nvfp4_torchao(x: np.ndarray, block: int = 16):
    f32 = np.float32
    pts = f32(np.max(np.abs(x))) / f32(2688)
    scales, codes = [], []
    for j in range(0, x.size, block):
        b = x[j : j + block]
        s = (f32(np.max(np.abs(b))) / f32(6)) / pts
        s8 = np.array([np.clip(s, f32(2**-6), f32(448))], np.float32).astype(ml_dtypes.float8_e4m3fn)
        scales.append(int(s8.view(np.uint8)[0]))
        reciprocal = (f32(1) / pts) / s8.astype(np.float32)[0]
        y = np.clip(b * reciprocal, f32(-6), f32(6))
        codes += y.astype(ml_dtypes.float4_e2m1fn).view(np.uint8).tolist()
    return scales, [c & 0xF for c in codes]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, 64, elements=st.floats(-1e6, 1e6, width=32)))
def test_nvfp4_te_matches_oracle(x):
    q = mx.quantize(x, "nvfp4")
    scales, codes, s_enc = oracle_nvfp4_te(x)
    assert q.scales.tolist() == scales
    assert q.codes.tolist() == codes
    assert q.global_scale == np.float32(np.float32(1) / s_enc)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, 48, elements=st.floats(-1e4, 1e4, width=32)).filter(lambda a: np.abs(a).max() > 1e-30))
def test_nvfp4_torchao_matches_oracle(x):
    q = mx.quantize(x, "nvfp4", variant="torchao")
    scales, codes = oracle_nvfp4_torchao(x)
    assert q.scales.tolist() == scales
    assert q.codes.tolist() == codes


def test_nvfp4_dequantize_arithmetic():
    q = mx.quantize(NV_X, "nvfp4")
    f32 = np.float32
    s = np.array(q.scales, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    factor = (s * f32(100)) * f32(1 / 2688)
    vals = np.array(q.codes, np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    assert np.array_equal(q.dequantize(), vals * np.repeat(factor, 16))
    qt = mx.quantize(NV_X, "nvfp4", variant="torchao")
    st_ = np.array(qt.scales, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    vt = np.array(qt.codes, np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    assert np.array_equal(qt.dequantize(), vt * np.repeat(qt.global_scale * st_, 16))


def test_nvfp4_2d_tiles():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((32, 48)).astype(np.float32) * np.float32(3)
    q = mx.quantize(w, "nvfp4", block_size=(16, 16))
    assert q.scales.shape == (2, 3) and q.codes.shape == w.shape
    f32 = np.float32
    s_enc = f32(2688) / f32(np.abs(w).max())
    for i in range(2):
        for j in range(3):
            tile = w[16 * i : 16 * i + 16, 16 * j : 16 * j + 16]
            sb = f32(np.abs(tile).max()) * f32(s_enc * f32(f32(1) / f32(6)))
            code = int(np.array([sb], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])
            assert q.scales[i, j] == code
            s8 = np.array([code], np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)[0]
            enc = f32(1) / (s8 * (f32(1) / s_enc))
            expect = np.clip(tile * enc, -6, 6).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
            assert np.array_equal(q.codes[16 * i : 16 * i + 16, 16 * j : 16 * j + 16], expect)


def test_nvfp4_stochastic_rounding_is_unbiased():
    # each block holds 6.0 (so S_enc = 448, every block scale is 448 and enc = 1) and 2.5s,
    # which lie halfway between the E2M1 values 2 and 3
    x = np.full(4096, 2.5, np.float32)
    x[::16] = 6.0
    q = mx.quantize(x, "nvfp4", rounding="stochastic", rng=np.random.default_rng(7))
    assert (q.scales == 0x7E).all()
    rest = np.ones(4096, bool)
    rest[::16] = False
    y = q.dequantize()[rest]
    assert set(np.unique(q.codes[rest]).tolist()) == {0x4, 0x5}
    assert set(np.unique(y).tolist()) == {2.0, 3.0}
    assert abs(float(np.mean(y)) - 2.5) < 0.03  # 3840 fair coin flips: sd 0.008
    assert mx.quantize(x, "nvfp4").codes[1] == 0x4  # RNE: the tie goes to even (2.0)
    q2 = mx.quantize(x, "nvfp4", rounding="stochastic", rng=np.random.default_rng(7))
    assert np.array_equal(q.codes, q2.codes)


def test_nvfp4_zero_and_nan_blocks():
    x = np.zeros(48, np.float32)
    q = mx.quantize(x, "nvfp4")
    assert q.scales.tolist() == [0, 0, 0] and not q.codes.any()
    assert not q.dequantize().any()
    x[20] = np.nan
    x[40] = 3.0
    q = mx.quantize(x, "nvfp4")
    assert q.scales.tolist() == [0, 0x7F, 0x7E]
    d = q.dequantize()
    assert np.isnan(d[16:32]).all() and d[40] == 3.0


# ---- properties ------------------------------------------------------------------------------------
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
blocks32 = hnp.arrays(np.float32, st.integers(1, 100), elements=finite32)


@st.composite
def realistic(draw):
    """Arrays of float32 with a random common magnitude and a random spread (so blocks have
    elements far below amax, near the element range's bottom, and zeros)."""
    n = draw(st.integers(1, 96))
    base = draw(st.integers(-140, 120))
    spread = draw(st.integers(0, 40))
    mant = draw(hnp.arrays(np.float64, n, elements=st.floats(-2, 2)))
    expo = draw(hnp.arrays(np.int64, n, elements=st.integers(base - spread, base)))
    x = np.ldexp(mant, expo).astype(np.float32)
    return x


@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("rule", mx.SCALE_ROUNDINGS)
@settings(max_examples=25, deadline=None)
@given(x=st.one_of(realistic(), blocks32))
def test_scales_and_codes_follow_the_oracle(fmt, rule, x):
    q = mx.quantize(x, fmt, scale_rounding=rule)
    nb = -(-x.size // 32)
    assert q.scales.shape == (nb,) and q.codes.shape == x.shape and q.codes.dtype == np.uint8
    xp = block_of(x, nb * 32)
    for j in range(nb):
        blk = xp[32 * j : 32 * j + 32]
        amax = float(np.max(np.abs(blk)))
        code = oracle_scale(amax, fmt, rule)
        assert q.scales[j] == code, (j, amax)
        got = q.codes[32 * j : 32 * j + 32].tolist()
        want = oracle_codes(blk, fmt, code)[: len(got)]
        assert got == want


@pytest.mark.parametrize("fmt", MX_FORMATS)
@settings(max_examples=30, deadline=None)
@given(x=realistic())
def test_error_bound_range_and_requantize(fmt, x):
    q = mx.quantize(x, fmt)
    bits = mx.get_block_format(fmt).bits
    assert int(q.codes.max(initial=0)) < (1 << bits)
    if fmt == "mxfp8_e4m3":
        assert not np.isin(q.codes, [0x7F, 0xFF]).any()  # saturating: never NaN
    if fmt == "mxfp8_e5m2":
        assert not ((q.codes & 0x7C) == 0x7C).any()  # never Inf/NaN
    if fmt == "mxint8":
        assert not (q.codes == 0x80).any()  # symmetric clamp
    d = q.dequantize(np.float64)
    X = np.repeat(np.ldexp(1.0, q.scales.astype(int) - 127), 32)[: x.size]
    y = x.astype(np.float64) / X
    maxv, m = MAXV[fmt], MBITS[fmt]
    if fmt == "mxint8":
        half_ulp = np.full(y.shape, 2.0**-7)
    else:
        emin = {"mxfp8_e4m3": -6, "mxfp8_e5m2": -14, "mxfp6_e3m2": -2, "mxfp6_e2m3": 0, "mxfp4": 0}[fmt]
        binade = np.maximum(np.floor(np.log2(np.maximum(np.abs(y), 2.0**-300))), emin)
        half_ulp = np.ldexp(1.0, (binade - m - 1).astype(int))
    clamped = np.abs(y) > maxv
    assert np.all(np.abs(y - d / X)[~clamped] <= half_ulp[~clamped])
    assert np.all(np.abs(d / X)[clamped] == maxv)
    # quantizing the dequantized array gives the same codes and scales (floor rule)
    q2 = mx.quantize(q.dequantize(np.float32), fmt)
    assert np.array_equal(q2.scales, q.scales)
    assert np.array_equal(q2.codes, q.codes)


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_nan_and_inf_blocks(fmt):
    x = np.ones(96, np.float32)
    x[5] = np.nan
    x[40] = np.inf
    x[41] = -2.0
    x[70] = -np.inf
    x[71] = np.nan
    q = mx.quantize(x, fmt)
    assert q.scales.tolist() == [0xFF, 0xFF, 0xFF]
    assert np.isnan(q.dequantize()).all()
    qs = mx.quantize(x, fmt, inf="saturate")
    assert qs.scales.tolist() == [0xFF, 0xFE, 0xFF]
    d = qs.dequantize(np.float64)
    assert d[40] == MAXV[fmt] * 2.0**127
    assert d[41] == 0 and d[42] == 0  # 1 and -2 vanish under the 2**127 scale
    assert np.isnan(d[:32]).all() and np.isnan(d[64:]).all()


def test_rceil_subnormal_and_saturation_rules():
    # fp32(amax * fp32(1/6)) lands on 2**-127 exactly (0x00400000: stays 0x00), on 1.5 * 2**-127
    # (mantissa 0x600000 > 0x400000: rounds up to 0x01) and on 2**-126 (0x01)
    codes = []
    for k in (6, 9, 12):
        x = block_of([k * 2.0**-127])
        codes.append(int(mx.quantize(x, "mxfp4", scale_rounding="rceil").scales[0]))
    assert codes == [0, 1, 1]
    big = block_of([np.finfo(np.float32).max])
    # MXINT8: FLT_MAX * (64/127) has exponent field 254 and a non-zero mantissa: saturate at 0xFE
    assert mx.quantize(big, "mxint8", scale_rounding="rceil").scales[0] == 0xFE
    assert [int(mx.quantize(big, "mxfp8_e4m3", scale_rounding=r).scales[0])
            for r in mx.SCALE_ROUNDINGS] == [127 + 127 - 8, 128 + 127 - 8, 128 + 127 - 8, 128 + 127 - 8]


def test_mx_2d_tiles():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((40, 70)) * np.exp2(rng.integers(-8, 8, (40, 70)))).astype(np.float32)
    q = mx.quantize(x, "mxfp6_e3m2", block_size=(32, 32))
    assert q.scales.shape == (2, 3) and q.axis == (0, 1)
    for i in range(2):
        for j in range(3):
            tile = x[32 * i : 32 * i + 32, 32 * j : 32 * j + 32]
            code = oracle_scale(float(np.abs(tile).max()), "mxfp6_e3m2", "floor")
            assert q.scales[i, j] == code
            got = q.codes[32 * i : 32 * i + 32, 32 * j : 32 * j + 32].ravel().tolist()
            assert got == oracle_codes(tile.ravel(), "mxfp6_e3m2", code)
    assert np.array_equal(mx.quantize(q.dequantize(), "mxfp6_e3m2", block_size=(32, 32)).codes, q.codes)


def test_nvfp4_global_amax_ignores_nan_and_can_be_given():
    x = np.zeros(32, np.float32)
    x[3], x[4], x[20] = np.nan, 10.0, 5.0
    q = mx.quantize(x, "nvfp4")
    assert q.global_amax == np.float32(10.0)  # the 10 shares its block with the NaN
    assert q.scales.tolist() == [0x7F, int(np.array([np.float32(5) * np.float32(np.float32(268.8) * np.float32(1 / np.float32(6)))], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])]
    g = mx.quantize(np.float32([1.0, 2.0]), "nvfp4", global_amax=4.0)
    assert g.global_amax == 4.0 and g.scales[0] == 0x76  # 2 * (2688/4)/6 = 224 = 0x76
    with pytest.raises(ValueError, match="global_amax"):
        mx.quantize([1.0], "nvfp4", global_amax=float("nan"))


@pytest.mark.parametrize("fmt", MX_FORMATS)
@settings(max_examples=20, deadline=None)
@given(x=realistic(), data=st.data())
def test_special_blocks_property(fmt, x, data):
    """NaN anywhere in a block -> 0xFF; Inf -> 0xFF or 0xFE (saturate); other blocks untouched."""
    n = x.size
    where = data.draw(st.lists(st.integers(0, n - 1), max_size=4))
    kinds = data.draw(st.lists(st.sampled_from([np.nan, np.inf, -np.inf]), min_size=len(where), max_size=len(where)))
    y = x.copy()
    for i, v in zip(where, kinds):
        y[i] = v
    clean = mx.quantize(x, fmt)
    for mode in ("nan", "saturate"):
        q = mx.quantize(y, fmt, inf=mode)
        d = q.dequantize(np.float64)
        for j in range(q.scales.size):
            blk = y[32 * j : 32 * j + 32]
            if np.isnan(blk).any():
                assert q.scales[j] == 0xFF and np.isnan(d[32 * j : 32 * j + 32]).all()
            elif np.isinf(blk).any():
                assert q.scales[j] == (0xFF if mode == "nan" else 0xFE)
                if mode == "saturate":
                    inf_at = np.isinf(blk)
                    assert np.all(d[32 * j : 32 * j + 32][inf_at] == np.sign(blk[inf_at].astype(np.float64)) * MAXV[fmt] * 2.0**127)
            else:
                assert q.scales[j] == clean.scales[j]
                assert np.array_equal(q.codes[32 * j : 32 * j + 32], clean.codes[32 * j : 32 * j + 32])


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp6_e2m3", "mxfp4"])
def test_mx_stochastic_rounding_picks_a_neighbour(fmt):
    x = np.random.default_rng(9).standard_normal(4096).astype(np.float32)
    rne = mx.quantize(x, fmt)
    sr = mx.quantize(x, fmt, rounding="stochastic", rng=3)
    assert np.array_equal(sr.scales, rne.scales)
    X = np.repeat(np.ldexp(1.0, rne.scales.astype(int) - 127), 32)
    lo = np.minimum(rne.dequantize(np.float64), sr.dequantize(np.float64)) / X
    hi = np.maximum(rne.dequantize(np.float64), sr.dequantize(np.float64)) / X
    y = x / X
    values = (element_value(c, fmt) for c in range(1 << mx.get_block_format(fmt).bits))
    finite_vals = sorted({v for v in values if not math.isnan(v)})
    step = {v: b - v for v, b in zip(finite_vals, finite_vals[1:])}
    # SR and RNE agree or sit on the two neighbours around y
    differs = lo != hi
    assert np.all((lo[differs] <= y[differs]) & (y[differs] <= hi[differs]))
    assert all(hi_ - lo_ == step[lo_] for lo_, hi_ in zip(lo[differs], hi[differs]))
    assert 0.2 < differs.mean() < 0.8
    assert abs(np.mean(sr.dequantize(np.float64) - x)) < abs(np.mean(np.abs(rne.dequantize(np.float64) - x)))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("rule", mx.SCALE_ROUNDINGS)
@settings(max_examples=400, deadline=None)
@given(x=st.one_of(realistic(), blocks32))
def test_scales_and_codes_follow_the_oracle_long(fmt, rule, x):
    test_scales_and_codes_follow_the_oracle.hypothesis.inner_test(fmt, rule, x)


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2"])
def test_fp8_elements_match_torch_casts(fmt):
    """torch's float8 casts as a second element oracle (torchao's eager MX path: x times the
    reciprocal E8M0 scale in float32, clamped to +-max, cast)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(32 * 512) * np.exp2(rng.integers(-30, 30, 32 * 512))).astype(np.float32)
    q = mx.quantize(x, fmt)
    recip = np.ldexp(np.float32(1), 127 - q.scales.astype(int)).astype(np.float32)
    y = np.clip(x.reshape(-1, 32) * recip[:, None], -MAXV[fmt], MAXV[fmt]).astype(np.float32)
    tdtype = torch.float8_e4m3fn if fmt == "mxfp8_e4m3" else torch.float8_e5m2
    want = torch.from_numpy(y.ravel()).to(tdtype).view(torch.uint8).numpy()
    assert np.array_equal(q.codes, want)


# ---- layouts, dtypes, errors ---------------------------------------------------------------------
@pytest.mark.parametrize("shape, axis", [((70,), 0), ((3, 40), 0), ((3, 40), 1), ((2, 5, 33), 1),
                                         ((2, 3, 4, 65), -1), ((40, 2, 3, 2), 0), ((2, 3, 36, 2), 2)])
@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp6_e2m3", "mxint8", "nvfp4"])
def test_any_rank_any_axis(shape, axis, fmt):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * 3)).astype(np.float32)
    q = mx.quantize(x, fmt, axis=axis)
    bs = 16 if fmt == "nvfp4" else 32
    ax = axis % len(shape)
    want_scales = list(shape)
    want_scales[ax] = -(-shape[ax] // bs)
    assert q.codes.shape == shape and q.scales.shape == tuple(want_scales) and q.axis == ax
    # every 1-D fibre along the axis is blocked exactly like a lone 1-D array
    xm = np.moveaxis(x, ax, -1).reshape(-1, shape[ax])
    cm = np.moveaxis(q.codes, ax, -1).reshape(-1, shape[ax])
    sm = np.moveaxis(q.scales, ax, -1).reshape(xm.shape[0], -1)
    dm = np.moveaxis(q.dequantize(), ax, -1).reshape(-1, shape[ax])
    kw = {"global_amax": float(np.abs(x).max())} if fmt == "nvfp4" else {}
    for r in range(xm.shape[0]):
        one = mx.quantize(xm[r], fmt, **kw)
        assert np.array_equal(one.codes, cm[r]) and np.array_equal(one.scales, sm[r])
        assert np.array_equal(one.dequantize(), dm[r])


def test_padding_uses_zeros_inside_the_last_block():
    x = np.full(33, 3.0, np.float32)
    x[32] = 0.75
    q = mx.quantize(x, "mxfp4")
    assert q.scales.tolist() == [0x7E, 0x7C]  # floor(log2 3) - 2 = -1; floor(log2 0.75) - 2 = -3
    assert q.dequantize()[32] == 0.75


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_input_dtypes(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100).astype(dtype)
    q = mx.quantize(x, "mxfp8_e5m2")
    ref = mx.quantize(x.astype(np.float64), "mxfp8_e5m2")  # float16 -> float32 is exact
    assert np.array_equal(q.codes, ref.codes) and np.array_equal(q.scales, ref.scales)
    assert q.dequantize(dtype).dtype == dtype
    assert mx.quantize(x.tolist(), "mxfp4").codes.shape == (100,)
    assert np.array_equal(mx.quantize(np.arange(-5, 5), "mxint8").dequantize(), np.arange(-5, 5))


def test_float64_input_is_not_rounded_to_float32_first():
    # 1 + 2**-4 + 2**-40 is above the E4M3 tie 1.0625: float64 keeps the sticky bit, a float32
    # copy (rounded to 1.0625 exactly) would tie to even and round down.
    x = block_of([1 + 2**-4 + 2**-40, 200], dtype=np.float64)
    assert mx.quantize(x, "mxfp8_e4m3").codes[0] == mx.quantize(block_of([1.125, 200]), "mxfp8_e4m3").codes[0]
    x32 = x.astype(np.float32)
    assert mx.quantize(x32, "mxfp8_e4m3").codes[0] != mx.quantize(x, "mxfp8_e4m3").codes[0]


def test_input_not_modified_and_names_case_insensitive():
    x = np.array([1.0, -2.0, 3.0], np.float32)
    before = x.copy()
    q = mx.quantize(x, "MXFP8_E4M3")
    assert np.array_equal(x, before) and q.format.name == "mxfp8_e4m3"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"fmt": "mxfp5"}, "unknown block format"),
        ({"block_size": 0}, "block size"),
        ({"block_size": "32"}, "block size"),
        ({"block_size": (16, 16, 16)}, "block_size"),
        ({"axis": 2}, "out of range"),
        ({"axis": 1.5}, "axis must be an integer"),
        ({"axis": (0, 1)}, "need 1 axes"),
        ({"scale_rounding": "round"}, "scale_rounding"),
        ({"inf": "clip"}, "inf must be"),
        ({"variant": "torchao"}, "NVFP4 only"),
    ],
)
def test_clear_errors(kwargs, match):
    args = {"fmt": "mxfp4", **kwargs}
    fmt = args.pop("fmt")
    with pytest.raises(ValueError, match=match):
        mx.quantize(np.ones((4, 8)), fmt, **args)


def test_more_errors():
    with pytest.raises(ValueError, match="at least one dimension"):
        mx.quantize(1.0, "mxfp4")
    with pytest.raises(TypeError):
        mx.quantize(["a"], "mxfp4")
    with pytest.raises(ValueError, match="supports rounding"):
        mx.quantize([1.0], "mxint8", rounding="stochastic")
    with pytest.raises(ValueError, match="variant"):
        mx.quantize([1.0], "nvfp4", variant="cudnn")
    with pytest.raises(ValueError, match="NVFP4 scales"):
        mx.quantize([1.0], "nvfp4", scale_rounding="rceil")
    with pytest.raises(ValueError, match="2-D blocks"):
        mx.quantize(np.ones(8), "nvfp4", block_size=(16, 16))
    with pytest.raises(TypeError):
        mx.dequantize(np.ones(3))


def test_byte_order_and_non_contiguous_input():
    x = np.random.default_rng(8).standard_normal((40, 50)).astype(np.float32)
    ref = mx.quantize(x, "mxfp8_e4m3", axis=0)
    big = mx.quantize(x.astype(">f4"), "mxfp8_e4m3", axis=0)
    assert np.array_equal(big.codes, ref.codes) and np.array_equal(big.scales, ref.scales)
    t = mx.quantize(np.asfortranarray(x)[::1, ::1].T, "mxfp8_e4m3", axis=1)
    assert np.array_equal(t.codes, ref.codes.T) and np.array_equal(t.scales, ref.scales.T)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5)])
@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp6_e2m3", "nvfp4", "mxint8"])
def test_empty_arrays(shape, fmt):
    q = mx.quantize(np.zeros(shape, np.float32), fmt)
    assert q.codes.shape == shape and q.dequantize().shape == shape
    assert mx.unpack(q.pack(), fmt, shape[-1]).shape == shape


def test_blockarray_from_parts_is_checked():
    q = mx.quantize(np.arange(40.0), "mxfp4")
    again = mx.BlockArray(mx.unpack(q.pack(), "mxfp4", 40), q.scales, q.format, 0, 32)
    assert np.array_equal(again.dequantize(), q.dequantize())
    with pytest.raises(ValueError, match="do not match"):
        mx.BlockArray(q.codes, q.scales[:1], q.format, 0, 32)
    with pytest.raises(TypeError):
        mx.BlockArray(q.codes.astype(float), q.scales, q.format, 0, 32)


# ---- packing ------------------------------------------------------------------------------------
def test_fp4_nibble_order_matches_torch_float4_e2m1fn_x2():
    # PyTorch's float4_e2m1fn_x2 (and torchao pack_uint4, cuBLAS): element 2i in the low nibble.
    assert mx.pack_codes([0x1, 0x7, 0xA, 0x3], 4).tolist() == [0x71, 0x3A]


def test_fp6_bit_order():
    # little-endian bit stream: c0 in bits 0-5, c1 in bits 6-11, ... (rocRoller getFp6)
    codes = [0b101010, 0b110011, 0b000111, 0b111000]
    stream = sum(c << (6 * i) for i, c in enumerate(codes))
    assert mx.pack_codes(codes, 6).tolist() == list(stream.to_bytes(3, "little"))


@pytest.mark.parametrize("bits", [4, 6, 8])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_pack_round_trip(bits, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=9))
    codes = data.draw(hnp.arrays(np.uint8, shape, elements=st.integers(0, (1 << bits) - 1)))
    packed = mx.pack_codes(codes, bits)
    group = {4: 2, 6: 4, 8: 1}[bits]
    assert packed.shape[-1] == -(-shape[-1] // group) * {4: 1, 6: 3, 8: 1}[bits]
    assert np.array_equal(mx.unpack_codes(packed, bits, shape[-1]), codes)


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp6_e3m2", "mxfp8_e5m2", "nvfp4"])
def test_blockarray_pack_and_unpack(fmt):
    x = np.random.default_rng(5).standard_normal((3, 37)).astype(np.float32)
    q = mx.quantize(x, fmt)
    assert np.array_equal(mx.unpack(q.pack(), fmt, 37), q.codes)
    with pytest.raises(ValueError):
        mx.pack_codes([16], 4)


# ---- dot / matmul -------------------------------------------------------------------------------
def oracle_matmul(A: mx.BlockArray, B: mx.BlockArray) -> np.ndarray:
    """Exact per-block sums with Fractions, one rounding to float32 per block, float32 sum."""
    fa, fb = A.format.name, B.format.name
    (m, k), n = A.shape, B.shape[1]
    bs = A.block_size
    out = np.zeros((m, n), np.float32)
    for i in range(m):
        for j in range(n):
            acc = np.float32(0)
            for blk in range(-(-k // bs)):
                ks = range(blk * bs, min(k, (blk + 1) * bs))
                s = sum(Fraction(element_value(int(A.codes[i, t]), fa)) * Fraction(element_value(int(B.codes[t, j]), fb)) for t in ks)
                if A.format.is_nvfp4:
                    sa = Fraction(e4m3_value(A.scales[i, blk]))
                    sb = Fraction(e4m3_value(B.scales[blk, j]))
                else:
                    sa = Fraction(2) ** (int(A.scales[i, blk]) - 127)
                    sb = Fraction(2) ** (int(B.scales[blk, j]) - 127)
                acc = np.float32(acc + fraction_to_f32(s * sa * sb))
            if A.format.is_nvfp4:
                acc = np.float32(acc * np.float32(A.global_scale * B.global_scale))
            out[i, j] = acc
    return out


def e4m3_value(code) -> float:
    return float(np.array([code], np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)[0])


@pytest.mark.parametrize("fa, fb", [("mxfp8_e4m3", "mxfp8_e4m3"), ("mxfp8_e5m2", "mxfp8_e5m2"),
                                    ("mxfp8_e4m3", "mxfp8_e5m2"), ("mxfp6_e2m3", "mxfp4"),
                                    ("mxint8", "mxfp6_e3m2"), ("nvfp4", "nvfp4")])
def test_matmul_matches_exact_oracle(fa, fb):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((3, 70)) * np.exp2(rng.integers(-20, 20, (3, 70)))).astype(np.float32)
    b = (rng.standard_normal((70, 4)) * np.exp2(rng.integers(-20, 20, (70, 4)))).astype(np.float32)
    A = mx.quantize(a, fa, axis=1)
    B = mx.quantize(b, fb, axis=0)
    assert np.array_equal(mx.matmul(A, B), oracle_matmul(A, B))


@settings(max_examples=15, deadline=None)
@given(
    fa=st.sampled_from(MX_FORMATS + ["nvfp4"]),
    fb=st.sampled_from(MX_FORMATS),
    m=st.integers(1, 3),
    k=st.integers(1, 80),
    n=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    spread=st.integers(0, 40),
)
def test_matmul_property(fa, fb, m, k, n, seed, spread):
    if fa == "nvfp4":
        fb = "nvfp4"
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))).astype(np.float32)
    b = (rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))).astype(np.float32)
    A, B = mx.quantize(a, fa, axis=1), mx.quantize(b, fb, axis=0)
    assert np.array_equal(mx.matmul(A, B), oracle_matmul(A, B))


def test_dot_block_sum_is_exact():
    # products 2**24, 1, -2**24 in one block: a float32 running sum would lose the 1
    a = mx.quantize(block_of([4096, 1, -4096]), "mxfp8_e5m2")
    b = mx.quantize(block_of([4096, 1, 4096]), "mxfp8_e5m2")
    assert mx.dot(a, b) == np.float32(1.0)
    naive = np.float32(0)
    for p in (a.dequantize() * b.dequantize())[:3]:
        naive = np.float32(naive + p)
    assert naive == 0.0


def test_dot_large_e5m2_products_and_specials():
    big = block_of([57344.0] * 32)
    a = mx.quantize(big, "mxfp8_e5m2")
    assert mx.dot(a, a) == np.float32(32 * 57344.0**2)
    c = mx.quantize(block_of([1.0, np.nan]), "mxfp4")
    assert np.isnan(mx.dot(c, mx.quantize(block_of([1.0]), "mxfp4")))
    with pytest.raises(ValueError):
        mx.dot(a, mx.quantize(np.ones(16), "mxfp8_e5m2"))
    with pytest.raises(ValueError, match="not blocked"):
        mx.matmul(mx.quantize(np.ones((2, 32)), "mxfp4", axis=0), mx.quantize(np.ones((32, 2)), "mxfp4", axis=0))


def test_matmul_accepts_16x16_tiles():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((32, 20)).astype(np.float32)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    X = mx.quantize(x, "nvfp4", axis=1)
    W = mx.quantize(w, "nvfp4", block_size=(16, 16))
    got = mx.matmul(X, W)
    ref = X.dequantize(np.float64) @ W.dequantize(np.float64)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-6)


# ---- command line -------------------------------------------------------------------------------
def run_cli(argv: list[str]) -> int:
    """The ``fpemu mx`` subcommand through argparse, as fpemu.cli wires it (its main() also
    loads the other feature modules, which this test should not depend on)."""
    import argparse

    parser = argparse.ArgumentParser(prog="fpemu")
    mx.register_cli(parser.add_subparsers())
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"fpemu: error: {exc}", file=__import__("sys").stderr)
        return 2


def test_cli_mx(capsys, tmp_path):
    main = run_cli
    assert main(["mx", "7,3,1,0.4,-0.24,0.26,5", "--format", "mxfp4"]) == 0
    out = capsys.readouterr().out
    assert "scale 0x7F" in out and "codes:  7 5 2 1 8 1 6" in out and "errors:" in out
    f = tmp_path / "v.npy"
    np.save(f, NV_X)
    assert main(["mx", str(f), "--format", "nvfp4"]) == 0
    out = capsys.readouterr().out
    assert "block 1: scale 0x02" in out
    assert main(["mx", "1,2", "--format", "mxfp9"]) == 2
    assert "unknown block format" in capsys.readouterr().err
