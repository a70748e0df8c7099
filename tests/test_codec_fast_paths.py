"""The codec's float32 fast paths agree with numpy/ml_dtypes casts and with the generic kernel.

quantize() of float32 input takes a float32 "magic number" addition for fp16-like formats and
the bit-pattern trick for bf16; encode() takes tables for narrow formats. These checks hold
them to the outside references, on random bit patterns plus the edges of each format.
"""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import codec

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
    assert codec._magic_path_ok(fpemu.get_format("fp16"), "nearest_even")
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
    opts = codec._options(fmt, "nearest_even", overflow, None)
    generic = fpemu.decode(codec._encode_float64(x, fmt, opts), fmt, dtype=F32)
    with np.errstate(invalid="ignore"):
        got = fpemu.quantize(x, fmt, overflow=overflow)
    assert same_bits(got, generic)
