"""The explorer's new views in real Chromium (issue 41, "what to build"): the number-line strip
(the input, its neighbours, the tie point, the subnormal and overflow limits, to scale), one
number in several formats side by side (shared by its URL), the printable code table (one
page of print), and MXFP4 floor/rceil against NVFP4 with a tensor amax. What the page shows is
held to fpemu.encode / decode / quantize / mx.quantize computed here, and to Fractions.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest
from browser_helpers import PHONE, browser, open_page, page, settle, shot, text, url  # noqa: F401

import fpemu
from fpemu.codec.rules import next_step_above_max

WIDE = {"width": 1280, "height": 900}


def close(page, problems):
    page.context.close()
    assert not problems, problems


def marks(page, strip: str) -> dict[str, dict]:
    """The marks of one strip: exact value, place, and where the tick is drawn (share of the line)."""
    got = page.evaluate(f"""() => {{ const line = document.querySelector('#{strip} .strip-line').getBoundingClientRect();
      return Array.from(document.querySelectorAll('#{strip} .mark')).map(m => {{ const t = m.querySelector('.tick').getBoundingClientRect();
        return [m.dataset.kind, m.dataset.value, m.dataset.pos, (t.left + t.width / 2 - line.left) / line.width,
                m.querySelector('.label').textContent]; }}); }}""")
    return {k: {"value": v, "pos": None if p == "" else float(p), "drawn": d, "label": lab} for k, v, p, d, lab in got}


def edges(page, strip: str) -> tuple[Fraction, Fraction]:
    return (Fraction(page.get_attribute(f"#{strip}", "data-left")), Fraction(page.get_attribute(f"#{strip}", "data-right")))


def codec(x: str, fmt: str, rounding: str) -> Fraction:
    return Fraction(float(fpemu.quantize(np.array([x], dtype=object), fmt, rounding=rounding, overflow="saturate")[0]))


# ---- the number-line strip -----------------------------------------------------------------------
@pytest.mark.parametrize("fmt, typed", [("e4m3", "0.3"), ("fp32", "0.1"), ("e2m1", "2.5"), ("e4m3", "460"),
                                        ("bf16", "-70000"), ("fp16", "1e-7")])
def test_the_strip_shows_the_input_its_neighbours_and_the_tie_to_scale(browser, url, fmt, typed):
    page, problems = open_page(browser, url, f"#format={fmt}&x={typed}", viewport=WIDE)
    gap = marks(page, "strip-gap")
    x = Fraction(typed)
    f = fpemu.get_format(fmt)
    low, high = (codec(typed, fmt, "down"), codec(typed, fmt, "up")) if abs(x) <= f.max else \
        (Fraction(f.max), Fraction(next_step_above_max(f)))
    assert Fraction(gap["below"]["value"]) == low and Fraction(gap["above"]["value"]) == high
    assert Fraction(gap["tie"]["value"]) == (low + high) / 2 and Fraction(gap["input"]["value"]) == x
    left, right = edges(page, "strip-gap")
    for m in gap.values():  # to scale: its place from the exact values, and drawn there (to a pixel)
        assert m["pos"] == float((Fraction(m["value"]) - left) / (right - left))
        assert abs(m["drawn"] - m["pos"]) < 2 / 700, m
    value = Fraction(float(fpemu.quantize(np.array([typed], dtype=object), fmt)[0])) if fmt != "e4m3" or typed != "460" \
        else Fraction(448)
    result = page.eval_on_selector_all("#strip-gap .mark.result", "ms => ms.map(m => m.dataset.value)")
    assert [Fraction(v) for v in result] == [value]  # the value it became, marked
    rng = marks(page, "strip-range")
    assert Fraction(rng["largest"]["value"]) == Fraction(f.max)
    assert Fraction(rng["overflow"]["value"]) == (Fraction(f.max) + Fraction(next_step_above_max(f))) / 2
    assert Fraction(rng["smallest normal"]["value"]) == Fraction(f.min_normal)
    assert Fraction(rng["smallest subnormal"]["value"]) == Fraction(f.min_subnormal)
    assert Fraction(rng["input"]["value"]) == abs(x)
    for m in rng.values():
        assert abs(m["drawn"] - m["pos"]) < 2 / 700, m
    sub, top = rng["smallest subnormal"], rng["largest"]  # log2 scale: binades evenly spaced
    per_binade = (top["pos"] - sub["pos"]) / float(np.log2(f.max / f.min_subnormal))
    assert abs(rng["smallest normal"]["pos"] - sub["pos"] - per_binade * np.log2(f.min_normal / f.min_subnormal)) < 1e-9
    if typed == "0.3":
        shot(page, "strip_e4m3_0.3")
    close(page, problems)


def test_a_code_strip_shows_the_halfway_points_around_it(browser, url):
    page, problems = open_page(browser, url, "#format=e4m3&code=0x7E")
    gap = marks(page, "strip-gap")
    assert Fraction(gap["value"]["value"]) == 448 and Fraction(gap["below"]["value"]) == Fraction(
        float(fpemu.decode(np.array([0x7D], np.uint8), "e4m3")[0]))
    assert Fraction(gap["halfway above"]["value"]) == 464 and Fraction(gap["above"]["value"]) == 480
    assert "outside" in page.get_attribute('#strip-gap .mark[data-kind="above"]', "class")  # 480: not in e4m3
    assert fpemu.quantize(np.array([463.9, 464.0, 464.1]), "e4m3").tolist()[:2] == [448.0, 448.0]
    close(page, problems)


# ---- side by side --------------------------------------------------------------------------------
def compare_rows(page):
    return page.eval_on_selector_all("#cmp-table tbody tr", """rs => rs.map(r => [r.dataset.format,
        Array.from(r.cells).map(c => c.textContent)])""")


def test_the_same_number_in_several_formats_and_its_link(browser, url):
    page, problems = open_page(browser, url, "#view=compare&x=0.1", viewport=WIDE)
    rows = compare_rows(page)
    assert [r[0] for r in rows] == ["fp32", "bf16", "fp16", "e4m3", "e2m1"]  # the default five
    for name, cells in rows:
        f = fpemu.get_format(name)
        code = int(fpemu.encode(np.array(["0.1"], dtype=object), f)[0])
        value = Fraction(float(fpemu.decode(np.array([code], f.code_dtype), f)[0]))
        assert int(cells[1], 16) == code and Fraction(cells[3]) == value, name
        assert Fraction(cells[4]) == value - Fraction(1, 10) and Fraction(cells[5]) == (value - Fraction(1, 10)) * 10
    shot(page, "compare_0.1")
    settle(page, lambda: page.select_option("#cmp-add", "e5m2"))
    page.fill("#cmp-number", "1e-5")
    settle(page, lambda: page.press("#cmp-number", "Enter"))
    hash_ = page.evaluate("location.hash")
    assert "view=compare" in hash_ and "x=1e-5" in hash_ and "formats=fp32%2Cbf16%2Cfp16%2Ce4m3%2Ce2m1%2Ce5m2" in hash_
    shared, more = open_page(browser, url, hash_)  # the link shows the same rows
    assert compare_rows(shared) == compare_rows(page) and compare_rows(page)[-1][0] == "e5m2"
    e5m2 = int(fpemu.encode(np.array(["1e-5"], dtype=object), "e5m2")[0])
    assert int(compare_rows(page)[-1][1][1], 16) == e5m2
    close(shared, more)
    close(page, problems)


def test_a_format_that_refuses_says_so_in_its_row(browser, url):
    page, problems = open_page(browser, url, "#view=compare&x=nan&formats=fp16,e2m1,nosuch")
    rows = dict(compare_rows(page))
    assert rows["fp16"][3] == "nan" and "e2m1 has no NaN" in rows["e2m1"][1]
    assert "unknown format 'nosuch'" in rows["nosuch"][1]
    settle(page, lambda: page.click('#cmp-table a[href^="#format=fp16"]'))  # a row opens the number view
    assert page.is_visible("#view-number") and text(page, "#out-value") == "nan"
    close(page, problems)


# ---- the printable code table ---------------------------------------------------------------------
def read_short(t: str) -> Fraction:
    if "2^" in t:
        m, _, k = t.replace("-2^", "-1×2^").partition("2^")
        return Fraction(int(m.rstrip("×") or "1")) * Fraction(2) ** int(k)
    return Fraction(t)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m1", "e3m2", "int8", "e8m0", "ue4m3"])
def test_the_code_table_holds_every_code_and_prints_on_one_page(browser, url, fmt):
    page, problems = open_page(browser, url, f"#view=table&format={fmt}", viewport=WIDE)
    f = fpemu.get_format(fmt)
    cells = page.eval_on_selector_all("#code-grid tbody td", "ts => ts.map(t => [t.dataset.code, t.dataset.exact, t.textContent, t.className])")
    values = fpemu.decode(np.arange(f.num_codes, dtype=np.uint8), f).tolist()
    assert len(cells) == f.num_codes
    for code, ((hex_, exact, shown, cls), v) in enumerate(zip(cells, values)):
        assert int(hex_, 16) == code
        if np.isfinite(v):
            assert Fraction(exact) == Fraction(v) == read_short(shown), (code, shown)
        else:
            assert shown == ("nan" if np.isnan(v) else f"{v:g}") and cls in ("cls-nan", "cls-inf")
    heads = page.eval_on_selector_all("#code-grid tbody th", "ts => ts.map(t => t.textContent)")
    columns = 2 ** ((f.bits + 1) // 2)
    assert [int(h, 16) for h in heads] == list(range(0, f.num_codes, columns))
    pdf = page.pdf(format="A4", landscape=True, print_background=True, prefer_css_page_size=True)
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == 1  # every code on one page
    if fmt == "e4m3":
        shot(page, "table_e4m3")
    close(page, problems)


def test_the_table_view_refuses_wide_formats(browser, url):
    page, problems = open_page(browser, url, "#view=table&format=fp16")
    assert "at most 8 bits" in text(page, "#tbl-error") and page.is_hidden("#tbl-result")
    close(page, problems)


# ---- MXFP4 floor and rceil against NVFP4 with a tensor amax ---------------------------------------
def test_mxfp4_floor_rceil_and_nvfp4_side_by_side(browser, url):
    page, problems = open_page(browser, url, "#view=block&tamax=20", viewport=WIDE)
    typed = page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")
    x = np.array([float(v) for v in typed])
    floor = fpemu.mx.quantize(x, "mxfp4").dequantize(np.float64)
    rceil = fpemu.mx.quantize(x, "mxfp4", scale_rounding="rceil").dequantize(np.float64)
    nv = np.concatenate([fpemu.mx.quantize(x[:16], "nvfp4", global_amax=20.0).dequantize(np.float64),
                         fpemu.mx.quantize(x[16:], "nvfp4", global_amax=20.0).dequantize(np.float64)])
    rows = page.eval_on_selector_all("#blocks-compare tbody tr", "rs => rs.map(r => Array.from(r.cells).slice(2).map(c => [c.dataset.value, c.dataset.error]))")
    assert len(rows) == 32
    for i, row in enumerate(rows):
        assert [Fraction(v) for v, _ in row] == [Fraction(float(floor[i])), Fraction(float(rceil[i])), Fraction(float(nv[i]))]
        assert Fraction(row[2][1]) == Fraction(float(nv[i])) - Fraction(typed[i])  # the error, exactly
    scales = page.eval_on_selector_all("#blocks-compare thead tr.scales th", "ts => ts.map(t => t.textContent)")
    nv_scales = [float(fpemu.decode(np.array([fpemu.mx.quantize(h, "nvfp4", global_amax=20.0).scales[0]], np.uint8), "ue4m3")[0])
                 for h in (x[:16], x[16:])]
    assert scales[4].startswith(", ".join(repr(s) for s in nv_scales)) and "tensor amax 20.0" in scales[4]
    shot(page, "blocks_compare")
    close(page, problems)


@pytest.mark.parametrize("hash_", ["#view=compare&x=0.1", "#view=table&format=e4m3", "#format=fp32&x=0.1",
                                   "#view=block&block=nvfp4&tamax=100"])
def test_the_new_views_fit_a_phone(browser, url, hash_):
    page, problems = open_page(browser, url, hash_, viewport=PHONE)
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] == 390, (hash_, width)
    close(page, problems)
