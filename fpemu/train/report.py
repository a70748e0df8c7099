"""The comparison as a text table (:func:`summary_table`), each row ending in one sentence that
says what happened in that run (:func:`what_happened`)."""

from __future__ import annotations

import math
from typing import Sequence

from .history import History, _check_histories
from .loop import run  # noqa: F401  (summary_table's doctest trains a run)
from .stats import KIND_NAMES


def baseline_of(h: History, histories: Sequence[History]) -> History | None:
    """The FP32 run among ``histories`` that ``h`` is compared with (same task, seed, steps)."""
    for b in histories:
        if b.precision == "fp32" and (b.task_name, b.seed, b.steps) == (h.task_name, h.seed, h.steps):
            return b
    return None


def excess_loss(h: History, base: History | None) -> float:
    """``h``'s final loss over the baseline's, in percent (NaN without a baseline).

    >>> excess_loss(run("fp32", steps=1), None)
    nan
    """
    if base is None or not base.final_loss:
        return math.nan
    return 100.0 * (h.final_loss / base.final_loss - 1.0)


def _pct(f: float) -> str:
    """A fraction as a short percentage: 62%, 7.1%, 0.55%, 0.002%."""
    p = 100.0 * f
    return f"{p:.0f}%" if p >= 10 else f"{p:.2g}%" if p >= 0.01 else f"{p:.1g}%"


def what_happened(h: History, base: History | None = None) -> str:
    """One sentence: what this run's gradients went through and what it cost.

    >>> h = run("fp32", steps=1)
    >>> what_happened(h, h)
    'the baseline'
    """
    if h is base or (h.precision == "fp32" and h.low_format is None):
        return "the baseline"
    parts = []
    kinds = [(f, k) for k, f in h.underflow_by_kind().items() if f >= 0.0005]
    kinds.sort(reverse=True)
    if kinds:
        names = ", ".join(f"{_pct(f)} of {KIND_NAMES.get(k, k)}" for f, k in kinds[:2])
        parts.append(f"{names} flushed to zero")
    elif h.low_format is not None:
        parts.append("no gradient flushed to zero")
    s = h.summary()
    if s["overflow_fraction"] > 0:
        parts.append(f"{_pct(s['overflow_fraction'])} overflowed" + (" (saturated)" if h.precision == "fp8" else ""))
    skipped = s["skipped_steps"]
    if h.loss_scale == "dynamic":
        lo, hi = math.log2(min(h.scale)), math.log2(max(h.scale))
        span = f"2^{lo:.0f}" if lo == hi else f"2^{lo:.0f}..2^{hi:.0f}"
        parts.append(f"scale {span}" + (f", {skipped} steps skipped" if skipped else ""))
    elif skipped:
        parts.append(f"{skipped} steps skipped")
    ex = excess_loss(h, base)
    if not math.isnan(ex):
        parts.append(f"loss {ex:+.1f}% vs fp32")
    elif not math.isfinite(h.final_loss):
        parts.append("diverged")
    return "; ".join(parts)


def summary_table(histories: Sequence[History]) -> str:
    """The comparison as a fixed-width text table, one sentence per row saying what happened.

    >>> print(summary_table([run("fp32", steps=1)]).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
    run  final loss  accuracy  skipped  underflow  overflow  final scale  time (s)  what happened
    """
    histories = _check_histories(histories)
    head = ("run", "final loss", "accuracy", "skipped", "underflow", "overflow", "final scale", "time (s)",
            "what happened")
    rows = []
    for h in histories:
        s = h.summary()
        rows.append(
            (
                s["run"],
                f"{s['final_loss']:.3e}",
                f"{100 * s['final_accuracy']:.1f}%",
                str(s["skipped_steps"]),
                f"{100 * s['underflow_fraction']:.2f}%" if h.low_format else "-",
                f"{100 * s['overflow_fraction']:.3f}%" if h.low_format else "-",
                f"{s['final_scale']:g}",
                f"{s['time_s']:.1f}",
                what_happened(h, baseline_of(h, histories)),
            )
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    last = len(head) - 1
    lines = ["  ".join(c.ljust(w) if i in (0, last) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [head, *rows]]
    return "\n".join(line.rstrip() for line in lines)
