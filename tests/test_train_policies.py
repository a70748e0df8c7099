"""Tests of fpemu.train.policies: the FP8 cast (saturation and counts), the block-scaled
policies against fpemu.mx, and GEMMs through an accumulator model."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import train as T
from fpemu.train.stats import CastStats

F32 = np.float32


# ---- FP8 casts -------------------------------------------------------------------------------
def test_fp8_cast_saturates_and_counts():
    pol = T.make_policy("fp8", fp8_recipe=T.CurrentScaling())
    stats = CastStats()
    g = np.array([1.0, -3.0, 1e-30], F32)
    q, (inv, fmt) = pol.cast_grad(g, ("dy", 0), stats)
    assert fmt.name == "e5m2" and inv == F32(1.0) / T.current_scale(3.0, 57344.0)
    assert stats.underflow == 1 and stats.nonzero == 3  # 1e-30 * scale still below E5M2
    # Delayed scaling with a stale (too large) scale saturates instead of overflowing.
    pol = T.make_policy("fp8")
    st = pol._state(("dy", 0), pol.bwd)
    st.scale = F32(2.0**20)
    stats = CastStats()
    q, _ = pol.cast_grad(np.array([1.0, 1e-3], F32), ("dy", 0), stats)
    assert q.tolist() == [57344.0, 1024.0] and stats.overflow == 1


# ---- block-scaled operands and accumulator models ---------------------------------------------
def test_block_format_policies():
    pytest.importorskip("fpemu.mx")
    task = T.make_task(0, n_train=512, batch_size=64, hidden=32, depth=1, n_labels=32)
    for p, low in (("mxfp8", "e4m3"), ("nvfp4", "e2m1")):
        h = T.run(p, "none", 3, 0, task=task)
        assert np.all(np.isfinite(h.loss)) and h.low_format == low
        assert h.nonzero_count > 0
    pol = T.make_policy("mxfp8")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 64)).astype(F32), rng.standard_normal((64, 4)).astype(F32)
    # Each operand is quantized in blocks of 32 along K: compare with fpemu.mx directly.
    qa = fpemu.mx.quantize(a, "mxfp8_e4m3", axis=1, scale_rounding="rceil").dequantize()
    qb = fpemu.mx.quantize(b, "mxfp8_e4m3", axis=0, scale_rounding="rceil").dequantize()
    assert np.array_equal(pol.gemm(a, False, b, False), np.asarray(qa, F32) @ np.asarray(qb, F32))
    with pytest.raises(ValueError, match="accumulator"):
        T.run("mxfp8", steps=1, task=task, accumulator="h100")


def test_accumulator_path():
    pytest.importorskip("fpemu.accumulator")
    task = T.make_task(0, n_train=512, batch_size=64, hidden=16, depth=2)
    a = T.run("fp16", "dynamic", 3, 0, task=task, accumulator="fp32")
    b = T.run("fp16", "dynamic", 3, 0, task=task)
    assert np.all(np.isfinite(a.loss)) and a.accumulator == "fp32"
    # Sequential FP32 accumulation differs from BLAS's sums by rounding only.
    assert np.allclose(a.loss, b.loss, rtol=1e-4)
    with pytest.raises(ValueError):
        T.run("fp16", steps=1, task=task, accumulator="no-such-unit")


def test_fp8_bias_gradient_is_summed_from_the_unquantized_dy_in_mlp_and_transformer():
    """One rule in both networks (TransformerEngine's: bgrad_quantize sums the high-precision
    grad_output while it casts it to FP8): the MLP's fp8 policy and the transformer's LinearFP8
    give the same bias gradient, the exact FP32 column sums of dY, not of its E5M2 copy."""
    from fpemu.train.linears import LinearFP8
    from fpemu.train.recipes import CurrentScaling
    from fpemu.train.stats import CastStats

    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    dy = (rng.standard_normal((8, 3)) * 1e-3).astype(np.float32)
    lin = LinearFP8(CurrentScaling())
    _, ctx = lin.fwd(x, w, np.zeros(3, np.float32))
    _, _, db_gpt = lin.bwd(dy, ctx, None)
    policy = T.make_policy("fp8", fp8_recipe="current")
    qd, sd = policy.cast_grad(dy, ("dy", 0), CastStats())
    db_mlp = policy.bias_grad(dy, qd, sd)
    assert np.array_equal(db_mlp, db_gpt) and np.array_equal(db_mlp, dy.sum(axis=0))
    assert not np.array_equal(db_mlp, (qd * sd[0]).sum(axis=0))  # the quantized sum differs here


def test_unscaled_fp8_casts_with_scale_one():
    from fpemu.train.stats import CastStats

    policy = T.make_policy("fp8", fp8_recipe="unscaled")
    g = np.float32([1e-9, 2.0**-16, 3.0, 1e6])
    q, (inv, fmt) = policy.cast_grad(g, ("dy", 0), CastStats())
    # E5M2 without a scale: below half its smallest subnormal (2^-16) is 0, beyond 57344 saturates.
    assert float(inv) == 1.0 and fmt.name == "e5m2" and q.tolist() == [0.0, 2.0**-16, 3.0, 57344.0]
    assert policy.variant == "unscaled" and T.make_policy("fp8").variant is None
