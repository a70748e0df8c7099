"""Tests of NVFP4 (fpemu.mx.nvfp4_quantization, nvfp4_scales and the NVFP4 arithmetic of
dequantize): SPEC section 4 vectors, TransformerEngine and torchao oracles, the global amax,
reading back finite values (issue 9, items 2-3).

Oracles: TransformerEngine's and torchao's steps on numpy float32 scalars with ml_dtypes
casts, and exact Fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fpemu import mx

from mx_helpers import NV_X, e2m1, e4m3, f32, round24

ml_dtypes = pytest.importorskip("ml_dtypes")


# ---- SPEC section 4 vectors (NVFP4) ---------------------------------------------------------------


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
        with np.errstate(divide="ignore", over="ignore"):  # (a tiny amax: 1 / tiny overflows)
            enc = min(f32(1) / (f32(s8.astype(np.float32)[0]) * f32(f32(1) / s_enc)), np.finfo(np.float32).max)
        with np.errstate(over="ignore"):  # a huge element times enc is Inf, then clipped
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


# ---- item 2: NVFP4 dequantization stays finite ----------------------------------------------------
def test_nvfp4_te_huge_amax_reads_back_finite():
    """[1e38, 1]: S_enc = 2688/1e38, block scale 448, codes 6 and 0. TransformerEngine's
    dequantize computes fp32(448 * 1e38) = Inf first, so it returns [Inf, NaN]; the same
    float32 roundings without that overflow give 6 * fp32(fp32(448 * a) * fp32(1/2688)),
    one float32 ulp above a = fp32(1e38), and 0."""
    x = f32([1e38, 1])
    q = mx.quantize(x, "nvfp4")
    assert q.scales.tolist() == [0x7E] and q.codes.tolist() == [0x7, 0x0]
    with np.errstate(over="ignore", invalid="ignore"):
        te = (f32(448) * q.global_amax) * f32(1 / 2688)  # TE's final_scale
        assert np.isinf(te) and np.isnan(f32(0) * te)
    a, c = Fraction(float(q.global_amax)), Fraction(float(f32(1 / 2688)))
    want = round24(6 * round24(round24(448 * a) * c))
    d = q.dequantize()
    assert np.isfinite(d).all()
    assert d.tolist() == [float(want), 0.0]
    assert abs(want - a) <= a * Fraction(1, 2**23)  # 6 * 448 / 2688 = 1: about the amax
    t = mx.quantize(x, "nvfp4", variant="torchao").dequantize()  # torchao: 6 * fp32(pts * 448)
    assert t.tolist() == [float(round24(6 * round24(round24(a / 2688) * 448))), 0.0]


def test_nvfp4_te_scaled_path_is_te_where_te_is_finite():
    """amax in [2**100, FLT_MAX/448): fpemu evaluates TE's formula with amax scaled by
    2**-32; the values must equal TE's plain float32 arithmetic bit for bit."""
    rng = np.random.default_rng(1)
    for amax in (2.0**100, 3e33, 7e35):
        x = (rng.standard_normal(64) * amax / 4).astype(np.float32)
        x[5] = amax
        q = mx.quantize(x, "nvfp4")
        final = (e4m3(q.scales).astype(np.float32) * q.global_amax) * f32(1 / 2688)
        assert np.isfinite(final).all()
        want = e2m1(q.codes).astype(np.float32) * np.repeat(final, 16)
        assert np.array_equal(q.dequantize(), want)


def test_nvfp4_tiny_amax_reads_back_what_was_encoded():
    """amax below 2688/FLT_MAX: TE clamps S_enc to FLT_MAX, so the data is encoded with the
    decode scale fp32(1/FLT_MAX) = 2**-128, not amax/2688 (TE's dequantize formula reads
    back 8x too small here). fpemu returns code * scale * 2**-128, exactly."""
    x = f32([1e-37, 5e-38, 0, -3e-38])
    q = mx.quantize(x, "nvfp4")
    assert q.global_scale == f32(2.0**-128)
    want = e2m1(q.codes) * np.repeat(e4m3(q.scales), 16)[:4] * 2.0**-128
    assert q.dequantize().tolist() == want.tolist()
    assert abs(q.dequantize()[0] - 1e-37) < 0.1e-37
    te = float(e2m1(q.codes[:1])[0] * e4m3(q.scales)[0] * float(q.global_amax) / 2688)
    assert te < 0.2e-37  # what TE's amax/2688 formula would give


def test_nvfp4_inf_input_reads_back_finite():
    """An Inf makes the amax Inf and TE's S_enc 1: elements read back as code * scale
    (the Inf saturates to 6 * 448, as TE's satfinite conversion does)."""
    x = np.zeros(32, np.float32)
    x[0], x[1], x[16], x[17] = np.inf, 1.0, 3.0, -0.75
    q = mx.quantize(x, "nvfp4")
    assert q.global_amax == np.inf and q.global_scale == 1
    d = q.dequantize()
    assert np.isfinite(d).all()
    assert d.tolist() == (e2m1(q.codes) * np.repeat(e4m3(q.scales), 16)).tolist()
    assert d[0] == 2688.0 and d[16] == 3.0 and d[17] == -0.75


def test_nvfp4_float64_beyond_float32_is_refused():
    with pytest.raises(ValueError, match="beyond float32's range"):
        mx.quantize(np.array([1e300, 1.0]), "nvfp4")
    # float64 values that round to FLT_MAX are fine; from the midpoint to 2**128 on they would
    # round to Inf (the tie goes to the even 2**128)
    midpoint = 2.0**128 - 2.0**103
    below = float(np.nextafter(midpoint, 0))
    q = mx.quantize(np.array([below, 1.0]), "nvfp4")
    assert q.global_amax == np.finfo(np.float32).max and np.isfinite(q.dequantize()).all()
    with pytest.raises(ValueError, match="beyond float32's range"):
        mx.quantize(np.array([-midpoint]), "nvfp4")


# ---- item 3: global_amax ------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), 0, 0.0, -1.0, float("nan"), 1e300, 1e-50])
def test_bad_global_amax_is_refused(bad):
    with pytest.raises(ValueError, match="global_amax"):
        mx.quantize(np.ones(16), "nvfp4", global_amax=bad)


@pytest.mark.parametrize("bad", ["4", [1.0, 2.0], object(), True])
def test_non_number_global_amax_is_refused(bad):
    with pytest.raises(TypeError, match="global_amax"):
        mx.quantize(np.ones(16), "nvfp4", global_amax=bad)


def test_good_global_amax():
    """amax 2 for a block of ones: S_enc = 1344, block scale 1344/6 = 224 (E4M3 0x76),
    enc = 1/(224/1344) = 6, so 1 -> 6 (code 7), read back 6 * 224 * 2/2688 = 1."""
    q = mx.quantize(np.ones(16), "nvfp4", global_amax=np.float64(2.0))
    assert q.global_amax == 2.0 and q.scales.tolist() == [0x76] and (q.codes == 7).all()
    assert (q.dequantize() == 1.0).all()
