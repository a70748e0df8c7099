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
