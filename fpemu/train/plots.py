"""The plots of a comparison: the lesson at a glance (:mod:`.lesson`), the loss curves, the loss
scale and the gradient-exponent histogram (matplotlib, imported only when a plot is drawn)."""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..formats import get_format
from .history import History, check_histories
from .lesson import smooth, draw_lesson


def pyplot_agg():
    """matplotlib.pyplot on the file-only Agg backend, or a clear error when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError(
            "--plot needs matplotlib: pip install 'fpemu[plot]' (or pip install matplotlib)"
        ) from None
    return plt


PLOT_FILES = ("lesson.png", "loss.png", "loss_scale.png", "grad_hist.png")


def plot_directory(directory: str | Path) -> Path:
    """Create ``directory`` (and its parents) and make sure the PNGs of :func:`plot` can be
    written there, without writing them: an OSError naming the path otherwise. The ``train``
    command calls it before training, so a bad path fails in a second, not after the runs."""
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(out))
    out.mkdir(parents=True, exist_ok=True)
    for name in PLOT_FILES:
        if (out / name).is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(out / name))
    with tempfile.TemporaryFile(dir=out):  # PermissionError (naming out) if it is not writable
        pass
    return out


def plot(histories: Sequence[History], directory: str | Path) -> list[Path]:
    """Write :data:`PLOT_FILES` into ``directory``: ``lesson.png`` (excess loss over FP32, loss
    scale, underflow per kind of gradient), ``loss.png``, ``loss_scale.png``, ``grad_hist.png``."""
    histories = check_histories(histories, allow_empty=False)
    plt = pyplot_agg()
    out = plot_directory(directory)
    # A diverged run's Inf/NaN losses are drawn as gaps, without floating-point warnings.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _draw(plt, histories, out)


def _draw(plt, histories: list[History], out: Path) -> list[Path]:
    """The figures of :func:`plot`, written into ``out``."""
    written = [draw_lesson(plt, histories, out / "lesson.png")]

    fig, ax = plt.subplots(figsize=(7, 4))
    for h in histories:
        ax.plot(np.arange(1, h.steps + 1), smooth(h.loss), label=h.label, lw=1.3)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (moving average of 20 steps)")
    ax.set_yscale("log")
    ax.set_title("Training loss by precision policy")
    ax.legend()
    ax.grid(alpha=0.3)
    written.append(_save(fig, out / "loss.png"))

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for h in histories:
        if h.loss_scale != "none":
            ax.step(np.arange(1, h.steps + 1), h.scale, where="post", label=h.label)
            sk = np.flatnonzero(h.skipped)
            if sk.size:
                ax.plot(sk + 1, h.scale[sk], "rx", ms=5, label=f"{h.label}: skipped step")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    ax.set_title("Dynamic loss scale (GradScaler)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.grid(alpha=0.3)
    written.append(_save(fig, out / "loss_scale.png"))

    written.append(_plot_histogram(plt, histories, out / "grad_hist.png"))
    plt.close("all")
    return written


def _plot_histogram(plt, histories: Sequence[History], path: Path) -> Path:
    """Gradient exponents against the low format's range (Micikevicius et al. 2018, fig. 3)."""
    base = next((h for h in histories if h.precision == "fp16" and h.loss_scale == "none"), None)
    base = base or next((h for h in histories if h.low_format), histories[0])
    fmt = get_format(base.low_format or "fp16")
    exps = base.grad_exponents
    frac = base.grad_exponent_hist / max(base.grad_exponent_hist.sum(), 1)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(exps, frac, width=1.0, color="tab:blue", alpha=0.8, label=f"gradients of the {base.label} run")
    scaled = next((h for h in histories if h.precision == base.precision and h.loss_scale == "dynamic"), None)
    if scaled is not None and scaled.grad_exponent_hist.sum():
        sfrac = scaled.grad_exponent_hist / scaled.grad_exponent_hist.sum()
        ax.step(exps, sfrac, where="mid", color="black", lw=1.2,
                label=f"{scaled.label} run: the same values times its loss scale")
    lo_sub, lo_norm, hi = np.log2(fmt.min_subnormal), np.log2(fmt.min_normal), np.log2(fmt.max)
    ax.axvspan(lo_sub - 0.5, lo_norm, color="tab:orange", alpha=0.15, label=f"{fmt.name} subnormal")
    ax.axvspan(lo_norm, hi, color="tab:green", alpha=0.12, label=f"{fmt.name} normal range")
    ax.axvline(lo_sub - 1, color="red", ls="--", lw=1, label=f"below 2^{int(lo_sub) - 1}: flushed to 0")
    used = np.flatnonzero(base.grad_exponent_hist)
    if used.size:
        ax.set_xlim(exps[used[0]] - 2, max(exps[used[-1]], int(hi)) + 2)
    ax.set_xlabel("log2 |gradient value|")
    ax.set_ylabel("fraction of non-zero values")
    ax.set_title(f"Gradient values cast to {fmt.name} vs its representable range")
    ax.legend(fontsize=8, loc="upper right")
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path
