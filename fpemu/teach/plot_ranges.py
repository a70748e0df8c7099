"""The dynamic-range figure: one bar per format from its smallest positive value to its
largest, subnormals orange, a block format's one-block range black, with the words of each
bar's binades just past it (matplotlib, imported only to draw, by :mod:`fpemu.teach.plots`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .plot_data import range_entry
from .plot_style import SUBNORMAL_COLOUR, format_colour

__all__ = ["draw_ranges"]


def draw_ranges(ax: Any, names: Sequence[str]) -> list[dict[str, Any]]:
    """One horizontal bar per format from log2(smallest positive) to log2(max), in the
    format's colour with the subnormal part orange (none where a format has no subnormals,
    fixed point included); a block format also gets a black inner bar, the range of one
    block with its scale at 1, and one with a per-tensor scale (NVFP4) arrows saying that
    scale slides the whole bar. The legend names only what is drawn.
    Returns each :func:`range_entry` with ``x`` (log2 of its three landmarks)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    out, shown = [], {}
    for row, name in enumerate(names):
        entry = range_entry(name)
        y = -row
        lo, mid, hi = np.log2([entry["min_positive"], entry["min_normal"], entry["max"]])
        entry["x"] = np.array([lo, mid, hi])
        if mid > lo:  # a subnormal part: orange, and named in the legend, first
            ax.barh(y, mid - lo, left=lo, height=0.6, color=SUBNORMAL_COLOUR, alpha=0.6)
            shown = {"subnormals": Patch(color=SUBNORMAL_COLOUR, alpha=0.6), **shown}
        ax.barh(y, hi - mid, left=mid, height=0.6, color=format_colour(row), alpha=0.75)
        if "block_min" in entry:
            b_lo, b_hi = np.log2([entry["block_min"], entry["block_max"]])
            ax.barh(y, b_hi - b_lo, left=b_lo, height=0.25, color="k")
            shown["one block, its scale at 1"] = Patch(color="k")
        words = f"{entry['binades']:.1f} binades"
        if entry.get("tensor_scale"):
            for end, away in ((lo, -1), (hi, 1)):  # the bar moves both ways with the tensor scale
                ax.annotate("", (end + 10 * away, y + 0.38), xytext=(end, y + 0.38),
                            arrowprops={"arrowstyle": "->", "color": format_colour(row), "lw": 1.2})
            words += " (tensor scale 1)"
            shown[f"its {entry['tensor_scale'].upper()} tensor scale slides the bar"] = Line2D(
                [], [], color="0.3", marker=">", lw=1.2)
        entry["words"] = ax.annotate(words, (hi, y), xytext=(4, -3), textcoords="offset points", fontsize=8)
        out.append(entry)
    ax.set_yticks([-i for i in range(len(names))], [e["name"] for e in out])
    for i, label in enumerate(ax.get_yticklabels()):
        label.set_color(format_colour(i))
    ax.axvline(0, color="0.5", lw=0.8, zorder=0)
    ax.set_xlabel("log2 |value|")
    ax.set_title("Dynamic range: smallest positive value to largest finite value")
    ax.grid(axis="x", alpha=0.3)
    if shown:  # nothing to name (no subnormals, no blocks): no empty legend box
        ax.legend(shown.values(), shown.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    left, right = min(float(e["x"][0]) for e in out), max(float(e["x"][2]) for e in out)
    start = left - 0.03 * (right - left) - 1 - 10 * any(e.get("tensor_scale") for e in out)
    ax.set_xlim(start, right + 0.3 * (right - left) + 8)
    _fit_words(ax, out, start)
    for e in out:
        del e["words"]
    return out


def _fit_words(ax: Any, drawn: list[dict[str, Any]], start: float) -> None:
    """End the axis just past the widest "N binades" words (it ended 30 % of the range past
    the bars: 70 empty units beside FP32). Measured once the figure is laid out: a word w
    pixels wide, 4 points past its bar's end hi, on an axis A pixels wide from ``start``,
    needs the axis to end at x with hi + (w + 4pt) (x - start) / A <= x."""
    root = ax.figure
    while getattr(root, "figure", root) is not root:  # (a subfigure's figure)
        root = root.figure
    if not hasattr(root.canvas, "get_renderer"):
        return
    root.canvas.draw()
    renderer = root.canvas.get_renderer()
    width = ax.get_window_extent(renderer).width
    end = start
    for e in drawn:
        c = (e["words"].get_window_extent(renderer).width + 4 * root.dpi / 72) / width
        end = max(end, (float(e["x"][2]) - c * start) / (1 - c))
    ax.set_xlim(start, end + 0.02 * (end - start))
