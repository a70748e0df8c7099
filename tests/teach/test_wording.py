"""The teaching tools' sentences and figure titles say exactly what the codec does: where
overflow starts (and whether the tie there overflows), which formats have subnormals, and
what the negative side and the spacing of a number line look like."""

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.formats import Format, get_format
from fpemu.teach import finite_values
from fpemu.teach.api import encode_number
from fpemu.teach.plot_data import number_line, spacing
from fpemu.teach.plot_text import line_title, spacing_title
from fpemu.teach.values import (overflow_inclusive, overflow_threshold, overflow_words,
                                smallest_subnormal, value_classes)

# format, the exact midpoint between max and the next step, whether the tie itself goes past max
CASES = [
    ("fp16", Fraction(65520), True),
    ("bf16", Fraction(2**128 - 2**119), True),
    ("fp32", Fraction(2**128 - 2**103), True),
    ("e5m2", Fraction(61440), True),
    ("e4m3", Fraction(464), False),
    ("e2m1", Fraction(7), True),
]


def _q(x, fmt, **kw):
    with np.errstate(over="ignore", invalid="ignore"):
        return float(fpemu.quantize(np.array([x], dtype=object), get_format(fmt), **kw)[0])


@pytest.mark.parametrize("name, tie, inclusive", CASES)
def test_overflow_threshold_and_tie_against_the_codec(name, tie, inclusive):
    fmt = get_format(name)
    assert Fraction(overflow_threshold(fmt)) == tie
    assert overflow_inclusive(fmt) is inclusive
    # the tie rounds past max on the grid continued one binade up (no Inf/NaN there), or not
    wider = Format(f"{name}+", fmt.exponent_bits + 1, fmt.mantissa_bits, fmt.bias, inf="none", nan="none")
    assert (_q(tie, wider) > fmt.max) == inclusive
    assert _q(tie, name, overflow="saturate") == fmt.max
    if fmt.has_inf or fmt.has_nan:
        assert (not np.isfinite(_q(tie, name))) == inclusive
    else:  # e2m1: no Inf or NaN, the tie saturates to max
        assert _q(tie, name) == fmt.max
    below = tie - Fraction(1, 2**200)
    assert _q(below, name) == fmt.max  # just below the tie: max, in every format
    above = tie + Fraction(1, 2**200)
    assert (_q(above, name) != fmt.max) == (fmt.has_inf or fmt.has_nan)
    text = str(tie.numerator)
    assert overflow_words(fmt) == (f"from {text} on" if inclusive else f"beyond {text}")
    assert overflow_inclusive(fmt, "nearest_away") is True


def test_fp16_65520_overflows_and_its_float_below_does_not():
    assert np.isinf(fpemu.quantize(np.array([65520.0]), "fp16")[0])
    assert fpemu.quantize(np.array([np.nextafter(65520.0, 0)]), "fp16")[0] == 65504.0
    text = encode_number("fp16", "65520")["rules"][-1]["text"]
    assert "every magnitude from 65520 on does" in text and "beyond" not in text
    assert text.endswith("the result is infinity")


@pytest.mark.parametrize("name, x", [("fp32", "340282356779733661637539395458142568448"),
                                     ("e5m2", "61440"), ("bf16", str(2**128 - 2**119))])
def test_rules_say_from_on_where_the_tie_overflows(name, x):
    e = encode_number(name, x)
    assert np.isinf(float(e["value"]))
    assert f"every magnitude from {x} on does" in e["rules"][-1]["text"]


def test_rules_say_beyond_where_the_tie_stays_at_max():
    assert [r["rule"] for r in encode_number("e4m3", "464")["rules"]] == ["tie"]
    e = encode_number("e4m3", "465")
    assert e["value"] == "nan"
    assert "every magnitude beyond 464 does" in e["rules"][-1]["text"]


def test_e2m1_seven_saturates_and_says_so():
    e = encode_number("e2m1", "7")
    assert float(e["value"]) == 6.0
    assert e["rules"][-1]["text"] == ("7 rounds past 6, the largest finite value (under nearest_even, every "
                                      "magnitude from 7 on does): e2m1 has neither Inf nor NaN, so it saturates to 6")


