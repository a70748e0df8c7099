"""Exact input (Fractions, Decimals, decimal and hex strings, huge ints) is rounded once, from its
exact value, never through float64: checked against ``tests/reference.py``, the exact Fraction
codec, at the ties of neighbouring values and at 2**-80 (relative) either side of them, where
a float64 cannot tell the three apart, in every deterministic rounding mode and overflow rule,
for built-in formats and random user-defined ones.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import fpemu
import random_formats as rf
from fpemu import Format, get_format
from fpemu.codec.rounding import random_u64, sr_key
from reference import magnitude_value, max_magnitude_code, ref_decode, ref_encode

MODES = ("rne", "rna", "rz", "ru", "rd", "odd")
NAMES = ("fp16", "bf16", "e4m3", "e5m2", "e2m1", "fp32", "fp64", "tf32", "e8m0", "int8", "ue4m3", "e4m3fnuz")
USER = Format("user", 7, 37, 50, inf="top", nan="neg_zero")  # an odd one: 45 bits, P3109-like ends
TINY = Fraction(1, 2**80)


def decimal_text(q: Fraction) -> str:
    """The exact decimal of a dyadic rational (every one has a finite decimal)."""
    k = q.denominator.bit_length() - 1
    assert q.denominator == 1 << k
    digits = str(abs(q.numerator) * 5**k).rjust(k + 1, "0")
    text = digits[:len(digits) - k] + ("." + digits[len(digits) - k:] if k else "")
    return ("-" if q < 0 else "") + text


def probes(fmt: Format, rng: np.random.Generator) -> list[Fraction]:
    """Values of fmt, the ties between neighbours, and the ties times (1 +- 2**-80): small and
    large codes, binade edges, random codes, the first step past the largest value, the tiniest
    and the enormous."""
    top = max_magnitude_code(fmt)
    m = fmt.mantissa_bits
    ks = {0, 1, 2, top - 1, top, top >> 1} | {int(k) for k in rng.integers(0, top + 1, size=6)}
    for field in rng.integers(0, (top >> m) + 1, size=3):
        ks |= {int(field) << m, (int(field) << m) - 1}
    out = set()
    for k in (k for k in ks if 0 <= k <= top):
        lo, hi = magnitude_value(k, fmt), magnitude_value(k + 1, fmt)
        tie = (lo + hi) / 2
        out |= {hi, tie, tie * (1 + TINY), tie * (1 - TINY), lo + (hi - lo) * TINY, hi - (hi - lo) * TINY}
        if lo:
            out |= {lo}
    smallest = magnitude_value(0 if not fmt.subnormals else 1, fmt)
    out |= {smallest / 2, smallest * (1 + TINY) / 2, smallest / 3, Fraction(1, 3), Fraction(1, 10),
            Fraction(10) ** 400, Fraction(1, 10**400), Fraction(2) ** 1024, Fraction(2) ** -1075}
    return sorted(out) + [-v for v in sorted(out)]  # (negatives of unsigned formats too)


def want(values, fmt, **options) -> list[int]:
    return [ref_encode(v, fmt, **options) for v in values]


@pytest.mark.parametrize("name", NAMES + ("user",))
@pytest.mark.parametrize("mode", MODES)
def test_ties_and_their_neighbours_round_once(name, mode):
    fmt = USER if name == "user" else get_format(name)
    values = probes(fmt, np.random.default_rng(len(name)))
    options = dict(nan="zero") if not fmt.has_nan else {}  # (no negatives' NaN raises)
    for ovf in rf.overflow_options(fmt):
        kw = ovf | options
        expected = want(values, fmt, rounding=mode, **rf.ref_options(kw))
        got = fpemu.encode(np.array(values, dtype=object), fmt, rounding=mode, **kw)
        bad = [(str(v), hex(g), hex(w)) for v, g, w in zip(values, got.tolist(), expected) if g != w]
        assert not bad, f"{name} {mode} {kw}: {len(bad)} differ, e.g. {bad[:3]}"
    # the same values as decimal strings and Decimals (all dyadic: their decimals are exact)
    texts = [decimal_text(v) for v in values if v.denominator & (v.denominator - 1) == 0]
    texts += ["1e-400", "-1e-400", "1e400", "-0.1", "0.3", "-0"]
    exact = [-0.0 if t == "-0" else Fraction(t) for t in texts]
    expected = want(exact, fmt, rounding=mode, **options)
    assert fpemu.encode(texts, fmt, rounding=mode, **options).tolist() == expected
    assert fpemu.encode(np.array([Decimal(t) for t in texts], dtype=object), fmt, rounding=mode,
                        **options).tolist() == expected


@pytest.mark.parametrize("name", ["fp16", "e4m3", "fp64", "bf16"])
def test_quantize_returns_the_values_of_those_codes_as_float64(name):
    fmt = get_format(name)
    values = probes(fmt, np.random.default_rng(1))
    for mode in MODES:
        got = fpemu.quantize(np.array(values, dtype=object), fmt, rounding=mode)
        assert got.dtype == np.float64
        expected = [ref_decode(c, fmt).to_float() for c in want(values, fmt, rounding=mode)]
        np.testing.assert_array_equal(got, expected)
        assert all(math.copysign(1, g) == math.copysign(1, e) for g, e in zip(got, expected))


def test_the_examples_of_the_brief():
    assert fpemu.quantize("1.00048828125000000001", "fp16") == 1.0009765625
    assert fpemu.quantize(np.float64(1.00048828125), "fp16") == 1.0  # the float64 is the tie
    assert fpemu.quantize("0.1", "fp64") == 0.1
    assert fpemu.encode("1e-40", "fp32") == ref_encode(Fraction(1, 10**40), get_format("fp32"))
    assert fpemu.quantize(["inf", "-inf", "-0", "+0", "0x1.8p3", "1/3"], "fp16").tolist() == \
        [math.inf, -math.inf, 0.0, 0.0, 12.0, 0.333251953125]  # 1/3 in fp16: 1365 * 2**-12
    assert math.copysign(1, fpemu.quantize("-0", "fp16")) == -1
    assert np.isnan(fpemu.quantize(["nan", "-nan", Decimal("NaN")], "fp16")).all()
    assert int(fpemu.encode("-nan", "fp16")) == 0xFE00 and int(fpemu.encode("nan", "fp16")) == 0x7E00


@pytest.mark.parametrize("text, mode, overflow, expected", [
    ("1e400", "rne", None, math.inf), ("1e400", "rz", None, 65504.0), ("-1e400", "rd", None, -math.inf),
    ("-1e400", "ru", None, -65504.0), ("1e400", "rne", "saturate", 65504.0),
    ("1e400", "rz", "saturate_propagate", 65504.0), ("1e400", "odd", "sat_none", math.inf),
    ("1e-400", "rne", None, 0.0), ("-1e-400", "rne", None, -0.0), ("1e-400", "ru", None, 2.0**-24),
    ("-1e-400", "rd", None, -(2.0**-24)), ("-1e-400", "ru", None, -0.0), ("1e-400", "odd", None, 2.0**-24),
    ("1e-100000", "rd", None, 0.0), ("1e100000", "rz", "inf", 65504.0),
])
def test_beyond_float64s_range(text, mode, overflow, expected):
    got = float(fpemu.quantize(text, "fp16", rounding=mode, overflow=overflow))
    ref = ref_decode(ref_encode(Fraction(text), get_format("fp16"), rounding=mode, overflow=overflow),
                     get_format("fp16")).to_float()
    assert got == expected == ref and math.copysign(1, got) == math.copysign(1, expected)


def test_beyond_float64s_range_directed_overflow_none_and_fp64():
    assert fpemu.quantize("1e400", "fp64", rounding="rz", overflow="inf", directed_overflow="none") == math.inf
    assert fpemu.quantize("1e400", "fp64", rounding="rz") == np.finfo(np.float64).max
    assert fpemu.quantize("-1e400", "fp64", overflow="saturate_propagate") == -np.finfo(np.float64).max
    assert fpemu.quantize("-1e-400", "fp64", rounding="rd") == -5e-324
    assert fpemu.quantize(2**1100 + 1, "fp64", rounding="rz") == np.finfo(np.float64).max  # a huge int


def test_huge_python_ints_round_once():
    x = 2**80 + 2**56 + 1  # just above a tie of fp32 (and of float64)
    assert fpemu.encode([x, Fraction(1, 3)], "fp32").tolist() == want([x, Fraction(1, 3)], get_format("fp32"))
    assert fpemu.encode(np.array([x], dtype=object), "fp64").tolist() == want([x], get_format("fp64"))


@given(fmt=rf.formats(), data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_random_formats_against_the_reference(fmt, data):
    mode = data.draw(st.sampled_from(MODES))
    kw = data.draw(st.sampled_from(rf.overflow_options(fmt)))
    kw = kw | ({"nan": "zero"} if not fmt.has_nan else {})
    top = max_magnitude_code(fmt)
    k = data.draw(st.integers(0, top))
    lo, hi = magnitude_value(k, fmt), magnitude_value(k + 1, fmt)
    t = data.draw(st.fractions(0, 1, max_denominator=2**90) | st.sampled_from([Fraction(1, 2), Fraction(1, 2) + TINY,
                                                                                  Fraction(1, 2) - TINY, TINY]))
    v = lo + (hi - lo) * t
    values = [v, -v]
    got = fpemu.encode(np.array(values, dtype=object), fmt, rounding=mode, **kw).tolist()
    assert got == want(values, fmt, rounding=mode, **rf.ref_options(kw)), (fmt, mode, kw, v)


@pytest.mark.parametrize("name", ["e4m3", "fp16", "fp64"])
@pytest.mark.parametrize("mode", ["stochastic_a", "stochastic_b", "stochastic_c"])
def test_p3109_stochastic_rounding_of_exact_values(name, mode):
    fmt = get_format(name)
    values = [v for v in probes(fmt, np.random.default_rng(3)) if abs(v) <= Fraction(fmt.max)]
    r = np.random.default_rng(5).integers(0, 1 << 7, size=len(values))
    got = fpemu.encode(np.array(values, dtype=object), fmt, rounding=mode, sr_bits=7, random_bits=r).tolist()
    short = {"stochastic_a": "sra", "stochastic_b": "srb", "stochastic_c": "src"}[mode]
    assert got == [ref_encode(v, fmt, rounding=short, sr_bits=7, r=int(ri)) for v, ri in zip(values, r)]


def test_stochastic_rounding_compares_64_random_bits_with_the_truncated_fraction():
    """Up iff u < floor(nu * 2**64): checked with Fractions from the 64 random bits of each position."""
    fmt = get_format("e4m3")
    nus = [Fraction(1, 3), Fraction(1, 2) + TINY, TINY, Fraction(2, 3) - TINY, Fraction(1, 2**70) * 3]
    values = [Fraction(1) + Fraction(1, 8) * nu for nu in nus] * 40  # 1 and 1.125 around it
    got = fpemu.encode(np.array(values, dtype=object), fmt, rounding="stochastic", rng=11)
    u = random_u64(sr_key(11), np.arange(len(values), dtype=np.uint64))
    for v, g, ui in zip(values, got.tolist(), u.tolist()):
        nu = (v - 1) * 8
        assert g == (0x39 if ui < math.floor(nu * 2**64) else 0x38)


def test_stochastic_rounding_of_exact_floats_matches_float_input():
    x = np.random.default_rng(2).standard_normal(300) * 10.0 ** np.random.default_rng(3).integers(-9, 9, 300)
    x[:5] = [5e-324, -1e-320, 1e-45, 0.0, 3.0]
    for name in ("e4m3", "bf16", "e2m1"):
        a = fpemu.encode(x, name, rounding="stochastic", rng=4)
        b = fpemu.encode(np.array([Fraction(v) for v in x], dtype=object), name, rounding="stochastic", rng=4)
        c = fpemu.encode(np.array(x.tolist(), dtype=object), name, rounding="stochastic", rng=4)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_via_fp32_rounds_the_exact_value_to_float32_first():
    assert fpemu.quantize(["1.00048828125000000001"], "fp16", via="fp32").tolist() == [1.0]
    assert fpemu.quantize(["1.00048828125000000001"], "fp16").tolist() == [1.0009765625]


def test_mixed_lists_scalars_and_no_change_to_the_input():
    x = np.array([Fraction(1, 3), Decimal("-0.1"), "2.5", 7, 0.5, np.float32(1.5), 2**70], dtype=object)
    before = x.copy()
    fp16 = get_format("fp16")
    exact = [Fraction(1, 3), Fraction(-1, 10), Fraction(5, 2), 7, Fraction(1, 2), Fraction(3, 2), 2**70]
    assert fpemu.encode(x, fp16).tolist() == want(exact, fp16)
    assert (x == before).all() and [type(a) for a in x] == [type(b) for b in before]
    assert fpemu.encode(x.reshape(7, 1), fp16).shape == (7, 1)
    assert int(fpemu.encode(Fraction(1, 3), "bf16")) == ref_encode(Fraction(1, 3), get_format("bf16"))
    assert fpemu.encode(np.array(["0.1", "0.2"]), "fp16").dtype == np.uint16


@pytest.mark.parametrize("bad, kind, says", [
    ("abc", ValueError, "cannot read 'abc' as a number"), ("1,5", ValueError, "'1,5'"),
    (["1", "1.5.3"], ValueError, "'1.5.3'"), ("1/0", ValueError, "division by zero"),
    ("1e999999", ValueError, "too large or too small"), ([1.0, None], TypeError, "None"),
    (np.array([True, 1.0], dtype=object), TypeError, "boolean"), (b"1.0", TypeError, "bytes"),
    (np.array([1j], dtype=object), TypeError, "complex"), ("", ValueError, "cannot read ''"),
])
def test_bad_exact_input_names_the_problem(bad, kind, says):
    for call in (fpemu.encode, fpemu.quantize):
        with pytest.raises(kind, match=says.replace("(", r"\(")):
            call(bad, "fp16")


def test_no_runtime_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fpemu.quantize(["1e400", "-1e-400", "nan", "inf", "1e-40", "65520"], "e4m3", overflow="saturate")
        fpemu.encode(["1e400", "nan"], "e2m1", nan="zero")


@pytest.mark.parametrize("name", sorted(fpemu.FORMATS))
def test_a_float_as_exact_input_gets_the_float_inputs_code(name):
    """Every float64 is exact input too (in an object array): the same codes as the float path."""
    fmt = get_format(name)
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(150) * 10.0 ** rng.integers(-45, 45, 150),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e308, 65520.0, 464.0, -7.0]])
    kw = {} if fmt.has_nan else {"nan": "zero"}
    for mode in MODES:
        for overflow in (None, "saturate", "sat_none"):
            want_codes = fpemu.encode(x, fmt, rounding=mode, overflow=overflow, **kw)
            got = fpemu.encode(np.array(x.tolist(), dtype=object), fmt, rounding=mode, overflow=overflow, **kw)
            np.testing.assert_array_equal(got, want_codes, err_msg=f"{name} {mode} {overflow}")
