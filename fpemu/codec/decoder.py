"""decode: codes to float64 (exact for every format) or float32 (where the format fits)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..formats import Format, get_format
from ..parallel import run_pieces
from .bit_views import foreign_codes, is_torch
from .dask_arrays import blockwise, is_dask
from .chunks import LIGHT_CHUNK, chunk_size, chunks, scratch
from .fast.input_table import lookup
from .generic_kernel import decode_generic, is_fp32_prefix
from .inputs import as_codes
from .returns import check_returns, deliver_values

_FP64 = Format("fp64", 11, 52, 1023)


@lru_cache(maxsize=64)
def _decode_table(fmt: Format, dtype: np.dtype) -> np.ndarray:
    table = decode_generic(np.arange(1 << fmt.bits, dtype=np.uint64), fmt).astype(dtype)
    table.setflags(write=False)
    return table


def decode(codes: Any, fmt: str | Format, *, dtype: Any = np.float64, workers: int | None = None,
           returns: str = "numpy", nan_bits: int | None = None) -> np.ndarray:
    """Values of integer codes of ``fmt`` as float64 (exact for every format) or float32, on
    ``workers`` threads for a large array, in the array type ``returns`` asks for (see
    :func:`fpemu.encode`).

    >>> decode([0x01, 0x07, 0x7E, 0x80, 0x7F], "e4m3").tolist()
    [0.001953125, 0.013671875, 448.0, -0.0, nan]

    ``nan_bits``: the bit pattern of every NaN in the output (a NaN of ``dtype``), where a
    library widens its own NaN code; None (default): NumPy's quiet NaN. CUDA 13's
    ``float(__nv_fp8_e8m0)`` widens bf16's 0x7FFF:

    >>> hex(int(decode([0xFF], "e8m0", dtype=np.float32, nan_bits=0x7FFF0000).view(np.uint32)[0]))
    '0x7fff0000'
    """
    fmt = get_format(fmt)
    returns = check_returns(returns, codes)
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise TypeError(f"decode dtype must be float64 or float32, got {dtype}")
    nan_pattern = _nan_pattern(nan_bits, dtype)
    if dtype == np.float32 and not fits(fmt, dtype):
        raise ValueError(f"format {fmt.name} has values float32 cannot hold exactly "
                         f"(largest {fmt.max:g}, smallest {fmt.min_subnormal:g}, "
                         f"{fmt.mantissa_bits} mantissa bits): decode to float64")
    if is_dask(codes):  # block by block
        return blockwise(codes, lambda c, _, __: decode(c, fmt, dtype=dtype, workers=workers or 1), dtype)
    given = codes
    coded = foreign_codes(codes)  # a torch or ml_dtypes array of a low-precision format
    if coded is not None:
        codes, held = coded
        if held != fmt:
            raise ValueError(f"these are {held.name} codes (a {held.name} array), not {fmt.name}")
    elif is_torch(codes):
        codes = codes.detach().cpu().numpy()
    arr = as_codes(codes, fmt)
    flat = np.ascontiguousarray(arr).reshape(-1)
    out = np.empty(flat.size, dtype=dtype)

    def piece(part: slice) -> None:
        _decode_flat(flat[part], fmt, dtype, out=out[part])

    run_pieces(piece, flat.size, workers, light=fmt.bits <= 16)  # a table lookup: light
    if nan_pattern is not None:
        bits = out.view(nan_pattern.dtype)
        bits[np.isnan(out)] = nan_pattern
    return deliver_values(out.reshape(arr.shape), returns, given)


def _nan_pattern(nan_bits: Any, dtype: np.dtype) -> np.generic | None:
    """nan_bits as an unsigned integer of dtype's width, checked to be a NaN of dtype."""
    if nan_bits is None:
        return None
    uint = np.dtype(f"u{dtype.itemsize}")
    if isinstance(nan_bits, (bool, np.bool_)) or not isinstance(nan_bits, (int, np.integer)) \
            or not 0 <= int(nan_bits) < 1 << (8 * dtype.itemsize):
        raise ValueError(f"nan_bits must be a {8 * dtype.itemsize}-bit pattern (an int), got {nan_bits!r}")
    pattern = uint.type(int(nan_bits))
    if not np.isnan(np.array(pattern).view(dtype)):
        raise ValueError(f"nan_bits={int(nan_bits):#x} is not a NaN of {dtype}")
    return pattern


