"""The exact block model (fpemu/accumulator/kernels/blockwise.py, ``accumulator="exact"`` of
block arrays): gemm and dot against exact Fractions rounded to float32 by hand, long K-blocks,
NVFP4 global scales, mismatches (the sign of zero: test_kernels_blockwise_zeros.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpemu
from fpemu import mx

from mx_helpers import MX_FORMATS, block_of, e2m1, e4m3, element_value, f32, round24

ml_dtypes = pytest.importorskip("ml_dtypes")


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
    assert np.array_equal(fpemu.gemm(A, B), oracle_matmul(A, B))


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
    assert np.array_equal(fpemu.gemm(A, B), oracle_matmul(A, B))


def test_dot_block_sum_is_exact():
    # products 2**24, 1, -2**24 in one block: a float32 running sum would lose the 1
    a = mx.quantize(block_of([4096, 1, -4096]), "mxfp8_e5m2")
    b = mx.quantize(block_of([4096, 1, 4096]), "mxfp8_e5m2")
    assert fpemu.dot(a, b) == np.float32(1.0)
    naive = np.float32(0)
    for p in (a.dequantize() * b.dequantize())[:3]:
        naive = np.float32(naive + p)
    assert naive == 0.0


def test_dot_large_e5m2_products_and_specials():
    big = block_of([57344.0] * 32)
    a = mx.quantize(big, "mxfp8_e5m2")
    assert fpemu.dot(a, a) == np.float32(32 * 57344.0**2)
    c = mx.quantize(block_of([1.0, np.nan]), "mxfp4")
    assert np.isnan(fpemu.dot(c, mx.quantize(block_of([1.0]), "mxfp4")))
    with pytest.raises(ValueError):
        fpemu.dot(a, mx.quantize(np.ones(16), "mxfp8_e5m2"))
    with pytest.raises(ValueError, match="not blocked"):
        fpemu.gemm(mx.quantize(np.ones((2, 32)), "mxfp4", axis=0), mx.quantize(np.ones((32, 2)), "mxfp4", axis=0))


def test_matmul_accepts_16x16_tiles():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((32, 20)).astype(np.float32)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    X = mx.quantize(x, "nvfp4", axis=1)
    W = mx.quantize(w, "nvfp4", block_size=(16, 16))
    got = fpemu.gemm(X, W)
    ref = X.dequantize(np.float64) @ W.dequantize(np.float64)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_long_k_blocks_sum_exactly():
    """K-blocks longer than 2**15 E5M2 products at 57344**2: an int64 running sum of the
    scaled integers would overflow; the exact sum is 2**16 * 57344**2 (a float32)."""
    k = 1 << 16
    a = mx.quantize(np.full(k, 57344.0), "mxfp8_e5m2", block_size=k)
    assert a.scales[0] == 127 and (a.codes == a.codes[0]).all()
    assert fpemu.dot(a, a) == f32(k * 57344.0**2)
    signs = np.where(np.arange(k) % 3 == 0, -1.0, 1.0)
    b = mx.quantize(57344.0 * signs, "mxfp8_e5m2", block_size=k)
    want = Fraction(int(signs.sum())) * 57344**2
    assert fpemu.dot(a, b) == f32(float(want))


def test_nvfp4_matmul_global_scale_product_beyond_float32():
    """fp32(global_scale_a * global_scale_b) overflows (3.7e34 * 3.7e4), yet the product is
    finite: the result is acc * ga * gb rounded once, not acc * Inf."""
    a = np.zeros((1, 32), np.float32)
    a[0, 0], a[0, 16] = 1e38, 2e33  # block 1: scale 5 * 2**-9, element 6
    b = np.zeros((32, 1), np.float32)
    b[1, 0], b[16, 0] = 1e8, 2e3
    A, B = mx.quantize(a, "nvfp4", axis=1), mx.quantize(b, "nvfp4", axis=0)
    with np.errstate(over="ignore"):
        assert np.isinf(f32(A.global_scale) * f32(B.global_scale))
    got = fpemu.gemm(A, B)
    ea, eb = e2m1(A.codes[0]), e2m1(B.codes[:, 0])
    sa, sb = np.repeat(e4m3(A.scales[0]), 16), np.repeat(e4m3(B.scales[:, 0]), 16)
    exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(ea * sa, eb * sb))
    exact *= Fraction(float(A.global_scale)) * Fraction(float(B.global_scale))
    assert exact > 1e36 and got[0, 0] == f32(float(round24(exact)))


def test_matmul_and_dot_mismatches():
    a = mx.quantize(np.ones((2, 32)), "mxfp4", axis=1)
    with pytest.raises(ValueError, match="inner dimensions"):
        fpemu.gemm(a, mx.quantize(np.ones((16, 2)), "mxfp4", axis=0))
    with pytest.raises(ValueError, match="K block sizes differ"):
        fpemu.gemm(a, mx.quantize(np.ones((32, 2)), "mxfp4", axis=0, block_size=16))
    with pytest.raises(ValueError, match="mix MX and NVFP4"):
        fpemu.gemm(a, mx.quantize(np.ones((32, 2)), "nvfp4", axis=0))
    with pytest.raises(ValueError, match="2-D"):
        fpemu.gemm(mx.quantize(np.ones(32), "mxfp4"), a)
    with pytest.raises(TypeError):
        fpemu.gemm(np.ones((2, 2)), a)
    with pytest.raises(ValueError, match="equal lengths"):
        fpemu.dot(mx.quantize(np.ones(3), "mxfp4"), mx.quantize(np.ones(4), "mxfp4"))
    with pytest.raises(ValueError, match="1-D"):
        mx.describe(a, np.ones((2, 32)))
    with pytest.raises(ValueError, match="quantized values"):
        mx.describe(mx.quantize(np.ones(3), "mxfp4"), np.ones(4))


def test_matmul_of_2d_tiles_with_a_short_last_tile():
    """16x16 NVFP4 weight tiles with 20 columns: the short last tile's scale applies to its
    columns only; the result equals the float64 product of the dequantized operands up to
    the rounding of each block sum (checked exactly by oracle_matmul above for 1-D blocks)."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((32, 20)).astype(np.float32)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    W = mx.quantize(w, "nvfp4", block_size=(16, 16))
    assert W.scales.shape == (2, 2)
    X = mx.quantize(x, "nvfp4", axis=1)
    got = fpemu.gemm(X, W)
    ref = X.dequantize(np.float64) @ W.dequantize(np.float64)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert math.isfinite(float(got.sum()))
