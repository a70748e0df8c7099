"""What a training run records: :class:`History`, step by step, and its summary."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .stats import HIST_HI, HIST_LO, KIND_NAMES, CastStats

_HIST_EVERY = 10  # steps between samples of the gradient exponent histogram


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
    # Per kind of gradient tensor (stats.KIND_NAMES): [nonzero, underflow, overflow] over the
    # run, and the underflow fraction of each step.
    kind_counts: dict = field(default_factory=dict)
    kind_underflow: dict = field(default_factory=dict)
    variant: str | None = None  # a recipe's name where the precision alone does not say it
    task_name: str = "mlp"

    @property
    def label(self) -> str:
        if self.precision == "fp32":
            return "fp32"
        head = self.precision + (f"[{self.variant}]" if self.variant else "")
        return f"{head}+{self.loss_scale}" + (f"+{self.accumulator}" if self.accumulator else "")

    def underflow_by_kind(self) -> dict[str, float]:
        """The fraction of each kind's non-zero gradient values that became 0 over the run."""
        return {k: (int(c[1]) / int(c[0]) if int(c[0]) else 0.0) for k, c in self.kind_counts.items()}

    @property
    def grad_exponents(self) -> np.ndarray:
        """The exponent of each bin of :attr:`grad_exponent_hist` (the lowest/highest are clipped)."""
        return np.arange(HIST_LO, HIST_HI + 1)

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
            "underflow_by_kind": self.underflow_by_kind(),
            "task": self.task_name,
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
                "underflow_by_kind": {k: [float(v) for v in a] for k, a in self.kind_underflow.items()},
            },
            "kind_counts": {k: [int(v) for v in c] for k, c in self.kind_counts.items()},
            "test_curve": [list(t) for t in self.test_curve],
            "grad_exponent_hist": {
                "exponents": self.grad_exponents.tolist(),
                "counts": self.grad_exponent_hist.tolist(),
            },
        }


def check_histories(histories: object, allow_empty: bool = True) -> list[History]:
    if not isinstance(histories, (list, tuple)) or not all(isinstance(h, History) for h in histories):
        raise TypeError(f"histories must be a list of History objects (from run or compare), got {histories!r}")
    if not histories and not allow_empty:
        raise ValueError("no histories to plot")
    return list(histories)


class Recorder:
    """What a training loop records step by step, turned into a :class:`History` at the end.

    >>> r = Recorder(2)
    >>> st = r.stats_for(0); st.add(np.float32([1e-9, 1.0]), np.float32([0.0, 1.0]), kind="loss")
    >>> r.record(0, 0.5, 1.0, False, st); r.record(1, 0.25, 1.0, False, r.stats_for(1))
    >>> r.under.tolist(), r.kind_underflow["loss"].tolist()
    ([0.5, 0.0], [0.5, 0.0])
    """

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.loss = np.zeros(steps)
        self.scale = np.zeros(steps)
        self.skipped = np.zeros(steps, dtype=bool)
        self.under = np.zeros(steps)
        self.over = np.zeros(steps)
        self.hist = np.zeros(HIST_HI - HIST_LO + 1, dtype=np.int64)
        self.kind_counts: dict[str, np.ndarray] = {}
        self.kind_underflow: dict[str, np.ndarray] = {}

    def stats_for(self, step: int) -> CastStats:
        """The counters of one step (sampling the exponent histogram every few steps)."""
        return CastStats(hist=np.zeros_like(self.hist) if step % _HIST_EVERY == 0 else None)

    def record(self, step: int, loss: float, scale: float, skipped: bool, stats: CastStats) -> None:
        self.loss[step], self.scale[step], self.skipped[step] = loss, scale, skipped
        nz = stats.nonzero
        self.under[step] = stats.underflow / nz if nz else 0.0
        self.over[step] = stats.overflow / nz if nz else 0.0
        for kind, c in stats.kinds.items():
            self.kind_counts.setdefault(kind, np.zeros(3, np.int64))
            self.kind_counts[kind] += c
            self.kind_underflow.setdefault(kind, np.zeros(self.steps))[step] = c[1] / c[0] if c[0] else 0.0
        if stats.hist is not None:
            self.hist += stats.hist

    def history(self, **fields) -> History:
        """The :class:`History` of the recorded steps; ``fields`` are its other fields."""
        total = sum(self.kind_counts.values(), np.zeros(3, np.int64))
        order = [k for k in KIND_NAMES if k in self.kind_counts] + sorted(set(self.kind_counts) - set(KIND_NAMES))
        return History(
            steps=self.steps, loss=self.loss, scale=self.scale, skipped=self.skipped,
            underflow=self.under, overflow=self.over, grad_exponent_hist=self.hist,
            nonzero_count=int(total[0]), underflow_count=int(total[1]), overflow_count=int(total[2]),
            kind_counts={k: self.kind_counts[k] for k in order},
            kind_underflow={k: self.kind_underflow[k] for k in order}, **fields,
        )
