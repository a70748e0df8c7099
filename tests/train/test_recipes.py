"""Tests of fpemu.train.recipes: the FP8 delayed and current scaling rules and the amax
history of a tensor slot."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import train as T

F32 = np.float32


# ---- FP8 scaling rules ------------------------------------------------------------------------
def test_delayed_scale_rule():
    assert T.delayed_scale(3.5, 1.0, 448.0) == 128.0
    assert T.delayed_scale(3.5, 1.0, 448.0, margin=2) == 32.0
    assert T.delayed_scale(3.0, 1.0, 57344.0) == F32(F32(57344.0) / F32(3.0))
    for bad in (0.0, -1.0, np.inf, np.nan):
        assert T.delayed_scale(bad, 5.0, 448.0) == 5.0  # old scale kept
    assert T.delayed_scale(1e-44, 1.0, 448.0) == np.finfo(F32).max  # Inf scale -> FLT_MAX


def test_current_scale_rule():
    assert T.current_scale(3.0, 448.0) == F32(F32(448.0) / F32(3.0))
    assert T.current_scale(3.0, 448.0, power_2_scale=True) == 128.0
    for bad in (0.0, np.inf, np.nan):
        assert T.current_scale(bad, 448.0) == 1.0
    assert T.current_scale(1e-44, 448.0) == np.finfo(F32).max


def test_delayed_history_window_and_most_recent():
    ts = T.TensorScale(448.0, T.DelayedScaling(amax_history_len=3))
    seq = [4.0, 1.0, 2.0, 0.5, 0.25, 7.0]
    got = []
    for a in seq:
        got.append(float(ts.scale_for(np.array([a, -a / 2], F32))))
        ts.update()
    # The scale at step t comes from the max of the amaxes of steps t-3 .. t-1.
    assert got == [1.0, 112.0, 112.0, 112.0, 224.0, 448.0 / 2.0]
    rec = T.TensorScale(448.0, T.DelayedScaling(amax_compute_algo="most_recent"))
    got = []
    for a in seq:
        got.append(float(rec.scale_for(np.array([a], F32))))
        rec.update()
    assert got == [1.0, 112.0, 448.0, 224.0, 896.0, 1792.0]
    with pytest.raises(ValueError):
        T.DelayedScaling(amax_compute_algo="mean")


def test_delayed_scaling_keeps_scale_on_nan_amax():
    ts = T.TensorScale(57344.0, T.DelayedScaling(amax_history_len=4))
    ts.scale_for(np.array([2.0], F32))
    ts.update()
    assert ts.scale == 28672.0
    ts.scale_for(np.array([np.nan], F32))
    ts.update()
    assert ts.scale == 28672.0


# ---- one scale rule, one cast: training goes through fpemu.scaled_cast ------------------------
def test_train_rules_are_the_public_scale_rule():
    from fpemu import scale_from_amax

    rng = np.random.default_rng(3)
    amaxes = np.concatenate([F32(2.0) ** rng.integers(-140, 120, 300) * rng.random(300).astype(F32),
                             F32([1e-45, 1e-38, 3.4e38])]).astype(F32)
    for fp8_max in (448.0, 57344.0):
        for margin in (0, 1, 7):
            want = scale_from_amax(amaxes, fp8_max, margin)
            got = [T.delayed_scale(a, 1.0, fp8_max, margin) for a in amaxes]
            assert np.array_equal(np.array(got, F32).view(np.uint32), want.view(np.uint32))
        got = [T.current_scale(a, fp8_max) for a in amaxes]
        assert np.array_equal(np.array(got, F32).view(np.uint32), scale_from_amax(amaxes, fp8_max).view(np.uint32))


def test_fp8_cast_is_scaled_cast_and_the_old_arithmetic():
    from fpemu import get_format, quantize, scaled_cast
    from fpemu.train.recipes import fp8_cast

    rng = np.random.default_rng(4)
    x = (rng.standard_normal((64, 48)) * F32(2.0) ** rng.integers(-30, 10, (64, 48))).astype(F32)
    x[0, :4] = [np.inf, -np.inf, np.nan, 1e30]
    for name in ("e4m3", "e5m2"):
        fmt = get_format(name)
        for s in (F32(1.0), F32(448.0 / 3.7), F32(2.0**-20), np.finfo(F32).max):
            q, inv = fp8_cast(x, fmt, s)
            with np.errstate(over="ignore", invalid="ignore"):
                old = np.asarray(quantize(x * s, fmt, overflow="saturate"), F32)  # the former copy
            assert np.array_equal(q.view(np.uint32), old.view(np.uint32))  # bit for bit, NaNs too
            t = scaled_cast(x, fmt, scale=s)
            assert inv == t.scale_inv == F32(F32(1.0) / s)
        q, inv = fp8_cast(x[1:], fmt, F32(0.0))  # a delayed scale that underflowed: no error
        assert not q.any() and np.isinf(inv)
