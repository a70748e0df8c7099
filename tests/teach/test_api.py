"""The explorer's JSON API without a browser: every value it reports is held to fpemu.decode,
fpemu.encode, numpy's nextafter, the Fraction reference and fpemu.mx.quantize."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from reference import ref_encode

import fpemu
from fpemu.formats import Format, get_format
from fpemu.teach import (
    describe_block,
    describe_code,
    encode_number,
    finite_values,
    handle_api,
)
from fpemu.codec.options import STOCHASTIC_WITH_BITS
from fpemu.teach.api import BLOCK_ROUNDINGS, ROUNDINGS, formats_payload

SMALL = ["e4m3", "e5m2", "e2m1", "e3m2", "e2m3", "ue4m3", "e8m0", "int8", "e4m3fnuz", "binary8p3se"]


def text(v: float) -> str:
    return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf") if np.isinf(v) else repr(float(v))


def rules(reply: dict) -> list[str]:
    return [r["rule"] for r in reply["rules"]]


# ---- one code ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SMALL)
def test_every_code_of_small_formats(name):
    fmt = get_format(name)
    values = fpemu.decode(np.arange(fmt.num_codes, dtype=np.uint8), fmt)
    finite = np.unique(values[np.isfinite(values)])
    finite[finite == 0] = 0.0
    for code in range(fmt.num_codes):
        bits = format(code, f"0{fmt.bits}b")
        d = describe_code(name, bits)
        v = values[code]
        assert d["value"] == text(v) and d["bits"] == bits and int(d["code"], 16) == code
        assert "".join(f["bits"] for f in d["fields"]) == bits
        assert describe_code(name, d["code"])["value"] == d["value"]  # hex works too
        if np.isnan(v):
            assert d["down"] is None and d["up"] is None and d["class"] == "nan"
            continue
        if np.isinf(v):  # below +Inf lies max, above -Inf -max
            assert d["class"] == "inf" and d["down" if v > 0 else "up"]["value"] == text(np.sign(v) * fmt.max)
            assert d["up" if v > 0 else "down"] is None
            continue
        i = int(np.searchsorted(finite, v))
        down = None if i == 0 else text(finite[i - 1])
        up = None if i + 1 == finite.size else text(finite[i + 1])
        assert (d["down"] and d["down"]["value"], d["up"] and d["up"]["value"]) == (down, up), (name, bits)
        if d["down"]:
            assert fpemu.decode(np.array([int(d["down"]["code"], 16)], np.uint8), fmt)[0] == finite[i - 1]


def test_classes_and_formula():
    assert describe_code("e4m3", "0x01")["class"] == "subnormal"
    assert describe_code("e4m3", "0x08")["class"] == "normal"
    assert describe_code("e4m3", "0x80")["class"] == "zero" and describe_code("e4m3", "0x80")["value"] == "-0.0"
    assert describe_code("e5m2", "0x7C")["class"] == "inf" and describe_code("e5m2", "0x7D")["class"] == "nan"
    assert describe_code("int8", "0x80")["formula"] == "-128 × 2^-6 (two's complement)"
    assert describe_code("e8m0", "0x00")["formula"] == "+2^-127"
    d = describe_code("bf16", "0011111110000000")  # bf16 1.0 = the top half of fp32 1.0
    assert d["value"] == "1.0" and [f["meaning"] for f in d["fields"]] == ["+", "127 - bias 127 = 0", "1 + 0/128 = 1.0"]


@pytest.mark.parametrize("x", [1.0, 0.1, -3.5e-40, 3.4e38, 1e-45, 65504.0, -2.0**-126])
def test_fp32_neighbours_are_numpys_nextafter(x):
    code = int(np.float32(x).view(np.uint32))
    d = describe_code("fp32", hex(code))
    v = np.float32(x)
    assert d["value"] == repr(float(v))
    assert d["down"]["value"] == repr(float(np.nextafter(v, np.float32(-np.inf))))
    up = np.nextafter(v, np.float32(np.inf))
    assert (d["up"] and d["up"]["value"]) == (repr(float(up)) if np.isfinite(up) else None)


def test_fp64_and_tf32_codes():
    d = describe_code("fp64", hex(int(np.float64(0.1).view(np.uint64))))
    assert d["value"] == "0.1" and d["up"]["value"] == repr(float(np.nextafter(0.1, 1.0)))
    t = describe_code("tf32", "0x3F800000")  # TF32 codes sit left-aligned in 32 bits
    assert t["bits"] == "0011111110000000000" and t["code"] == "0x3F800000"
    assert t["up"]["value"] == repr(1 + 2.0**-10) and t["down"]["value"] == repr(1 - 2.0**-11)


def test_user_defined_formats():
    spec = {"name": "e3m3", "exponent_bits": 3, "mantissa_bits": 3, "bias": 3, "inf": "none", "nan": "none"}
    fmt = Format("e3m3", 3, 3, 3, inf="none", nan="none")
    top = describe_code(spec, "0111111")
    assert top["value"] == "30.0" and top["up"] is None and top["format"]["name"] == "e3m3"
    e = encode_number(spec, "100")
    assert e["value"] == text(fpemu.quantize(np.array([100.0]), fmt)[0]) == "30.0" and "overflow" in rules(e)
    with pytest.raises(ValueError, match="bias must be an integer"):
        describe_code({**spec, "bias": 7.5}, "0")
    with pytest.raises(ValueError, match="needs mantissa_bits"):
        describe_code({"exponent_bits": 3, "bias": 3}, "0")
    with pytest.raises(ValueError, match="unknown format field"):
        describe_code({**spec, "colour": "red"}, "0")


@pytest.mark.parametrize("code, says", [("0101", "8 bits"), ("0x100", "out of range"), ("0012abcd", "8 bits"),
                                        ("", "8 bits")])
def test_bad_codes(code, says):
    with pytest.raises(ValueError, match=says):
        describe_code("e4m3", code)


# ---- one number -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e2m1", "fp16", "bf16", "e8m0", "int8", "ue4m3"])
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_encode_agrees_with_the_codec(name, rounding):
    fmt = get_format(name)
    rng = np.random.default_rng(14)
    xs = np.concatenate([rng.standard_normal(12) * 10.0 ** rng.integers(-6, 6, 12), [0.0, 2.5, -1.0, 1e30]])
    if not fmt.signed:
        xs = np.abs(xs)
    if rounding == "ml_dtypes_e8m0" and name != "e8m0":  # the codec's refusal, word for word
        with pytest.raises(ValueError, match=r"^rounding='ml_dtypes_e8m0' is for formats like E8M0"):
            encode_number(name, "1", rounding)
        return
    bits = {"sr_bits": 3} if rounding in STOCHASTIC_WITH_BITS else {}
    for x in xs:
        e = encode_number(name, repr(float(x)), rounding, **bits)
        if rounding.startswith("stochastic"):  # the page's seed (0) and the decimal typed, read exactly
            code = int(fpemu.encode([repr(float(x))], fmt, rounding=rounding, rng=0, **bits)[0])
            assert code in (ref_encode(float(x), fmt, rounding="up"), ref_encode(float(x), fmt, rounding="down"))
            assert int(e["code"], 16) == code and e["seed"] == 0 and e["sr_bits"] == bits.get("sr_bits")
        elif rounding == "ml_dtypes_e8m0":
            code = int(fpemu.encode(np.array([x]), fmt, rounding=rounding)[0])
            assert int(e["code"], 16) == code
        else:
            code = int(fpemu.encode(np.array([x]), fmt, rounding=rounding)[0])
            assert int(e["code"], 16) == code == ref_encode(float(x), fmt, rounding=rounding)
        v = fpemu.decode(np.array([code], fmt.code_dtype), fmt)[0]
        assert e["value"] == text(v) and e["input"] == repr(float(x))
        if np.isfinite(v):
            assert float(e["error"]) == float(Fraction(float(v)) - Fraction(repr(float(x))))  # the decimal typed


def test_every_midpoint_of_e4m3_is_a_tie():
    v = finite_values("e4m3")
    for a, b in zip(v[:-1], v[1:]):
        mid = float((a + b) / 2)
        for rounding in ("nearest_even", "nearest_away"):
            e = encode_number("e4m3", repr(mid), rounding)
            assert rules(e)[0] == "tie", (mid, rules(e))
            code = ref_encode(mid, get_format("e4m3"), rounding="rne" if rounding == "nearest_even" else "rna")
            assert int(e["code"], 16) == code
        quarter = float(a + (b - a) / 4)
        assert rules(encode_number("e4m3", repr(quarter)))[0] == "rounded"
        assert rules(encode_number("e4m3", repr(float(b))))[0] == "exact"


@pytest.mark.parametrize("x, overflow, value, fired", [
    ("464", "default", "448.0", ["tie"]),                 # the tie keeps the even code 0x7E
    ("465", "default", "nan", ["rounded", "overflow"]),   # past the threshold: E4M3's NaN
    ("470", "saturate", "448.0", ["rounded", "overflow"]),
    ("1e9", "saturate", "448.0", ["overflow"]),
    ("-1e9", "default", "nan", ["overflow"]),
    ("0.01", "default", "0.009765625", ["rounded", "subnormal"]),  # below 2**-6: subnormal steps of 2**-9
    ("0.0009765625", "default", "0.0", ["tie", "subnormal", "underflow"]),  # half of 2**-9
    ("1e-9", "default", "0.0", ["rounded", "subnormal", "underflow"]),
    ("0.001953125", "default", "0.001953125", ["exact", "subnormal"]),
    ("nan", "default", "nan", ["nan"]),
    ("inf", "saturate", "448.0", ["infinity"]),
])
def test_the_rules_of_e4m3(x, overflow, value, fired):
    e = encode_number("e4m3", x, "nearest_even", overflow)
    assert e["value"] == value and rules(e) == fired


def test_the_rules_of_other_formats():
    assert rules(encode_number("e5m2", "1e6")) == ["overflow"] and encode_number("e5m2", "1e6")["value"] == "inf"
    assert rules(encode_number("e5m2", "60000", "toward_zero")) == ["rounded"]  # down to max: no overflow
    rz = encode_number("e5m2", "70000", "toward_zero")  # past 65536; IEEE: toward zero never reaches Inf
    assert rz["value"] == "57344.0" and rules(rz) == ["overflow"] and "toward zero" in rz["rules"][0]["text"]
    assert rules(encode_number("e2m1", "6.5")) == ["rounded"]  # nearer to 6 than to 8: no overflow
    assert rules(encode_number("e2m1", "7.5")) == ["rounded", "overflow"]
    assert encode_number("e2m1", "7.5")["value"] == "6.0"  # E2M1 has no Inf nor NaN: it saturates
    assert rules(encode_number("e8m0", "0")) == ["no-code"] and encode_number("e8m0", "0")["value"] == "nan"
    assert rules(encode_number("ue4m3", "-1")) == ["no-code"]
    assert rules(encode_number("int8", "-2")) == ["exact"]  # two's complement reaches -2
    assert rules(encode_number("int8", "-3")) == ["overflow"]
    assert rules(encode_number("fp64", "0.1")) == ["rounded"]  # the decimal 0.1 is no float64
    assert rules(encode_number("fp64", "0.1000000000000000055511151231257827021181583404541015625")) == ["exact"]
    assert rules(encode_number("tf32", "1024.5", "nearest_away")) == ["tie"]


@pytest.mark.parametrize("args, says", [
    (("e4m3", "abc"), "cannot read 'abc'"),
    (("e4m3", "1/0"), "cannot read"),
    (("e4m3", "1", "sideways"), "the explorer offers"),
    (("e4m3", "1", "stochastic_a"), "needs sr_bits"),  # the codec's message
    (("e4m3", "1", "stochastic_odd", "default", "default", 0, 33), r"needs sr_bits.*1\.\.32.*got 33"),
    (("e4m3", "1", "ml_dtypes_e8m0"), "is for formats like E8M0"),
    (("e4m3", "1", "stochastic", "default", "default", -1), "seed"),
    (("e4m3", "1", "nearest_even", "default", "quiet"), "unknown NaN rule"),
    (("e4m3", "1", "nearest_even", "inf"), "has no Inf"),
    (("e4m3", "1", "nearest_even", "sideways"), "unknown overflow"),
    (("fp9", "1"), "unknown format 'fp9'"),
    (("e2m1", "nan"), "NaN"),
])
def test_bad_numbers_and_options(args, says):
    with pytest.raises(ValueError, match=says):
        encode_number(*args)


def test_every_rounding_mode_of_the_codec_is_offered():
    assert sorted(ROUNDINGS) == sorted(set(fpemu.codec.ROUNDING_MODES.values())) and len(set(ROUNDINGS)) == len(ROUNDINGS)
    payload = formats_payload()
    assert payload["roundings"] == list(ROUNDINGS) and payload["sr_bits_roundings"] == list(STOCHASTIC_WITH_BITS)
    # the block view: what fpemu.mx.quantize takes (no sr_bits, no ml_dtypes_e8m0)
    assert payload["block_roundings"] == list(BLOCK_ROUNDINGS)
    assert sorted(BLOCK_ROUNDINGS) == sorted(fpemu.mx.inputs.ELEMENT_ROUNDINGS)
    with pytest.raises(ValueError, match="unknown element rounding"):
        describe_block("mxfp4", ["1"], rounding="stochastic_a")


@pytest.mark.parametrize("rounding", STOCHASTIC_WITH_BITS)
def test_stochastic_with_random_bits_and_a_seed(rounding):
    for bits in (1, 2, 8, 32):
        for seed in range(6):
            e = encode_number("e4m3", "1.3", rounding, seed=seed, sr_bits=bits)
            code = int(fpemu.encode(np.array(["1.3"], dtype=object), "e4m3", rounding=rounding, sr_bits=bits,
                                    rng=seed)[0])
            assert int(e["code"], 16) == code and e["sr_bits"] == bits and e["seed"] == seed
            assert rules(e) == ["stochastic"]
    status, reply = handle_api("/api/encode", {"format": "e4m3", "value": "1.3", "rounding": rounding,
                                               "seed": 4, "sr_bits": 2})
    assert status == 200 and int(reply["code"], 16) == int(
        fpemu.encode(np.array(["1.3"], dtype=object), "e4m3", rounding=rounding, sr_bits=2, rng=4)[0])
    assert encode_number("e4m3", "1.3", "up", sr_bits=2)["sr_bits"] is None  # (ignored, as the seed is)


# ---- one block --------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt, kwargs", [("mxfp4", {}), ("mxfp4", {"scale_rounding": "rceil"}),
                                         ("mxfp8_e4m3", {}), ("mxfp6_e3m2", {}), ("nvfp4", {}), ("mxint8", {})])
def test_block_is_what_mx_quantize_gives(fmt, kwargs):
    bf = fpemu.mx.get_block_format(fmt)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(bf.block_size) * 3
    x[5] = 40.0
    d = describe_block(fmt, [repr(float(v)) for v in x], **kwargs)
    q = fpemu.mx.quantize(x, fmt, **kwargs)
    assert int(d["scale"]["code"], 16) == int(q.scales[0]) and len(d["elements"]) == bf.block_size
    assert [int(e["code"], 16) for e in d["elements"]] == [int(c) & 0xFF for c in q.codes]
    assert [Fraction(e["value"]) for e in d["elements"]] == [Fraction(float(v)) for v in q.dequantize(np.float64)]
    scale = fpemu.decode(np.array([q.scales[0]], np.uint8), bf.scale)[0]
    assert Fraction(d["scale"]["value"]) == Fraction(float(scale))  # (exact decimals)
    if fmt.startswith("mxfp"):  # MX: the value is the element's value times the power-of-two scale
        assert all(float(e["value"]) == float(e["element"]) * scale for e in d["elements"])


def test_block_errors():
    with pytest.raises(ValueError, match="1 to 16 values"):
        describe_block("nvfp4", ["1"] * 17)
    with pytest.raises(ValueError, match="scale_rounding is for MX"):
        describe_block("nvfp4", ["1"], scale_rounding="rceil")
    with pytest.raises(ValueError, match="unknown block format"):
        describe_block("mxfp5", ["1"])
    with pytest.raises(TypeError, match="list of numbers"):
        describe_block("mxfp4", "1, 2")


# ---- the API's envelope -----------------------------------------------------------------------
def test_handle_api():
    status, payload = handle_api("/api/formats")
    assert status == 200 and "e4m3" in [f["name"] for f in payload["formats"]]
    assert {"name": "nvfp4", "block_size": 16, "nvfp4": True} in payload["blocks"]
    assert handle_api("/api/code", {"format": "e2m1", "code": "0111"})[1]["value"] == "6.0"
    assert handle_api("/api/nothing", {})[0] == 404 and handle_api("/api/code")[0] == 404
    status, payload = handle_api("/api/encode", {"format": "e4m3", "value": "x"})
    assert status == 400 and payload == {"error": "cannot read 'x' as a number"}
    assert handle_api("/api/block", {"format": "mxfp4", "values": [1, 2]})[1]["scale"]["value"] == "0.5"


# Regressions (each failed on the code before its fix): NumPy integers wherever an int is taken.
def test_explorer_codes_and_ports_take_numpy_integers():
    from fpemu.teach.api import _code_from
    from fpemu.teach.server import make_server

    assert _code_from(get_format("e4m3"), np.uint8(0x38)) == 0x38
    with pytest.raises(TypeError):
        _code_from(get_format("e4m3"), np.bool_(True))
    server = make_server(np.int64(0))
    server.server_close()
