"""The cross-check's result rows and the Markdown table they are printed as."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class Row:
    """One line of the cross-check table.

    ``status`` is ``"identical"`` (default options match every case), ``"reproduced"`` (the
    option in ``reproduced_by`` matches every case), ``"differs"`` (no searched option does;
    ``note`` says what is left), ``"skipped"`` (backend not installed) or ``"unsupported"``
    (the backend lacks this operation). ``backend`` names the release compared
    (``ml_dtypes 0.7.0``); ``convention`` says whether :func:`fpemu.like` of that release
    reproduces every case.
    """

    operation: str
    format: str
    backend: str
    cases: int = 0
    identical: int = 0
    first_mismatch: str = ""
    reproduced_by: str = ""
    status: str = "identical"
    note: str = ""
    mismatches_by_kind: dict = field(default_factory=dict)
    convention: str = ""


_COLUMNS = ("operation", "format", "backend", "cases", "identical", "first mismatch", "fpemu option that reproduces the backend")


def format_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (one line per row; notes go into the last column).

    >>> print(format_table([Row("cast f32", "e4m3", "x", 10, 10)]))
    | operation | format | backend | cases | identical | first mismatch | fpemu option that reproduces the backend |
    |---|---|---|---|---|---|---|
    | cast f32 | e4m3 | x | 10 | 10 |  | identical with default options |
    """
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for r in rows:
        if r.status == "identical":
            last = "identical with default options" + (f" ({r.note})" if r.note else "")
        elif r.status in ("skipped", "unsupported"):
            last = f"{r.status}: {r.note}"
        else:
            last = "; ".join(t for t in (r.reproduced_by, r.note) if t)
        if r.convention:
            last += f"; {r.convention}"
        cells = [r.operation, r.format, r.backend, str(r.cases) if r.cases else "-", str(r.identical) if r.cases else "-",
                 r.first_mismatch.replace("|", "/"), last.replace("|", "/")]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: Sequence[Row]) -> str:
    """One line: how many rows are identical, reproduced, different, skipped."""
    counts = {s: sum(r.status == s for r in rows) for s in ("identical", "reproduced", "differs", "skipped", "unsupported")}
    return ", ".join(f"{v} {k}" for k, v in counts.items() if v)
