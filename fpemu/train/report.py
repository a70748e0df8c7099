"""The comparison as a text table (:func:`summary_table`)."""

from __future__ import annotations

from typing import Sequence

from .history import History, _check_histories
from .loop import run  # noqa: F401  (summary_table's doctest trains a run)


def summary_table(histories: Sequence[History]) -> str:
    """The comparison as a fixed-width text table.

    >>> print(summary_table([run("fp32", steps=1)]).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
    run  final loss  accuracy  skipped  underflow  overflow  final scale  time (s)
    """
    histories = _check_histories(histories)
    head = ("run", "final loss", "accuracy", "skipped", "underflow", "overflow", "final scale", "time (s)")
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
            )
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [head, *rows]]
    return "\n".join(line.rstrip() for line in lines)
