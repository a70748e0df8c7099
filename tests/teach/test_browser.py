"""The explorer in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright, clicking bits and typing numbers, and checking what the page shows against fpemu's
codec computed here. The newer controls (hex and integer entry, stepping, the URL, the phone
width, the NaN rule, stochastic rounding, the block view's marks) are driven in
tests/teach/test_browser_explorer.py.

Skipped when the ``playwright`` package or a Chromium binary is missing (``.ci/run`` installs
both); see tests/browser_helpers.py.
"""

from __future__ import annotations

import numpy as np
from browser_helpers import (  # noqa: F401  (browser, page, url: fixtures)
    bits_shown,
    browser,
    decoded,
    exactly,
    page,
    round_number,
    rules_shown,
    settle,
    shot,
    text,
    url,
)

import fpemu


def test_the_page_opens_on_a_rounded_number(page):
    code = int(fpemu.encode(np.array([0.3]), "e4m3")[0])  # the page's first number
    assert page.input_value("#format") == "e4m3" and page.input_value("#number") == "0.3"
    assert text(page, "#out-code") == f"0x{code:02X}" and bits_shown(page) == format(code, "08b")
    assert text(page, "#out-value") == exactly(code, "e4m3") == "0.3125" == text(page, "#out-value-short")
    assert text(page, "#out-down") == f"{exactly(code - 1, 'e4m3')} (0x{code - 1:02X})"  # (exact, as the value)
    assert text(page, "#out-up") == f"{exactly(code + 1, 'e4m3')} (0x{code + 1:02X})"
    # the error of the decimal typed, exactly: 0.3125 - 3/10
    assert rules_shown(page) == ["rounded"] and text(page, "#out-error") == "+0.0125"
    rows = page.eval_on_selector_all("#out-fields tbody tr", "rs => rs.map(r => r.innerText.split('\\t'))")
    assert rows == [["sign", "0", "+"], ["exponent", "0101", "5 - bias 7 = -2"], ["mantissa", "010", "1 + 2/8 = 1.25"]]
    shot(page, "explore_e4m3_0.3")


def test_clicking_bits_flips_them(page):
    settle(page, lambda: page.click('button.bit[data-index="0"]'))  # the sign bit
    assert bits_shown(page) == "10101010" and text(page, "#out-value") == decoded(0xAA, "e4m3") == "-0.3125"
    assert page.get_attribute('button.bit[data-index="0"]', "aria-pressed") == "true"
    assert page.is_hidden("#rounding-out")  # a clicked code has no rounding to explain
    settle(page, lambda: page.click('button.bit[data-index="7"]'))  # the last mantissa bit
    assert text(page, "#out-code") == "0xAB" and text(page, "#out-value") == decoded(0xAB, "e4m3")
    for i in (1, 3, 5):  # every exponent and mantissa bit set: E4M3's only NaN
        settle(page, lambda i=i: page.click(f'button.bit[data-index="{i}"]'))
    assert bits_shown(page) == "11111111" and text(page, "#out-class") == "nan" and text(page, "#out-value") == "nan"
    shot(page, "explore_e4m3_nan")


def test_keyboard_flips_bits_and_keeps_focus(page):
    assert page.eval_on_selector_all("button.bit", "bs => bs.every(b => b.tagName === 'BUTTON')")
    page.focus('button.bit[data-index="4"]')
    settle(page, lambda: page.keyboard.press("Space"))
    assert bits_shown(page) == format(0x2A ^ 0x08, "08b")
    assert text(page, "#out-value") == decoded(0x2A ^ 0x08, "e4m3")
    assert page.evaluate("document.activeElement.dataset.index") == "4"
    settle(page, lambda: page.keyboard.press("Enter"))  # Enter on a real button flips it back
    assert bits_shown(page) == format(0x2A, "08b")
    page.focus("#number")  # the focus order of the number form follows the page
    order = []
    for _ in range(4):  # (the seed, hidden but under stochastic rounding, is skipped)
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
    assert order == ["rounding", "overflow", "nan", "round"]
    labels = page.eval_on_selector_all("label[for]", "ls => ls.map(l => l.htmlFor)")
    assert {"format", "number", "hex", "integer", "rounding", "seed", "overflow", "nan", "block-format"} <= set(labels)


RULE_CASES = [  # (typed, overflow, value, rules): E4M3's tie at 464, its NaN, saturation, subnormals
    ("464", "default", 448.0, ["tie"]),
    ("465", "default", float("nan"), ["rounded", "overflow"]),
    ("1000", "saturate", 448.0, ["overflow"]),
    ("0.0009765625", "saturate", 0.0, ["tie", "subnormal", "underflow"]),
    ("0.01", "saturate", 0.009765625, ["rounded", "subnormal"]),
]


def test_typed_numbers_and_the_rules_that_fire(page):
    for typed, overflow, value, fired in RULE_CASES:
        if page.input_value("#overflow") != overflow:
            settle(page, lambda o=overflow: page.select_option("#overflow", o))
        round_number(page, typed)
        codec = float(fpemu.quantize(np.array([float(typed)]), "e4m3",
                                     overflow=None if overflow == "default" else overflow)[0])
        assert text(page, "#out-value-short") == ("nan" if np.isnan(codec) else repr(codec)), typed
        assert np.array_equal(codec, value, equal_nan=True) and rules_shown(page) == fired, typed
        if typed == "465":
            shot(page, "explore_e4m3_overflow")


