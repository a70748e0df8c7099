"""The explorer's controls in real Chromium (issue 26, item 2): hex and integer code entry, code
and field stepping, the exact decimal, every field in sync live, the state in the URL (a link
reopens it, the back button walks back), no sideways scroll at 390 px, errors that replace the
result, the NaN rule, stochastic rounding with a seed (and N random bits: every rounding mode of the
codec is in the menu), and the block view's marks, NaN scale and
NVFP4 tensor scale. Every value the page shows is held to fpemu.decode / encode / mx.quantize
computed here, or to exact Fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from browser_helpers import (
    PHONE,
    bits_shown,
    browser,
    exactly,
    open_page,
    page,
    round_number,
    rules_shown,
    settle,
    shot,
    text,
    url,
)

import fpemu


def encoded(x, fmt: str, **kw) -> int:
    return int(fpemu.encode(np.array([x], dtype=object), fmt, **kw)[0])


def type_live(page, selector: str, value: str) -> None:
    """Type into a live field (no Enter) and wait for the page's answer."""
    settle(page, lambda: page.fill(selector, value))  # (one input event, as a paste)


def shows_code(page, code: int, fmt: str) -> None:
    """Every field of the number view shows ``code``: hex, integer, bits, value, number field."""
    f = fpemu.get_format(fmt)
    bits = f.bits
    assert text(page, "#out-code") == f"0x{code:0{(f.storage_bits + 3) // 4}X}"
    assert text(page, "#out-integer") == str(code)
    typing = page.evaluate("document.activeElement.id")  # (a field being typed in keeps what was typed)
    assert typing == "hex" or page.input_value("#hex") == text(page, "#out-code")
    assert typing == "integer" or page.input_value("#integer") == str(code)
    assert bits_shown(page) == format(code, f"0{bits}b")
    assert text(page, "#out-value") == exactly(code, fmt)


# ---- hex and integer entry, stepping --------------------------------------------------------
def test_hex_and_integer_entry_update_every_field(page):
    type_live(page, "#hex", "0x7E")
    shows_code(page, 0x7E, "e4m3")
    assert page.input_value("#number") == "448.0" == exactly(0x7E, "e4m3")  # the number field follows
    settle(page, lambda: page.select_option("#format", "fp16"))
    type_live(page, "#integer", "15360")  # 0x3C00: fp16's 1.0
    shows_code(page, 0x3C00, "fp16")
    assert text(page, "#out-value") == "1.0" and text(page, "#out-class") == "normal"
    type_live(page, "#hex", "1")  # hex without 0x: the smallest subnormal
    shows_code(page, 1, "fp16")
    page.press("#hex", "Tab")  # leaving the field, it reads as the page writes codes
    assert page.input_value("#hex") == "0x0001"
    assert Fraction(text(page, "#out-value")) == Fraction(2) ** -24
    shot(page, "explore_fp16_hex")


def test_code_and_field_steps(page):
    code = encoded("0.3", "e4m3")  # the page opens on 0.3: 0x2A
    settle(page, lambda: page.click("#code-up"))
    shows_code(page, code + 1, "e4m3")
    settle(page, lambda: page.click("#code-down"))
    settle(page, lambda: page.click("#code-down"))
    shows_code(page, code - 1, "e4m3")
    settle(page, lambda: page.click('[data-step="exponent-up"]'))  # exponent field 0101 -> 0110
    shows_code(page, code - 1 + 0x08, "e4m3")
    settle(page, lambda: page.click('[data-step="mantissa-down"]'))
    shows_code(page, code - 2 + 0x08, "e4m3")
    settle(page, lambda: page.click('[data-step="sign-up"]'))  # the sign field 0 -> 1
    shows_code(page, 0x80 | (code - 2 + 0x08), "e4m3")
    assert page.is_disabled('[data-step="sign-up"]') and not page.is_disabled('[data-step="sign-down"]')
    type_live(page, "#hex", "0xFF")  # the last code: no code + 1, no field + 1
    assert page.is_disabled("#code-up") and not page.is_disabled("#code-down")
    assert page.is_disabled('[data-step="exponent-up"]') and page.is_disabled('[data-step="mantissa-up"]')
    assert text(page, "#out-class") == "nan" and page.input_value("#number") == "nan"
    type_live(page, "#hex", "0x00")
    assert page.is_disabled("#code-down") and page.is_disabled('[data-step="exponent-down"]')
    assert text(page, "#out-value") == "0.0"


