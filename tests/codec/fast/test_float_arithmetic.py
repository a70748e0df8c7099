"""The codec's float32 fast paths agree with numpy/ml_dtypes casts and with the generic kernel.

quantize() of float32 input takes a float32 "magic number" addition for fp16-like formats and
the bit-pattern trick for bf16; encode() takes tables for narrow formats. These checks hold
them to the outside references, on random bit patterns plus the edges of each format.
"""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.codec import encode_path, options
from fpemu.codec import generic_kernel as kernel
from fpemu import Format, encode, quantize

F32 = np.float32


def patterns(n: int, seed: int) -> np.ndarray:
    """Random float32 values: half arbitrary bit patterns, half near the fp16 range, + edges."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    near = (u[: n // 2] & np.uint32(0x87FFFFFF)) | np.uint32(0x30000000)
    x = np.concatenate([u[n // 2 :], near]).view(F32)
    edges = np.array([0.0, np.inf, np.nan, 65504, 65519.99, 65520, 2**-25, 3 * 2**-26, 2**-24,
                      2**-14, 2**-149, 3.4e38, 1 + 2**-11, 1 + 3 * 2**-11], F32)
    return np.concatenate([x, edges, -edges])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


def test_fp16_quantize_matches_numpy_cast():
    x = patterns(400_000, 2)
    assert encode_path("fp16", None, x.dtype, x.size, values=True) == "magic_number"
    with np.errstate(over="ignore", invalid="ignore"):
        assert same_bits(fpemu.quantize(x, "fp16"), x.astype(np.float16).astype(F32))


def test_bf16_quantize_matches_ml_dtypes_cast():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = patterns(400_000, 3)
    with np.errstate(invalid="ignore"):
        assert same_bits(fpemu.quantize(x, "bf16"), x.astype(ml_dtypes.bfloat16).astype(F32))


@pytest.mark.parametrize(
    "fmt",
    [
        "fp16",
        fpemu.Format("e5m8", 5, 8, 15),
        fpemu.Format("e6m9fnuz", 6, 9, 31, inf="none", nan="neg_zero"),
        fpemu.Format("e4m12fn", 4, 12, 7, inf="none", nan="top"),
    ],
)
@pytest.mark.parametrize("overflow", [None, "saturate", "saturate_propagate"])
def test_magic_quantize_matches_generic_kernel(fmt, overflow):
    fmt = fpemu.get_format(fmt)
    x = patterns(200_000, 4)
    opts = options.resolved_options(fmt, "nearest_even", overflow, None)
    generic = fpemu.decode(kernel.encode_generic(x, fmt, opts), fmt, dtype=F32)
    with np.errstate(invalid="ignore"):
        got = fpemu.quantize(x, fmt, overflow=overflow)
    assert same_bits(got, generic)


def _quantize_generic(x: np.ndarray, fmt, opts) -> np.ndarray:
    """decode(encode(x)) through the generic integer kernel only (no fast path)."""
    codes = kernel.encode_generic(x, fmt, opts).astype(np.int64)
    return kernel.decode_generic(codes, fmt).astype(x.dtype)


def _mixed_values(n: int, seed: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**64, size=n, dtype=np.uint64).view(np.float64)
    edges = np.array([0.0, np.inf, np.nan, 65504, 65520, 65519.999, 448, 464, 480, 2**-25,
                      1.5 * 2**-24, 3.4e38, 3.5e38, 1e300, 1 + 2**-11, 2**-149], dtype=np.float64)
    x = np.concatenate([bits, rng.standard_normal(n) * 1e-5, rng.standard_normal(n) * 1e5, edges, -edges])
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "fmt", ["fp16", "bf16", "fp32", "tf32", "e4m3", "e5m2", "e4m3fnuz", "e2m1", "binary8p3",
            "binary8p1", fpemu.Format("fp32_13", 8, 13, 127)]
)
def test_quantize_fast_paths_equal_generic_kernel(fmt, dtype):
    """Every quantize path (scaled float64, magic float32, tables, bit tricks) gives the very
    bits of the generic kernel, in every deterministic mode and overflow/NaN option."""
    fmt = fpemu.get_format(fmt)
    x = _mixed_values(20_000, 7, dtype)
    for rounding in ("rne", "rz", "ru", "rd", "rna", "odd"):
        for overflow in (None, "saturate", "saturate_propagate", "nan", "inf"):
            for nan in ([None] if fmt.has_nan else ["zero", "ml_dtypes"]):
                try:
                    opts = options.resolved_options(fmt, rounding, overflow, nan)
                except ValueError:
                    continue  # the option does not exist for this format
                got = fpemu.quantize(x, fmt, rounding=rounding, overflow=overflow, nan=nan)
                want = _quantize_generic(x, fmt, opts)
                assert got.dtype == want.dtype
                uint = np.uint64 if got.dtype == np.float64 else np.uint32
                same = (got.view(uint) == want.view(uint)) | (np.isnan(got) & np.isnan(want))
                assert same.all(), (fmt.name, rounding, overflow, nan, x[~same][:3])


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_directed_rounding_when_the_smallest_subnormal_is_two():
    # emin = 1 - (-3) = 4, three mantissa bits: the quantum of the subnormals is 2^(4-3) = 2.
    fmt = Format("b", 1, 3, -3, inf="none", nan="none")
    assert fmt.min_subnormal == 2.0
    for x in (np.array([5e-324]), np.array([5e-324], np.float64)):
        assert quantize(x, fmt, rounding="up").tolist() == [2.0]
        assert quantize(-x, fmt, rounding="down").tolist() == [-2.0]
        assert quantize(x, fmt, rounding="down").tolist() == [0.0]
    assert encode([5e-324], fmt, rounding="up").tolist() == [1]
