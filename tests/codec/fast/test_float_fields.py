"""The float_fields path gives the generic kernel's codes bit for bit: every float16 pattern
(all 2**16), float32 patterns of every exponent and float64 values, every built-in format it
serves, every rounding mode (stochastic ones with the same random bits: the same key and
positions, scalar or per element, or P3109's given bits), overflow rules and NaN policies."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu.codec.dispatch import encode_flat, encode_path
from fpemu.codec.fast.float_fields import fields_serve
from fpemu.codec.generic_kernel import encode_generic
from fpemu.codec.options import Conversion
from fpemu.codec.rounding import sr_key
from fpemu.formats import FORMATS, Format, get_format
from tests.codec.test_dispatch import float32_patterns, float64_values

DETERMINISTIC = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd")
STOCHASTIC = ("stochastic", "stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd")
ALL_FLOAT16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def conversions(fmt):
    """Every rounding mode under two overflow rules and two NaN policies the format takes."""
    nan = ("sign", "all_ones") if fmt.has_nan else ("zero", "max")
    for rounding in DETERMINISTIC + STOCHASTIC:
        for overflow in (None, "saturate"):
            for policy in nan:
                conv = Conversion(rounding=rounding, overflow=overflow, nan=policy,
                                  sr_bits=5 if rounding in STOCHASTIC[1:] else None)
                try:
                    yield conv.resolved(fmt)
                except ValueError:
                    continue


def check(x, fmt, opts, start=0, bits=None):
    key = sr_key(11)
    want = encode_generic(x, fmt, opts, key, start, bits).astype(fmt.code_dtype)
    if fmt.code_shift:
        want = want << fmt.code_dtype.type(fmt.code_shift)
    got = encode_flat(x, fmt, opts, "float_fields", key, start, bits)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (fmt.name, opts, x.dtype, x[bad[:3]], got[bad[:3]], want[bad[:3]])


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_float16_pattern_and_float32_and_float64_input(name):
    fmt = get_format(name)
    x32 = float32_patterns(20_000, 4)
    x64 = float64_values(20_000, 5)
    served = 0
    for opts in conversions(fmt):
        for x in (ALL_FLOAT16, x32, x64):
            if not fields_serve(fmt, opts, x.dtype):
                continue
            served += 1
            try:
                check(x, fmt, opts)
            except ValueError:  # (a NaN the conversion refuses: both refuse it, with one message)
                with pytest.raises(ValueError) as generic_error:
                    encode_generic(x, fmt, opts)
                with pytest.raises(ValueError, match=generic_error.value.args[0].replace("(", r"\(").replace(")", r"\)")):
                    encode_flat(x, fmt, opts, "float_fields")
    assert served or fmt.twos_complement


@pytest.mark.parametrize("name", ["bf16", "fp16", "e4m3", "e2m1", "ue4m3"])
@pytest.mark.parametrize("rounding", STOCHASTIC)
def test_stochastic_bits_of_each_position_and_given_bits(name, rounding):
    fmt = get_format(name)
    opts = Conversion(rounding=rounding, sr_bits=None if rounding == "stochastic" else 7).resolved(fmt)
    x = np.nan_to_num(float32_patterns(30_000, 6), nan=1.0)
    positions = np.random.default_rng(1).integers(0, 2**40, x.size, dtype=np.uint64)
    check(x, fmt, opts, start=123_456_789)
    check(x, fmt, opts, start=positions)
    if opts.sr_bits:
        check(x, fmt, opts, bits=np.random.default_rng(2).integers(0, 1 << 7, x.size, dtype=np.uint64))


def test_the_dispatch_sends_every_other_option_here():
    e6m9 = Format("e6m9", 6, 9, 31)  # (a format no cast or prefix path serves)
    assert encode_path(e6m9, Conversion(rounding="toward_zero"), np.float32) == "float_fields"
    assert encode_path("fp16", Conversion(rounding="stochastic", overflow="saturate"), np.float64) == "float_fields"
    assert encode_path("e2m1", Conversion(rounding="stochastic"), np.float32) == "float_fields"
    assert encode_path("e4m3", Conversion(rounding="stochastic_a", sr_bits=3), np.float16) == "float_fields"
    assert not fields_serve(get_format("int8"), Conversion().resolved(get_format("int8")), np.float32)
    assert fields_serve(get_format("fp32"), Conversion().resolved(get_format("fp32")), np.float32)  # (k = 0)
    assert fields_serve(get_format("e8m0"), Conversion().resolved(get_format("e8m0")), np.float32)  # (as float64)
    e8m0 = get_format("e8m0")
    assert not fields_serve(e8m0, Conversion(rounding="ml_dtypes_e8m0").resolved(e8m0), np.float32)
