"""What a training run records: :class:`History`, step by step, and its summary."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .stats import _HIST_HI, _HIST_LO


@dataclass
class History:
    """What one training run recorded, step by step, and its summary."""

    precision: str
    loss_scale: str
    accumulator: str | None
    seed: int
    steps: int
    low_format: str | None
    loss: np.ndarray  # training loss of each step's batch (unscaled, FP32)
    scale: np.ndarray  # loss scale used in each step
    skipped: np.ndarray  # whether the step was skipped (Inf/NaN gradients)
    underflow: np.ndarray  # fraction of non-zero gradient values rounded to zero
    overflow: np.ndarray  # fraction of non-zero gradient values that became Inf / saturated
    grad_exponent_hist: np.ndarray  # counts of floor(log2|g|) of the gradients as cast
    final_loss: float = float("nan")  # training loss at the end (4096 training examples)
    final_accuracy: float = float("nan")
    time_s: float = 0.0
    underflow_count: int = 0
    overflow_count: int = 0
    nonzero_count: int = 0
    test_curve: list = field(default_factory=list)  # (step, test loss, accuracy)

    @property
    def label(self) -> str:
        if self.precision == "fp32":
            return "fp32"
        return f"{self.precision}+{self.loss_scale}" + (f"+{self.accumulator}" if self.accumulator else "")

    @property
    def grad_exponents(self) -> np.ndarray:
        """The exponent of each bin of :attr:`grad_exponent_hist` (the lowest/highest are clipped)."""
        return np.arange(_HIST_LO, _HIST_HI + 1)

    def summary(self) -> dict:
        """The per-run numbers of the comparison table."""
        n = self.nonzero_count
        return {
            "run": self.label,
            "precision": self.precision,
            "loss_scale": self.loss_scale,
            "accumulator": self.accumulator,
            "final_loss": self.final_loss,
            "final_accuracy": self.final_accuracy,
            "skipped_steps": int(self.skipped.sum()),
            "underflow_fraction": self.underflow_count / n if n else 0.0,
            "overflow_fraction": self.overflow_count / n if n else 0.0,
            "final_scale": float(self.scale[-1]) if len(self.scale) else 1.0,
            "time_s": self.time_s,
        }

    def to_dict(self) -> dict:
        """JSON-ready summary plus the per-step history."""
        return {
            "summary": self.summary(),
            "seed": self.seed,
            "steps": self.steps,
            "low_format": self.low_format,
            "history": {
                "loss": [float(v) for v in self.loss],
                "scale": [float(v) for v in self.scale],
                "skipped": [bool(v) for v in self.skipped],
                "underflow": [float(v) for v in self.underflow],
                "overflow": [float(v) for v in self.overflow],
            },
            "test_curve": [list(t) for t in self.test_curve],
            "grad_exponent_hist": {
                "exponents": self.grad_exponents.tolist(),
                "counts": self.grad_exponent_hist.tolist(),
            },
        }


def _check_histories(histories: object, allow_empty: bool = True) -> list[History]:
    if not isinstance(histories, (list, tuple)) or not all(isinstance(h, History) for h in histories):
        raise TypeError(f"histories must be a list of History objects (from run or compare), got {histories!r}")
    if not histories and not allow_empty:
        raise ValueError("no histories to plot")
    return list(histories)
