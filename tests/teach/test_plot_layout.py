"""The teaching figures' edges (issue 26, item 3): every gap of the spacing panels drawn, the
last one included, held to exact Fraction arithmetic; round log2 ticks, at least two per axis;
one shared x range for compared number-line rows; a colour per format that is never the
subnormal colour; no label overlapping another or leaving its axes; a legend naming only what
is drawn; NVFP4's per-tensor scale shown."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fpemu
from fpemu.teach.plot_data import log2_ticks, range_entry, shared_line_span, spacing


def exact_value(name: str, code: int) -> Fraction:
    """A positive code of an IEEE-like format, read by the textbook formula in Fractions."""
    fmt = fpemu.get_format(name)
    m = code & ((1 << fmt.mantissa_bits) - 1)
    e = (code >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    if e == 0:
        return Fraction(m, 1 << fmt.mantissa_bits) * Fraction(2) ** (1 - fmt.bias)
    return (1 + Fraction(m, 1 << fmt.mantissa_bits)) * Fraction(2) ** (e - fmt.bias)


# ---- the data: every gap, the last one included -----------------------------------------------
@pytest.mark.parametrize("name, last_codes", [("e4m3", (0x7D, 0x7E)), ("e2m1", (0x6, 0x7)),
                                              ("e5m2", (0x7A, 0x7B)), ("fp16", (0x7BFE, 0x7BFF))])
def test_the_last_gap_is_a_step_of_its_own(name, last_codes):
    s = spacing(name)
    a, b = (exact_value(name, c) for c in last_codes)  # the two largest finite values
    assert Fraction(s["edges"][-1]) == b and Fraction(s["edges"][-2]) == a
    assert Fraction(s["step_spacing"][-2]) == b - a == Fraction(s["step_spacing"][-1])
    assert Fraction(s["step_relative"][-2]) == Fraction(float((b - a) / (a + b)))


def test_e4m3_ends_at_448_and_e2m1s_gap_of_2_spans_4_to_6():
    e4m3, e2m1 = spacing("e4m3"), spacing("e2m1")
    assert exact_value("e4m3", 0x7E) == 448 and e4m3["edges"][-1] == 448.0
    assert (e4m3["edges"][-2], e4m3["step_spacing"][-2]) == (416.0, 32.0)
    assert e2m1["edges"].tolist() == [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert e2m1["step_spacing"].tolist() == [0.5, 0.5, 0.5, 1.0, 1.0, 2.0, 2.0]
    widths = np.diff(e2m1["edges"])  # a "post" step: height i spans edges[i] .. edges[i+1]
    assert widths[-1] == 2.0 and np.array_equal(widths, e2m1["step_spacing"][:-1])


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e2m1", "e3m2", "bf16", "e8m0", "int8"])
def test_every_step_is_the_gap_it_starts(name):
    s = spacing(name)
    edges = [Fraction(v) for v in s["edges"]]
    gaps = [b - a for a, b in itertools.pairwise(edges)]
    assert [Fraction(g) for g in s["step_spacing"][:-1]] == gaps
    fmt = fpemu.get_format(name)  # fixed point (int8): no subnormal gaps, one even grid
    assert s["subnormal"].tolist() == [float(a) < fmt.min_normal and fmt.exponent_bits > 0 for a in edges[:-1]]


# ---- ticks ---------------------------------------------------------------------------------
def test_log2_ticks_are_round_exponents():
    assert log2_ticks(2.0**-133, 2.0**128) == [-100, -50, 0, 50, 100]  # not 2^-145, 2^-99
    assert log2_ticks(2.0**-149, 2.0**128) == [-100, -50, 0, 50, 100]
    assert log2_ticks(2.0**-17, 57344.0) == [-15, -10, -5, 0, 5, 10, 15]
    assert log2_ticks(0.5, 2.0) == [-1, 0, 1]
    assert log2_ticks(1 / 3, 1 / 3) == [-2, -1]  # e8m0's one relative bound: still two ticks
    assert log2_ticks(2.0**-6, 2.0**-6) == [-6, -5]  # int8's one spacing
    with pytest.raises(ValueError, match="0 < lo <= hi"):
        log2_ticks(0.0, 1.0)


ROUND_STEPS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)  # the docstring's list


@settings(max_examples=200, deadline=None)
@given(st.floats(-300, 300), st.floats(0, 300), st.integers(2, 12))
@example(a=0.0, width=4.0, most=2)  # step 5 gives one tick: the fallback, not a "step of 4"
def test_log2_ticks_properties(a, width, most):
    lo, hi = 2.0**a, 2.0 ** (a + width)
    ticks = log2_ticks(lo, hi, most)
    assert len(ticks) >= 2 and ticks == sorted(set(ticks))
    a, b = np.log2(lo), np.log2(hi)
    # the smallest round step with at most `most` multiples inside [a, b]
    step = next(s for s in ROUND_STEPS if np.floor(b / s) - np.ceil(a / s) + 1 <= most)
    inside = [k * step for k in range(int(np.ceil(a / step)), int(np.floor(b / step)) + 1)]
    if len(inside) >= 2:  # every multiple of that round step inside the range
        assert ticks == inside
    else:  # too few round ticks inside: the two powers of 2 around the range
        assert len(ticks) == 2 and ticks[0] == np.floor(a) and ticks[1] >= b
        assert ticks[1] == max(ticks[0] + 1, np.ceil(b))


def tick_exponents(axis) -> list[float]:
    lo, hi = sorted(axis.get_view_interval())
    return [float(np.log2(t)) for t in axis.get_ticklocs() if lo <= t <= hi]


@pytest.mark.parametrize("names", [["e2m1"], ["e8m0"], ["int8"], ["fp16", "bf16"], ["e4m3", "e5m2"]])
def test_spacing_axes_have_round_ticks_and_more_than_one(plt, names):
    fig, (gap, rel) = plt.subplots(2, 1, sharex=True)
    from fpemu.teach import draw_spacing

    drawn = draw_spacing(gap, rel, names)
    fig.canvas.draw()
    for axis in (rel.xaxis, gap.yaxis, rel.yaxis):
        ks = tick_exponents(axis)
        assert len(ks) >= 2 and all(k == int(k) for k in ks), (names, ks)
    # the x axis runs from the smallest positive value to the largest: the last gap is inside
    lo, hi = rel.get_xlim()
    assert lo <= min(d["edges"][0] for d in drawn) and hi >= max(d["edges"][-1] for d in drawn)
    assert rel.lines[0].get_xdata()[-1] == drawn[0]["edges"][-1]


# ---- colours and shared axes ----------------------------------------------------------------
def test_a_colour_per_format_never_the_subnormal_colour(plt):
    from matplotlib.colors import to_rgba

    from fpemu.teach import draw_number_line, draw_ranges, draw_spacing
    from fpemu.teach.plots import SUBNORMAL_COLOUR, format_colour

    names = ["e4m3", "e5m2", "e2m1"]
    _fig, axes = plt.subplots(5, 1)
    draw_number_line(axes[:3], names)
    draw_spacing(axes[3], axes[4], names)
    orange = to_rgba(SUBNORMAL_COLOUR)
    for i, name in enumerate(names):
        normal, sub = axes[i].lines[:2]
        assert to_rgba(normal.get_color()) == to_rgba(format_colour(i)) != orange
        assert to_rgba(sub.get_color()) == orange
        curve = [ln for ln in axes[3].lines if ln.get_label() == name]
        assert len(curve) == 1 and to_rgba(curve[0].get_color()) == to_rgba(format_colour(i))
    assert len({format_colour(i) for i in range(10)}) == 10
    assert all(to_rgba(line.get_color()) != orange for line in axes[3].lines + axes[4].lines)
    _fig2, ax = plt.subplots()
    draw_ranges(ax, ["fp16", "bf16"])
    normal_bars = ax.patches[1::2]
    assert [to_rgba(b.get_facecolor())[:3] for b in normal_bars] == [to_rgba(format_colour(i))[:3] for i in (0, 1)]


def test_number_line_rows_share_one_x_range(plt):
    from fpemu.teach import draw_number_line, number_line

    names = ["e4m3", "e5m2", "e2m1"]
    _fig, axes = plt.subplots(3, 1)
    drawn = draw_number_line(axes, names)
    left, right = shared_line_span([number_line(n) for n in names])
    assert (left, right) == (-16.0, float(np.log2(61440)))  # e5m2's 2**-16 to its overflow threshold
    assert len({ax.get_xlim() for ax in axes}) == 1 and len({d["zero_x"] for d in drawn}) == 1
    lo, hi = axes[0].get_xlim()
    assert lo < drawn[0]["zero_x"] < left and right < hi
    # e2m1 is drawn at its true width on that shared scale: 0.5 .. 6 spans log2(12) of it
    xs = np.concatenate([ln.get_xdata() for ln in axes[2].lines[:2]])
    assert xs.min() == -1 and xs.max() == np.log2(6)


# ---- labels: none overlapping, none leaving its axes ---------------------------------------------
def text_boxes(fig, ax):
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_text().strip()]


def assert_clear(fig, axes):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in axes:
        frame = ax.get_window_extent(renderer)
        boxes = text_boxes(fig, ax)
        for text, box in boxes:
            assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, f"{text!r} leaves its axes"
            assert frame.y0 - 0.5 <= box.y0 and box.y1 <= frame.y1 + 0.5, f"{text!r} leaves its axes"
        for (t1, b1), (t2, b2) in itertools.combinations(boxes, 2):
            assert not b1.overlaps(b2), f"{t1!r} overlaps {t2!r}"


@pytest.mark.parametrize("names", [["fp16"], ["e4m3", "e5m2", "e2m1"], ["e2m1", "e8m0", "int8", "fp16"],
                                   ["e2m1"], ["e8m0"], ["e3m2", "e2m3", "ue4m3"]])
def test_number_line_labels_stay_clear(plt, names):
    from fpemu.teach import draw_number_line

    fig, axes = plt.subplots(len(names), 1, figsize=(10, 1.1 * len(names) + 0.6), layout="constrained",
                             squeeze=False)
    draw_number_line(axes[:, 0], names)
    assert_clear(fig, axes[:, 0])
    fp16 = [t.get_text() for ax in axes[:, 0] for t in ax.texts if "65" in t.get_text()]
    assert fp16 == ([" overflow from 65520 on", "max 65504;"] if "fp16" in names else [])


@pytest.mark.parametrize("names", [["fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4"],
                                   ["e2m1"], ["nvfp4", "mxfp4", "mxfp8_e4m3"], ["e8m0", "int8"],
                                   ["int8"], ["e8m0"], ["mxint8"]])
def test_range_labels_stay_clear_and_the_legend_names_what_is_drawn(plt, names):
    from fpemu.teach import draw_ranges

    fig, ax = plt.subplots(figsize=(10, 0.55 * len(names) + 1.4), layout="constrained")
    drawn = draw_ranges(ax, names)
    assert_clear(fig, [ax])
    legend = [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else []
    assert legend or ax.get_legend() is None  # no empty legend box
    has_sub = any(e["min_normal"] > e["min_positive"] for e in drawn)
    assert ("subnormals" in legend) == has_sub
    assert ("one block, its scale at 1" in legend) == any("block_min" in e for e in drawn)
    assert ("its FP32 tensor scale slides the bar" in legend) == ("nvfp4" in names)
    assert "black" not in ax.get_xlabel() and "orange" not in ax.get_xlabel()


def test_nvfp4s_bar_shows_its_per_tensor_scale(plt):
    from fpemu.teach import draw_ranges

    assert range_entry("nvfp4")["tensor_scale"] == "fp32" and range_entry("mxfp4")["tensor_scale"] is None
    assert fpemu.mx.get_block_format("nvfp4").tensor_scale and not fpemu.mx.get_block_format("mxfp4").tensor_scale
    _fig, ax = plt.subplots()
    draw_ranges(ax, ["mxfp4", "nvfp4"])
    words = [t.get_text() for t in ax.texts if t.get_text()]
    assert words[0] == "257.6 binades"
    assert words[1] == "21.4 binades (tensor scale 1)"
    arrows = [t for t in ax.texts if not t.get_text()]
    assert len(arrows) == 2 and {a.xy[1] for a in arrows} == {-1 + 0.38}  # both on nvfp4's row
    # 21.4 binades: UE4M3's 2**-9 .. 448 times E2M1's 0.5 .. 6, the tensor scale at 1
    assert Fraction(range_entry("nvfp4")["min_positive"]) == Fraction(1, 2**9) * Fraction(1, 2)
    assert range_entry("nvfp4")["max"] == 448 * 6


def test_label_numbers_are_exact_or_marked():
    from fpemu.teach.plot_data import number_line
    from fpemu.teach.plot_text import label_number

    assert label_number(1.984375) == "1.984375"  # int8's max, not 1.98438
    assert label_number(2.0**-126) == "2^-126" and label_number(65520.0) == "65520"
    assert label_number(float(np.finfo(np.float32).max)) == "≈3.403e+38"
    assert number_line("e8m0")["overflow_label"] == "overflow beyond ≈2.552e+38"  # not 40 digits
    assert [number_line(n)["overflow_label"] for n in ("fp16", "e4m3", "int8", "e2m1")] == [
        "overflow from 65520 on", "overflow beyond 464", "saturates from 1.9921875 on", "saturates from 7 on"]


# ---- fixed point has no subnormals: nothing of int8 orange ------------------------------------
def orange_things(ax):
    """The lines holding points and the bars of some width drawn in the subnormal colour."""
    from matplotlib.colors import to_rgba

    from fpemu.teach.plots import SUBNORMAL_COLOUR

    orange = to_rgba(SUBNORMAL_COLOUR)[:3]
    lines = [ln for ln in ax.lines if len(ln.get_xdata()) and to_rgba(ln.get_color())[:3] == orange]
    bars = [p for p in ax.patches if p.get_width() > 0 and to_rgba(p.get_facecolor())[:3] == orange]
    return lines, bars


def test_fixed_point_values_are_ordinary_ticks_not_subnormals(plt):
    from fpemu.teach import draw_number_line, number_line, spacing
    from fpemu.teach.plots import format_colour

    line = number_line("int8")
    assert not line["subnormal"].any() and not spacing("int8")["subnormal"].any()
    _fig, axes = plt.subplots(3, 1)
    draw_number_line(axes, ["int8", "e2m1", "int8"])  # int8 twice: rows 0 and 2
    for row in (0, 2):
        assert orange_things(axes[row]) == ([], [])
        ticks = [ln for ln in axes[row].lines if len(ln.get_xdata()) == 127]  # 1..127 * 2^-6
        assert len(ticks) == 1 and ticks[0].get_color() == format_colour(row)
        assert np.array_equal(ticks[0].get_xdata(), np.log2(np.arange(1, 128) * 2.0**-6))
    assert len(orange_things(axes[1])[0]) == 1  # e2m1's 0.5 stays orange


@pytest.mark.parametrize("names, orange_rows", [(["int8"], []), (["mxint8"], []), (["e8m0", "int8"], []),
                                                (["int8", "fp16", "mxint8", "mxfp4"], [1, 3])])
def test_fixed_point_range_bars_have_no_subnormal_part(plt, names, orange_rows):
    from fpemu.teach import draw_ranges

    _fig, ax = plt.subplots()
    drawn = draw_ranges(ax, names)
    for name, entry in zip(names, drawn):
        if name in ("int8", "mxint8"):
            assert entry["min_normal"] == entry["min_positive"], name
    _, bars = orange_things(ax)
    assert sorted(round(-b.get_y() - b.get_height() / 2) for b in bars) == orange_rows
    legend = [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else []
    assert ("subnormals" in legend) == bool(orange_rows)


@pytest.mark.parametrize("names", [["fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4"],
                                   ["e2m1", "mxfp4", "nvfp4"], ["e2m1"]])
def test_the_range_axis_ends_just_past_its_words(plt, names):
    """Issue 41: tutorial_ranges.png ran on, empty, from 130 to 200 beyond FP32's bar."""
    from fpemu.teach import draw_ranges

    fig, ax = plt.subplots(figsize=(10, 0.55 * len(names) + 1.4), layout="constrained")
    draw_ranges(ax, names)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    words = max(t.get_window_extent(renderer).x1 for t in ax.texts if t.get_text())
    assert words <= frame.x1 and frame.x1 - words < 0.04 * frame.width, (frame.x1 - words) / frame.width
