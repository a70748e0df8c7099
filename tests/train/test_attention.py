"""fpemu.train.attention: FP8 attention's wiring (casts, scales, both GEMMs, the softmax, the
promotion), checked against an independent reference.

The matrix unit's own rounding (the h100 model) is held to the hardware dumps and MMA-Sim
elsewhere (tests/accumulator); here the unit is the exact one, so every other step can be
written independently: the E4M3 casts by ml_dtypes (saturated values below its NaN), the sums
by Fractions, each fp32 step in NumPy float32. And ``promote=N`` is checked to be the sum of the
unit's N-product pieces, each from zero, added in fp32 (RNE).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fpemu.accumulator import gemm
from fpemu.train.attention import attention_reference, fp8_attention, scaled_gemm, unit_for

ml_dtypes = pytest.importorskip("ml_dtypes")
F32 = np.float32


def cast(x: np.ndarray) -> tuple[np.ndarray, F32]:
    """(E4M3 values of x * scale, 1 / scale) with TransformerEngine's scale 448 / amax."""
    x32 = np.asarray(x, dtype=F32)
    scale = F32(448.0) / F32(np.abs(x32).max())
    scaled = x32 * scale
    assert np.abs(scaled).max() < 464  # below ml_dtypes' NaN: its RNE is the saturating cast here
    return scaled.astype(ml_dtypes.float8_e4m3fn).astype(np.float64), F32(1) / scale


def exact_gemm_fp32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each entry: the exact sum (Fractions), rounded once to fp32 (exact in float64 first, so
    float32() is the one rounding)."""
    out = np.empty((a.shape[0], b.shape[1]), dtype=F32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = sum(Fraction(x) * Fraction(y) for x, y in zip(a[i], b[:, j]))
            assert Fraction(float(s)) == s
            out[i, j] = F32(float(s))
    return out


def reference(q, k, v) -> np.ndarray:
    (qv, qi), (kv, ki), (vv, vi) = cast(q), cast(k), cast(v)
    s = exact_gemm_fp32(qv, kv.T) * (qi * ki) * F32(1 / np.sqrt(q.shape[1]))
    s64 = s.astype(np.float64)
    p = np.exp(s64 - s64.max(axis=1, keepdims=True)).astype(F32)
    rowsum = F32(0) + np.array([F32(float(sum(Fraction(float(x)) for x in row))) for row in p])
    pv, pi = cast(p)
    return (exact_gemm_fp32(pv, vv) * (pi * vi)) / rowsum[:, None]


@pytest.mark.parametrize("shape", [(3, 16, 8, 5), (2, 40, 16, 7)])
def test_exact_unit_equals_independent_reference(shape):
    lq, lk, d, dv = shape
    rng = np.random.default_rng(lk)
    q, k, v = rng.standard_normal((lq, d)) * 2, rng.standard_normal((lk, d)), rng.standard_normal((lk, dv)) * 3
    got = fp8_attention(q, k, v, accumulator="exact")
    want = reference(q, k, v)
    assert got.dtype == F32 and got.view(np.uint32).tolist() == want.astype(F32).view(np.uint32).tolist()
    assert np.abs(got - attention_reference(q, k, v)).max() < 0.2  # FP8 casts: a few per cent


def test_promote_is_the_sum_of_pieces_in_fp32():
    """promote=32: the unit's P V in pieces of 32 products, each from a zero accumulator, added
    one after another to an fp32 accumulator (RNE); promote >= K is the unit unpromoted."""
    from fpemu.scaling import scaled_cast

    rng = np.random.default_rng(3)
    p, v = rng.random((2, 96)).astype(F32), rng.random((96, 4))
    ps, vs = scaled_cast(p, "e4m3"), scaled_cast(v, "e4m3")
    pc, vc = ps.dequantize() * ps.scale, vs.dequantize() * vs.scale
    pieces = [gemm(pc[:, i : i + 32], vc[i : i + 32], inputs="e4m3", accumulator="h100") for i in range(0, 96, 32)]
    acc = np.zeros((2, 4), dtype=F32)
    for piece in pieces:
        acc = (acc + piece).astype(F32)
    want = acc * (ps.scale_inv * vs.scale_inv).astype(F32)
    got = scaled_gemm(ps, vs, unit_for("h100", "e4m3", promote=32))
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    plain, whole = scaled_gemm(ps, vs, unit_for("h100", "e4m3")), scaled_gemm(ps, vs, unit_for("h100", "e4m3", 96))
    assert plain.view(np.uint32).tolist() == whole.view(np.uint32).tolist()
    assert not np.array_equal(plain, got)  # the truncating unit loses what the promotion keeps


def test_promotion_recovers_long_context_accuracy():
    """Positive V over 4096 keys: the unpromoted FP8 accumulator loses more than a per cent, the
    promoted one a few parts in 10^4 (docs/accumulator.md, "FP8 attention", for the sweep)."""
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 64)), rng.standard_normal((4096, 64)), rng.random((4096, 16))
    exact = fp8_attention(q, k, v, accumulator="exact")
    plain = fp8_attention(q, k, v, accumulator="h100")
    promoted = fp8_attention(q, k, v, accumulator="h100", promote=128)
    err = [float(np.abs(x - exact).max() / np.abs(exact).max()) for x in (plain, promoted)]
    assert err[0] > 0.01 and err[1] < 2e-3, err


@pytest.mark.parametrize("args,message", [
    ((np.ones((2, 4)), np.ones((3, 5)), np.ones((3, 2))), "must agree"),
    ((np.ones((2, 4)), np.ones((3, 4)), np.ones((2, 2))), "must agree"),
    ((np.ones(4), np.ones((3, 4)), np.ones((3, 2))), "2-D"),
    ((np.full((2, 4), np.nan), np.ones((3, 4)), np.ones((3, 2))), "finite"),
])  # fmt: skip
def test_bad_inputs_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        fp8_attention(*args)
