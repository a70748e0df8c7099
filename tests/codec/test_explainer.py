"""explain (fpemu/codec/explainer.py): the words it prints for a number rounded into a format
(its rules' sentences: these and the explorer's tests), as ``fpemu show``, :func:`fpemu.explain`
and the explorer's page (its API) print them, every number checked against exact rational
arithmetic (``Fraction``)."""

from __future__ import annotations

import json
import math
import re
from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext
from fractions import Fraction

import pytest
from reference import ref_decode, ref_encode

import fpemu
from fpemu import Format, explain, get_format
from fpemu.cli import main
from fpemu.teach import encode_number
from fpemu.teach.server import handle_api


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
@pytest.mark.parametrize(
    "value, fmt, reason",
    [
        (0.0, "e8m0", "no code: the format has no zero"),
        (-0.0, "e8m0", "no code: the format has no zero"),
        (-1.0, "e8m0", "no code: the format is unsigned"),
        (-1.0, "ue4m3", "no code: the format is unsigned"),
        (float("inf"), "e4m3", "Inf input: the format has no Inf"),
        (1e9, "e4m3", "overflow: the value is beyond"),
    ],
)
def test_explain_names_the_reason_for_a_nan_code(value, fmt, reason):
    # The error line names the reason; the rule lines that fired follow it.
    lines = [line.strip() for line in explain(value, fmt).splitlines()]
    assert any(line.startswith(f"error     {reason}") for line in lines), lines


# Regressions of ``fpemu show``, :func:`fpemu.explain` and the explorer's page (its API):
#
# * B: a decimal is read exactly, not as the float64 nearest it first (1.00048828125000000001 is
#   just above a tie of fp16, and the float64 nearest it is the tie);
# * C: 0.1 is the decimal 0.1, so in fp64 it is rounded (error 5.55e-18), and the value's exact
#   decimal is shown;
# * D: a fixed-point format (``exponent_bits=0``: OCP INT8 is two's complement) shows its own
#   bits, and the steps of two's complement fixed point;
# * E: ``show --json`` reports the options as applied (defaults resolved), and the error is
#   value - input everywhere, the relative error error / |input|.
#
# Every number is checked against exact rational arithmetic (``Fraction``).


def show(capsys, *argv: str) -> str:
    assert main(["show", *argv, "--no-color"]) == 0
    return capsys.readouterr().out


def line(text: str, name: str) -> str:
    return next(t.strip() for t in text.splitlines() if t.strip().startswith(name))


# ---- B: exact decimals ----------------------------------------------------------------------
def test_b_a_decimal_just_above_a_tie_rounds_up(capsys):
    x = "1.00048828125000000001"
    want = ref_decode(ref_encode(Fraction(x), get_format("fp16")), get_format("fp16")).magnitude
    assert want == Fraction(1025, 1024)  # not 1.0: the float64 nearest x is the tie 1 + 2**-11
    assert line(show(capsys, x, "-f", "fp16"), "value") == "value     1.0009765625"
    assert line(explain_text(x, "fp16"), "code") == "code      0x3C01 = 0 01111 0000000001"
    page = encode_number("fp16", x)
    assert page["value"] == "1.0009765625" and [r["rule"] for r in page["rules"]] == ["rounded"]
    assert float(page["error"]) == float(Fraction(1025, 1024) - Fraction(x))
    assert handle_api("/api/encode", {"format": "fp16", "value": x})[1]["value"] == "1.0009765625"


def explain_text(x, fmt, **kw) -> str:
    return fpemu.explain(x, fmt, **kw)


# ---- C: 0.1 is not a value of fp64 ---------------------------------------------------------
def test_c_the_decimal_0_1_is_rounded_in_fp64(capsys):
    err = Fraction(0.1) - Fraction(1, 10)
    out = show(capsys, "0.1", "-f", "fp64")
    assert line(out, "error") == "error     +5.5511151231257827021181583404541015625e-18 (relative ≈+5.55e-15%)"
    assert Fraction("5.5511151231257827021181583404541015625e-18") == err  # the whole decimal
    assert line(out, "value") == "value     0.1 (exactly 0.1000000000000000055511151231257827021181583404541015625)"
    page = encode_number("fp64", "0.1")
    assert [r["rule"] for r in page["rules"]] == ["rounded"] and float(page["error"]) == float(err)
    assert page["value_exact"] == "0.1000000000000000055511151231257827021181583404541015625"
    assert Fraction(page["value_exact"]) == Fraction(0.1)
    record = json.loads(_json(capsys, "0.1", "-f", "fp64"))
    assert record["error"] == float(err) and record["relative_error"] == float(err * 10)
    assert Fraction(record["value_exact"]) == Fraction(0.1) and record["input"] == "0.1"


def test_c_a_float_input_is_its_own_value():
    assert line(fpemu.explain(0.1, "fp64"), "error") == "error     +0 (relative +0%)"


# ---- D: fixed point --------------------------------------------------------------------------
def test_d_int8_shows_eight_bits_and_twos_complement_steps(capsys):
    out = show(capsys, "-0.015625", "-f", "int8")
    assert line(out, "code") == "code      0xFF = 1 1111111"
    assert line(out, "integer") == "integer   11111111 = -128 + 127 = -1 -> -1 x 2^-6 (fixed point: steps of 2^-6)"
    assert "0.992" not in out and "exponent" not in out and line(out, "value") == "value     -0.015625"


