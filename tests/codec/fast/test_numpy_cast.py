"""The cast_directed path (fp16 from float32/float64 and fp32 from float64 under toward-zero,
up, down and odd, any overflow rule and NaN policy) gives the generic kernel's codes bit for
bit: every fp16 value widened to float32 with the low bits that decide its rounding (0, 1,
just below, at and just above the tie, all ones: subnormals, the largest value, Inf and NaN
payloads among them), every float32 pattern's neighbourhood in float64 likewise for fp32,
values just off them, and hypothesis over float32 and float64 bit patterns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpemu.codec.dispatch import encode_flat, encode_path
from fpemu.codec.fast.numpy_cast import CAST_DIRECTED
from fpemu.codec.options import Conversion
from fpemu.formats import get_format

from .test_in_range import want_codes

OPTIONS = ((None, None), ("saturate", "all_ones"), ("sat_none", "payload"), ("nan", "quiet_payload"),
           ("ml_dtypes_saturate", "positive"), (None, "all_ones", "outside_range"))  # (the last: gfloat_encode's)


def conversion(rounding: str, options: tuple, fmt) -> Conversion:
    """The resolved conversion of one OPTIONS entry: (overflow, nan[, directed_overflow])."""
    overflow, nan, *directed = options
    return Conversion(rounding, overflow, nan, directed_overflow=directed[0] if directed else None).resolved(fmt)


def near_ties(values: np.ndarray, dropped: int) -> np.ndarray:
    """The patterns of values (a float array whose low ``dropped`` bits are zero) with each
    low part that decides a rounding to them, both signs."""
    u = values.view(f"u{values.dtype.itemsize}")
    half = 1 << (dropped - 1)
    low = np.array([0, 1, half - 1, half, half + 1, 2 * half - 1], dtype=u.dtype)
    every = (u[:, None] | low).reshape(-1)
    sign = u.dtype.type(1 << (8 * u.dtype.itemsize - 1))
    return np.concatenate([every, every | sign]).view(values.dtype)


def midpoints(values: np.ndarray) -> np.ndarray:
    """The midpoints between consecutive values (ascending, at most 25 significant bits for
    float32, 54 for float64: exact), both signs: the ties, subnormal ones included."""
    mid = values[:-1] / 2 + values[1:] / 2
    return np.concatenate([mid, -mid])


def fp16_cases() -> tuple[np.ndarray, np.ndarray]:
    """float32 around every fp16 value, the midpoints between them and values beyond fp16's
    range; float64 likewise (and just off)."""
    fp16_as_32 = np.arange(0x7C01, dtype=np.uint16).view(np.float16).astype(np.float32)  # (+0 to Inf)
    rng = np.random.default_rng(3)
    anywhere = (rng.integers(0, 1 << 19, 20_000, dtype=np.uint32) << np.uint32(13)).view(np.float32)
    x32 = np.concatenate([near_ties(np.concatenate([fp16_as_32[:-1], anywhere]), 13), midpoints(fp16_as_32)])
    with np.errstate(invalid="ignore", over="ignore"):
        wide = x32.astype(np.float64)
        x64 = np.concatenate([wide, wide * (1 + 2.0**-40), wide * (1 - 2.0**-40)])
    return x32, x64


def fp32_cases() -> np.ndarray:
    """float64 around float32 values of every exponent (subnormals, the largest), and past them."""
    rng = np.random.default_rng(4)
    patterns = rng.integers(0, 1 << 32, 40_000, dtype=np.uint64).astype(np.uint32)
    patterns = np.concatenate([patterns, np.arange(0, 3000, dtype=np.uint32), np.arange(0x7F7FF000, 0x7F800001, dtype=np.uint32)])
    with np.errstate(invalid="ignore"):
        f = patterns.view(np.float32).astype(np.float64)
    f = f[np.isfinite(f)]
    return np.concatenate([near_ties(f, 29), midpoints(np.sort(np.abs(f[:43_000])))])


def check(x, fmt, opts):
    """The kernel against the generic one (fp16 under RZ too, which the dispatch sends to the
    fields, faster there), and the path the dispatch names."""
    fp16_rz = fmt.bits == 16 and opts.rounding == "toward_zero"
    assert encode_path(fmt, opts, x.dtype) == ("float_fields" if fp16_rz else "cast_directed"), (fmt.name, opts)
    got = encode_flat(x, fmt, opts, "cast_directed")
    want = want_codes(x, fmt, opts)  # (outside_range applied to the generic kernel's codes)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (fmt.name, opts, x.dtype, x[bad[:3]], got[bad[:3]], want[bad[:3]])


@pytest.mark.parametrize("rounding", CAST_DIRECTED)
def test_fp16_from_float32_and_float64_near_every_decision(rounding):
    fmt = get_format("fp16")
    x32, x64 = fp16_cases()
    for options in OPTIONS:
        opts = conversion(rounding, options, fmt)
        check(x32, fmt, opts)
        check(x64, fmt, opts)


@pytest.mark.parametrize("rounding", CAST_DIRECTED)
def test_fp32_from_float64_near_every_decision(rounding):
    fmt = get_format("fp32")
    x = fp32_cases()
    with np.errstate(over="ignore"):
        x = np.concatenate([x, x * (1 + 2.0**-45), [1e300, -1e300, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 0.0, -0.0]])
    for options in OPTIONS:
        check(x, fmt, conversion(rounding, options, fmt))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300), st.lists(st.integers(0, 2**32 - 1), max_size=300),
       st.sampled_from(CAST_DIRECTED), st.sampled_from(OPTIONS))
def test_hypothesis_float64_and_float32_patterns(p64, p32, rounding, options):
    x64 = np.array(p64, dtype=np.uint64).view(np.float64)
    x32 = np.array(p32, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for name, x in (("fp32", x64), ("fp16", x64), ("fp16", x32)):
        if x.size:
            fmt = get_format(name)
            check(x, fmt, conversion(rounding, options, fmt))
