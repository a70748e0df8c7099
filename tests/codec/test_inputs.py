"""Bad input gives a clear error; good input is never modified.

Unknown formats, complex / bytes / non-numeric object input and strings that are no number,
out-of-range codes, invalid option values,
impossible overflow choices and NaN into a format without NaN all raise ValueError or
TypeError with a message that names the problem. Inputs are checked bit for bit before and
after every call, including read-only arrays (which would fail on any in-place write).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import fpemu
from fpemu.formats import Format, format_names, get_format
from fpemu import encode, quantize

ERRORS = (ValueError, TypeError)
MODES = ["nearest_even", "nearest_away", "toward_zero", "up", "down", "odd", "stochastic"]


# ---- unknown formats ----------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda f: fpemu.encode([1.0], f),
    lambda f: fpemu.decode([1], f),
    lambda f: fpemu.quantize([1.0], f),
    lambda f: fpemu.get_format(f),
], ids=["encode", "decode", "quantize", "get_format"])
def test_unknown_format_names_the_closest_and_where_the_rest_are(call):
    with pytest.raises(ValueError) as info:
        call("e4m4")
    message = str(info.value)
    assert message.startswith("unknown format 'e4m4'; did you mean e4m3")
    assert "`fpemu formats` lists the rest" in message and len(message) < 200


def test_format_names_are_case_insensitive_and_aliased():
    assert get_format("BFloat16") is get_format("bf16")
    assert get_format("Float8_E4M3FN") is get_format("e4m3")
    assert get_format(" fp4 ") is get_format("e2m1")
    np.testing.assert_array_equal(fpemu.encode([1.5], "FLOAT8_E5M2"), fpemu.encode([1.5], "e5m2"))
    assert set(format_names()) >= {"fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e4m3fnuz",
                                   "e5m2fnuz", "e3m2", "e2m3", "e2m1", "e8m0", "ue4m3"}


def test_format_of_wrong_type():
    with pytest.raises(TypeError):
        fpemu.encode([1.0], 8)


# ---- bad input values --------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    np.array([1.0 + 2.0j]),
    np.array([1.0 + 0.0j], dtype=np.complex64),
    1.0 + 0.5j,
    [1.0, 2.0j],
], ids=["complex128", "complex64-real-valued", "python-complex", "list-with-complex"])
def test_complex_input_is_refused(bad):
    for call in (fpemu.encode, fpemu.quantize):
        with pytest.raises(ERRORS, match=re.compile("complex", re.I)):
            call(bad, "e4m3")


@pytest.mark.parametrize("bad", [
    np.array([1.0, None], dtype=object),
    [1.0, None],
    np.array([1.0, {}], dtype=object),
], ids=["object-none", "list-none", "object-dict"])
def test_object_input_that_is_no_number_is_refused(bad):
    with pytest.raises(TypeError, match="cannot encode"):
        fpemu.encode(bad, "e4m3")


@pytest.mark.parametrize("good", [np.array([1.0, 2.0], dtype=object), [1.0, "2"], "1.0", np.array(["1.0", "2"])],
                         ids=["object-floats", "list-mixed-str", "str", "str-array"])
def test_object_and_string_input_is_exact_input(good):
    """Numbers in object arrays and decimal strings are exact input (tests/codec/test_exact_kernel.py)."""
    want = fpemu.encode(np.array([1.0, 2.0])[:np.size(good)], "bf16")
    np.testing.assert_array_equal(np.ravel(fpemu.encode(good, "bf16")), want)


@pytest.mark.parametrize("bad", [b"1.0", np.array([b"1"]), "1.0x", np.array(["1", "two"])],
                         ids=["bytes", "bytes-array", "bad-str", "bad-str-array"])
def test_bytes_and_bad_strings_are_refused(bad):
    for call in (fpemu.encode, fpemu.quantize):
        with pytest.raises(ERRORS, match="bytes|cannot read"):
            call(bad, "bf16")


def test_bool_and_datetime_input():
    """Datetimes are not real numbers: refused (bool may be accepted as 0/1, but never garbage)."""
    with pytest.raises(ERRORS):
        fpemu.encode(np.array(["2024-01-01"], dtype="datetime64[D]"), "e4m3")
    try:
        codes = fpemu.encode(np.array([True, False]), "e4m3")
    except ERRORS:
        return
    np.testing.assert_array_equal(codes, [0x38, 0x00])


# ---- decode: out-of-range and non-integer codes ---------------------------------------------


@pytest.mark.parametrize("name, bad_code", [
    ("e2m1", 16), ("e2m1", 255), ("e3m2", 64), ("e2m3", 0x40), ("e4m3", 256),
    ("e8m0", 256), ("ue4m3", 0x80), ("bf16", 1 << 16), ("fp16", 70000), ("tf32", 1 << 32),
    ("e4m3", -1), ("fp16", -5),
])
def test_decode_out_of_range_codes(name, bad_code):
    fmt = get_format(name)
    with pytest.raises(ValueError, match=re.compile("range|code", re.I)):
        fpemu.decode(np.array([0, bad_code], dtype=np.int64), fmt)
    with pytest.raises(ValueError):
        fpemu.decode([bad_code], fmt)


def test_decode_accepts_in_range_codes_of_any_integer_dtype():
    expected = np.array([1.0, -6.0, 0.5])
    for dt in (np.uint8, np.int8, np.uint16, np.int32, np.int64, np.uint64):
        np.testing.assert_array_equal(fpemu.decode(np.array([2, 15, 1], dtype=dt), "e2m1"), expected)
    np.testing.assert_array_equal(fpemu.decode([2, 15, 1], "e2m1"), expected)


@pytest.mark.parametrize("bad", [np.array([1.5]), np.array([1.0]), np.array([1 + 0j]), np.array(["1"]), [0.5]],
                         ids=["float", "integral-float", "complex", "str", "list-float"])
def test_decode_non_integer_codes_are_refused(bad):
    with pytest.raises(ERRORS):
        fpemu.decode(bad, "e4m3")


def test_decode_bad_dtype():
    with pytest.raises(ERRORS):
        fpemu.decode([0x38], "e4m3", dtype=np.int32)
    with pytest.raises(ERRORS):
        fpemu.decode([0x38], "e4m3", dtype=np.complex128)


# ---- invalid options ----------------------------------------------------------------------


@pytest.mark.parametrize("options, word", [
    ({"rounding": "banana"}, "rounding"),
    ({"rounding": "nearest"}, "rounding"),
    ({"rounding": 3}, "rounding"),  # (None is the default: nearest_even, as for a Conversion)
    ({"overflow": "clip"}, "overflow"),
    ({"overflow": True}, "overflow"),
    ({"nan": "banana"}, "nan"),
])
def test_invalid_option_values(options, word):
    for name in ("e4m3", "e2m1"):
        with pytest.raises(ERRORS, match=re.compile(word, re.I)):
            fpemu.encode([1.0], name, **options)
        with pytest.raises(ERRORS, match=re.compile(word, re.I)):
            fpemu.quantize([1.0], name, **options)


@pytest.mark.parametrize("name", ["e4m3", "e4m3fnuz", "e5m2fnuz", "e2m1", "e3m2", "e2m3", "e8m0", "ue4m3"])
def test_overflow_inf_without_inf_is_refused(name):
    with pytest.raises(ValueError, match=re.compile("inf", re.I)):
        fpemu.encode([1.0], name, overflow="inf")


@pytest.mark.parametrize("name", ["e2m1", "e3m2", "e2m3"])
def test_overflow_nan_without_nan_is_refused(name):
    with pytest.raises(ValueError, match=re.compile("nan", re.I)):
        fpemu.encode([1.0], name, overflow="nan")


def test_user_format_without_specials_refuses_inf_and_nan_overflow():
    fmt = Format("e3m3", exponent_bits=3, mantissa_bits=3, bias=3, inf="none", nan="none")
    with pytest.raises(ValueError):
        fpemu.encode([1.0], fmt, overflow="inf")
    with pytest.raises(ValueError):
        fpemu.encode([1.0], fmt, overflow="nan")


def test_stochastic_rng_must_be_a_seed_or_generator():
    with pytest.raises(ERRORS):
        fpemu.encode([1.1], "e4m3", rounding="stochastic", rng="seed")


# ---- NaN into formats without NaN --------------------------------------------------------


@pytest.mark.parametrize("name", ["e2m1", "e3m2", "e2m3"])
def test_nan_into_fp4_fp6_raises_with_count(name):
    x = np.array([1.0, np.nan, 2.0, -np.nan, np.nan, 0.5])
    for options in ({}, {"nan": "raise"}):
        with pytest.raises(ValueError) as info:
            fpemu.encode(x, name, **options)
        message = str(info.value)
        assert re.search(r"\b3\b", message), message  # how many NaNs
        assert "nan" in message.lower()
        with pytest.raises(ValueError):
            fpemu.quantize(x, name, **options)
    # Without NaN in the input there is nothing to complain about.
    fpemu.encode(np.array([1.0, np.inf, -np.inf]), name)


def test_nan_into_fp4_options():
    x = np.array([np.nan, -np.nan, 1.0])
    np.testing.assert_array_equal(fpemu.encode(x, "e2m1", nan="zero"), [0, 0, 2])
    np.testing.assert_array_equal(fpemu.encode(x, "e2m1", nan="ml_dtypes"), [8, 0, 2])


# ---- inputs are never modified ------------------------------------------------------------


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    base = np.concatenate([rng.standard_normal(1000) * 100, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1e30]])
    with np.errstate(over="ignore"):  # 1e30 becomes Inf in float16, on purpose
        half = base.astype(np.float16)
    return [base.astype(np.float64), base.astype(np.float32), half,
            (base[:100] * 10).astype(np.float32)[::3],  # non-contiguous
            np.asfortranarray(base[:1000].reshape(20, 50)),
            np.arange(-50, 50, dtype=np.int32)]


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "bf16", "fp16", "tf32", "fp32", "e2m1", "e8m0", "e4m3fnuz"])
def test_inputs_are_never_modified(name):
    fmt = get_format(name)
    for x in _inputs():
        nan = None if fmt.has_nan else "zero"
        before = x.copy()
        for rounding in MODES:
            seed = 0 if rounding == "stochastic" else None  # rng is refused for the other roundings
            for call in (fpemu.encode, fpemu.quantize):
                frozen = x.copy()
                frozen.setflags(write=False)  # any in-place write would raise
                out = call(frozen, fmt, rounding=rounding, nan=nan, rng=seed)
                assert not np.shares_memory(out, frozen)
                out = call(x, fmt, rounding=rounding, nan=nan, rng=seed)
                assert not np.shares_memory(out, x)
                assert before.tobytes() == x.tobytes(), f"{call.__name__} {rounding} modified {x.dtype}"
        codes = fpemu.encode(x, fmt, nan=nan)
        codes_before = codes.copy()
        codes.setflags(write=False)
        decoded = fpemu.decode(codes, fmt)
        assert not np.shares_memory(decoded, codes)
        assert codes.tobytes() == codes_before.tobytes()
        decoded32 = fpemu.decode(codes, fmt, dtype=np.float32)
        assert decoded32.dtype == np.float32


def test_quantize_of_representable_float32_does_not_return_the_input_object():
    x = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    q = fpemu.quantize(x, "fp32")
    np.testing.assert_array_equal(q, x)
    q[0] = 7.0
    assert x[0] == 1.0


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
@pytest.mark.parametrize("dtype", [">f8", ">f4", ">f2", "<f8"])
def test_big_endian_input(dtype):
    x = np.array([0.3, -1000.0, 2.0**-10], dtype=dtype)
    native = x.astype(x.dtype.newbyteorder("="))
    assert encode(x, "e4m3").tolist() == encode(native, "e4m3").tolist() == [0x2A, 0xFF, 0x00]
    q = quantize(x, "e4m3", overflow="saturate")
    assert q.dtype.isnative and q.tolist() == [0.3125, -448.0, 0.0]
    assert encode(np.array([3, -2], ">i4"), "e4m3").tolist() == [0x44, 0xC0]


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_inputs_are_never_modified_in_any_rounding():
    x = np.array([0.3, np.nan, -5e-324, 1e300], np.float64)
    y = np.array([0.3, np.nan, -1e-45, 3e38], np.float32)
    before, before32 = x.copy(), y.copy()
    for rounding in ("rne", "rz", "up", "odd", "sr"):
        seed = 1 if rounding == "sr" else None  # rng is refused for the other roundings
        encode(x, "e4m3", rounding=rounding, rng=seed)
        quantize(y, "fp16", rounding=rounding, rng=seed)
        quantize(x, "bf16", rounding=rounding, rng=seed)
    assert x.tobytes() == before.tobytes() and y.tobytes() == before32.tobytes()
@pytest.mark.parametrize("call", [
    lambda x: fpemu.encode(x, "e4m3"), lambda x: fpemu.quantize(x, "e4m3"), lambda x: fpemu.decode(x, "e4m3"),
    lambda x: fpemu.mx.quantize(x, "mxfp4"), lambda x: fpemu.scaled_cast(x, "e4m3"),
])  # fmt: skip
def test_a_ragged_list_is_refused_in_fpemus_words(call):
    """Not numpy's "inhomogeneous shape after 1 dimensions" (issue 42, item 9)."""
    with pytest.raises(ValueError, match=r"^(x|codes) is a ragged list \(its rows differ in length\): pass a "
                                         r"rectangular array of numbers$"):
        call([[1, 2], [3]])