FIXED = [get_format("int8"), Format("fx8", 0, 7, 0, inf="none", nan="none"),
         Format("ufx6", 0, 6, -2, signed=False, inf="none", nan="none")]


@pytest.mark.parametrize("fmt", FIXED, ids=lambda f: f.name)
def test_d_every_code_of_a_fixed_point_format_explains_its_value(fmt):
    """The bits shown are the format's bits, and the integer line's n x 2^s is the value."""
    for code in range(fmt.num_codes):
        v = ref_decode(code, fmt)
        if v.kind != "finite":
            continue
        value = -v.magnitude if v.negative else v.magnitude
        typed = "-0" if v.negative and not value else f"{value.numerator}/{value.denominator}"
        text = fpemu.explain(typed, fmt)
        bits = line(text, "code").split("=", 1)[1].replace(" ", "")
        assert bits == format(code, f"0{fmt.bits}b"), text
        n, s = re.search(r"-> (-?\d+) x 2\^(-?\d+) \(fixed point", text).groups()
        assert Fraction(int(n)) * Fraction(2) ** int(s) == value, text


# ---- E: the options as applied, one sign of the error ----------------------------------------
def _json(capsys, *argv: str) -> str:
    assert main(["show", *argv, "--json"]) == 0
    return capsys.readouterr().out


def test_e_json_echoes_the_options_as_applied(capsys):
    record = json.loads(_json(capsys, "-65519", "-f", "fp16", "-r", "rne"))
    assert {k: record[k] for k in ("rounding", "overflow", "nan", "directed_overflow")} == \
        {"rounding": "nearest_even", "overflow": "inf", "nan": "sign", "directed_overflow": "ieee"}
    record = json.loads(_json(capsys, "7", "-f", "e2m1", "-o", "sat_finite", "--nan", "zero"))
    assert (record["overflow"], record["nan"], record["value"]) == ("saturate", "zero", 6.0)
    assert json.loads(_json(capsys, "1", "-f", "e4m3"))["overflow"] == "nan"


CASES = [("-65519", "fp16"), ("-0.3", "e4m3"), ("0.3", "e4m3"), ("65519", "fp16"), ("-1e-9", "bf16"),
         ("2.5", "e2m1"), ("-2.5", "e2m1", "nearest_away"), ("1/3", "bf16", "up"), ("-7", "e2m1"),
         ("-0.0078125", "int8", "down"), ("1e-400", "e4m3", "up"), ("-1e400", "e4m3", "nearest_even", "saturate")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(c))
def test_e_error_is_value_minus_input_and_relative_divides_by_abs_input(capsys, case):
    x, name, rounding, overflow = case + ("nearest_even", None)[len(case) - 2:]
    fmt = get_format(name)
    code = ref_encode(Fraction(x), fmt, rounding=rounding, overflow=overflow)
    v = ref_decode(code, fmt)
    value = -v.magnitude if v.negative else v.magnitude
    err = value - Fraction(x)
    rel = err / abs(Fraction(x))
    from fpemu.codec.explainer import (
        explain_facts,  # (new: the facts explain puts in words)
    )

    facts = explain_facts(x, name, rounding=rounding, overflow=overflow)
    assert (facts["code"], facts["error"], facts["relative_error"]) == (code, err, rel)
    argv = [x, "-f", name, "-r", rounding] + (["-o", overflow] if overflow else [])
    text = show(capsys, *argv)
    shown = line(text, "error")
    assert shown == line(fpemu.explain(x, name, rounding=rounding, overflow=overflow), "error")
    error, relative = re.fullmatch(r"error     (\S+) \(relative (\S+)%\)", shown).groups()
    _exact_or_marked(error, err, 17)
    _exact_or_marked(relative, rel * 100, 3)
    record = json.loads(_json(capsys, *argv))
    assert _number(record["error"]) == _float(err) and _number(record["relative_error"]) == _float(rel)
    page = encode_number(name, x, rounding, overflow or "default")
    assert float(page["error"]) == _float(err) and float(page["relative_error"]) == _float(rel)
    assert (float(page["error"]) < 0) == (err < 0) == (float(page["relative_error"]) < 0)


def _exact_or_marked(shown: str, want: Fraction, digits: int) -> None:
    """A number shown exactly (a decimal or p/q equal to ``want``), or marked ≈ and then
    ``want`` to ``digits`` significant digits."""
    if shown.startswith("≈"):
        assert Fraction(shown[1:]) != want and shown[1:] == _g(want, digits), (shown, want)
    else:
        assert Fraction(shown) == want, (shown, want)


def _float(q: Fraction) -> float:
    try:
        return float(q)
    except OverflowError:
        return float("inf") if q > 0 else float("-inf")


def _g(q: Fraction, digits: int) -> str:
    """'%+.{digits}g' of an exact rational: the float64 nearest it, or its Decimal quotient beyond
    float64's range."""
    f = _float(q)
    if math.isfinite(f) and (f or not q):
        return f"{f:+.{digits}g}"
    with localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = digits, MAX_EMAX, MIN_EMIN
        d = Decimal(q.numerator) / Decimal(q.denominator)
    return format(d.normalize(), "+g").replace("E", "e")


def _number(v) -> float:
    return float(v)  # JSON carries Inf as the text "inf"