def _decode_flat(arr: np.ndarray, fmt: Format, dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """Values of a flat array of (checked) codes, through the fastest exact path (into out,
    if given)."""
    values = _values(arr, fmt, dtype, out)
    if out is not None and not np.shares_memory(values, out):
        out[...] = values
    return values if out is None else out


def _values(arr: np.ndarray, fmt: Format, dtype: np.dtype, out: np.ndarray | None) -> np.ndarray:
    if fmt.bits == 64 and fmt == _FP64:  # binary64: the code is the float64 pattern
        return _widen(arr.astype(np.uint64).view(np.float64), dtype)
    if is_fp32_prefix(fmt) and fmt.bits > 16:
        # The code is the top of an fp32 pattern: drop the ignored low bits (TF32's 13) and
        # reinterpret.
        u = (arr.astype(np.uint32) >> np.uint32(fmt.code_shift)) << np.uint32(32 - fmt.bits)
        return _widen(u.view(np.float32), dtype)
    if fmt.code_shift:  # left-aligned in a wider container: the low bits are ignored
        arr = np.right_shift(arr.astype(np.uint64), np.uint64(fmt.code_shift))
    if fmt.bits == 16 and is_fp32_prefix(fmt):
        # bf16: the code is the top half of the float32 pattern.
        return _bf16_values(arr.reshape(-1), dtype, out)
    if fmt.bits <= 16:
        return lookup(arr, _decode_table(fmt, dtype), out)
    return decode_generic(arr, fmt).astype(dtype)


def _bf16_values(arr: np.ndarray, dtype: np.dtype, out: np.ndarray | None) -> np.ndarray:
    """bf16 codes (flat, checked) as float32 or float64 values, into out if given.

    A widening copy, then an in-place shift: two same-type passes, each a SIMD loop (a shift
    that casts as it goes runs about half as fast). float64 values are widened from float32
    chunk by chunk into out, while the chunk is in the cache, instead of through a second
    whole-array temporary.
    """
    out = np.empty(arr.size, dtype) if out is None else out
    if dtype == np.float32:
        wide = out.view(np.uint32)
        np.copyto(wide, arr, casting="unsafe")  # (checked codes: below 2**16)
        wide <<= np.uint32(16)
        return out
    buffer = scratch("decode.bf16", min(chunk_size(LIGHT_CHUNK), arr.size), np.uint32)
    with np.errstate(invalid="ignore"):  # signalling NaNs stay NaN (quiet), silently
        for part in chunks(arr.size, max(buffer.size, 1)):
            wide = buffer[: part.stop - part.start]
            np.copyto(wide, arr[part], casting="unsafe")
            wide <<= np.uint32(16)
            np.copyto(out[part], wide.view(np.float32))
    return out


def _widen(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32 -> dtype; signalling NaNs stay NaN (quiet) without a floating-point warning."""
    with np.errstate(invalid="ignore"):
        return values.astype(dtype, copy=False)


def fits(fmt: Format, dtype: np.dtype) -> bool:
    """Whether every finite value of fmt is exactly a value of the float dtype."""
    info = np.finfo(dtype)
    return (
        fmt.mantissa_bits <= info.nmant
        and fmt.emax <= info.maxexp - 1
        # the spacing of the format's lowest binade is a multiple of dtype's smallest step
        and fmt.emin - fmt.mantissa_bits >= info.minexp - info.nmant
    )