def test_directed_rounding_names_its_own_mode():
    text = encode_number("fp16", "65519", "up")["rules"][-1]["text"]
    assert "(under up; to nearest even only magnitudes from 65520 on would)" in text
    assert float(encode_number("fp16", "65519")["value"]) == 65504.0


@pytest.mark.parametrize("name", ["fp16", "bf16", "e4m3", "e5m2", "e2m1", "e8m0", "int8", "binary8p1se", "ue4m3"])
def test_smallest_subnormal_only_where_there_are_subnormals(name):
    values = finite_values(name)
    subs = values[(values > 0) & (value_classes(values, name) == "subnormal")]
    assert smallest_subnormal(name) == (float(subs[0]) if len(subs) else None)
    if not get_format(name).subnormals:
        assert smallest_subnormal(name) is None


def test_e8m0_has_no_smallest_subnormal():
    assert not get_format("e8m0").subnormals and smallest_subnormal("e8m0") is None


def test_line_title_negative_side_per_format():
    assert "negatives mirror them)" in line_title([number_line("e4m3"), number_line("fp16")])
    e8m0, int8 = number_line("e8m0"), number_line("int8")
    assert not (finite_values("e8m0") < 0).any() and e8m0["negatives"] == "none"
    v = finite_values("int8")
    assert v[0] == -2.0 and 2.0 not in v and np.array_equal(-v[1:][v[1:] < 0][::-1], v[v > 0])
    title = line_title([number_line("e4m3"), e8m0, int8])
    assert "mirror them;" in title and "e8m0 is unsigned: no negatives" in title
    assert "int8 is two's complement: its negatives mirror them and go one step lower, to -2" in title
    assert "negatives mirror them)" not in title


def test_spacing_title_uniform_for_fixed_point():
    s = spacing("int8")
    assert np.all(s["spacing"] == 2.0**-6)
    assert spacing_title([s]) == "Spacing: int8 (fixed point): uniform, 0.015625 everywhere"
    assert "doubling" not in spacing_title([s])
    # floats: constant through the subnormals and the first binade, doubling at each later power of 2
    e = spacing("e4m3")
    above = e["lower"] >= 2 * get_format("e4m3").min_normal
    assert np.all(e["spacing"][e["lower"] < 2 * get_format("e4m3").min_normal] == 2.0**-9)
    assert np.array_equal(e["spacing"][above], 2.0 ** (np.floor(np.log2(e["lower"][above])) - 3))
    title = spacing_title([e, s])
    assert title.startswith("Spacing grows with magnitude") and title.endswith("int8 (fixed point): uniform, "
                                                                              "0.015625 everywhere")


def test_plot_titles_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from fpemu.teach.plots import draw_number_line, draw_spacing
    fig, axes = plt.subplots(2, 1)
    draw_number_line(axes, ["e8m0", "int8"])
    title = axes[0].get_title().replace("\n", " ")
    texts = [t.get_text() for ax in axes for t in ax.texts]
    fig2, (a, b) = plt.subplots(2, 1)
    draw_spacing(a, b, ["int8"])
    plt.close(fig), plt.close(fig2)
    assert "mirror them)" not in title and "e8m0 is unsigned" in title
    assert a.get_title() == "Spacing: int8 (fixed point): uniform, 0.015625 everywhere"
    assert " saturates from 1.9921875 on" in texts


def test_the_page_summary_of_e8m0_names_no_subnormal():
    """The format summary the page shows reads min_subnormal from format_fields: null where
    the format has none (E8M0), the value where it has (fp16: 2^-24)."""
    from fpemu.teach.api import format_fields

    assert format_fields(get_format("e8m0"))["min_subnormal"] is None
    assert float(format_fields(get_format("fp16"))["min_subnormal"]) == 2.0**-24