# ---- exact decimal, live sync ------------------------------------------------------------------
def test_exact_decimal_and_exact_error(page):
    settle(page, lambda: page.select_option("#format", "fp32"))
    round_number(page, "0.1")
    code = encoded("0.1", "fp32")
    value = Fraction(float(np.uint32(code).view(np.float32)))
    assert Fraction(text(page, "#out-value")) == value and text(page, "#out-value") == "0.100000001490116119384765625"
    assert Fraction(text(page, "#out-error")) == value - Fraction(1, 10)  # exactly, not as a float64
    assert text(page, "#out-error") == "+1.490116119384765625e-09"
    rel = text(page, "#out-relative")
    assert Fraction(rel.split(" ")[0]) == (value - Fraction(1, 10)) / Fraction(1, 10)
    settle(page, lambda: page.click('button.bit[data-index="31"]'))  # the last bit: the code below
    assert page.input_value("#number") == exactly(code - 1, "fp32")
    settle(page, lambda: page.press("#number", "Enter"))  # the shown value typed back is exact
    assert rules_shown(page) == ["exact"] and text(page, "#out-error") == "+0"


def test_typing_a_number_updates_every_field_live(page):
    type_live(page, "#number", "-2.75")  # no Enter
    code = encoded("-2.75", "e4m3")
    shows_code(page, code, "e4m3")
    assert text(page, "#out-error") == "+0" and rules_shown(page) == ["exact"]
    settle(page, lambda: page.click('button.bit[data-index="0"]'))  # a flip updates the number field
    assert page.input_value("#number") == "2.75" and text(page, "#out-value") == exactly(code ^ 0x80, "e4m3")


# ---- the URL ---------------------------------------------------------------------------------
def test_the_state_is_in_the_url_and_back_walks_back(browser, url, page):
    settle(page, lambda: page.select_option("#format", "e5m2"))
    round_number(page, "1000")
    settle(page, lambda: page.select_option("#rounding", "toward_zero"))
    first = page.evaluate("location.hash")
    assert "format=e5m2" in first and "x=1000" in first and "rounding=toward_zero" in first
    settle(page, lambda: page.click("#code-up"))
    after = text(page, "#out-value")
    settle(page, lambda: page.go_back())
    assert page.evaluate("location.hash") == first
    assert text(page, "#out-value") == exactly(encoded("1000", "e5m2", rounding="toward_zero"), "e5m2")
    assert page.input_value("#format") == "e5m2" and page.input_value("#rounding") == "toward_zero"
    settle(page, lambda: page.go_forward())
    assert text(page, "#out-value") == after
    shared, problems = open_page(browser, url, page.evaluate("location.hash"))  # a link opens the same
    assert text(shared, "#out-value") == after and shared.input_value("#format") == "e5m2"
    shared.context.close()
    assert not problems, problems


# ---- the phone, errors, NaN rule, stochastic rounding ------------------------------------------
@pytest.mark.parametrize("hash_", ["#format=fp64&x=1e-310", "#format=fp32&x=0.1",
                                   "#view=block&block=nvfp4", "#view=block&values=nan,1"])
def test_no_sideways_scroll_at_390_px(browser, url, hash_):
    page, problems = open_page(browser, url, hash_, viewport=PHONE)
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] == 390, (hash_, width)
    page.context.close()
    assert not problems, problems


def test_an_error_replaces_the_result(page):
    assert page.is_visible("#result")
    round_number(page, "abc")
    assert text(page, "#error") == "Error: cannot read 'abc' as a number" and page.is_hidden("#result")
    round_number(page, "1")
    assert text(page, "#error") == "" and page.is_visible("#result") and text(page, "#out-value") == "1.0"
    type_live(page, "#hex", "0xZZ")
    assert "hex" in text(page, "#error") and page.is_hidden("#result")
    type_live(page, "#hex", "0x1FF")  # past the last code of E4M3
    assert "out of range" in text(page, "#error") and page.is_hidden("#result")


def test_the_nan_rule_is_a_control(page):
    settle(page, lambda: page.select_option("#format", "e2m1"))
    round_number(page, "nan")
    assert "NaN results" in text(page, "#error") and "pass nan" not in text(page, "#error")
    for rule in ("zero", "max"):
        settle(page, lambda r=rule: page.select_option("#nan", r))
        code = int(fpemu.encode(np.array([np.nan]), "e2m1", nan=rule)[0])
        shows_code(page, code, "e2m1")
        assert rules_shown(page) == ["nan"] and f"nan={rule}" in page.evaluate("location.hash")


