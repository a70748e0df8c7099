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
from .plot_data import block_format_or_none, log2_ticks, number_line, shared_line_span, spacing
from .plot_ranges import draw_ranges
from .plot_style import FORMAT_COLOURS, LANDMARK_COLOUR, OVERFLOW_COLOUR, SUBNORMAL_COLOUR, format_colour
from .plot_text import label_number, line_title, relative_title, spacing_title
from .values import MAX_LISTED_BITS

__all__ = ["KINDS", "plot", "draw_number_line", "draw_spacing", "draw_ranges", "check_plot_request",
           "format_colour", "FORMAT_COLOURS", "SUBNORMAL_COLOUR"]

#: What ``fpemu plot --kind`` draws: every panel, or one of them.
KINDS = ("all", "line", "spacing", "ranges")


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
        block = block_format_or_none(name)  # a ValueError naming an unknown format
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


def draw_number_line(axes: Sequence[Any], formats: Sequence[str]) -> list[dict[str, Any]]:
    """One axes per format, all on one shared log2 x range (:func:`shared_line_span`) so that
    rows compare: a tick at log2(v) for every positive finite value v (normals, and every
    value of a fixed-point format, in the format's colour; subnormals in orange), a dot for
    zero (at one x left of every row), and the smallest normal (below the ticks), the largest
    value and the overflow threshold (above, right-aligned so that nothing leaves the frame)
    marked; the title names the orange ticks only where a row has some. Returns each format's
    :func:`number_line` with ``zero_x``, the x of the zero dot (None without zero), and
    ``xlim``, the shared x range."""
    lines = [number_line(name) for name in formats]
    left, right = shared_line_span(lines)
    zero_x = left - 1.5
    width = right - zero_x
    xlim = (zero_x - 0.04 * width, right + 0.02 * width)
    for row, (ax, line) in enumerate(zip(axes, lines)):
        x, sub = line["log2"], line["subnormal"]
        colour = format_colour(row)
        for part, tint, label in ((~sub, colour, "normal"), (sub, SUBNORMAL_COLOUR, "subnormal")):
            ax.plot(x[part], np.zeros(int(part.sum())), ls="none", marker="|", ms=14, color=tint, label=label)
        line["zero_x"] = zero_x if line["has_zero"] else None
        line["xlim"] = xlim
        if line["has_zero"]:
            ax.plot([zero_x], [0], "o", color="k", ms=4)
            ax.annotate("0", (zero_x, 0), xytext=(0, 8), textcoords="offset points", ha="center")
        _mark_landmarks(ax, line)
        ax.set_yticks([0], [line["format"]])
        ax.get_yticklabels()[0].set_color(colour)
        ax.set_ylim(-1.5, 1.5)
        ax.set_xlim(*xlim)
        ax.grid(axis="x", alpha=0.3)
        if row == 0:
            orange = any(bool(other["subnormal"].any()) for other in lines)
            title = line_title(lines) + "; orange ticks: subnormals" * orange
            ax.set_title(textwrap.fill(title, 120), fontsize=10)
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)  # one shared scale, numbered once
    axes[-1].set_xlabel("log2 |value|  (the same scale in every row)")
    return lines


def _mark_landmarks(ax: Any, line: dict[str, Any]) -> None:
    """The smallest normal below the ticks; above them the overflow threshold's words ending at
    its line and, left of those words, the largest value's."""
    lowest = np.log2(line["values"][0])
    if np.isfinite(line["min_normal"]):  # no normals (fixed point): no "min normal" mark
        x = np.log2(line["min_normal"])
        ax.plot([x, x], [-0.3, -0.8], color=LANDMARK_COLOUR, lw=1.5)
        # centred, or starting at the line where nothing lies left of it (no subnormals)
        ax.annotate("min normal", (x, -0.8), xytext=(0, -6), textcoords="offset points", va="center",
                    ha="left" if x <= lowest else "center", fontsize=8, color=LANDMARK_COLOUR)
    top, limit = np.log2(line["max"]), np.log2(line["overflow_threshold"])
    ax.plot([top, top], [0.3, 0.8], color=LANDMARK_COLOUR, lw=1.5)
    ax.plot([limit, limit], [0.3, 0.8], color=OVERFLOW_COLOUR, lw=1.5, ls="--")
    words = ax.annotate(f" {line['overflow_label']}", (limit, 0.8), xytext=(0, 4),
                        textcoords="offset points", ha="right", va="bottom", fontsize=8, color=OVERFLOW_COLOUR)
    ax.annotate(f"max {label_number(line['max'])};", (0, 0), xycoords=words, xytext=(-2, 0),
                textcoords="offset points", ha="right", va="bottom", fontsize=8, color=LANDMARK_COLOUR)


