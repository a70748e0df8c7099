"""The teaching figures (matplotlib, the optional ``plot`` extra, imported only to draw): a
format's number line, its spacing and relative error bound, and formats side by side as
dynamic-range bars.

Each ``draw_*`` function draws on axes it is given and returns the arrays it drew (those of
:mod:`fpemu.teach.plot_data`); :func:`plot` lays them out in one PNG.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import RunError
from ..formats import get_format
from ..outputs import atomic_output, check_output_path
from .plot_data import _block_format_or_none, line_title, number_line, range_entry, spacing, spacing_title
from .values import MAX_LISTED_BITS

__all__ = ["KINDS", "plot", "draw_number_line", "draw_spacing", "draw_ranges", "check_plot_request"]

#: What ``fpemu plot --kind`` draws: every panel, or one of them.
KINDS = ("all", "line", "spacing", "ranges")
_SUBNORMAL, _NORMAL, _LANDMARK, _OVERFLOW = "tab:orange", "tab:blue", "0.25", "tab:red"


def _pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or a one-line RunError."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RunError("fpemu plot needs matplotlib: pip install 'fpemu[plot]' "
                       "(or pip install matplotlib)") from None
    return plt


def check_plot_request(formats: Sequence[str], kind: str) -> list[str]:
    """The formats as names, refusing what the kind of figure cannot draw (ValueError).

    >>> check_plot_request(["E4M3", "bfloat16", "MXFP4"], "ranges")
    ['e4m3', 'bf16', 'mxfp4']
    >>> check_plot_request(["fp32"], "line")
    Traceback (most recent call last):
    ...
    ValueError: fp32 has 32 bits: the number line and the spacing plot list every value (formats of at most 16 bits); use --kind ranges
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if isinstance(formats, str):
        formats = [formats]
    if not len(formats):
        raise ValueError("give at least one format")
    names = []
    for name in formats:
        block = _block_format_or_none(name)  # a ValueError naming an unknown format
        if block is not None:
            if kind != "ranges":
                raise ValueError(f"{block.name} is a block format: only --kind ranges draws block formats")
            names.append(block.name)
            continue
        fmt = get_format(name)
        if kind != "ranges" and fmt.bits > MAX_LISTED_BITS:
            raise ValueError(f"{fmt.name} has {fmt.bits} bits: the number line and the spacing plot "
                             f"list every value (formats of at most {MAX_LISTED_BITS} bits); "
                             "use --kind ranges")
        names.append(fmt.name)
    return names


def _past_max(line: dict[str, Any]) -> str:
    """What rounding past max does (to nearest even, the format's own overflow rule)."""
    fmt = get_format(line["format"])
    return "overflow" if fmt.has_inf or fmt.has_nan else "saturates"


def draw_number_line(axes: Sequence[Any], formats: Sequence[str]) -> list[dict[str, Any]]:
    """One axes per format: a tick at log2(v) for every positive finite value v (subnormals in
    orange), a dot for zero, and the smallest normal, the largest value and the overflow
    threshold marked. Returns each format's :func:`number_line` with ``zero_x``, the x of the
    zero dot (None without zero)."""
    out = []
    for row, (ax, name) in enumerate(zip(axes, formats)):
        line = number_line(name)
        x, sub = line["log2"], line["subnormal"]
        ax.plot(x[~sub], np.zeros(int((~sub).sum())), ls="none", marker="|", ms=16, color=_NORMAL,
                label="normal")
        ax.plot(x[sub], np.zeros(int(sub.sum())), ls="none", marker="|", ms=16, color=_SUBNORMAL,
                label="subnormal")
        line["zero_x"] = float(x[0] - 1.5) if line["has_zero"] else None
        if line["zero_x"] is not None:
            ax.plot([line["zero_x"]], [0], "o", color="k", ms=4)
            ax.annotate("0", (line["zero_x"], 0), xytext=(0, 8), textcoords="offset points", ha="center")
        marks = ((line["min_normal"], "min normal", _LANDMARK, "center", -1),
                 (line["max"], f"max {line['max']:g} ", _LANDMARK, "right", 1),
                 (line["overflow_threshold"], f" {_past_max(line)} {line['overflow_words']}", _OVERFLOW, "left", 1))
        for value, text, color, align, side in marks:
            if not np.isfinite(value):
                continue  # no normals: no "min normal" mark
            dashed = value > line["max"]
            # beside the row of ticks, not over it: below for min normal, above for the top
            ax.plot([np.log2(value)] * 2, [0.3 * side, 0.8 * side], color=color, lw=1.5, ls="--" if dashed else "-")
            ax.annotate(text, (np.log2(value), 0.8 * side), xytext=(0, 6 * side), textcoords="offset points",
                        ha=align, va="center", fontsize=8, color=color)
        ax.set_yticks([0], [line["format"]])
        ax.set_ylim(-1.5, 1.5)
        ax.grid(axis="x", alpha=0.3)
        if row == 0:
            ax.set_title(textwrap.fill(line_title([number_line(n) for n in formats]), 120), fontsize=10)
            ax.legend(loc="upper left", fontsize=7, ncols=2)
        out.append(line)
    axes[-1].set_xlabel("log2 |value|")
    return out


