"""nvfp4_ue5m3: NVFP4's E2M1 blocks of 16 with a UE5M3 (float8_e5m3fnu) block scale and no
per-tensor scale, checked against an exact model of the rule in Fractions (the fp32 steps
rounded by the reference codec of tests/reference.py, never by fpemu).

The rule (docs/mx.md, "NVFP4 with UE5M3 scales"): TransformerEngine's NVFP4 steps with
S_enc = 1, the UE5M3 maximum in place of 448:

1. scale = ue5m3_rne(min(fp32(amax_block * fp32(1/6)), 114688));
2. enc = min(fp32(1 / scale), FLT_MAX);
3. code = e2m1_rne(clamp(fp32(x * enc), -6, 6));
4. value = e2m1(code) * scale, exactly (no per-tensor factor).

A NaN in a block gives scale 0xFF (NaN) and codes 0; an Inf saturates to 6 * scale.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fpemu
from fpemu import get_format, mx

from reference import magnitude_value, ref_decode, ref_encode

BF = "nvfp4_ue5m3"
FP32, UE5M3, E2M1 = get_format("fp32"), get_format("float8_e5m3fnu"), get_format("e2m1")
FLT_MAX = Fraction(float(np.finfo(np.float32).max))


def rn32(v: Fraction) -> Fraction:
    """v >= 0 rounded to float32 exactly (RNE, subnormals), by the reference codec."""
    value = ref_decode(ref_encode(v, FP32), FP32)
    assert value.kind == "finite"
    return value.magnitude


SIXTH = rn32(Fraction(1, 6))


def model_block(xs) -> tuple[int, list[int]]:
    """(scale code, element codes) of one block of float32 values, in exact arithmetic."""
    xs = [float(v) for v in xs]
    if any(math.isnan(v) for v in xs):
        return UE5M3.nan_code, [0] * len(xs)
    amax = max(abs(v) for v in xs)
    t = Fraction(UE5M3.max) if math.isinf(amax) else min(rn32(Fraction(amax) * SIXTH), Fraction(UE5M3.max))
    scale = ref_encode(t, UE5M3)
    s = magnitude_value(scale, UE5M3)
    enc = FLT_MAX if s == 0 else min(rn32(1 / s), FLT_MAX)
    codes = []
    for v in xs:
        mag = 7 if math.isinf(v) else ref_encode(rn32(abs(Fraction(v)) * enc), E2M1, overflow="saturate")
        codes.append(mag | (8 if math.copysign(1.0, v) < 0 else 0))
    return scale, codes


def model(x: np.ndarray, block: int = 16) -> tuple[list[int], list[int]]:
    scales, codes = [], []
    for j in range(0, x.size, block):
        s, c = model_block(x[j : j + block])
        scales.append(s)
        codes += c
    return scales, codes


def model_values(scales, codes, block: int = 16) -> list[float]:
    """e2m1(code) * scale, exactly (NaN where the scale is)."""
    out = []
    for i, c in enumerate(codes):
        s = scales[i // block]
        if s == UE5M3.nan_code:
            out.append(math.nan)
            continue
        v = float(magnitude_value(c & 7, E2M1) * magnitude_value(s, UE5M3))
        out.append(-v if c & 8 else v)
    return out


def check(x: np.ndarray, block: int = 16) -> mx.BlockArray:
    q = mx.quantize(x, BF, block_size=block)
    scales, codes = model(x, block)
    assert q.scales.tolist() == scales
    assert q.codes.tolist() == codes
    np.testing.assert_array_equal(q.dequantize(), np.float32(model_values(scales, codes, block)))
    np.testing.assert_array_equal(q.dequantize(np.float64), model_values(scales, codes, block))
    return q


# ---- the format ---------------------------------------------------------------------------------
def test_block_format_is_data():
    bf = mx.get_block_format("NVFP4_UE5M3")
    assert (bf.element.name, bf.scale.name, bf.block_size, bf.bits) == ("e2m1", "float8_e5m3fnu", 16, 4)
    assert bf.is_nvfp4 and not bf.tensor_scale and bf.scale_label == "UE5M3"
    nv = mx.get_block_format("nvfp4")
    assert nv.is_nvfp4 and nv.tensor_scale and nv.scale.name == "ue4m3"
    assert mx.get_block_format("nvfp4ue5m3") is bf


# ---- quantize and dequantize against the exact model ---------------------------------------------
@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, 48, elements=st.floats(width=32, allow_nan=False, allow_infinity=False)))
def test_any_float32_matches_the_exact_model(x):
    check(x)


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float32, 40, elements=st.floats(-1e3, 1e3, width=32)))
def test_moderate_values_match_the_exact_model(x):
    check(x)  # (40 elements: the last block is short)


def test_random_blocks_over_the_scale_range():
    """Block amaxes from 2**-24 to 2**24 (scales from 0 through subnormal UE5M3 to 2**22),
    and every block size's tail."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(64 * 16) * np.exp2(np.repeat(rng.integers(-24, 25, 64), 16))).astype(np.float32)
    q = check(x)
    assert {0} < set(q.scales.tolist()) and min(q.scales) < 8  # subnormal scales occur
    check(x[:1000], block=32)


