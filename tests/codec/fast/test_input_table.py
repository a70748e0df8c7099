"""fpemu.codec.small_inputs: float16 and (u)int8/16 input encoded by one gather from the table
of all its patterns' codes.

* Every pattern of each such dtype, shuffled, into every built-in format under every
  deterministic rounding and the overflow rules: the gathered codes equal those of the same
  values in slices too small for the table (the paths it replaces), and equal the exact
  ``Fraction`` reference (tests/reference.py) on random user-defined formats;
* ``nan="raise"`` still raises for a float16 NaN, naming how many; stochastic rounding never
  takes the table.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ref_encode
from random_formats import formats

from fpemu import encode, get_format
from fpemu.codec.options import Conversion
from fpemu.codec import encode_path
from fpemu.codec.dispatch import MIN_TABLE_ELEMENTS as MIN_ELEMENTS

DTYPES = (np.float16, np.int8, np.uint8, np.int16, np.uint16)
FORMATS = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "bf16", "fp16", "tf32", "fp32", "e2m1", "e3m2", "e2m3",
           "e8m0", "ue4m3", "int8")
ROUNDINGS = ("rne", "rna", "rz", "ru", "rd", "odd")


def _all_patterns(dtype, seed: int = 0) -> np.ndarray:
    """Every value of dtype (every bit pattern; 8-bit ones 8 times over, enough for the
    table), in a random order."""
    bits = 8 * np.dtype(dtype).itemsize
    patterns = np.arange(1 << bits, dtype=np.uint64).astype(f"u{bits // 8}")
    patterns = np.tile(patterns, 8) if bits == 8 else patterns
    return np.random.default_rng(seed).permutation(patterns).view(dtype)


def _in_slices(x: np.ndarray, fmt, **options) -> np.ndarray:
    """encode of x in slices each too small for the table: the paths the table replaces."""
    size = max(MIN_ELEMENTS // 4, 1) if x.dtype.itemsize == 2 else 256
    assert encode_path(fmt, None, x.dtype, size) != "input_table"
    return np.concatenate([encode(x[i:i + size], fmt, **options) for i in range(0, x.size, size)])


def _nan_option(fmt) -> dict:
    return {"nan": "zero"} if fmt.nan == "none" else {}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", FORMATS)
def test_every_pattern_gives_the_codes_of_the_paths_it_replaces(dtype, name):
    fmt, x = get_format(name), _all_patterns(dtype)
    for rounding in ROUNDINGS:
        for overflow in (None, "saturate"):
            options = {"rounding": rounding, "overflow": overflow, **_nan_option(fmt)}
            assert encode_path(fmt, options, x.dtype, x.size) == "input_table"
            got, want = encode(x, fmt, **options), _in_slices(x, fmt, **options)
            bad = np.flatnonzero(got != want)
            assert not bad.size, (f"{name} from {x.dtype} {options}: {bad.size} codes differ, "
                                  f"e.g. {x[bad[:3]]} -> {got[bad[:3]]}, want {want[bad[:3]]}")


@pytest.mark.parametrize("dtype", (np.float16, np.int16))
def test_options_beyond_rounding_reach_the_table(dtype):
    """directed_overflow (gfloat's outside_range included), every NaN rule of e5m2 and the
    payload rules: the same codes as without the table."""
    x = _all_patterns(dtype, seed=1)
    for options in ({"overflow": "inf", "directed_overflow": "outside_range", "rounding": "rz"},
                    {"overflow": "nan", "directed_overflow": "p3109", "rounding": "odd"},
                    {"nan": "payload"}, {"nan": "quiet_payload"}, {"nan": "ones_with_sign"}):
        np.testing.assert_array_equal(encode(x, "e5m2", **options), _in_slices(x, "e5m2", **options),
                                      err_msg=str(options))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(formats(), st.sampled_from(DTYPES), st.sampled_from(ROUNDINGS), st.sampled_from([None, "saturate"]),
       st.integers(0, 2**32 - 1))
def test_random_formats_match_the_exact_reference(fmt, dtype, rounding, overflow, seed):
    """A random user format: the gathered codes of a large input equal the exact rounding of
    each of its (distinct) values."""
    options = {"rounding": rounding, "overflow": overflow, **_nan_option(fmt)}
    distinct = np.unique(_all_patterns(dtype, seed)[:48])
    x = np.random.default_rng(seed).permutation(np.tile(distinct, MIN_ELEMENTS // distinct.size + 1))
    got = encode(x, fmt, **options)
    assert encode_path(fmt, options, x.dtype, x.size) == "input_table"
    for value in distinct:
        want = ref_encode(float(value) if dtype == np.float16 else int(value), fmt, **options)
        codes = set(got[(x == value) | (np.isnan(x) & math.isnan(value)) if dtype == np.float16
                    else x == value].tolist())
        assert codes == {want}, f"{fmt} {options}: {value!r} -> {[hex(c) for c in codes]}, want {hex(want)}"


@pytest.mark.parametrize("name", ["e2m1", "int8"])  # sub-byte (a sentinel code), a byte (a NaN scan)
def test_nan_raise_still_raises_for_float16(name):
    x = np.zeros(MIN_ELEMENTS, np.float16)
    x[[5, 9]] = np.nan
    x[7] = -np.nan
    with pytest.raises(ValueError, match="3 NaN"):
        encode(x, name)
    x[[5, 7, 9]] = np.inf
    assert encode(x, name, overflow="saturate").max() == get_format(name).max_code  # no NaN: no error


def test_stochastic_rounding_does_not_take_the_table():
    assert encode_path("e4m3", Conversion("stochastic"), np.float16, 1 << 20) == "float_fields"
    x = np.full(MIN_ELEMENTS, 1.3, np.float16)
    codes = encode(x, "e4m3", rounding="stochastic", rng=3)
    assert set(codes.tolist()) == {0x3A, 0x3B}  # both neighbours of 1.3 drawn
    np.testing.assert_array_equal(codes, encode(x.astype(np.float32), "e4m3", rounding="stochastic", rng=3))


def test_the_table_keeps_shape_order_and_workers():
    x = np.tile(_all_patterns(np.float16, seed=2), 3).reshape(3, -1)[:, ::-1]  # not contiguous
    want = _in_slices(np.ascontiguousarray(x).ravel(), "e4m3").reshape(x.shape)
    for workers in (1, 2):
        np.testing.assert_array_equal(encode(x, "e4m3", workers=workers), want)
