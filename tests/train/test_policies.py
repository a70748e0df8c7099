"""Tests of fpemu.train.policies: the MLP's layers (the transformer's linear layers), its FP8
casts (saturation and counts), where it counts activation gradients, the block-scaled policies
against fpemu.mx, and GEMMs through an accumulator model."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import train as T
from fpemu.train.stats import CastStats

F32 = np.float32


# ---- FP8 casts -------------------------------------------------------------------------------
def _fp8_layer(recipe, d_out: int):
    """Layer 0 of an MLP fp8 policy and its context for X = 1 (one row) and W = 1: its wgrad
    is then dY's E5M2 copy times dY's inverse scale."""
    lin = T.make_policy("fp8", fp8_recipe=recipe).linear(0)
    return lin, lin.fwd(np.ones((1, 1), F32), np.ones((1, d_out), F32), None)[1]


def test_fp8_cast_saturates_and_counts():
    lin, ctx = _fp8_layer(T.CurrentScaling(), 3)
    stats = CastStats()
    g = np.array([[1.0, -3.0, 1e-30]], F32)
    _, dw, _ = lin.bwd(g, ctx, stats)
    assert lin.low.name == "e5m2" and lin.scales["dy"].scale_for(g) == T.current_scale(3.0, 57344.0)
    assert stats.underflow == 1 and stats.nonzero == 3  # 1e-30 * scale still below E5M2
    # Delayed scaling with a stale (too large) scale saturates instead of overflowing.
    lin, ctx = _fp8_layer("delayed", 2)
    lin.scales["dy"].scale = F32(2.0**20)
    stats = CastStats()
    _, dw, _ = lin.bwd(np.array([[1.0, 1e-3]], F32), ctx, stats)
    assert (dw * F32(2.0**20)).tolist() == [[57344.0, 1024.0]] and stats.overflow == 1


# ---- block-scaled operands and accumulator models ---------------------------------------------
def test_block_format_policies():
    pytest.importorskip("fpemu.mx")
    task = T.make_task(0, n_train=512, batch_size=64, hidden=32, depth=1, n_labels=32)
    for p, low in (("mxfp8", "e4m3"), ("nvfp4", "e2m1")):
        h = T.run(p, "none", 3, 0, task=task)
        assert np.all(np.isfinite(h.loss)) and h.low_format == low
        assert h.nonzero_count > 0
    lin = T.make_policy("mxfp8").linear(0)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 64)).astype(F32), rng.standard_normal((64, 4)).astype(F32)
    # Each operand is quantized in blocks of 32 along K: compare with fpemu.mx directly.
    qa = fpemu.mx.quantize(a, "mxfp8_e4m3", axis=1, scale_rounding="rceil").dequantize()
    qb = fpemu.mx.quantize(b, "mxfp8_e4m3", axis=0, scale_rounding="rceil").dequantize()
    assert np.array_equal(lin.fwd(a, b, None)[0], np.asarray(qa, F32) @ np.asarray(qb, F32))
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


def test_mlp_and_transformer_share_their_linear_layers():
    """One class per precision in both networks: the MLP's layers are the transformer's (for
    fp8, TransformerEngine's bias rule: bgrad_quantize sums the high-precision grad_output while
    it casts it to FP8, so db is the exact FP32 column sums of dY, not of its E5M2 copy)."""
    from fpemu.train.gpt.precision import make_gpt_precision
    from fpemu.train.recipes import fp8_cast

    for p in T.PRECISIONS:
        mlp, gpt = T.make_policy(p).linear(1), make_gpt_precision(p, 2, nvfp4_recipe="none").blocks[0]["fc1"]
        assert type(mlp) is type(gpt) and mlp.name == gpt.name and mlp.low == gpt.low
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 5)).astype(F32)
    w = rng.standard_normal((5, 3)).astype(F32)
    dy = (rng.standard_normal((8, 3)) * 1e-3).astype(F32)
    lin = T.make_policy("fp8", fp8_recipe="current").linear(0)
    _, ctx = lin.fwd(x, w, np.zeros(3, F32))
    _, _, db = lin.bwd(dy, ctx, None)
    dyq, inv = fp8_cast(dy, lin.bwd_fmt, lin.scales["dy"].scale_for(dy))
    assert np.array_equal(db, dy.sum(axis=0)) and not np.array_equal(db, (dyq * inv).sum(axis=0))


def test_mlp_counts_each_activation_gradient_once_after_the_relu_mask():
    """fp16: the dgrad sums stay FP32 through the ReLU mask and are rounded and counted where
    they enter the next layer's backward GEMMs (as "act"), not a second time at dgrad."""
    from fpemu.train.network import backward, bce_loss, forward, init_params

    rng = np.random.default_rng(4)
    params = init_params((6, 8, 3), 0)
    x, y = rng.standard_normal((16, 6)).astype(F32), (rng.random((16, 3)) > 0.5).astype(F32)
    policy = T.make_policy("fp16")
    logits, cache = forward(params, x, policy)
    stats = CastStats()
    backward(params, cache, bce_loss(logits, y)[1], y, 1024.0, policy, stats)
    q = lambda t: fpemu.quantize(t, "fp16").astype(F32)  # noqa: E731
    dz = (bce_loss(logits, y)[1] - y) * F32(1024.0 / y.size)
    dh = np.where(cache[0][1], q(dz) @ q(params[2]).T, F32(0.0))  # layer 1's dgrad, masked
    assert stats.kinds["act"][0] == np.count_nonzero(dh) and stats.kinds["loss"][0] == np.count_nonzero(dz)
    assert policy.make_linear(1).round_dx is False


def test_unscaled_fp8_names_its_recipe():
    policy = T.make_policy("fp8", fp8_recipe="unscaled")
    assert policy.variant == "unscaled" and T.make_policy("fp8").variant == "delayed"
    assert policy.linear(0).scales["dy"].scale_for(np.float32([1e-9])) == F32(1.0)