def test_another_format_and_rounding_mode(page):
    settle(page, lambda: page.select_option("#format", "e2m1"))
    assert page.locator("button.bit").count() == 4
    round_number(page, "2.5")
    assert text(page, "#out-value") == repr(float(fpemu.quantize(np.array([2.5]), "e2m1")[0])) == "2.0"
    assert rules_shown(page) == ["tie"]
    settle(page, lambda: page.select_option("#rounding", "nearest_away"))
    assert text(page, "#out-value") == repr(float(fpemu.quantize(np.array([2.5]), "e2m1", rounding="rna")[0]))
    settle(page, lambda: page.click("#out-up"))  # the neighbour above 3.0
    assert text(page, "#out-value") == "4.0" and text(page, "#out-code") == "0x06"


def test_the_summary_names_subnormals_only_where_there_are(page):
    settle(page, lambda: page.select_option("#format", "e8m0"))
    round_number(page, "3")
    assert ", no subnormals," in text(page, "#format-summary")
    settle(page, lambda: page.select_option("#format", "fp16"))
    round_number(page, "3")
    assert fpemu.get_format("fp16").min_subnormal == 2.0**-24
    assert ", smallest subnormal 2^-24;" in text(page, "#format-summary")


def test_a_format_of_your_own(page):
    page.click("#custom summary")
    for field, value in (("#custom-name", "e3m3"), ("#custom-e", "3"), ("#custom-m", "3"), ("#custom-bias", "3")):
        page.fill(field, value)
    page.select_option("#custom-inf", "none")
    page.select_option("#custom-nan", "none")
    page.fill("#number", "100")
    settle(page, lambda: page.click("#custom-use"))
    e3m3 = fpemu.Format("e3m3", 3, 3, bias=3, inf="none", nan="none")
    assert page.input_value("#format") == "custom" and page.locator("button.bit").count() == 7
    assert text(page, "#out-value") == repr(float(fpemu.quantize(np.array([100.0]), e3m3)[0])) == "30.0"
    assert rules_shown(page) == ["overflow"]
    settle(page, lambda: page.click('button.bit[data-index="0"]'))  # flips still use the custom format
    assert text(page, "#out-value") == "-30.0"
    page.select_option("#custom-inf", "ieee")  # the server refuses it, in Format's words
    settle(page, lambda: page.click("#custom-use"))
    assert "IEEE-style Inf and NaN come together" in text(page, "#error")
    page.fill("#custom-bias", "2.5")  # the browser refuses it: a bias is an integer (step 1)
    assert not page.eval_on_selector("#custom-bias", "i => i.checkValidity()")


def test_errors_are_shown_on_the_page(page):
    round_number(page, "abc")
    assert text(page, "#error") == "Error: cannot read 'abc' as a number"
    round_number(page, "1")
    assert text(page, "#error") == "" and text(page, "#out-value") == "1.0"
    # E4M3 has no Inf: the menu does not offer overflow "inf" (the codec refuses it)
    assert "inf" not in page.eval_on_selector_all("#overflow option", "os => os.map(o => o.value)")


def test_one_block_view(page):
    settle(page, lambda: page.click("#tab-block"))
    assert page.is_visible("#view-block") and page.is_hidden("#view-number")
    inputs = page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")
    assert len(inputs) == 32
    x = np.array([float(v) for v in inputs])
    q = fpemu.mx.quantize(x, "mxfp4")
    assert text(page, "#block-scale-code") == f"0x{int(q.scales[0]):02X}"
    rows = page.eval_on_selector_all("#block-table tbody tr",
                                     "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")
    assert [int(r[2], 16) for r in rows] == q.codes.tolist()
    assert [r[5] for r in rows] == [exactly_float(float(v)) for v in q.dequantize(np.float64)]
    shot(page, "explore_block_mxfp4")
    settle(page, lambda: page.select_option("#block-format", "nvfp4"))
    assert page.locator("#block-inputs input").count() == 16 and page.is_hidden("#scale-rounding")
    page.fill("#bx3", "-50")
    settle(page, lambda: page.click("#block-run"))
    x16 = np.array([float(v) for v in page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")])
    q16 = fpemu.mx.quantize(x16, "nvfp4")
    rows = page.eval_on_selector_all("#block-table tbody tr", "rs => rs.map(r => r.cells[2].textContent)")
    assert [int(c, 16) for c in rows] == q16.codes.tolist() and x16[3] == -50
    assert text(page, "#block-scale-code") == f"0x{int(q16.scales[0]):02X}"
    assert text(page, "#block-global").startswith(exactly_float(float(q16.global_scale)) + " = tensor amax / (448 × 6)")


def exactly_float(v: float) -> str:
    """A float64's whole decimal (Decimal holds it exactly), '-0.0' and 'N.0' for integers."""
    from decimal import Decimal

    if v.is_integer():
        return "-0.0" if v == 0 and np.signbit(v) else f"{int(v)}.0"
    return format(Decimal(v), "f")
