"""The lesson at a glance: one figure of three panels sharing the step axis — the training
loss over FP32's (log scale), the loss scale (log2) with the skipped steps marked, and the underflow fraction of
each kind of gradient tensor."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .history import History
from .report import baseline_of
from .stats import KIND_NAMES

_KIND_STYLES = {"loss": "-", "act": "--", "weight": ":", "bias": "-."}


def smooth(v: np.ndarray, k: int = 20) -> np.ndarray:
    """Moving average of the last ``k`` values (fewer at the start).

    >>> smooth(np.array([1.0, 3.0, 5.0]), 2).tolist()
    [1.0, 2.0, 4.0]
    """
    c = np.cumsum(np.insert(np.asarray(v, dtype=np.float64), 0, 0.0))
    n = np.arange(1, len(v) + 1)
    lo = np.maximum(n - k, 0)
    return (c[n] - c[lo]) / (n - lo)


def excess_curve(h: History, base: History, k: int = 25) -> np.ndarray:
    """Per step, ``h``'s training loss over the baseline's in percent (both averaged over the
    last ``k`` steps: the runs see the same batches, so the batch-to-batch noise cancels).

    >>> import numpy as np
    >>> a = History("fp16", "none", None, 0, 2, "fp16", np.array([1.1, 2.2]), *[np.zeros(2)] * 4, np.zeros(1))
    >>> b = History("fp32", "none", None, 0, 2, None, np.array([1.0, 2.0]), *[np.zeros(2)] * 4, np.zeros(1))
    >>> np.round(excess_curve(a, b, 1), 6).tolist()
    [10.0, 10.0]
    """
    return 100.0 * (smooth(h.loss, k) / smooth(base.loss, k) - 1.0)


def draw_lesson(plt, histories: Sequence[History], path: Path) -> Path:
    """The three-panel figure of a comparison, written to ``path``."""
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    colors = {h.label: f"C{i}" for i, h in enumerate(histories)}
    _excess_panel(axes[0], histories, colors)
    _scale_panel(axes[1], histories, colors)
    _underflow_panel(axes[2], histories, colors)
    axes[2].set_xlabel("step")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


def _excess_panel(ax, histories: Sequence[History], colors: dict) -> None:
    drawn = False
    for h in histories:
        base = baseline_of(h, histories)
        if base is None or base is h:
            continue
        steps = np.arange(1, h.steps + 1)
        # The table's "vs fp32" ratio, step by step; a log axis shows 1.9x and 10^5x together.
        ax.plot(steps, 1.0 + excess_curve(h, base) / 100.0, color=colors[h.label], lw=1.4, label=h.label)
        drawn = True
    if drawn:
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("training loss / fp32's")
        ax.set_title("Training loss over FP32's, as the table's 'vs fp32' (moving average of 25 steps)")
    else:  # no baseline to compare with: the loss itself
        for h in histories:
            ax.plot(np.arange(1, h.steps + 1), smooth(h.loss), color=colors[h.label], lw=1.4, label=h.label)
        ax.set_yscale("log")
        ax.set_ylabel("training loss")
        ax.set_title("Training loss (moving average of 20 steps; add an fp32 run to see the excess)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def _scale_panel(ax, histories: Sequence[History], colors: dict) -> None:
    scaled = [h for h in histories if h.loss_scale != "none"]
    for h in scaled:
        steps = np.arange(1, h.steps + 1)
        ax.step(steps, np.log2(h.scale), where="post", color=colors[h.label], lw=1.4, label=h.label)
        sk = np.flatnonzero(h.skipped)
        if sk.size:
            ax.plot(sk + 1, np.log2(h.scale[sk]), "x", color="red", ms=6,
                    label=f"{h.label}: {sk.size} skipped step{'s' if sk.size > 1 else ''}")
    if not scaled:
        ax.text(0.5, 0.5, "no run scales its loss", ha="center", va="center", transform=ax.transAxes)
    else:
        top = max(float(np.nanmax(np.log2(h.scale))) for h in scaled)
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), top + 2)  # 0: the runs without loss scaling
        ax.legend(fontsize=8)
    ax.set_ylabel("log2(loss scale)")
    ax.set_title("Loss scale (x: step skipped for an Inf/NaN gradient; unscaled runs sit at 0)")
    ax.grid(alpha=0.3)


def _underflow_panel(ax, histories: Sequence[History], colors: dict) -> None:
    drawn = False
    for h in histories:
        totals = h.underflow_by_kind()
        for kind, frac in h.kind_underflow.items():
            if totals.get(kind, 0.0) < 0.001:  # under 0.1% over the run: not drawn
                continue
            ax.plot(np.arange(1, h.steps + 1), 100.0 * smooth(frac, 10), color=colors[h.label],
                    ls=_KIND_STYLES.get(kind, "-"), lw=1.3, label=f"{h.label}: {KIND_NAMES.get(kind, kind)}")
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "no kind of gradient lost 0.1% of its values", ha="center", va="center",
                transform=ax.transAxes)
    else:
        ax.legend(fontsize=7, ncol=2)
    ax.set_ylabel("flushed to zero (%)")
    ax.set_title("Gradient values flushed to zero, by kind of tensor (moving average of 10 steps)")
    ax.grid(alpha=0.3)