def test_stochastic_rounding_with_a_seed(page):
    settle(page, lambda: page.select_option("#rounding", "stochastic"))
    assert page.is_visible("#seed")
    round_number(page, "1.3")
    seen = set()
    for seed in range(8):
        page.fill("#seed", str(seed))
        settle(page, lambda: page.dispatch_event("#seed", "change"))
        code = encoded("1.3", "e4m3", rounding="stochastic", rng=seed)
        shows_code(page, code, "e4m3")
        seen.add(code)
        assert f"seed={seed}" in page.evaluate("location.hash") or seed == 0
    assert seen == {encoded("1.3", "e4m3", rounding="down"), encoded("1.3", "e4m3", rounding="up")}
    rule = page.text_content('#out-rules li[data-rule="stochastic"]')
    p = (Fraction("1.3") - Fraction("1.25")) / (Fraction("1.375") - Fraction("1.25"))
    assert f"takes 1.375 with probability {float(p)}" in rule and "unbiased" in rule
    shot(page, "explore_stochastic")


# ---- the block view ----------------------------------------------------------------------------
def block_rows(page) -> list[list[str]]:
    return page.eval_on_selector_all("#block-table tbody tr",
                                     "rs => rs.map(r => [r.dataset.flag].concat(Array.from(r.cells).map(c => c.textContent)))")


def test_block_marks_flushed_and_saturated_elements(page):
    settle(page, lambda: page.click("#tab-block"))
    typed = page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")
    x = np.array([float(v) for v in typed])
    q = fpemu.mx.quantize(x, "mxfp4")
    value = q.dequantize(np.float64)
    scale = float(fpemu.decode(np.array([q.scales[0]], np.uint8), "e8m0")[0])
    flushed = (x != 0) & (value == 0)
    saturated = np.abs(x) > 6 * scale
    rows = block_rows(page)
    assert [r[0] == "flushed" for r in rows] == flushed.tolist() and flushed.sum() == 15
    assert [r[0] == "saturated" for r in rows] == saturated.tolist() and saturated.sum() == 1
    assert text(page, "#block-summary") == "15 of 32 elements flushed to zero, 1 saturated"
    for r, xi in zip(rows, typed):  # the error is value - input as typed, exactly
        assert Fraction(r[7]) == Fraction(r[6]) - Fraction(xi)
    assert "0.012500000000000011" not in page.text_content("#block-table")
    shot(page, "explore_block_marks")
    settle(page, lambda: page.select_option("#scale-rounding", "rceil"))  # no element saturates
    assert not any(r[0] == "saturated" for r in block_rows(page))


