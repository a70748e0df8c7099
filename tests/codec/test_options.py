"""fpemu.Conversion: every conversion option as one record that like() returns and every
converting function takes (issue 24), and the gfloat rules it gained (issue 28): the
``outside_range`` overflow of gfloat's ``encode_float``, ``stochastic_odd`` (gfloat's
StochasticOdd), and P3109's P < K for signed formats. The gfloat rules are checked against
gfloat itself (skipped when it is absent) and against exact Fraction arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import (
    Conversion,
    decode,
    encode,
    explain,
    get_format,
    like,
    quantize,
    scaled_cast,
)
from fpemu.formats import p3109
from fpemu.vectors import cast_vectors
from fpemu import mx


def same_codes(got, want, x, what):
    got, want = np.asarray(got).astype(np.uint64), np.asarray(want).astype(np.uint64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{what}: {bad.size} differ, e.g. x={x[bad[:4]]} got {got[bad[:4]]} want {want[bad[:4]]}"


ALL_HALF = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)


# ---- the record ---------------------------------------------------------------------------------
KEYWORD_SETS = [
    dict(rounding="rz"), dict(overflow="saturate", nan="zero"), dict(rounding="sra", sr_bits=3, random_bits=5),
    dict(rounding="odd", directed_overflow="p3109"), dict(via="fp32", rounding="up"),
    dict(rounding="toward_zero", directed_overflow="outside_range"),
]


@pytest.mark.parametrize("keywords", KEYWORD_SETS, ids=lambda k: ",".join(k))
@pytest.mark.parametrize("name", ["e4m3", "e5m2", "binary8p3se", "bf16"])
def test_conversion_and_keywords_give_the_same_codes(keywords, name):
    fmt = get_format(name)
    if "nan" in keywords and fmt.has_nan:
        keywords = {**keywords, "nan": "positive"}
    x = np.concatenate([np.ldexp(np.random.default_rng(1).uniform(-2, 2, 2000), np.arange(2000) % 40 - 20),
                        [0.0, -0.0, np.inf, -np.inf, fmt.max * 1.01, -fmt.max * 1.2]])
    c = Conversion(**keywords)
    want = encode(x, name, **keywords)
    assert np.array_equal(encode(x, name, conversion=c), want)
    assert np.array_equal(encode(x, name, **c), want)  # the mapping spelling
    np.testing.assert_array_equal(quantize(x, name, conversion=c), quantize(x, name, **keywords))
    # a keyword beside the conversion that agrees with it is fine
    first = next(iter(keywords))
    assert np.array_equal(encode(x, name, conversion=c, **{first: keywords[first]}), want)


def test_a_keyword_that_contradicts_the_conversion_is_an_error():
    c = Conversion(rounding="rz", overflow="saturate")
    with pytest.raises(ValueError, match=r"conversion= fixes overflow='saturate', and overflow='inf' contradicts it"):
        encode([1.0], "e5m2", conversion=c, overflow="inf")
    with pytest.raises(ValueError, match="rounding"):
        quantize([1.0], "e5m2", conversion=c, rounding="up")
    with pytest.raises(ValueError, match="nan"):
        explain(1.0, "e5m2", conversion=Conversion(nan="positive"), nan="sign")
    # an option the conversion leaves open is added
    assert encode([1e6], "e5m2", conversion=Conversion(overflow="inf"), rounding="rz").tolist() == [0x7B]


def test_conversion_checks_names_at_once_and_formats_when_resolved():
    with pytest.raises(ValueError, match="unknown overflow 'clamp'"):
        Conversion(overflow="clamp")
    with pytest.raises(ValueError, match="unknown directed_overflow"):
        Conversion(directed_overflow="sometimes")
    with pytest.raises(ValueError, match="unknown via"):
        Conversion(via="fp16")
    with pytest.raises(ValueError, match="unknown conversion option 'round'"):
        Conversion().replace(round="rz")
    with pytest.raises(TypeError, match="conversion must be a fpemu.Conversion"):
        encode([1.0], "e4m3", conversion="rne")
    with pytest.raises(ValueError, match="has no Inf"):
        Conversion(overflow="inf").resolved(get_format("e4m3"))
    with pytest.raises(ValueError, match="needs sr_bits"):
        encode([1.0], "e4m3", conversion=Conversion(rounding="stochastic_odd"))
    with pytest.raises(ValueError, match="directed_overflow applies to non-saturating overflow"):
        encode([1.0], "e4m3", conversion=Conversion(overflow="saturate", directed_overflow="outside_range"))


def test_conversion_reads_as_the_mapping_of_its_fixed_fields():
    c = Conversion(rounding="rne", nan="all_ones")
    assert dict(c) == {"rounding": "rne", "nan": "all_ones"} and len(c) == 2
    assert c == {"nan": "all_ones", "rounding": "rne"} and c != {"nan": "all_ones"}
    assert "overflow" not in c and c.get("overflow") is None
    assert c | {"rounding": "rz"} == Conversion(rounding="rz", nan="all_ones")
    assert {"rounding": "rz", "overflow": "inf"} | c == Conversion(rounding="rne", overflow="inf", nan="all_ones")
    assert {**c, "rounding": "up"} == {"rounding": "up", "nan": "all_ones"}
    assert hash(c) == hash(Conversion(nan="all_ones", rounding="rne"))
    assert c.replace(nan=None) == Conversion(rounding="rne")
    # the resolved record: canonical names and the format's defaults
    r = Conversion(rounding="RNE", directed_overflow="ieee").resolved(get_format("e5m2"))
    assert (r.rounding, r.overflow, r.nan, r.directed) == ("nearest_even", "inf", "sign", "ieee")
    assert r == Conversion("nearest_even", "inf", "sign")  # (IEEE's rule is the unwritten default)


def test_like_returns_a_conversion_every_function_takes():
    c = like("gfloat", "e5m2")
    assert isinstance(c, Conversion) and c == {"nan": "all_ones", "directed_overflow": "p3109"}
    x = np.array([np.nan, 1e6, 1.3])
    codes = encode(x, "e5m2", conversion=c)
    assert codes.tolist() == [0xFF, 0x7C, 0x3D]
    np.testing.assert_array_equal(quantize(x, "e5m2", conversion=c), decode(codes, "e5m2"))
    assert "1000000.0" in explain(1e6, "e5m2", conversion=c)
    facts = fpemu.codec.explainer.explain_facts(1e6, "e5m2", conversion=c.replace(rounding="odd"))
    assert (facts["code"], facts["directed_overflow"]) == (0x7C, "p3109")  # odd overflows under P3109's rule
    assert encode([1e6], "e5m2", conversion=c.replace(rounding="odd", directed_overflow=None)).tolist() == [0x7B]


# ---- golden vectors and scaled casts with every option -------------------------------------------
def test_cast_vectors_carry_the_random_bits_of_p3109_stochastic_rounding(tmp_path):
    gfloat = pytest.importorskip("gfloat")
    fi = pytest.importorskip("gfloat.formats").format_info_ocp_e4m3
    c = Conversion(rounding="stochastic_a", sr_bits=3, overflow="saturate", nan="all_ones")
    v = cast_vectors("e4m3", "random", 3000, conversion=c, seed=5)
    with np.errstate(invalid="ignore"):  # (signalling NaN patterns among the random ones)
        x = v["input_bits"].view(np.float32).astype(np.float64)
    assert v["meta"]["sr_bits"] == 3 and v["random_bits"].shape == x.shape and v["random_bits"].max() == 7
    keep = ~np.isnan(x)  # (gfloat's NaN is 0x7F in E4M3's NaN rule: compared apart)
    rounded = gfloat.round_ndarray(fi, x[keep], gfloat.RoundMode.StochasticFastest, True,
                                   v["random_bits"][keep].astype(np.int64), 3)
    same_codes(v["code"][keep], gfloat.encode_ndarray(fi, rounded), x[keep], "cast_vectors sra vs gfloat")
    assert (v["code"][~keep] == 0xFF).all()
    from fpemu.vectors import verify_vectors, write_vectors

    for ext in ("npz", "csv", "json"):
        write_vectors(v, tmp_path / f"v.{ext}")
        assert verify_vectors(tmp_path / f"v.{ext}") == (x.size, x.size)
    # the same seed draws the same bits; given bits are used as they are
    again = cast_vectors("e4m3", "random", 3000, conversion=c, seed=5)
    assert np.array_equal(again["random_bits"], v["random_bits"]) and np.array_equal(again["code"], v["code"])
    ones = cast_vectors("e4m3", "random", 3000, conversion=c.replace(random_bits=7), seed=5)
    assert (ones["random_bits"] == 7).all() and (ones["code"] == ones["code_up"]).mean() > 0.5


def test_cast_vectors_with_a_directed_overflow_rule():
    v = cast_vectors("e4m3", "edge", conversion=like("gfloat_encode", "e4m3"))
    with np.errstate(invalid="ignore"):
        x = v["input_bits"].view(np.float32).astype(np.float64)
    assert v["meta"]["directed_overflow"] == "outside_range" and v["meta"]["rounding"] == "toward_zero"
    over = np.abs(x) > 448
    assert over.any() and (v["code"][over] & 0x7F == 0x7F).all()  # NaN, though truncation gives 448
    inside = ~over & ~np.isnan(x)
    assert (np.abs(v["value"][inside]) <= np.abs(x[inside])).all()  # truncation
    assert cast_vectors("e4m3", "edge")["meta"].keys() == {"type", "format", "kind", "rounding", "overflow", "nan",
                                                          "source", "seed", "n", "fpemu"}  # (files as before)


def test_scaled_cast_takes_a_conversion():
    x = np.random.default_rng(2).standard_normal((4, 6))
    bits = np.random.default_rng(3).integers(0, 16, x.shape)
    c = Conversion(rounding="stochastic_b", sr_bits=4, random_bits=bits)
    t = scaled_cast(x, "e4m3", granularity="row", conversion=c)
    scaled = np.float32(x) * t.scale  # the recipe's float32 product, then the cast
    assert np.array_equal(t.codes, encode(scaled, "e4m3", conversion=c, overflow="saturate"))
    assert not np.array_equal(t.codes, scaled_cast(x, "e4m3", granularity="row").codes)
    with pytest.raises(ValueError, match="scaled_cast saturates"):
        scaled_cast(x, "e5m2", conversion=Conversion(overflow="inf"))


def test_mx_elements_use_the_codec_through_its_public_names():
    from pathlib import Path

    from fpemu.mx import elements

    source = Path(elements.__file__).read_text()
    assert "_encode_array" not in source and "resolved_options" not in source
    x = np.random.default_rng(4).standard_normal((3, 32)).astype(np.float32)
    a = fpemu.mx.quantize(x, "mxfp8_e4m3", axis=-1, rounding="stochastic", rng=9)
    b = fpemu.mx.quantize(x, "mxfp8_e4m3", axis=-1, rounding="stochastic", rng=9)
    assert np.array_equal(a.codes, b.codes) and not np.array_equal(a.codes, fpemu.mx.quantize(x, "mxfp8_e4m3", axis=-1).codes)


# ---- gfloat's encode_float: overflow decided before rounding ---------------------------------------
GFLOAT_8BIT = {"e4m3": "format_info_ocp_e4m3", "e5m2": "format_info_ocp_e5m2", "e8m0": "format_info_ocp_e8m0",
               "e2m1": "format_info_ocp_e2m1", "e3m2": "format_info_ocp_e3m2", "e2m3": "format_info_ocp_e2m3",
               "binary8p3se": (8, 3, "Signed", "Extended"), "binary8p4se": (8, 4, "Signed", "Extended"),
               "binary8p1se": (8, 1, "Signed", "Extended"), "binary8p7sf": (8, 7, "Signed", "Finite"),
               "binary8p4ue": (8, 4, "Unsigned", "Extended"), "binary8p3uf": (8, 3, "Unsigned", "Finite"),
               "binary8p8uf": (8, 8, "Unsigned", "Finite"), "binary8p1ue": (8, 1, "Unsigned", "Extended")}


def gfloat_info(name):
    formats = pytest.importorskip("gfloat.formats")
    spec = GFLOAT_8BIT[name]
    if isinstance(spec, str):
        return getattr(formats, spec)
    types = pytest.importorskip("gfloat.types")
    k, p, s, d = spec
    return formats.format_info_p3109(k, p, getattr(types.Signedness, s), getattr(types.Domain, d))


def every_code_and_beyond(fmt):
    """Every float16 value, and every value of fmt with its float64 neighbours."""
    v = decode(np.arange(1 << fmt.bits), fmt)
    v = v[np.isfinite(v)]
    return np.concatenate([ALL_HALF, v, np.nextafter(v, np.inf), np.nextafter(v, -np.inf), -v, [fmt.max * 1.25,
                                                                                                 fmt.lowest * 1.25]])


@pytest.mark.parametrize("name", list(GFLOAT_8BIT))
def test_gfloat_encode_float_on_every_value(name):
    gfloat = pytest.importorskip("gfloat")
    fi, fmt = gfloat_info(name), get_format(name)
    x = every_code_and_beyond(fmt)
    if not fmt.has_nan:
        x = x[~np.isnan(x)]  # gfloat gives such a NaN code_of_nan, which these formats lack
    if not fmt.signed and fmt.has_inf:
        x = x[~(x < 0)]  # gfloat raises (its code of -Inf, which the format lacks); fpemu: NaN
    with np.errstate(invalid="ignore"):  # (gfloat casts NaN to integers on the way)
        want = gfloat.encode_ndarray(fi, x)
    # below an unsigned format's min, gfloat 0.5.2's encode_ndarray gives no code (e.g. 2**64 - 1
    # for -2**-24): its scalar encode_float, the function whose rule this is, decides those
    below = np.flatnonzero(x < fi.min) if not fmt.signed else []
    want[below] = [gfloat.encode_float(fi, float(v)) for v in x[below]]
    same_codes(encode(x, name, conversion=like("gfloat_encode", name)), want, x, f"{name} encode_float")
    scalar = [gfloat.encode_float(fi, float(v)) for v in x[::97]]
    same_codes(encode(x[::97], name, **like("gfloat_encode", name)), scalar, x[::97], f"{name} scalar")


def test_outside_range_against_fractions():
    """Exact input too: a hair above max is NaN in E4M3 and Inf in E5M2, whatever the rounding."""
    c = Conversion(rounding="toward_zero", directed_overflow="outside_range")
    hair = [Fraction(448) + Fraction(1, 10**30), Fraction(-448) - Fraction(1, 10**30), Fraction(448)]
    assert encode(np.array(hair, dtype=object), "e4m3", conversion=c).tolist() == [0x7F, 0xFF, 0x7E]
    e5 = np.array([Fraction(57344) + Fraction(1, 10**30), "57344", "-1e9"], dtype=object)
    assert decode(encode(e5, "e5m2", conversion=c), "e5m2").tolist() == [np.inf, 57344.0, -np.inf]
    for mode in ("rne", "up", "down", "rna", "odd"):
        assert encode([448.5, -448.5], "e4m3", conversion=c.replace(rounding=mode)).tolist() == [0x7F, 0xFF]
    # unsigned: every negative number but -0 is outside; -0 is zero
    assert encode([-1e-30, -0.0, 3.0], "binary8p4ue", conversion=c).tolist() == [0xFF, 0x00, 0x8C]


# ---- gfloat's StochasticOdd -------------------------------------------------------------------------
def stochastic_odd_model(v: float, fmt, n: int, r: int) -> float:
    """Exact model of gfloat's StochasticOdd (round.py: ``_rnito(delta * 2**N) + srbits >=
    2**N`` rounds away), saturating: lower neighbour q * k, nu the dropped fraction."""
    a = abs(Fraction(v))
    e = max(math.floor(math.log2(a)) if a else fmt.emin, fmt.emin)
    q = Fraction(2) ** (e - fmt.mantissa_bits)
    k = math.floor(a / q)
    scaled = (a / q - k) * 2**n
    low = math.floor(scaled)
    up = scaled - low > Fraction(1, 2) or (scaled - low == Fraction(1, 2) and low % 2 == 0)
    rounded = (k + (low + up + r >= 2**n)) * q
    return math.copysign(float(min(rounded, Fraction(fmt.max))), v)


def test_stochastic_odd_against_fractions():
    fmt = get_format("e4m3")
    rng = np.random.default_rng(7)
    x = np.concatenate([np.ldexp(rng.uniform(-2, 2, 400), rng.integers(-12, 9, 400)),
                        # exact ties of the N-bit rounding: k + (2j + 1) / 2**(n + 1) quanta
                        (1 + (2 * np.arange(8) + 1) / 2**5 / 8), [-(2.0**-8 + 2.0**-13)]])
    for n in (1, 3, 4, 8):
        r = rng.integers(0, 1 << n, x.size)
        got = quantize(x, fmt, rounding="sro", sr_bits=n, random_bits=r, overflow="saturate")
        want = [stochastic_odd_model(v, fmt, n, int(ri)) for v, ri in zip(x, r)]
        np.testing.assert_array_equal(got, want, err_msg=f"n={n}")
    # ties to odd differ from C's ties to even: nu = 1/4 at N = 1 is a tie, C floors it to 0
    # (so R = 1 never reaches 2), odd rounds it to 1 (1 + R = 2 with R = 1 rounds away)
    tie = 1 + 2.0**-5  # E4M3's quantum at 1 is 2**-3: nu = 1/4, and nu * 2**1 = 1/2 is a tie
    assert quantize([tie], fmt, rounding="src", sr_bits=1, random_bits=[1]).tolist() == [1.0]
    assert quantize([tie], fmt, rounding="sro", sr_bits=1, random_bits=[1]).tolist() == [1.125]


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "binary8p3se", "binary8p4ue", "e2m1", "e8m0"])
@pytest.mark.parametrize("n", [2, 5, 9])
def test_stochastic_odd_against_gfloat_on_every_float16_value(name, n):
    gfloat = pytest.importorskip("gfloat")
    if not hasattr(gfloat.RoundMode, "StochasticOdd"):
        pytest.skip("this gfloat has no StochasticOdd")
    fi, fmt = gfloat_info(name), get_format(name)
    x = ALL_HALF[~np.isnan(ALL_HALF)]
    if not fmt.signed:
        x = x[x >= 0]  # gfloat returns negative values into unsigned formats as they are
    if not fmt.subnormals:
        x = x[x >= fmt.min_normal]  # gfloat does not clamp E8M0's zero and tiny values to 2^-127
    r = np.random.default_rng(n).integers(0, 1 << n, x.size)
    rounded = gfloat.round_ndarray(fi, x, gfloat.RoundMode.StochasticOdd, True, r, n)
    want = gfloat.encode_ndarray(fi, rounded)
    got = encode(x, name, conversion=like("gfloat_sat", name).replace(rounding="stochastic_odd", sr_bits=n,
                                                                      random_bits=r))
    same_codes(got, want, x, f"{name} StochasticOdd N={n}")


# ---- P3109: signed formats need P < K ----------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3, 4, 8])
def test_signed_p3109_with_p_equal_k_is_refused_with_the_section(k):
    with pytest.raises(ValueError, match=r"signed formats: 1 <= P < K \(interim report v4.0, section 3.1\)"):
        p3109(k, k)
    with pytest.raises(ValueError, match="section 3.1"):
        get_format(f"binary{k}p{k}se")
    u = p3109(k, k, signed=False, domain="finite")  # unsigned P = K is P3109's
    assert (u.exponent_bits, u.mantissa_bits, u.bias) == (1, k - 1, 1)


def _message(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_sr_bits_takes_numpy_integers():
    x = [1.3, 1.3]
    kw = dict(rounding="stochastic_a", random_bits=[2, 14])
    want = fpemu.encode(x, "e4m3", sr_bits=4, **kw)
    np.testing.assert_array_equal(fpemu.encode(x, "e4m3", sr_bits=np.int64(4), **kw), want)
    np.testing.assert_array_equal(fpemu.quantize(x, "e4m3", sr_bits=np.uint8(4), **kw),
                                  fpemu.decode(want, "e4m3"))
    for bad in (True, 4.0, np.bool_(True)):
        with pytest.raises(ValueError, match="needs sr_bits"):
            fpemu.encode(x, "e4m3", sr_bits=bad, **kw)


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_codec_options_ignore_case():
    x = [0.1, 1000.0, -1e9, float("nan")]
    want = fpemu.encode(x, "e4m3", rounding="rne", overflow="saturate", nan="sign")
    got = fpemu.encode(x, "e4m3", rounding="RNE", overflow="Saturate", nan="SIGN")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fpemu.encode(x, "e4m3", overflow=" SAT_FINITE "), want)
    np.testing.assert_array_equal(
        fpemu.encode([1e6], "fp16", rounding="rz", overflow="Inf", directed_overflow="None"),
        fpemu.encode([1e6], "fp16", rounding="rz", overflow="inf", directed_overflow="none"))
    np.testing.assert_array_equal(fpemu.quantize(x, "e4m3", overflow="SATURATE", nan="Sign"),
                                  fpemu.quantize(x, "e4m3", overflow="saturate"))
    assert isinstance(fpemu.encode([1.0], "e4m3", returns="NumPy"), np.ndarray)
    np.testing.assert_array_equal(fpemu.decode([1], "e4m3", returns="NUMPY"), fpemu.decode([1], "e4m3"))


# (a regression of argument handling: it failed on the code before its fix, deac082)
@pytest.mark.parametrize("call", [
    lambda: fpemu.encode([1.3], "e4m3", rng=0),
    lambda: fpemu.encode([1.3], "e4m3", rounding="rz", rng=np.random.default_rng(0)),
    lambda: fpemu.quantize(np.float32([1.3]), "bf16", rng=0),  # the float32 fast path
    lambda: fpemu.quantize([1.3], "e4m3", rounding="up", rng=0),  # the float64 fast path
    lambda: mx.quantize([1.3] * 32, "mxfp4", rng=0),
    lambda: mx.quantize([1.3] * 32, "nvfp4", rounding="rne", rng=1),
    lambda: fpemu.scaled_cast([1.3], "e4m3", rng=0),
], ids=["encode", "encode-rz-generator", "quantize-f32", "quantize-f64", "mx", "nvfp4", "scaled_cast"])
def test_rng_is_refused_where_the_rounding_draws_nothing(call):
    message = _message(call)
    assert "rng" in message and ("nearest_even" in message or "toward_zero" in message or "up" in message)


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_rng_with_given_random_bits_is_refused_as_random_bits_without_them_are():
    with pytest.raises(ValueError, match="random_bits apply to"):
        fpemu.encode([1.3], "e4m3", random_bits=[1])
    with pytest.raises(ValueError, match="rng"):
        fpemu.encode([1.3], "e4m3", rounding="stochastic_a", sr_bits=4, random_bits=[1], rng=0)
    with pytest.raises(ValueError, match="random_bits apply to"):
        fpemu.quantize(np.float32([1.3]), "bf16", random_bits=[1])
