"""The linear layers both networks use (fpemu.train.linears) against fpemu's public rounding
functions: FP16/BF16 as autocast runs them, TransformerEngine's per-tensor FP8, and the options
the MLP uses (FP32 dX, no dgrad for the input layer, evaluation without amax recording)."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.train.linears import LinearFP8, LinearFP32, LinearLow
from fpemu.train.recipes import CurrentScaling, DelayedScaling, NoScaling
from fpemu.train.stats import CastStats

F32 = np.float32
RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 32)).astype(F32)
W = (0.1 * RNG.standard_normal((32, 48))).astype(F32)
DY = (1e-3 * RNG.standard_normal((64, 48))).astype(F32)


def test_fp16_linear_is_autocast_arithmetic():
    b = RNG.standard_normal(48).astype(F32)
    lin = LinearLow("fp16")
    y, ctx = lin.fwd(X, W, b)
    q = lambda t: fpemu.quantize(t, "fp16").astype(F32)  # noqa: E731
    assert np.array_equal(y, q(q(X) @ q(W) + q(b)))  # inputs, weight, bias rounded; one output rounding
    stats = CastStats()
    dx, dw, db = lin.bwd(DY * F32(2.0**-20), ctx, stats, "loss")
    dyq = q(DY * F32(2.0**-20))
    assert np.array_equal(dw, q(q(X).T @ dyq)) and np.array_equal(dx, q(dyq @ q(W).T))
    assert stats.kinds["loss"][1] > 0  # values near 2^-30 flush to zero in FP16
    assert set(stats.kinds) == {"loss", "act", "weight", "bias"}


def test_fp32_dx_is_left_to_the_next_cast_to_round_and_count():
    """round_dx=False (the MLP): dX is the FP32 dgrad sums, not counted; with the default it is
    rounded and counted as an activation gradient (the transformer)."""
    q = lambda t: fpemu.quantize(t, "fp16").astype(F32)  # noqa: E731
    for round_dx, kinds in ((True, {"loss", "act", "weight", "bias"}), (False, {"loss", "weight", "bias"})):
        lin = LinearLow("fp16", round_dx=round_dx)
        _, ctx = lin.fwd(X, W, None)
        stats = CastStats()
        dx, dw, _ = lin.bwd(DY, ctx, stats, "loss")
        exact = q(DY) @ q(W).T
        assert np.array_equal(dx, q(exact) if round_dx else exact) and set(stats.kinds) == kinds
        assert np.array_equal(dw, q(q(X).T @ q(DY)))


def test_an_input_layer_skips_dgrad():
    stats = CastStats()
    for lin in (LinearFP32(), LinearLow("bf16"), LinearFP8(CurrentScaling())):
        _, ctx = lin.fwd(X, W, np.zeros(48, F32))
        full = lin.bwd(DY, ctx, None)
        dx, dw, db = lin.bwd(DY, ctx, stats, "loss", need_dx=False)
        assert dx is None and np.array_equal(dw, full[1]) and np.array_equal(db, full[2])
    assert "act" not in stats.kinds  # bf16's dX is neither made nor counted


def test_fp8_linear_scales_per_tensor():
    lin = LinearFP8(CurrentScaling())
    y, ctx = lin.fwd(X, W, None)
    sx, sw = 448.0 / np.abs(X).max(), 448.0 / np.abs(W).max()
    xq = fpemu.quantize(X * F32(sx), "e4m3", overflow="saturate").astype(F32)
    wq = fpemu.quantize(W * F32(sw), "e4m3", overflow="saturate").astype(F32)
    assert np.array_equal(y, (xq @ wq) * (F32(1) / F32(sx)) * (F32(1) / F32(sw)))
    dx, dw, db = lin.bwd(DY, ctx, CastStats())
    assert np.allclose(dw, X.T @ DY, rtol=0.2, atol=0.1 * np.abs(X.T @ DY).max())
    assert np.array_equal(db, DY.sum(axis=0))  # from the unquantized gradient
    delayed = LinearFP8(DelayedScaling())
    delayed.fwd(X, W, None)
    delayed.end_step()  # the second step uses the first step's amax
    assert delayed.scales["x"].scale == F32(448.0) / np.abs(X).max()


def test_fp8_evaluation_leaves_the_amax_history_alone():
    lin = LinearFP8(DelayedScaling())
    lin.fwd(X, W, None, record=False)  # an evaluation pass
    lin.end_step()
    assert lin.scales["x"].scale == F32(1.0) and lin.scales["w"].scale == F32(1.0)
    lin.fwd(X, W, None)
    lin.end_step()
    assert lin.scales["w"].scale == F32(448.0) / np.abs(W).max()


def test_unscaled_fp8_casts_with_scale_one():
    lin = LinearFP8(NoScaling())
    _, ctx = lin.fwd(np.ones((1, 1), F32), np.ones((1, 4), F32), None)
    stats = CastStats()
    _, dw, _ = lin.bwd(np.float32([[1e-9, 2.0**-16, 3.0, 1e6]]), ctx, stats)
    # E5M2 without a scale: below half its smallest subnormal (2^-16) is 0, beyond 57344 saturates.
    assert dw.tolist() == [[0.0, 2.0**-16, 3.0, 57344.0]]
    assert stats.underflow == 1 and stats.overflow == 1


def test_operand_views_count_saturation_where_the_cast_does():
    x = np.float32([[1.0, -3.5, 1e-9]])
    w = np.float32([[1.0], [2.0], [3.0]])
    cur = LinearFP8(CurrentScaling())
    vx, vw = cur.operands(x, w, cur.fwd(x, w, None)[1])
    # current scaling puts the amax exactly at 448: nothing saturates; 1e-9 * 128 flushes
    assert not vx.saturated.any() and vx.values.tolist() == [[1.0, -3.5, 0.0]] and float(vx.scale) == 1 / 128
    delayed = LinearFP8(DelayedScaling())
    delayed.fwd(x, w, None)
    delayed.end_step()  # the next step's scale is 448 / 3.5 = 128
    vx, _ = delayed.operands(2 * x, w, delayed.fwd(2 * x, w, None)[1])
    assert vx.saturated.tolist() == [[False, True, False]] and vx.values[0, 1] == -3.5  # -7 * 128 > 448
    low = LinearLow("fp16")
    big = np.float32([[1.0, 7e4]])
    vx, vw = low.operands(big, w[:2], low.fwd(big, w[:2], None)[1])
    assert vx.saturated.tolist() == [[False, True]] and np.isinf(vx.values[0, 1]) and vx.scale is None
    vx, _ = LinearFP32().operands(big, w[:2], (big, w[:2]))
    assert not vx.saturated.any() and vx.values is big