def test_a_nan_block_says_why(page):
    settle(page, lambda: page.click("#tab-block"))
    page.fill("#bx2", "nan")
    settle(page, lambda: page.click("#block-run"))
    x = np.array([float(v) for v in page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")])
    q = fpemu.mx.quantize(x, "mxfp4")
    assert text(page, "#block-scale-code") == f"0x{int(q.scales[0]):02X}" == "0xFF"
    assert "x2 is NaN" in text(page, "#block-scale-why") and "NaN scale" in text(page, "#block-scale-why")
    assert all(r[0] == "nan" for r in block_rows(page)) and text(page, "#block-summary") == "32 of 32 elements NaN"


def test_nvfp4_shows_its_tensor_scale_and_stochastic_blocks(page):
    settle(page, lambda: page.click("#tab-block"))
    settle(page, lambda: page.select_option("#block-format", "nvfp4"))
    x = np.array([float(v) for v in page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")])
    q = fpemu.mx.quantize(x, "nvfp4")
    tensor = Fraction(float(q.global_scale))
    shown = text(page, "#block-global")
    assert Fraction(shown.split(" ")[0]) == tensor and "amax / (448 × 6)" in shown
    block = Fraction(float(fpemu.decode(np.array([q.scales[0]], np.uint8), "ue4m3")[0]))
    for r, code, v in zip(block_rows(page), q.codes.tolist(), q.dequantize(np.float64).tolist()):
        element = Fraction(float(fpemu.decode(np.array([code], np.uint8), "e2m1")[0]))
        assert Fraction(r[6]) == Fraction(v)  # TransformerEngine's float32 product ...
        assert abs(Fraction(v) - element * block * tensor) <= abs(element * block * tensor) * Fraction(1, 2**23)
    settle(page, lambda: page.select_option("#block-format", "mxfp4"))  # (x16..x31 stay empty: left out)
    settle(page, lambda: page.select_option("#block-rounding", "stochastic"))
    page.fill("#block-seed", "5")
    settle(page, lambda: page.dispatch_event("#block-seed", "change"))
    typed = page.eval_on_selector_all("#block-inputs input", "is => is.map(i => i.value)")
    assert typed[16:] == [""] * 16
    x = np.array([float(v) for v in typed if v])
    q = fpemu.mx.quantize(x, "mxfp4", rounding="stochastic", rng=5)
    assert [int(r[3], 16) for r in block_rows(page)] == q.codes.tolist()
    assert "bseed=5" in page.evaluate("location.hash") and "brounding=stochastic" in page.evaluate("location.hash")


def test_a_block_error_replaces_the_block(page):
    settle(page, lambda: page.click("#tab-block"))
    assert page.is_visible("#block-result")
    page.fill("#bx0", "abc")
    settle(page, lambda: page.click("#block-run"))
    assert text(page, "#block-error") == "Error: cannot read 'abc' as a number" and page.is_hidden("#block-result")
    page.fill("#bx0", "0.82")
    settle(page, lambda: page.click("#block-run"))
    assert text(page, "#block-error") == "" and page.is_visible("#block-result")


# ---- every rounding mode of the codec, N random bits ------------------------------------------
def test_the_menu_lists_every_rounding_mode_of_the_codec(page):
    menu = page.eval_on_selector_all("#rounding option", "os => os.map(o => o.value)")
    every = set(fpemu.codec.ROUNDING_MODES.values())
    assert sorted(menu) == sorted(every - {"ml_dtypes_e8m0"}) and len(menu) == len(set(menu))  # (E4M3's)
    settle(page, lambda: page.select_option("#format", "e8m0"))
    assert "ml_dtypes_e8m0" in page.eval_on_selector_all("#rounding option", "os => os.map(o => o.value)")
    settle(page, lambda: page.select_option("#format", "e4m3"))
    block = page.eval_on_selector_all("#block-rounding option", "os => os.map(o => o.value)")
    assert sorted(block) == sorted(fpemu.mx.inputs.ELEMENT_ROUNDINGS)  # what fpemu.mx.quantize takes
    for mode in menu:  # the seed for the stochastic modes, N random bits for those that take them
        settle(page, lambda m=mode: page.select_option("#rounding", m))
        assert page.is_visible("#seed") == mode.startswith("stochastic"), mode
        assert page.is_visible("#srbits") == (mode in fpemu.codec.options.STOCHASTIC_WITH_BITS), mode


def test_stochastic_a_with_random_bits_and_a_seed(browser, url, page):
    settle(page, lambda: page.select_option("#rounding", "stochastic_a"))
    assert page.is_visible("#seed") and page.is_visible("#srbits")
    page.fill("#srbits", "2")
    settle(page, lambda: page.dispatch_event("#srbits", "change"))
    round_number(page, "1.3")
    seen = set()
    for seed in range(8):
        code = encoded("1.3", "e4m3", rounding="stochastic_a", sr_bits=2, rng=seed)
        page.fill("#seed", str(seed))
        settle(page, lambda: page.dispatch_event("#seed", "change"))
        # (leaving a field fires its own change, one more request: wait for the last answer)
        page.wait_for_function(f"document.querySelector('#out-code').textContent.trim() === '0x{code:02X}' "
                               "&& document.querySelector('#seed').value === '{seed}'".replace("{seed}", str(seed)))
        shows_code(page, code, "e4m3")
        assert text(page, "#error") == "" and rules_shown(page) == ["stochastic"]
        seen.add(code)
    assert seen == {encoded("1.3", "e4m3", rounding="down"), encoded("1.3", "e4m3", rounding="up")}
    hash_ = page.evaluate("location.hash")
    assert "rounding=stochastic_a" in hash_ and "srbits=2" in hash_ and "seed=7" in hash_
    shared, problems = open_page(browser, url, hash_)  # a link replays the same draw
    assert shared.input_value("#srbits") == "2" and shared.input_value("#seed") == "7"
    shows_code(shared, encoded("1.3", "e4m3", rounding="stochastic_a", sr_bits=2, rng=7), "e4m3")
    shared.context.close()
    assert not problems, problems
    page.fill("#srbits", "33")  # out of 1..32: the codec's message replaces the result
    settle(page, lambda: page.dispatch_event("#srbits", "change"))
    assert "needs sr_bits" in text(page, "#error") and "got 33" in text(page, "#error")
    assert page.is_hidden("#result")


def test_ml_dtypes_e8m0_is_for_e8m0(browser, url):
    with pytest.raises(ValueError):  # the codec refuses it outside E8M0: a link asking for it says so
        encoded("0.3", "e4m3", rounding="ml_dtypes_e8m0")
    page, problems = open_page(browser, url, "#format=e4m3&x=0.3&rounding=ml_dtypes_e8m0")
    assert "rounding 'ml_dtypes_e8m0' does not apply to e4m3: back to nearest_even" in text(page, "#notice")
    assert page.input_value("#rounding") == "nearest_even" and page.is_visible("#result")
    settle(page, lambda: page.select_option("#format", "e8m0"))
    settle(page, lambda: page.select_option("#rounding", "ml_dtypes_e8m0"))
    round_number(page, "3")
    assert text(page, "#error") == "" and page.is_visible("#result")
    shows_code(page, encoded("3", "e8m0", rounding="ml_dtypes_e8m0"), "e8m0")
    page.context.close()
    assert not problems, problems