# ---- titles that follow the formats drawn: subnormals only where there are some ----------------
def _drawn_titles(plt, names):
    """The number line's title and the relative-error panel's, as drawn for ``names``."""
    from fpemu.teach.plots import draw_number_line, draw_spacing

    _fig, axes = plt.subplots(len(names) + 2, 1)
    draw_number_line(axes[: len(names)], names)
    draw_spacing(axes[-2], axes[-1], names)
    return axes[0].get_title().replace("\n", " "), axes[-1].get_title().replace("\n", " ")


@pytest.mark.parametrize("names, orange", [
    (["int8"], False), (["e8m0"], False), (["e8m0", "int8"], False), (["binary8p1se"], False),
    (["fp16", "bf16"], True), (["int8", "e2m1"], True), (["e8m0", "e4m3"], True),
])
def test_the_number_line_names_orange_ticks_only_where_a_format_has_subnormals(plt, names, orange):
    title, _ = _drawn_titles(plt, names)
    assert title.endswith("; orange ticks: subnormals") == orange
    assert ("orange" in title) == orange and ("subnormal" in title) == orange


SAWTOOTH = ("Largest relative error in each gap: a sawtooth under the flat bound 2^-(m+1) (dotted) "
            "for normals, rising in the subnormals")


@pytest.mark.parametrize("names", [["fp16", "bf16"], ["e4m3", "e5m2"], ["e2m1"]])
def test_the_relative_error_title_of_floats_with_subnormals_is_the_sawtooth(plt, names):
    _, title = _drawn_titles(plt, names)
    assert title == SAWTOOTH  # the tutorial's figures keep their words


def test_the_relative_error_of_fixed_point_falls_as_one_over_x(plt):
    s = spacing("int8")
    # uniform steps of 2^-6: the gap [k, k+1] * 2^-6 errs by at most 1/(2k+1), k = 1 .. 126
    exact = [Fraction(b - a) / Fraction(a + b) for a, b in zip(s["lower"], s["upper"])]
    assert exact == [Fraction(1, 2 * k + 1) for k in range(1, 127)]
    assert np.all(np.diff(s["relative_bound"]) < 0)  # a falling staircase, no sawtooth
    _, title = _drawn_titles(plt, ["int8"])
    assert "int8 (fixed point)" in title and "falls as 1/|x|" in title and "from 1/3 to 1/253" in title
    for wrong in ("sawtooth", "subnormal", "2^-(m+1)", "dotted"):
        assert wrong not in title, wrong


def test_the_relative_error_of_e8m0_is_flat_at_one_third(plt):
    s = spacing("e8m0")
    # every value a power of 2: each gap [2^k, 2^(k+1)], its midpoint 1.5 * 2^k errs by 2^k/2 / (1.5 * 2^k)
    assert all(Fraction(b - a) / Fraction(a + b) == Fraction(1, 3) for a, b in zip(s["lower"], s["upper"]))
    k = np.arange(-127, 127, dtype=np.float64)
    mid = 1.5 * 2.0**k
    with np.errstate(over="ignore"):
        q = fpemu.quantize(mid, "e8m0")
    assert set(np.abs(q - mid) / mid) == {1 / 3}  # the codec rounds every midpoint by exactly 1/3
    x = np.geomspace(2.0**-120, 2.0**120, 100_001)
    assert np.max(np.abs(fpemu.quantize(x, "e8m0") - x) / x) <= 1 / 3
    _, title = _drawn_titles(plt, ["e8m0"])
    assert "e8m0" in title and "flat at 1/3" in title and "2^-1 (dotted)" in title
    for wrong in ("sawtooth", "subnormal", "2^-(m+1)"):
        assert wrong not in title, wrong


def test_the_relative_error_title_names_each_kind_drawn(plt):
    _, title = _drawn_titles(plt, ["e2m1", "e8m0", "int8", "fp16"])
    assert title.startswith(SAWTOOTH + "; ")
    assert "e8m0" in title and "flat at 1/3" in title and "int8 (fixed point)" in title and "1/|x|" in title
    _, title = _drawn_titles(plt, ["e8m0", "int8"])
    assert "subnormal" not in title and "sawtooth" not in title
