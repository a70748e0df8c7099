"""One explainer, exact (issue 26, item 1): ``fpemu show`` prints the rules the explorer's page
lists (the same sentences, from one function), every number it prints is exact or marked
``≈``, the relative error has the error's sign, and the block view's errors, marks and NaN
scale. Every expectation comes from exact Fractions or from the codec's codes, never from the
sentences' own code.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import ref_decode, ref_encode

import fpemu
from fpemu import get_format
from fpemu.cli import main
from fpemu.codec import decimal_text
from fpemu.teach import describe_block, describe_code, encode_number


def show(capsys, *argv: str) -> list[str]:
    assert main(["show", *argv, "--no-color"]) == 0
    return capsys.readouterr().out.splitlines()


def exact_value(x: str, name: str, **kw) -> Fraction | None:
    fmt = get_format(name)
    v = ref_decode(ref_encode(Fraction(x), fmt, **kw), fmt)
    return (-v.magnitude if v.negative else v.magnitude) if v.kind == "finite" else None


# Ties at the overflow threshold (the largest value's code is odd: the tie goes up) and below it,
# a tie to zero, saturation, subnormals, ordinary rounding.
CASES = [
    ("65520", "fp16", ["tie", "overflow"]), ("65519.99", "fp16", ["rounded"]), ("61440", "e5m2", ["tie", "overflow"]),
    ("464", "e4m3", ["tie"]), ("464.01", "e4m3", ["rounded", "overflow"]), ("7", "e2m1", ["tie", "overflow"]),
    (str(2**128 - 2**103), "fp32", ["tie", "overflow"]), ("2.5", "e2m1", ["tie"]),
    ("0.0009765625", "e4m3", ["tie", "subnormal", "underflow"]), ("1e-9", "fp16", ["rounded", "subnormal", "underflow"]),
    ("-65519", "fp16", ["rounded"]), ("0.3", "e4m3", ["rounded"]), ("0.001953125", "e4m3", ["exact", "subnormal"]),
]


@pytest.mark.parametrize("x, name, fired", CASES, ids=lambda c: str(c))
def test_show_prints_the_rules_the_page_lists(capsys, x, name, fired):
    page = encode_number(name, x)
    assert [r["rule"] for r in page["rules"]] == fired
    lines = show(capsys, x, "-f", name)
    rule_lines = [ln for ln in lines if ln.split()[0] in {r["rule"] for r in page["rules"]}]
    assert rule_lines == [f"  {r['rule']:<9} {r['text']}" for r in page["rules"] if r["rule"] != "exact"]
    record = json.loads(_json(capsys, x, "-f", name))
    assert record["rules"] == page["rules"]
    value = exact_value(x, name)
    if value is None:  # overflowed: the tie went up, or beyond
        assert record["value"] in ("inf", "nan") or page["class"] in ("inf", "nan")
    else:
        assert Fraction(page["value_exact"]) == value


def _json(capsys, *argv: str) -> str:
    assert main(["show", *argv, "--json"]) == 0
    return capsys.readouterr().out


def test_overflow_by_the_tie_is_said_in_words(capsys):
    lines = show(capsys, "65520", "-f", "fp16")
    assert any("65520 is exactly halfway between 65504 and 65536" in ln for ln in lines)
    assert any("every magnitude from 65520 on does): the result is infinity" in ln for ln in lines)
    e4m3 = show(capsys, "464", "-f", "e4m3")
    assert not any(ln.startswith("  overflow") for ln in e4m3)  # 448's code is even: the tie stays
    e2m1 = show(capsys, "7", "-f", "e2m1")
    assert any("has neither Inf nor NaN, so it saturates to 6" in ln for ln in e2m1)


def test_relative_error_has_the_errors_sign(capsys):
    lines = show(capsys, "-65519", "-f", "fp16")
    err = Fraction(-65504) - Fraction(-65519)
    assert err == 15 and "  error     +15 (relative ≈+0.0229%)" in lines
    page = encode_number("fp16", "-65519")
    assert page["error_exact"] == "+15" and page["relative_error_exact"] == "+15/65519"
    assert Fraction(page["relative_error_exact"]) == err / 65519 > 0


@pytest.mark.parametrize("name", ["fp16", "bf16", "e4m3", "e5m2", "fp32"])
def test_every_number_explain_prints_is_exact(capsys, name):
    """The mantissa line's sum and the value equal the Fractions; the error is exact or marked."""
    fmt = get_format(name)
    rng = np.random.default_rng(26)
    for x in rng.standard_normal(40) * 10.0 ** rng.integers(-8, 8, 40):
        typed = f"{x:.9g}"
        text = fpemu.explain(typed, name)
        m = re.search(r"mantissa  [01]+ -> ([01]) \+ (\d+)/(\d+) = (\S+)", text)
        if m:
            lead, f, den, shown = m.groups()
            assert Fraction(shown) == int(lead) + Fraction(int(f), int(den)), text
        value = exact_value(typed, name)
        err = re.search(r"error     (\S+)", text)
        if value is not None and err:
            shown = err.group(1)
            want = value - Fraction(typed)
            assert shown.startswith("≈") or Fraction(shown) == want, text
        assert "0.012500000000000011" not in text and fmt.name in text


@given(st.fractions(max_denominator=10**12))
def test_decimal_text_is_exact_or_marked(q):
    shown = decimal_text(q)
    if shown.startswith("≈"):
        assert abs(Fraction(shown[1:]) - q) <= abs(q) * Fraction(1, 2**52)  # (through the float64 nearest)
    else:
        assert Fraction(shown) == q


