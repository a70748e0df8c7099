"""What :func:`fpemu.torch.report` shows: per emulated GEMM, collected over its forward calls,
the SQNR of its output against the float32 product of the same float operands, and for each
operand (X, W) its amax, the fractions of its nonzero elements flushed to zero and saturated,
and the range of its scales. A text table and JSON.

Definitions (every number is counted, none estimated):

* SQNR = 10 log10(sum ref^2 / sum (y - ref)^2) in dB over every output element of every call,
  in float64; ``ref`` is torch's float32 product of the unquantized operands (plus the bias);
  ``inf`` where y equals ref.
* flushed: a finite nonzero element whose cast value is 0;
* saturated: a finite element that the cast rounds beyond the format's largest magnitude at its
  scale (RNE past the midpoint above it; the scaled value as the cast computes it, for FP8's
  per-tensor scales and MX's powers of two): it is cast to that maximum (saturation), or to
  Inf where the format overflows (BF16, FP16);
* scale: the factor the element values are multiplied by: the block scales (MX, NVFP4 times its
  tensor scale), FP8's per-tensor ``scale_inv`` (1/scale); none for BF16/FP16.

>>> s = OperandStats()
>>> s.add(np.float32([0.0, 1e-9, 3.0, 500.0]), OperandView(np.float32([0, 0, 3, 448]), np.array([0, 0, 0, 1], bool), np.float32(1)))
>>> s.nonzero, s.flushed, s.saturated, float(s.amax), s.scale_range
(3, 1, 1, 500.0, (1.0, 1.0))
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..train.linears import OperandView


class OperandStats:
    """Counts over the forward calls of one operand of one GEMM."""

    def __init__(self) -> None:
        self.elements = self.nonzero = self.flushed = self.saturated = 0
        self.amax = 0.0
        self.scale_min = math.inf
        self.scale_max = -math.inf
        self.scaled = False

    def add(self, original: np.ndarray, view: OperandView) -> None:
        finite = np.isfinite(original)
        nonzero = finite & (original != 0)
        self.elements += original.size
        self.nonzero += int(np.count_nonzero(nonzero))
        self.flushed += int(np.count_nonzero(nonzero & (view.values == 0)))
        self.saturated += int(np.count_nonzero(view.saturated))
        if original.size:
            self.amax = max(self.amax, float(np.max(np.abs(np.where(finite, original, 0)))))
        if view.scale is not None:
            self.scaled = True
            s = np.asarray(view.scale, dtype=np.float64)
            s = s[np.isfinite(s) & (s > 0)]
            if s.size:
                self.scale_min, self.scale_max = min(self.scale_min, float(s.min())), max(self.scale_max, float(s.max()))

    @property
    def scale_range(self) -> tuple[float, float] | None:
        return (self.scale_min, self.scale_max) if self.scaled and self.scale_min <= self.scale_max else None

    def fraction(self, count: int) -> float:
        return count / self.nonzero if self.nonzero else 0.0

    def as_dict(self) -> dict:
        rng = self.scale_range
        return {"elements": self.elements, "nonzero": self.nonzero, "amax": self.amax,
                "flushed": self.fraction(self.flushed), "saturated": self.fraction(self.saturated),
                "scale_min": None if rng is None else rng[0], "scale_max": None if rng is None else rng[1]}


class SiteStats:
    """One GEMM's statistics: its calls, the signal and noise energies of its output, and the
    :class:`OperandStats` of X and W."""

    def __init__(self) -> None:
        self.calls = 0
        self.signal = self.noise = 0.0
        self.x, self.w = OperandStats(), OperandStats()

    def add(self, x: np.ndarray, w: np.ndarray, views: tuple[OperandView, OperandView], y: np.ndarray,
            ref: np.ndarray) -> None:
        self.calls += 1
        r = np.asarray(ref, dtype=np.float64)
        self.signal += float(np.sum(r * r))
        self.noise += float(np.sum((np.asarray(y, dtype=np.float64) - r) ** 2))
        self.x.add(x, views[0])
        self.w.add(w, views[1])

    @property
    def sqnr_db(self) -> float:
        """SQNR in dB (``inf``: exact; NaN where the output or reference is not finite)."""
        if not (math.isfinite(self.signal) and math.isfinite(self.noise)):
            return math.nan
        if self.noise == 0:
            return math.inf
        return 10 * math.log10(self.signal / self.noise) if self.signal > 0 else -math.inf


def _pow2(v: float) -> str:
    e = math.log2(v)
    return f"2^{e:.0f}" if e == round(e) else f"2^{e:.1f}"


def _scale_text(rng: tuple[float, float] | None) -> str:
    if rng is None:
        return "-"
    lo, hi = _pow2(rng[0]), _pow2(rng[1])
    return lo if lo == hi else f"{lo}..{hi}"


def _percent(f: float) -> str:
    return "0" if f == 0 else f"{100 * f:.2g}%"


class Report:
    """Rows of :func:`fpemu.torch.report`: ``str(report)`` is the table, :meth:`to_json` the
    JSON text, :attr:`rows` the dicts both come from."""

    COLUMNS = ("layer", "precision", "calls", "SQNR dB", "X amax", "X flush", "X sat", "X scale",
               "W amax", "W flush", "W sat", "W scale")

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def to_json(self, **kw: Any) -> str:
        """The rows as JSON (an infinite SQNR is the string ``"inf"``: JSON has no Infinity)."""
        def clean(v):
            return str(v) if isinstance(v, float) and not math.isfinite(v) else v
        rows = [{k: ({kk: clean(vv) for kk, vv in v.items()} if isinstance(v, dict) else clean(v)) for k, v in r.items()}
                for r in self.rows]
        return json.dumps(rows, **kw)

    def _cells(self, r: dict) -> list[str]:
        cells = [r["layer"], r["precision"], str(r["calls"]), f"{r['sqnr_db']:.1f}"]
        for op in (r["x"], r["w"]):
            rng = None if op["scale_min"] is None else (op["scale_min"], op["scale_max"])
            cells += [f"{op['amax']:.3g}", _percent(op["flushed"]), _percent(op["saturated"]), _scale_text(rng)]
        return cells

    def __str__(self) -> str:
        table = [list(self.COLUMNS)] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.COLUMNS))]
        lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                 for row in table]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(line.rstrip() for line in lines)

    __repr__ = __str__


def site_row(site: Any) -> dict:
    """One row of the report (a :class:`~.sites.Site` with statistics)."""
    st = site.stats
    return {"layer": site.name, "kind": site.kind, "precision": site.label, "calls": st.calls,
            "sqnr_db": st.sqnr_db, "x": st.x.as_dict(), "w": st.w.as_dict()}