def test_special_blocks():
    x = np.zeros(96, np.float32)
    x[20] = np.nan  # block 1: NaN
    x[32], x[33] = np.inf, -1.0  # block 2: Inf saturates to 6 * 114688
    x[48] = 1e7  # block 3: beyond 6 * 114688 = 688128: scale saturates at 0xFE
    x[64], x[65] = 1e-6, -3e-7  # block 4: amax / 6 below 2**-18: scale 0, codes saturate, values 0
    x[80] = 7.1249995  # block 5: one float32 ulp below 6 * 1.1875 (a UE5M3 tie), see below
    q = check(x)
    assert q.scales.tolist() == [0x00, 0xFF, 0xFE, 0xFE, 0x00, 0x7A]
    d = q.dequantize()
    assert not d[:16].any() and np.isnan(d[16:32]).all() and d[32] == 688128 and d[48] == 688128
    assert not d[64:80].any() and q.codes[64] == 0x7 and q.codes[65] == 0xF


def test_fp32_product_not_exact_quotient():
    """The scale is TransformerEngine's float32 amax * fp32(1/6), not the exact amax / 6: for
    amax = 7.125 - 2**-21, one float32 ulp below 6 times the UE5M3 tie 1.1875, the product
    rounds to the tie itself and RNE takes the even 1.25 (0x7A), where amax / 6 = 1.1875 -
    2**-21/6 would round down to 1.125 (0x79). Such blocks are the only difference."""
    amax = np.nextafter(np.float32(7.125), np.float32(0))
    assert ref_encode(Fraction(float(amax)) / 6, UE5M3) == 0x79
    assert mx.quantize(np.float32([amax]), BF).scales.tolist() == [0x7A]
    # over many random blocks the two rules agree except next to a tie
    rng = np.random.default_rng(9)
    amaxes = np.abs(rng.standard_normal(20000).astype(np.float32)) * np.float32(100)
    q = mx.quantize(np.repeat(amaxes, 16), BF)
    exact = np.array([ref_encode(min(Fraction(float(a)) / 6, Fraction(114688)), UE5M3) for a in amaxes])
    differ = np.flatnonzero(q.scales != exact)
    for i in differ:  # each is within 2 float32 ulps (of amax) of 6 times a tie
        a = Fraction(float(amaxes[i]))
        tie = (magnitude_value(int(exact[i]), UE5M3) + magnitude_value(int(q.scales[i]), UE5M3)) / 2
        assert abs(a - 6 * tie) <= 2 * Fraction(float(np.spacing(amaxes[i])))


def test_two_d_tiles_and_axis():
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((32, 48)) * 10).astype(np.float32)
    q = mx.quantize(w, BF, block_size=(16, 16))
    assert q.scales.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            tile = w[16 * i : 16 * i + 16, 16 * j : 16 * j + 16]
            s, c = model_block(tile.ravel())
            assert q.scales[i, j] == s and q.codes[16 * i : 16 * i + 16, 16 * j : 16 * j + 16].ravel().tolist() == c
    q0 = mx.quantize(w, BF, axis=0)  # blocks down the columns
    assert q0.scales.shape == (2, 48)
    for n in range(48):
        scales, codes = model(w[:, n])
        assert q0.scales[:, n].tolist() == scales and q0.codes[:, n].tolist() == codes


