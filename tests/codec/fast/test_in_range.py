"""The in_range path (and numpy_cast's exact casts under directed roundings) gives the generic
kernel's codes bit for bit: every float16 pattern (all 2**16, as float16, float32 and float64
input), every float32 pattern in the neighbourhood of each format's largest value and of
float32's own (where an overflow rule decides), float32 and float64 bit patterns drawn by
hypothesis (NaN payloads, Inf, -0, subnormals), under every deterministic rounding, every
overflow rule and NaN policy the format takes, and random user-defined formats."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_formats import formats

from fpemu.codec.dispatch import encode_flat, encode_path
from fpemu.codec.exact_kernel import outside_range
from fpemu.codec.fast.in_range import in_range_base, in_range_serves, outside_positions
from fpemu.codec.generic_kernel import encode_generic
from fpemu.codec.options import NAN_POLICIES_WITH_NAN, OVERFLOW_MODES, Conversion
from fpemu.formats import Format, get_format

MODES = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd")
FORMATS = ("bf16", "tf32", "fp16", "fp32", "e5m2", "float8_e4m3", "float8_e3m4")
ALL_FLOAT16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def conversions(fmt: Format, policies=NAN_POLICIES_WITH_NAN):
    """Every deterministic rounding under every overflow rule and NaN policy fmt takes (and
    gfloat's outside_range), resolved."""
    for rounding in MODES:
        for overflow in OVERFLOW_MODES:
            for nan in policies:
                for directed in (None, "outside_range"):
                    try:
                        yield Conversion(rounding, overflow, nan, directed_overflow=directed).resolved(fmt)
                    except ValueError:
                        continue


def want_codes(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """The generic kernel's codes; under gfloat's outside_range, those of +-2**(emax + 1) (no
    sparing) for every finite value outside [lowest, max], compared in float64 here."""
    codes = encode_generic(x, fmt, opts).astype(fmt.code_dtype)
    if opts.directed_overflow == "outside_range":
        with np.errstate(invalid="ignore"):
            wide = x.astype(np.float64)
        beyond = encode_generic(np.float64([2.0 ** (fmt.emax + 1), -2.0 ** (fmt.emax + 1)]), fmt,
                                opts.replace(directed_overflow="none")).astype(fmt.code_dtype)
        codes = np.where(wide > fmt.max, beyond[0], np.where(wide < fmt.lowest, beyond[1], codes))
    return codes << fmt.code_dtype.type(fmt.code_shift) if fmt.code_shift else codes


def test_outside_range_sets_the_codes_of_values_outside_the_format():
    """gfloat_encode's rule, by the reductions' shortcut where nothing is outside."""
    for name in ("e8m0", "ue4m3", "bf16", "fp32", "e4m3"):
        fmt = get_format(name)
        opts = Conversion("toward_zero", None, "all_ones" if fmt.has_nan else "zero",
                          directed_overflow="outside_range").resolved(fmt)
        for x in (np.float32([1.0, 2.0]), np.float32([1.0, fmt.max]), np.float64([fmt.max, -1e300, np.nan]),
                  np.float64([1.0, 2.0 * fmt.max]), np.float32([np.nan, 1.0, -np.inf]), near_the_top(fmt)):
            if not fmt.signed:
                x = np.abs(x)
            got = outside_range(encode_generic(x, fmt, opts).astype(fmt.code_dtype), x, fmt, opts)
            want = want_codes(x, fmt, opts)
            assert (got == want).all(), (name, x[got != want][:3])


def check(x: np.ndarray, fmt: Format, opts: Conversion, paths=("in_range", "numpy_cast")) -> bool:
    """Whether x took one of paths (then its codes are held to the generic kernel's)."""
    path = encode_path(fmt, opts, x.dtype)
    if path not in paths:
        return False
    got = encode_flat(x, fmt, opts, path)
    want = want_codes(x, fmt, opts)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (fmt.name, opts, path, x.dtype, x[bad[:3]], got[bad[:3]], want[bad[:3]])
    return True


def near_the_top(fmt: Format) -> np.ndarray:
    """float32 patterns around fmt's largest value (its own midpoint to Inf among them) and
    around float32's largest, both signs, plus a few inside."""
    top = np.float32(fmt.max).view(np.uint32) if fmt.max < 3.5e38 else np.uint32(0x7F7FFFFF)
    around = np.arange(int(top) - 40_000, min(int(top) + 40_000, 0x7F800001), dtype=np.uint32)
    last = np.arange(0x7F7F0000, 0x7F800001, dtype=np.uint32)
    u = np.concatenate([around, last, np.uint32([0x3F800000, 0, 1, 0x7FC00001, 0x7F800001])])
    return np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)


@pytest.mark.parametrize("name", FORMATS)
def test_every_float16_pattern_and_the_neighbourhood_of_the_largest_value(name):
    """Three NaN policies (the sign, a fixed code, the payload) under every rounding and overflow
    rule; every policy in the slow run."""
    every_float16_pattern_and_the_top(name, ("sign", "all_ones", "payload"))


@pytest.mark.slow
@pytest.mark.parametrize("name", FORMATS)
def test_every_float16_pattern_and_the_neighbourhood_of_the_largest_value_every_policy(name):
    every_float16_pattern_and_the_top(name, NAN_POLICIES_WITH_NAN)


def every_float16_pattern_and_the_top(name, policies):
    fmt = get_format(name)
    with np.errstate(invalid="ignore"):  # (signalling NaN patterns widen quietly)
        inputs = (ALL_FLOAT16, ALL_FLOAT16.astype(np.float32), ALL_FLOAT16.astype(np.float64), near_the_top(fmt),
                  near_the_top(fmt).astype(np.float64))
    taken = 0
    for opts in conversions(fmt, policies):
        for x in inputs:
            taken += check(x, fmt, opts)
    assert taken >= 20, (name, taken)  # the paths serve these formats


def test_in_range_serves_the_options_the_issue_names():
    f32, f64 = np.float32, np.float64
    for name in ("bf16", "fp16", "tf32", "fp32"):
        for conv in ({"overflow": "saturate"}, {"nan": "all_ones"}, {"overflow": "sat_none"},
                     {"nan": "payload"}, {"overflow": "ml_dtypes_saturate", "nan": "positive"}):
            for dtype in (f32, f64):  # (numpy_cast re-encodes NaN itself, under any policy)
                want = "in_range" if "overflow" in conv or name in ("bf16", "tf32") else "numpy_cast"
                assert encode_path(name, conv, dtype) == want, (name, conv, dtype)
    assert encode_path("fp32", {"overflow": "saturate", "rounding": "up"}, f32) == "in_range"
    assert encode_path("fp32", {"rounding": "odd"}, f32) == "numpy_cast"
    assert encode_path("e5m2", {"nan": "quiet_payload"}, f32) == "in_range"
    assert encode_path("bf16", {"rounding": "stochastic", "overflow": "saturate"}, f32) == "float_fields"
    fmt = get_format("bf16")
    assert in_range_base(fmt, Conversion(overflow="saturate").resolved(fmt)) == Conversion().resolved(fmt)
    assert not in_range_serves(get_format("e2m1"), Conversion(overflow="saturate").resolved(get_format("e2m1")))


def test_outside_positions_finds_every_value_at_or_past_the_largest_and_nan():
    fmt = get_format("bf16")
    top = fmt.max
    x = np.array([1.0, top, -top, top * (1 - 2.0**-20), np.inf, -np.nan, 0.0, 3e38, -3.5e38])
    assert outside_positions(x, fmt).tolist() == [1, 2, 4, 5, 8]
    with np.errstate(over="ignore"):  # (-3.5e38: -Inf in float32)
        assert outside_positions(x.astype(np.float32), fmt).tolist() == [1, 2, 4, 5, 8]
    assert outside_positions(np.float16([1.0, np.inf, 65504.0]), fmt).tolist() == [1]  # (bound: Inf in float16)
    assert outside_positions(np.float64([]), fmt).size == 0


PATTERN_32 = st.integers(0, 2**32 - 1)
PATTERN_64 = st.integers(0, 2**64 - 1)
SPECIAL_32 = st.sampled_from([0, 0x80000000, 1, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF,
                              0x7F7FFFFF, 0x477FF000, 0x477FEFFF, 0x7F7F8000, 0x00800000, 0x007FFFFF])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(PATTERN_32, SPECIAL_32), min_size=1, max_size=200),
       st.lists(PATTERN_64, min_size=1, max_size=200), st.sampled_from(FORMATS), st.sampled_from(MODES),
       st.sampled_from(OVERFLOW_MODES), st.sampled_from(NAN_POLICIES_WITH_NAN))
def test_hypothesis_float32_and_float64_patterns(p32, p64, name, rounding, overflow, nan):
    fmt = get_format(name)
    try:
        opts = Conversion(rounding, overflow, nan).resolved(fmt)
    except ValueError:
        return
    x32 = np.array(p32, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x64 = np.array(p64, dtype=np.uint64).view(np.float64)
    with np.errstate(invalid="ignore"):
        wide = x32.astype(np.float64)
    for x in (x32, x64, wide):
        check(x, fmt, opts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formats(), st.sampled_from(MODES), st.sampled_from(OVERFLOW_MODES), st.sampled_from(NAN_POLICIES_WITH_NAN))
def test_random_user_formats(fmt, rounding, overflow, nan):
    try:
        opts = Conversion(rounding, overflow, nan).resolved(fmt)
    except ValueError:
        return
    with np.errstate(over="ignore", invalid="ignore"):  # (past float32's range: Inf, on purpose)
        x = ALL_FLOAT16.astype(np.float64) * 2.0 ** (fmt.emax - 14)  # every float16 pattern, at the format's top
        for values in (x.astype(np.float32), x * (1 + 2.0**-30)):
            check(values, fmt, opts)
