"""The explorer dependable in a live class (issue 41, items 1 to 14), in real Chromium: the
back button, the stochastic odds, NVFP4's tensor amax, the words about a format, exact and
fast decimals, the block view's boxes and links, menus that offer only what the format takes,
no error flashing while a number is typed, TF32's stored codes, links in one form, the layout
at 1280 and 390 px, and neighbours written exactly. Every value is held to fpemu.encode /
decode / mx.quantize computed here, or to Fractions and Decimals.
"""

from __future__ import annotations

import urllib.request
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from browser_helpers import (
    PHONE,
    browser,
    exactly,
    open_page,
    page,
    round_number,
    settle,
    shot,
    text,
    url,
)

import fpemu

WIDE = {"width": 1280, "height": 900}


def type_live(page, selector: str, value: str) -> None:
    settle(page, lambda: page.fill(selector, value))  # (one input event, focus stays in the field)


def opened(browser, url, hash_, viewport=None):
    return open_page(browser, url, hash_, viewport=viewport)


def close(page, problems):
    page.context.close()
    assert not problems, problems


def block_rows(page) -> list[list[str]]:
    return page.eval_on_selector_all("#block-table tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")


# ---- 1: back restores the number box ----------------------------------------------------------
def test_back_restores_the_number_box(browser, url):
    page, problems = opened(browser, url, "#format=fp32&x=0.1")
    type_live(page, "#number", "65520")  # typed live: the box keeps the focus
    assert text(page, "#out-code") == "0x477FF000" and page.evaluate("document.activeElement.id") == "number"
    settle(page, lambda: page.go_back())
    code = int(fpemu.encode(np.array(["0.1"], dtype=object), "fp32")[0])
    assert text(page, "#out-code") == f"0x{code:08X}" == "0x3DCCCCCD"
    assert page.input_value("#number") == "0.1"  # (it kept 65520)
    close(page, problems)


# ---- 2: the odds of N random bits ---------------------------------------------------------------
@pytest.mark.parametrize("mode, bits, count", [("stochastic_a", 1, 0), ("stochastic_a", 2, 1), ("stochastic_b", 1, 1),
                                               ("stochastic_c", 1, 1), ("stochastic_odd", 1, 1)])
def test_the_stochastic_sentence_states_the_odds_of_its_bits(browser, url, mode, bits, count):
    page, problems = opened(browser, url, f"#format=e4m3&x=1.3&rounding={mode}&srbits={bits}")
    codes = fpemu.encode(np.array(["1.3"] * 2**bits, dtype=object), "e4m3", rounding=mode, sr_bits=bits,
                         random_bits=np.arange(2**bits))
    assert int(np.sum(codes == 0x3B)) == count  # 0x3B: 1.375, the codec over every value of the bits
    rule = text(page, '#out-rules li[data-rule="stochastic"]')
    p = Fraction(count, 2**bits)
    assert f"takes 1.375 with probability {float(p):g} (" in rule and "near" not in rule
    assert "unbiased rounding would take 1.375 with probability 0.4" in rule
    close(page, problems)


# ---- 3 and 7: NVFP4's tensor amax, its flush reason in float32 ----------------------------------
def test_nvfp4_takes_a_tensor_amax(browser, url):
    page, problems = opened(browser, url, "#view=block&block=nvfp4&tamax=100&values=1,-6,0.25")
    assert page.is_hidden("#scale-rounding") and page.is_visible("#block-tamax")  # (no greyed 'rceil')
    assert page.input_value("#block-tamax") == "100"
    q = fpemu.mx.quantize(np.array([1.0, -6.0, 0.25]), "nvfp4", global_amax=100.0)
    assert text(page, "#block-scale-code") == f"0x{int(q.scales[0]):02X}" == "0x5D"  # 26: UE4M3 rounded 26.88
    assert [Fraction(r[5]) for r in block_rows(page)] == [Fraction(float(v)) for v in q.dequantize(np.float64)]
    assert "tensor amax 100.0 (as typed)" in text(page, "#block-global")
    page.fill("#block-tamax", "")
    settle(page, lambda: page.click("#block-run"))  # blank: the block's own amax, block scale 448
    assert text(page, "#block-scale-code") == "0x7E" and "this block's own" in text(page, "#block-global")
    close(page, problems)