def draw_spacing(ax_gap: Any, ax_rel: Any, formats: Sequence[str]) -> list[dict[str, Any]]:
    """Spacing (ulp) against magnitude on ``ax_gap`` and the relative error bound of
    round-to-nearest on ``ax_rel``, one step curve per format. Returns each :func:`spacing`."""
    out = []
    for i, name in enumerate(formats):
        data = spacing(name)
        color = f"C{i % 10}"
        ax_gap.step(data["lower"], data["spacing"], where="post", color=color, label=data["format"])
        ax_rel.step(data["lower"], data["relative_bound"], where="post", color=color, label=data["format"])
        ax_rel.axhline(data["unit_roundoff"], color=color, ls=":", lw=0.8)
        out.append(data)
    for ax in (ax_gap, ax_rel):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax_gap.set_ylabel("gap to the next value (ulp)")
    ax_gap.set_title(textwrap.fill(spacing_title(out), 120), fontsize=10)
    ax_rel.set_ylabel("max relative error\n(round to nearest)")
    ax_rel.set_xlabel("magnitude")
    ax_rel.set_title("Relative error bound: flat for normals (dotted: 2^-(m+1)), growing in the subnormals",
                     fontsize=10)
    return out


def draw_ranges(ax: Any, names: Sequence[str]) -> list[dict[str, Any]]:
    """One horizontal bar per format from log2(smallest positive) to log2(max) (the subnormal
    part lighter); a block format also gets a dark inner bar, the range of one block with its
    scale at 1. Returns each :func:`range_entry` with ``x`` (log2 of its three landmarks)."""
    out = []
    for row, name in enumerate(names):
        entry = range_entry(name)
        y = -row
        lo, mid, hi = np.log2([entry["min_positive"], entry["min_normal"], entry["max"]])
        entry["x"] = np.array([lo, mid, hi])
        ax.barh(y, mid - lo, left=lo, height=0.6, color=_SUBNORMAL, alpha=0.5)
        ax.barh(y, hi - mid, left=mid, height=0.6, color=_NORMAL, alpha=0.7)
        if "block_min" in entry:
            b_lo, b_hi = np.log2([entry["block_min"], entry["block_max"]])
            ax.barh(y, b_hi - b_lo, left=b_lo, height=0.25, color="k")
        ax.annotate(f"{entry['binades']:.1f} binades", (hi, y), xytext=(4, -3), textcoords="offset points",
                    fontsize=8)
        out.append(entry)
    ax.set_yticks([-i for i in range(len(names))], [e["name"] for e in out])
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_xlabel("log2 |value|  (orange: subnormals; black: one block with its scale at 1)")
    ax.set_title("Dynamic range: smallest positive value to largest finite value")
    ax.grid(axis="x", alpha=0.3)
    right = max(float(e["x"][2]) for e in out)
    ax.set_xlim(right=right + 0.12 * (right - min(float(e["x"][0]) for e in out)) + 4)
    return out


def _image_type(path: str | Path) -> str:
    """The image type matplotlib writes for ``path``'s suffix (``.png``, ``.jpg``, ``.svg``,
    ``.pdf``, ... in any case), or a ValueError listing the ones it can write."""
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix
    types = FigureCanvasBase.get_supported_filetypes()
    if suffix[1:].lower() in types:
        return suffix[1:].lower()
    which = "no suffix" if not suffix else f"the suffix {suffix!r}"
    raise ValueError(f"{Path(path).name!r} has {which}: name the image type with one of "
                     f"{', '.join('.' + t for t in sorted(types))}")


def plot(formats: Sequence[str], out: str | Path, kind: str = "all") -> dict[str, list[dict[str, Any]]]:
    """Draw ``kind`` (``all``, ``line``, ``spacing`` or ``ranges``) for ``formats`` into the
    image file ``out``, of the type its suffix names (``.png``, ``.jpg``, ``.svg``, ``.pdf``
    ...); returns the drawn arrays by panel (``line``, ``spacing``,
    ``ranges``)."""
    names = check_plot_request(formats, kind)
    path = check_output_path(out)
    plt = _pyplot()
    fmt = _image_type(path)  # before the drawing
    panels = ("line", "spacing", "ranges") if kind == "all" else (kind,)
    heights = {"line": 1.1 * len(names) + 0.6, "spacing": 5.5, "ranges": 0.55 * len(names) + 1.4}
    fig = plt.figure(figsize=(10, sum(heights[p] for p in panels)), layout="constrained")
    figs = fig.subfigures(len(panels), 1, height_ratios=[heights[p] for p in panels], squeeze=False)
    drawn: dict[str, list[dict[str, Any]]] = {}
    try:
        for sub, panel in zip(figs[:, 0], panels):
            if panel == "line":
                drawn["line"] = draw_number_line(sub.subplots(len(names), 1, squeeze=False)[:, 0], names)
            elif panel == "spacing":
                drawn["spacing"] = draw_spacing(*sub.subplots(2, 1, sharex=True), names)
            else:
                drawn["ranges"] = draw_ranges(sub.subplots(), names)
        with atomic_output(path) as tmp:
            try:
                fig.savefig(tmp, format=fmt, dpi=110)  # the temporary name has no image suffix
            except RuntimeError as exc:  # a writer's missing tool (.pgf: a TeX installation)
                raise RunError(f"cannot write {path} as {fmt}: {exc}") from None
    finally:
        plt.close(fig)
    return drawn
