"""The JSON behind the explorer's new views (issue 41), without a browser: the number-line
strips (every mark an exact value, every place to scale), one number in several formats,
the printable table of every code, MXFP4 floor/rceil against NVFP4 with a tensor amax, and
the menus' options; each held to fpemu.encode / decode / quantize / mx.quantize by trial, or
to Fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.formats import FORMATS
from fpemu.codec.option_names import NAN_POLICIES_WITHOUT_NAN, STOCHASTIC_WITH_BITS
from fpemu.teach import describe_block, describe_code, encode_number
from fpemu.teach.options import OVERFLOWS, ROUNDINGS, accepted_options
from fpemu.teach.side_by_side import compare_formats, table_payload
from fpemu.teach.blocks import compare_blocks
from fpemu.teach.plot_text import short_exact
from fpemu.teach.strip import strips


def q(x, fmt, rounding):
    return Fraction(float(fpemu.quantize(np.array([x], dtype=object), fmt, rounding=rounding, overflow="saturate")[0]))


def log2(v: Fraction) -> float:
    """log2 of a positive Fraction of any size."""
    shift = v.numerator.bit_length() - v.denominator.bit_length()
    return shift + math.log2(v / Fraction(2) ** shift)


def place(v: Fraction, strip: dict) -> float:
    left, right = Fraction(strip["left"]), Fraction(strip["right"])
    return float((v - left) / (right - left))


# ---- the strips --------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt, typed", [("e4m3", "0.3"), ("e4m3", "-1.3"), ("fp32", "0.1"), ("fp16", "1e-7"),
                                        ("bf16", "70000"), ("e2m1", "2.5"), ("e4m3", "460"), ("fp32", "1e-100000"),
                                        ("fp64", "0.1"), ("int8", "0.3"), ("fp16", "65520")])
def test_the_gap_strip_of_an_input(fmt, typed):
    e = encode_number(fmt, typed)
    gap = e["line"]["gap"]
    marks = {m["kind"]: m for m in gap["marks"]}
    x = Fraction(typed) if "e-100000" not in typed else Fraction(1, 10**100000)
    f = fpemu.get_format(fmt)
    if abs(x) <= f.max:
        low, high = q(x, fmt, "down"), q(x, fmt, "up")
    else:  # past max: the grid goes on one step
        low, high = Fraction(f.max), Fraction(fpemu.codec.rules.next_step_above_max(f))
    assert Fraction(marks["below"]["value"]) == low and Fraction(marks["above"]["value"]) == high
    assert Fraction(marks["tie"]["value"]) == (low + high) / 2 and Fraction(marks["input"]["value"]) == x
    assert marks["above"]["in_format"] == (high <= f.max)
    for m in gap["marks"]:  # to scale: each place is (v - left) / (right - left), exactly computed
        assert m["pos"] == place(Fraction(m["value"]), gap)
    assert [m["pos"] for m in gap["marks"]] == sorted(m["pos"] for m in gap["marks"])
    result = [m for m in gap["marks"] if m.get("result")]
    assert len(result) == (1 if np.isfinite(float(e["value"])) else 0)
    if result:
        assert Fraction(result[0]["value"]) == Fraction(float(e["value"]))


@pytest.mark.parametrize("fmt, code", [("e4m3", 0x38), ("e4m3", 0x7E), ("e4m3", 0x00), ("e2m1", 0x7), ("fp16", 0x0001),
                                       ("e8m0", 0x00), ("int8", 0x80), ("ue4m3", 0x00)])
def test_the_gap_strip_of_a_code(fmt, code):
    d = describe_code(fmt, hex(code))
    f = fpemu.get_format(fmt)
    v = Fraction(float(fpemu.decode(np.array([code], f.code_dtype), f)[0]))
    marks = {m["kind"]: m for m in d["line"]["gap"]["marks"]}
    assert Fraction(marks["value"]["value"]) == v
    for side, neighbour in (("below", d["down"]), ("above", d["up"])):
        if side in marks and marks[side]["in_format"]:
            assert Fraction(marks[side]["value"]) == Fraction(neighbour["value_exact"])
            half = marks["halfway " + side]
            assert Fraction(half["value"]) == (v + Fraction(marks[side]["value"])) / 2
    if float(v) == f.max:  # the step past max, not a value of the format (E4M3: 480, E2M1: 8)
        assert not marks["above"]["in_format"]
        assert Fraction(marks["above"]["value"]) == Fraction(fpemu.codec.rules.next_step_above_max(f)) in (480, 8)
    if code == 0 and fmt == "e8m0":  # no value below the smallest of a format without zero
        assert "below" not in marks


@pytest.mark.parametrize("fmt", ["e4m3", "fp16", "bf16", "fp32", "fp64", "e2m1", "e8m0", "int8", "tf32"])
def test_the_range_strip(fmt):
    f = fpemu.get_format(fmt)
    r = strips(fmt, 1.0, Fraction(3, 10))["range"]
    marks = {m["kind"]: m for m in r["marks"]}
    step = Fraction(fpemu.codec.rules.next_step_above_max(f)) if np.isfinite(fpemu.codec.rules.next_step_above_max(f)) \
        else Fraction(2) ** 1024
    assert Fraction(marks["largest"]["value"]) == Fraction(f.max)
    assert Fraction(marks["overflow"]["value"]) == (Fraction(f.max) + step) / 2  # (fp64's too, beyond float64)
    if f.exponent_bits and f.has_normals:
        assert Fraction(marks["smallest normal"]["value"]) == Fraction(f.min_normal)
    if "smallest subnormal" in marks:
        assert Fraction(marks["smallest subnormal"]["value"]) == Fraction(f.min_subnormal)
    placed = [m for m in r["marks"] if m["pos"] is not None]
    a, b = placed[0], placed[-1]  # log2 scale: the place is linear in log2 |v|
    for m in placed:
        expected = a["pos"] + (b["pos"] - a["pos"]) * (log2(Fraction(m["value"])) - log2(Fraction(a["value"]))) / (
            log2(Fraction(b["value"])) - log2(Fraction(a["value"])))
        assert abs(m["pos"] - expected) < 1e-9, m
    assert 0 < min(m["pos"] for m in placed) and max(m["pos"] for m in placed) < 1


def test_an_input_off_the_range_strip_says_which_side():
    tiny = {m["kind"]: m for m in strips("fp32", 0.0, Fraction(1, 10**100000))["range"]["marks"]}["input"]
    zero = {m["kind"]: m for m in strips("e4m3", 0.0)["range"]["marks"]}["input"]
    assert (tiny["pos"], tiny["side"], tiny["value"]) == (None, "left", "1e-100000") and zero["side"] == "left"


# ---- one number in several formats --------------------------------------------------------------
def test_compare_is_encode_in_each_format():
    formats = ["fp32", "bf16", "fp16", "e4m3", "e2m1", "e5m2", "int8"]
    c = compare_formats("0.1", formats)
    for row, fmt in zip(c["rows"], formats):
        f = fpemu.get_format(fmt)
        code = int(fpemu.encode(np.array(["0.1"], dtype=object), f)[0])
        value = Fraction(float(fpemu.decode(np.array([code], f.code_dtype), f)[0]))
        assert int(row["code"], 16) == code and Fraction(row["value_exact"]) == value
        assert Fraction(row["error_exact"]) == value - Fraction(1, 10)
    c = compare_formats("nan", ["fp16", "e2m1"])
    assert c["rows"][0]["value"] == "nan" and "e2m1 has no NaN" in c["rows"][1]["error"]
    with pytest.raises(ValueError, match="cannot read"):
        compare_formats("abc", ["fp16"])


# ---- the printable table -----------------------------------------------------------------------
def read_short(text: str) -> Fraction:
    """A cell's number: a decimal, 2^k or m×2^k (exact), or ±0."""
    if "2^" in text:
        m, _, k = text.replace("-2^", "-1×2^").partition("2^")
        m = m.rstrip("×") or "1"
        return Fraction(int(m)) * Fraction(2) ** int(k)
    return Fraction(text)