def test_float64_input_is_computed_in_float32():
    x = np.array([3.3, -1.25, 1e-3], np.float64)
    assert mx.quantize(x, BF).codes.tolist() == mx.quantize(x.astype(np.float32), BF).codes.tolist()


# ---- no per-tensor scale --------------------------------------------------------------------------
def test_no_per_tensor_scale():
    q = mx.quantize(np.float32([1.0, 2.0]), BF)
    assert (q.global_scale, q.global_amax, q.variant) == (None, None, None)
    with pytest.raises(ValueError, match="no per-tensor scale"):
        mx.quantize([1.0], BF, global_amax=4.0)
    with pytest.raises(ValueError, match="variant"):
        mx.quantize([1.0], BF, variant="torchao")
    with pytest.raises(ValueError, match="has none"):
        mx.NVFP4Array(q.codes, q.scales, BF, 0, 16, global_amax=np.float32(2))
    with pytest.raises(TypeError, match="scale_rounding"):
        mx.NVFP4Array(q.codes, q.scales, BF, 0, 16, scale_rounding="floor")
    full = mx.NVFP4Array(np.zeros(16, np.uint8), np.array([0xFF]), BF, 0, 16)  # 8-bit scale codes
    assert np.isnan(full.dequantize()).all()


def test_describe_and_pack():
    q = mx.quantize(np.float32([100, -37, 5] + [0] * 13), BF)
    text = mx.describe(q, np.float32([100, -37, 5] + [0] * 13))
    assert text.splitlines()[0] == "nvfp4_ue5m3: 16 values, 1 block of 16, UE5M3 scales, no per-tensor scale"
    assert "scale 0x98 = 16" in text  # 100 / 6 -> 16
    assert q.pack().size == 8


# ---- dot products ---------------------------------------------------------------------------------
def test_exact_matmul_matches_fractions():
    """Each K-block's products summed exactly, times both UE5M3 scales, rounded once to float32,
    the blocks added in float32: no per-tensor factor."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 48)) * np.exp2(rng.integers(-8, 8, (3, 1)))).astype(np.float32)
    b = (rng.standard_normal((48, 2)) * 3).astype(np.float32)
    qa, qb = mx.quantize(a, BF), mx.quantize(b, BF, axis=0)
    va, vb = qa.dequantize().astype(np.float64), qb.dequantize().astype(np.float64)
    want = np.zeros((3, 2), np.float32)
    for i in range(3):
        for n in range(2):
            acc = np.float32(0)
            for k in range(0, 48, 16):
                s = sum(Fraction(float(va[i, j])) * Fraction(float(vb[j, n])) for j in range(k, k + 16))
                block = rn32(abs(s))
                acc = np.float32(acc + np.float32(float(block) if s >= 0 else -float(block)))
            want[i, n] = acc
    np.testing.assert_array_equal(fpemu.gemm(qa, qb), want)
    with pytest.raises(ValueError, match="no block-scaled MMA"):
        fpemu.gemm(qa, qb, accumulator="b200")
    with pytest.raises(ValueError, match="cannot mix"):
        fpemu.gemm(qa, mx.quantize(b, "nvfp4", axis=0))


def test_dask_chunks_give_the_same_bits():
    da = pytest.importorskip("dask.array")
    x = (np.random.default_rng(0).standard_normal((8, 64)) * 100).astype(np.float32)
    q, r = mx.quantize(da.from_array(x, chunks=(4, 32)), BF), mx.quantize(x, BF)
    c = q.compute()
    assert np.array_equal(c.codes, r.codes) and np.array_equal(c.scales, r.scales) and q.global_amax is None
    np.testing.assert_array_equal(q.dequantize().compute(), r.dequantize())