def test_nvfp4_flush_reason_is_the_float32_value_the_table_shows(browser, url):
    page, problems = opened(browser, url, "#view=block&block=nvfp4")
    x = np.array([float(v) for v in page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")])
    q = fpemu.mx.quantize(x, "nvfp4")
    one = fpemu.mx.NVFP4Array(np.ones(16, np.uint8), q.scales, "nvfp4", 0, 16, global_amax=float(q.global_amax))
    smallest = float(one.dequantize(np.float64)[0])  # element 0.5 as the block computes it: float32
    reason = text(page, "#block-reasons li.flag-flushed")
    assert f"smallest nonzero value {exactly_float(smallest)} " in reason and "≈" not in reason
    rows = block_rows(page)
    assert exactly_float(smallest) in [r[5] for r in rows]  # the table's value of element 0.5
    close(page, problems)


def exactly_float(v: float) -> str:
    return f"{int(v)}.0" if v.is_integer() else format(Decimal(v), "f")


# ---- 4: a fixed-point format's words -------------------------------------------------------------
def test_int8_summary_says_fixed_point_and_mxint8(page):
    settle(page, lambda: page.select_option("#format", "int8"))
    summary = text(page, "#format-summary")
    assert "two's complement fixed point: code × 2^-6, from -2 to 1.984375 in steps of 0.015625" in summary
    assert "the element of mxint8" in summary and "inf" not in summary
    assert fpemu.get_format("int8").lowest == -2 and fpemu.get_format("int8").max == 1.984375


# ---- 5 and 6: approximate decimals rounded once; long ones fast, with a busy sign ---------------
def rounded(q: Fraction, digits: int = 17) -> Decimal:
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = digits, ROUND_HALF_EVEN
        return Decimal(q.numerator) / Decimal(q.denominator)


def test_approximate_errors_are_rounded_once_from_the_exact_value(page):
    settle(page, lambda: page.select_option("#format", "fp32"))
    round_number(page, "1e-40")
    err = Fraction(text(page, "#out-value")) - Fraction("1e-40")
    shown = text(page, "#out-error")
    assert shown == "≈-5.3898885240418474e-46" and Decimal(shown[1:]) == rounded(err)
    round_number(page, "2.50000000000000000000000000001")
    x = Fraction("2.50000000000000000000000000001")
    rel = (Fraction(text(page, "#out-value")) - x) / x
    assert text(page, "#out-relative") == "≈-4e-30" and Decimal("-4e-30") == rounded(rel)  # (not -4.0000000000000003e-30)


def test_a_slow_answer_shows_the_busy_sign_and_greys_the_old_result(browser, url):
    page, problems = opened(browser, url, "#format=fp32&x=0.1")
    seen = []
    page.expose_function("seen", lambda busy, stale: seen.append((busy, stale)))
    page.route("**/api/encode", lambda route: (page.wait_for_timeout(1200), route.continue_()))
    page.evaluate("""() => new MutationObserver(() => window.seen(!document.getElementById('busy').hidden,
        document.getElementById('result').classList.contains('stale'))).observe(document.getElementById('busy'),
        {attributes: true})""")
    page.fill("#number", "1e-100000")
    settle(page, lambda: page.press("#number", "Enter"))
    assert (True, True) in seen and page.is_hidden("#busy")
    assert text(page, "#out-error") == "-1e-100000" and "stale" not in page.get_attribute("#result", "class")
    page.unroute("**/api/encode")
    close(page, problems)


# ---- 8: the block view's boxes and links ---------------------------------------------------------
def test_block_rows_are_numbered_by_their_box(browser, url):
    page, problems = opened(browser, url, "#view=block&values=6,,,,,,,0.1")
    rows = block_rows(page)
    assert [r[0] for r in rows] == ["x0", "x7"] and [r[1] for r in rows] == ["6", "0.1"]
    q = fpemu.mx.quantize(np.array([6.0, 0.1]), "mxfp4")
    assert [int(r[2], 16) for r in rows] == q.codes.tolist()
    close(page, problems)


def test_a_new_block_format_leaves_new_boxes_empty(browser, url):
    page, problems = opened(browser, url, "#view=block&block=nvfp4&values=1,2,3")
    settle(page, lambda: page.select_option("#block-format", "mxfp4"))
    typed = page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")
    assert typed == ["1", "2", "3"] + [""] * 29  # (the example's values used to fill them, unseen)
    assert [r[0] for r in block_rows(page)] == ["x0", "x1", "x2"]
    close(page, problems)


def test_a_cell_with_commas_stays_one_cell_after_back(browser, url):
    page, problems = opened(browser, url, "#view=block&values=1,2")
    page.fill("#bx0", "1, 2, 3, 4")
    settle(page, lambda: page.click("#block-run"))
    assert text(page, "#block-error") == "Error: cannot read '1, 2, 3, 4' as a number"
    page.fill("#bx0", "5")
    settle(page, lambda: page.click("#block-run"))
    settle(page, lambda: page.go_back())
    typed = page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")
    assert typed[:3] == ["1, 2, 3, 4", "2", ""] and "cannot read '1, 2, 3, 4'" in text(page, "#block-error")
    close(page, problems)


def test_links_carry_only_their_views_state(page):
    assert "values" not in page.evaluate("location.hash")
    settle(page, lambda: page.click("#tab-block"))
    hash_ = page.evaluate("location.hash")
    assert "view=block" in hash_ and "x=" not in hash_ and "format=" not in hash_
    settle(page, lambda: page.click("#tab-number"))
    assert "values" not in page.evaluate("location.hash") and "x=0.3" in page.evaluate("location.hash")


# ---- 9: menus offer what the format takes; bad seeds and custom fields are named --------------
def accepted(fmt: str, option: str, choices) -> list[str]:
    ok = []
    for c in choices:
        try:
            fpemu.encode(np.array([1.0]), fmt, **{option: c})
            ok.append(c)
        except ValueError:
            pass
    return ok


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1", "fp16", "int8", "e8m0"])
def test_the_menus_offer_only_what_the_codec_takes(page, fmt):
    settle(page, lambda: page.select_option("#format", fmt))
    overflows = page.eval_on_selector_all("#overflow option", "os => os.map(o => o.value)")
    assert overflows == ["default"] + accepted(fmt, "overflow", ["saturate", "saturate_propagate", "inf", "nan", "sat_none"])
    nans = page.eval_on_selector_all("#nan option", "os => os.map(o => o.value)")
    if fpemu.get_format(fmt).has_nan:
        assert nans == ["default"]  # (a NaN in is the format's NaN: nothing to choose)
    else:
        assert nans == ["default"] + accepted(fmt, "nan", ["zero", "max", "ml_dtypes"])
    assert ("inf" in overflows) == fpemu.get_format(fmt).has_inf


def test_a_choice_the_new_format_does_not_take_goes_back_and_says_so(page):
    settle(page, lambda: page.select_option("#format", "fp16"))
    settle(page, lambda: page.select_option("#overflow", "inf"))
    settle(page, lambda: page.select_option("#format", "e4m3"))
    assert page.input_value("#overflow") == "default" and "overflow 'inf' does not apply to e4m3" in text(page, "#notice")
    assert text(page, "#error") == "" and "overflow=" not in page.evaluate("location.hash")


def test_a_seed_that_is_not_a_number_is_named(browser, url):
    page, problems = opened(browser, url, "#format=e4m3&x=1.3&rounding=stochastic")
    page.fill("#seed", "abc")
    settle(page, lambda: page.dispatch_event("#seed", "change"))
    assert text(page, "#error") == "Error: the seed of stochastic rounding is a whole number 0 .. 2^63-1, got 'abc'"
    close(page, problems)
    page, problems = opened(browser, url, "#format=e4m3&x=1.3&rounding=stochastic&seed=abc")  # from a link
    assert "got 'abc'" in text(page, "#error") and "None" not in text(page, "#error")
    close(page, problems)


def test_custom_fields_the_browser_would_block_are_explained(page):
    round_number(page, "abc")  # an error on screen first
    page.click("#custom summary")
    page.fill("#custom-e", "12")
    settle(page, lambda: page.click("#custom-use"))
    with pytest.raises(ValueError) as refused:
        fpemu.Format("e3m3", 12, 3, bias=3, inf="none", nan="none")
    assert text(page, "#error") == f"Error: {str(refused.value).splitlines()[0]}"  # (not 'cannot read abc')


# ---- 10: no error flashes while typing; an error leaves no stale code --------------------------
def test_no_error_flashes_while_a_number_is_typed(page):
    page.evaluate("""() => { window.errors = []; new MutationObserver(() => window.errors.push(
        document.getElementById('error').textContent)).observe(document.getElementById('error'),
        {childList: true, characterData: true, subtree: true}); }""")
    page.click("#number")
    page.fill("#number", "")
    page.type("#number", "1e-3", delay=350)  # slower than the page's 200 ms pause: every prefix is asked
    page.wait_for_function("document.getElementById('out-input').textContent === '1e-3'")
    page.wait_for_timeout(1300)
    assert [e for e in page.evaluate("window.errors") if e] == []  # ('1e' and '1e-' said nothing)
    assert text(page, "#out-value") == exactly(int(fpemu.encode(np.array(["1e-3"], dtype=object), "e4m3")[0]), "e4m3")
    page.fill("#number", "")
    page.type("#number", "1e-", delay=50)  # a pause on a number that is not one: then it is said
    page.wait_for_function("document.getElementById('error').textContent.includes(\"cannot read '1e-'\")", timeout=5000)


def test_during_an_error_the_bits_and_code_boxes_hold_no_code(page):
    round_number(page, "abc")
    assert page.eval_on_selector_all("button.bit", "bs => bs.every(b => b.disabled)")
    assert page.is_visible("#bits-none") and page.input_value("#integer") == "" and page.input_value("#hex") == ""
    assert page.is_disabled("#code-up") and page.is_disabled("#code-down")
    round_number(page, "1")
    assert not page.eval_on_selector_all("button.bit", "bs => bs.some(b => b.disabled && !b.classList.contains('step'))")
    assert page.input_value("#integer") == str(0x38) and page.is_hidden("#bits-none")


# ---- 11: TF32's stored codes, and what each code box reads ----------------------------------------
def test_tf32_codes_are_stored_in_32_bits_and_say_so(browser, url):
    page, problems = opened(browser, url, "#format=tf32&x=1")
    one = int(fpemu.encode(np.array([1.0]), "tf32")[0])
    assert text(page, "#out-integer") == str(one) and "code ± 1 moves the integer by 2^13 = 8192" in text(page, "#container-note")
    settle(page, lambda: page.click("#code-up"))
    assert text(page, "#out-integer") == str(one + 8192)
    assert float(fpemu.decode(np.array([one + 8192], np.uint32), "tf32")[0]) == 1 + 2.0**-10
    type_live(page, "#integer", str(one + 1))  # not a code: its low 13 bits are not 0
    assert "low 13 bits are 0" in text(page, "#error") and str(one + 1) in text(page, "#error")
    close(page, problems)


def test_each_code_box_reads_its_own_digits(page):
    type_live(page, "#hex", "0b101")
    assert "a code in hex is the digits 0-9 and A-F" in text(page, "#error") and page.is_hidden("#result")
    type_live(page, "#integer", "0x38")
    assert "a code as an integer is the digits 0-9, got '0x38'" in text(page, "#error") and page.is_hidden("#result")
    type_live(page, "#integer", "56")
    assert text(page, "#out-code") == "0x38" and text(page, "#error") == ""


# ---- 12: links in one form ---------------------------------------------------------------------
def test_every_link_writes_codes_in_hex(browser, url, page):
    settle(page, lambda: page.click('button.bit[data-index="7"]'))
    assert "code=0x2B" in page.evaluate("location.hash")
    settle(page, lambda: page.click('[data-step="exponent-up"]'))
    settle(page, lambda: page.click("#out-up"))
    assert "code=0x" in page.evaluate("location.hash")
    legacy, problems = opened(browser, url, "#format=e4m3&code=00111000")  # an old link, in bits
    assert text(legacy, "#out-code") == "0x38" and "code=0x38" in legacy.evaluate("location.hash")
    close(legacy, problems)


def test_an_unknown_format_in_a_link_is_said(browser, url):
    page, problems = opened(browser, url, "#format=nosuch&x=1")
    with pytest.raises(ValueError) as refused:
        fpemu.get_format("nosuch")
    assert text(page, "#error") == f"Error: {str(refused.value).splitlines()[0]}" and page.is_hidden("#result")
    assert page.input_value("#format") == ""  # (not e4m3, silently)
    close(page, problems)


# ---- 13: layout --------------------------------------------------------------------------------
def test_fp32_bits_fit_one_row_at_1280(browser, url):
    page, problems = opened(browser, url, "#format=fp32&x=0.1", viewport=WIDE)
    tops = page.eval_on_selector_all("button.bit", "bs => bs.map(b => Math.round(b.getBoundingClientRect().top))")
    assert len(tops) == 32 and len(set(tops)) == 1
    shot(page, "class_fp32_1280")
    close(page, problems)


LINES = """sel => Array.from(document.querySelectorAll(sel)).filter(e => e.offsetParent).map(e => {
  const r = document.createRange(); r.selectNodeContents(e);
  return [e.textContent, new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size]; })"""


@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["1280", "390"])
@pytest.mark.parametrize("fmt", ["e2m1", "fp32", "e8m0"])
def test_words_do_not_break_and_labels_stay_with_their_controls(browser, url, viewport, fmt):
    page, problems = opened(browser, url, f"#format={fmt}&x=0.5", viewport=viewport)
    for sel in (".field-name", "#out-fields td:first-child", "label", "dt", ".tab"):
        for words, lines in page.evaluate(LINES, sel):
            assert lines == 1 or " " in words.strip(), (sel, words, lines)  # (one word: never broken)
    pairs = page.evaluate("""() => Array.from(document.querySelectorAll('#view-number label[for]')).filter(l => l.offsetParent)
        .map(l => [l.htmlFor, Math.abs(l.getBoundingClientRect().top + l.getBoundingClientRect().height / 2
          - document.getElementById(l.htmlFor).getBoundingClientRect().top - document.getElementById(l.htmlFor).getBoundingClientRect().height / 2)])""")
    far = [(f, d) for f, d in pairs if d > 6 and f not in ("number", "hex", "integer")] if viewport is PHONE else \
        [(f, d) for f, d in pairs if d > 6]
    assert not far, far  # (on a phone the wide text boxes sit under their labels, as full-width fields)
    close(page, problems)


def test_the_block_table_fits_a_phone(browser, url):
    page, problems = opened(browser, url, "#view=block&block=nvfp4", viewport=PHONE)
    rights = page.eval_on_selector_all("#block-table td, #blocks-compare td",
                                       "ts => ts.filter(t => t.offsetParent).map(t => t.getBoundingClientRect().right)")
    assert rights and max(rights) <= 390, max(rights)  # value, error and note columns on screen
    labels = page.eval_on_selector_all("#block-table tbody tr:first-child td", "ts => ts.map(t => t.dataset.label)")
    assert labels == ["box", "input", "code", "bits", "element value", "value", "error", "note"]
    close(page, problems)


def test_the_docs_are_a_link(page, url):
    settle(page, lambda: page.click("#tab-block"))
    link = page.get_attribute("#block-doc a", "href")
    assert link == "/docs/mx.md"
    with urllib.request.urlopen(url.rstrip("/") + link) as reply:
        assert reply.status == 200 and b"NVFP4" in reply.read()


# ---- 14: neighbours exactly, and why there is none -------------------------------------------------
def test_neighbours_are_exact_and_the_largest_says_why_none_above(browser, url):
    page, problems = opened(browser, url, "#format=fp32&x=0.1")
    code = int(fpemu.encode(np.array(["0.1"], dtype=object), "fp32")[0])
    assert text(page, "#out-down") == f"{exactly(code - 1, 'fp32')} (0x{code - 1:08X})"  # (not 0.09999999403953552)
    assert text(page, "#out-up") == f"{exactly(code + 1, 'fp32')} (0x{code + 1:08X})"
    settle(page, lambda: page.select_option("#format", "e4m3"))
    type_live(page, "#hex", "0x7E")
    assert page.is_hidden("#out-up")
    assert text(page, "#out-up-none") == "none: 448 is the largest finite value of e4m3 (overflow beyond 464)"
    assert fpemu.quantize(np.array([464.0, 465.0]), "e4m3").tolist()[0] == 448.0
    close(page, problems)