@pytest.mark.parametrize("fmt", [n for n, f in FORMATS.items() if f.bits <= 8])
def test_the_table_holds_every_code_exactly(fmt):
    f = fpemu.get_format(fmt)
    t = table_payload(fmt)
    cells = [c for row in t["rows"] for c in row["cells"]]
    values = fpemu.decode(np.arange(f.num_codes, dtype=np.uint8), f)
    assert len(cells) == f.num_codes and t["columns"] == 2 ** ((f.bits + 1) // 2)
    for code, (c, v) in enumerate(zip(cells, values.tolist())):
        assert int(c["code"], 16) == code and c["bits"] == format(code, f"0{f.bits}b")
        if np.isfinite(v):
            assert Fraction(c["exact"]) == Fraction(v) == read_short(c["value"]), (fmt, c)
            assert c["value"] == short_exact(v) and not c["value"].startswith("≈")
        else:
            assert c["value"] == ("nan" if np.isnan(v) else f"{v:g}") == c["class"].replace("inf", f"{v:g}")
    with pytest.raises(ValueError, match="at most 8 bits"):
        table_payload("fp16")


# ---- MXFP4 floor, rceil and NVFP4 side by side -------------------------------------------------
@pytest.mark.parametrize("amax", [None, "100", "12.5"])
def test_compare_blocks_is_mx_quantize(amax):
    rng = np.random.default_rng(41)
    x = np.round(rng.standard_normal(32) * 3, 3)
    typed = [repr(float(v)) for v in x]
    typed[5] = ""  # an empty box: left out, the others keep their numbers
    c = compare_blocks(typed, tensor_amax=amax)
    kept = np.array([float(v) for v in typed if v])
    index = [i for i, v in enumerate(typed) if v]
    assert [r["index"] for r in c["rows"]] == index
    floor = fpemu.mx.quantize(kept, "mxfp4").dequantize(np.float64)
    rceil = fpemu.mx.quantize(kept, "mxfp4", scale_rounding="rceil").dequantize(np.float64)
    tensor = float(amax) if amax else float(np.max(np.abs(kept)))
    halves = [np.array([float(v) for v in typed[:16] if v]), np.array([float(v) for v in typed[16:] if v])]
    nv = np.concatenate([fpemu.mx.quantize(h, "nvfp4", global_amax=tensor).dequantize(np.float64) for h in halves])
    for r, a, b, n, xi in zip(c["rows"], floor, rceil, nv, kept):
        assert [Fraction(v) for v in r["values"]] == [Fraction(float(a)), Fraction(float(b)), Fraction(float(n))]
        assert Fraction(r["errors"][2]) == Fraction(float(n)) - Fraction(repr(float(xi)))
    assert len(c["schemes"][2]["scales"]) == 2 and c["schemes"][0]["scales"] == [
        repr(float(fpemu.decode(np.array([fpemu.mx.quantize(kept, "mxfp4").scales[0]], np.uint8), "e8m0")[0]))]


def test_nvfp4_tensor_amax_makes_ue4m3_round():
    own = describe_block("nvfp4", ["1", "-6", "0.25"])
    given = describe_block("nvfp4", ["1", "-6", "0.25"], tensor_amax="100")
    q = fpemu.mx.quantize(np.array([1.0, -6.0, 0.25]), "nvfp4", global_amax=100.0)
    assert own["scale"]["code"] == "0x7E" and int(given["scale"]["code"], 16) == int(q.scales[0]) != 0x7E
    assert given["tensor_amax"] == "100.0" and given["tensor_amax_given"] and not own["tensor_amax_given"]
    with pytest.raises(ValueError, match="tensor amax is NVFP4's"):
        describe_block("mxfp4", ["1"], tensor_amax="3")
    with pytest.raises(ValueError, match="finite number > 0"):
        describe_block("nvfp4", ["1"], tensor_amax="-3")


# ---- the menus: what the codec takes, asked the cheap way, checked the slow way --------------------
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_accepted_options_are_what_encode_takes(fmt):
    f = fpemu.get_format(fmt)

    def takes(**kw):
        try:
            fpemu.encode(np.array([1.0]), f, **kw)
            return True
        except ValueError:
            return False

    a = accepted_options(f)
    assert a["overflows"] == ["default"] + [o for o in OVERFLOWS[1:] if takes(overflow=o)]
    assert a["roundings"] == [r for r in ROUNDINGS if takes(rounding=r, **(
        {"sr_bits": 8, "rng": 0} if r in STOCHASTIC_WITH_BITS else {"rng": 0} if r.startswith("stochastic") else {}))]
    assert a["nans"] == ["default"] + ([n for n in NAN_POLICIES_WITHOUT_NAN if n != "raise" and takes(nan=n)]
                                       if not f.has_nan else [])


def test_seeds_and_random_bits_typed_as_text():
    a = encode_number("e4m3", "1.3", "stochastic_a", seed="7", sr_bits="2")
    b = encode_number("e4m3", "1.3", "stochastic_a", seed=7, sr_bits=2)
    assert a["code"] == b["code"] and a["seed"] == 7 and a["sr_bits"] == 2
    with pytest.raises(ValueError, match="got 'abc'"):
        encode_number("e4m3", "1.3", "stochastic", seed="abc")
    with pytest.raises(ValueError, match="got 'x'"):
        encode_number("e4m3", "1.3", "stochastic_a", sr_bits="x")


def test_tf32_codes_keep_their_low_bits_zero():
    one = int(fpemu.encode(np.array([1.0]), "tf32")[0])
    assert describe_code("tf32", one)["value"] == "1.0"
    with pytest.raises(ValueError, match="low 13 bits are 0, got 0x3F800001 = 1065353217"):
        describe_code("tf32", one + 1)
    with pytest.raises(ValueError, match="low 13 bits are 0"):
        describe_code("tf32", hex(one + 1))