def test_stochastic_rounding_says_its_odds_and_replays_its_seed():
    e = encode_number("e4m3", "1.3", "stochastic", seed=11)
    p = (Fraction("1.3") - Fraction("1.25")) / Fraction("0.125")
    (rule,) = e["rules"]
    assert rule["rule"] == "stochastic" and f"with probability {decimal_text(p).lstrip('+')}," in rule["text"]
    assert e["code"] == encode_number("e4m3", "1.3", "stochastic", seed=11)["code"]
    assert int(e["code"], 16) == int(fpemu.encode(["1.3"], "e4m3", rounding="stochastic", rng=11)[0])
    codes = {encode_number("e4m3", "1.3", "stochastic", seed=s)["code"] for s in range(16)}
    assert codes == {"0x3A", "0x3B"}  # 1.25 and 1.375: both neighbours, nothing else


def test_the_nan_rule_and_its_error():
    with pytest.raises(ValueError, match="NaN results"):
        encode_number("e2m1", "nan")
    e = encode_number("e2m1", "nan", nan="max")
    assert int(e["code"], 16) == int(fpemu.encode(np.array([np.nan]), "e2m1", nan="max")[0])
    assert [r["rule"] for r in e["rules"]] == ["nan"]


def test_code_description_is_exact():
    d = describe_code("fp32", "0x3DCCCCCD")
    assert d["value_exact"] == "0.100000001490116119384765625" and d["value"] == repr(float(np.float32(0.1)))
    assert Fraction(d["value_exact"]) == Fraction(float(np.float32(0.1))) and d["integer"] == str(0x3DCCCCCD)
    assert describe_code("fp16", "0x3BFF")["fields"][2]["meaning"] == "1 + 1023/1024 = 1.9990234375"


EXAMPLE = ["0.82", "-1.37", "0.051", "2.9", "-0.44", "12.5", "0.0013", "-2.2", "0.31", "0.77", "-0.065", "1.05",
           "-3.4", "0.18", "0.009", "-0.6", "4.1", "-0.27", "0.5", "-1.9", "0.033", "0.72", "-5.5", "0.11", "1.6",
           "-0.08", "0.25", "2.2", "-0.0042", "0.95", "-1.1", "0.4"]


@pytest.mark.parametrize("fmt, kw", [("mxfp4", {}), ("mxfp4", {"scale_rounding": "rceil"}), ("mxfp8_e4m3", {}),
                                     ("mxint8", {}), ("nvfp4", {})])
def test_block_marks_and_exact_errors(fmt, kw):
    values = EXAMPLE[:fpemu.mx.get_block_format(fmt).block_size]
    d = describe_block(fmt, values, **kw)
    x = np.array([float(v) for v in values])
    q = fpemu.mx.quantize(x, fmt, **kw)
    value = q.dequantize(np.float64)
    elem = fpemu.mx.get_block_format(fmt).element or get_format("int8")
    flushed = (x != 0) & (value == 0)
    codes = q.codes.astype(np.int64) & 0xFF
    top = np.abs(fpemu.decode(codes.astype(np.uint8), elem)) == elem.max
    saturated = top & (np.abs(x) > np.abs(value))  # at the largest element, and the input beyond its value
    assert [e["flag"] == "flushed" for e in d["elements"]] == flushed.tolist()
    assert [e["flag"] == "saturated" for e in d["elements"]] == saturated.tolist()
    for e, typed, v in zip(d["elements"], values, value.tolist()):
        assert Fraction(e["value"]) == Fraction(v) and Fraction(e["error"]) == Fraction(v) - Fraction(typed)
    n, s = int(flushed.sum()), int(saturated.sum())
    if n:
        assert d["summary"].startswith(f"{n} of {len(values)} elements flushed to zero")
    assert (f"{s} saturated" in d["summary"]) == bool(s)


def test_mxfp4_example_counts_and_the_ocp_clip():
    d = describe_block("mxfp4", EXAMPLE)
    assert d["summary"] == "15 of 32 elements flushed to zero, 1 saturated"
    (clipped,) = [e for e in d["elements"] if e["flag"] == "saturated"]
    assert (clipped["input"], clipped["value"], clipped["error"]) == ("12.5", "12.0", "-0.5")
    assert describe_block("mxfp4", EXAMPLE, "rceil")["summary"].endswith("flushed to zero")  # rceil: no clip


@pytest.mark.parametrize("bad, what", [("nan", "NaN"), ("inf", "an infinity"), ("-inf", "an infinity")])
def test_a_nan_scale_says_why(bad, what):
    d = describe_block("mxfp4", ["1", bad, "2"])
    q = fpemu.mx.quantize(np.array([1.0, float(bad), 2.0]), "mxfp4")
    assert d["scale"]["code"] == f"0x{int(q.scales[0]):02X}" == "0xFF"
    assert d["scale"]["why"].startswith(f"x1 is {what}: the OCP MX spec gives a block holding NaN or Inf the NaN scale")
    assert all(e["flag"] == "nan" for e in d["elements"]) and d["summary"] == "3 of 3 elements NaN"
    assert describe_block("mxfp4", ["1", "2"])["scale"]["why"] is None


def test_nvfp4_tensor_scale_is_exact():
    d = describe_block("nvfp4", EXAMPLE[:16])
    q = fpemu.mx.quantize(np.array([float(v) for v in EXAMPLE[:16]]), "nvfp4")
    assert Fraction(d["global_scale"]) == Fraction(float(q.global_scale))
    amax = max(abs(Fraction(v)) for v in EXAMPLE[:16])
    assert abs(Fraction(d["global_scale"]) - amax / (448 * 6)) <= amax / (448 * 6) * Fraction(1, 2**24)
    assert "tensor scale" in d["rule"]
