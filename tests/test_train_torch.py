"""fpemu's FP16 training against real PyTorch mixed precision on the default task (seed 0).

torch trains the same network from the same weights on the same batches under
``torch.autocast("cpu", dtype=torch.float16)`` with FP32 master weights and
``torch.amp.GradScaler`` (scripts/torch_mlp_reference.py); fpemu trains it with
``fpemu.train.run``. Skipped without torch. About 40 s of CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from torch_mlp_reference import train_torch  # noqa: E402


@pytest.fixture(scope="module")
def both(default_task, default_runs):
    """fpemu's default runs (tests/conftest.py, shared with test_train_claims.py) and torch's."""
    ours = {f"{h.precision}+{h.loss_scale}": h for h in default_runs}
    assert list(ours) == ["fp32+none", "fp16+none", "fp16+dynamic"]
    theirs = {k: train_torch(0, *k.split("+"), 600, task=default_task) for k in ours}
    return ours, theirs


def test_fp32_runs_start_identical(both):
    ours, theirs = both
    # Same data, weights and batches; FP32 sums in different orders drift apart only slowly.
    a, b = ours["fp32+none"].loss[:30], theirs["fp32+none"]["loss"][:30]
    assert max(abs(x - y) / y for x, y in zip(a, b)) < 1e-5  # measured 2e-7


@pytest.mark.parametrize("label", ["fp16+none", "fp16+dynamic"])
def test_underflow_matches_real_fp16(both, label):
    ours, theirs = both
    h, t = ours[label], theirs[label]
    # Measured, seed 0: fp16+none 37.83% vs 37.87%; fp16+dynamic 7.11% vs 7.06%.
    assert abs(h.summary()["underflow_fraction"] - t["underflow"]) < 0.01
    for kind, frac in t["underflow_by_kind"].items():
        # Measured: loss gradients 65.84% vs 65.79%, activation 13.49% vs 13.47%, weights
        # 0.55% vs 0.50% (no scaling); 16.54% vs 16.45% of the loss gradients with scaling.
        assert abs(h.underflow_by_kind()[kind] - frac) < 0.01, kind


def test_final_loss_excess_matches_real_fp16(both):
    ours, theirs = both
    ex = {k: ours[k].final_loss / ours["fp32+none"].final_loss - 1 for k in ours}
    tx = {k: theirs[k]["final_loss"] / theirs["fp32+none"]["final_loss"] - 1 for k in theirs}
    # Measured, seed 0: without scaling +25.2% (fpemu) and +25.8% (torch); with dynamic scaling
    # +1.8% and -0.6% (the runs' chaotic drift; seeds 0-3 in docs/training.md).
    assert ex["fp16+none"] > 0.15 and tx["fp16+none"] > 0.15
    assert abs(ex["fp16+none"] - tx["fp16+none"]) < 0.03
    assert abs(ex["fp16+dynamic"]) < 0.05 and abs(tx["fp16+dynamic"]) < 0.05