def _log2_axis(axis: Any, lo: float, hi: float) -> None:
    """A base-2 log axis from ``lo`` to ``hi`` with ticks at round powers of 2
    (:func:`log2_ticks`), labelled 2^k, its limits widened to hold every tick."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ticks = log2_ticks(lo, hi)
    is_x = axis is axis.axes.xaxis
    (axis.axes.set_xscale if is_x else axis.axes.set_yscale)("log", base=2)
    axis.set_major_locator(FixedLocator([2.0**k for k in ticks]))
    axis.set_major_formatter(lambda value, _: f"$2^{{{round(np.log2(value))}}}$")
    axis.set_minor_locator(NullLocator())
    low, high = min(lo, 2.0 ** ticks[0]), max(hi, 2.0 ** ticks[-1])
    pad = 2.0 ** (0.03 * np.log2(high / low) + 0.05)
    (axis.axes.set_xlim if is_x else axis.axes.set_ylim)(low / pad, high * pad)


def draw_spacing(ax_gap: Any, ax_rel: Any, formats: Sequence[str]) -> list[dict[str, Any]]:
    """Spacing (ulp) against magnitude on ``ax_gap`` and the largest relative error of
    round-to-nearest in each gap on ``ax_rel``, one step curve per format in its colour
    (dashed where the gaps are subnormal), every gap as wide as it is, the last one
    included; the flat bound 2^-(m+1) of each floating-point format dotted, and the title
    (:func:`relative_title`) saying what the formats drawn show. Returns each :func:`spacing`."""
    out, dashed = [], False
    for i, name in enumerate(formats):
        data = spacing(name)
        colour = format_colour(i)
        edges = data["edges"]
        sub = np.append(data["subnormal"], False)  # none in fixed point: one even grid
        dashed |= bool(sub.any())
        for ax, heights in ((ax_gap, data["step_spacing"]), (ax_rel, data["step_relative"])):
            ax.step(edges, heights, where="post", color=colour, label=data["format"])
            if sub.any():  # the subnormal gaps again, dashed over the first binade's start
                last = int(np.flatnonzero(sub)[-1]) + 1
                ax.step(edges[: last + 1], heights[: last + 1], where="post", color="w", ls=(0, (2, 2)), lw=1.2)
        if get_format(name).exponent_bits:  # fixed point has no relative bound of its own
            ax_rel.axhline(data["unit_roundoff"], color=colour, ls=":", lw=0.8)
        out.append(data)
    lo = min(float(d["edges"][0]) for d in out)
    hi = max(float(d["edges"][-1]) for d in out)
    _log2_axis(ax_rel.xaxis, lo, hi)
    _log2_axis(ax_gap.yaxis, min(float(d["spacing"].min()) for d in out), max(float(d["spacing"].max()) for d in out))
    _log2_axis(ax_rel.yaxis, min(float(d["relative_bound"].min()) for d in out),
               max(max(float(d["relative_bound"].max()), d["unit_roundoff"]) for d in out))
    for ax in (ax_gap, ax_rel):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    ax_gap.set_ylabel("gap to the next value (ulp)")
    ax_gap.set_title(textwrap.fill(spacing_title(out) + "; dashed: subnormal gaps" * dashed, 120), fontsize=10)
    ax_rel.set_ylabel("max relative error\n(round to nearest)")
    ax_rel.set_xlabel("magnitude")
    # 125: the floats' one sentence (123 characters) stays one line, as the figure has room for
    ax_rel.set_title(textwrap.fill(relative_title(out), 125), fontsize=10)
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
