"""The default task's claims (docs/training.md): FP16 without loss scaling underflows and
ends worse than FP32; dynamic loss scaling recovers FP32."""

from __future__ import annotations

import pytest

from fpemu import train as T


# ---- the default task's claims (fixed seed 0, 600 steps) --------------------------------------
@pytest.fixture(scope="module")
def default_runs():
    task = T.make_task(0)
    runs = [("fp32", "none"), ("fp16", "none"), ("fp16", "dynamic")]
    return [T.run(p, ls, 600, 0, task=task) for p, ls in runs]


def test_fp16_without_scaling_underflows_and_ends_worse(default_runs):
    fp32, none, _ = default_runs
    s = none.summary()
    assert s["underflow_fraction"] > 0.30  # measured 35.1%: a third of all gradient values -> 0
    assert none.underflow[-100:].mean() > 0.55  # measured 62%: late in training most of them
    assert none.underflow[:100].mean() < 0.05  # measured 1.2%: early on the gradients fit
    assert none.final_loss > 1.15 * fp32.final_loss  # measured +24.6%
    assert s["skipped_steps"] == 0 and s["overflow_fraction"] == 0.0


def test_dynamic_scaling_recovers_fp32(default_runs):
    fp32, _, dyn = default_runs
    s = dyn.summary()
    assert abs(dyn.final_loss - fp32.final_loss) < 0.05 * fp32.final_loss  # measured +2.2%
    assert s["underflow_fraction"] < 0.05  # measured 2.9%
    assert s["final_scale"] == 65536.0 and s["skipped_steps"] == 0
    assert abs(dyn.final_accuracy - fp32.final_accuracy) < 0.002


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_default_task_claims_other_seeds(seed):
    task = T.make_task(seed)
    fp32, none, dyn = (T.run(p, ls, 600, seed, task=task)
                       for p, ls in [("fp32", "none"), ("fp16", "none"), ("fp16", "dynamic")])
    assert none.summary()["underflow_fraction"] > 0.30  # measured 34.2-35.3%
    assert none.final_loss > 1.15 * fp32.final_loss  # measured +24.9% .. +28.0%
    assert abs(dyn.final_loss - fp32.final_loss) < 0.05 * fp32.final_loss  # measured -0.5% .. +2.4%
