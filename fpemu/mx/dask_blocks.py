"""mx.quantize and dequantize of Dask arrays: each chunk holds whole blocks and is quantized
where it lies, with the same codes and scales as the array in memory.

A block never straddles two chunks: along each block axis every chunk but the last must be a
multiple of the block size, or quantize says how to rechunk. Stochastic rounding keys every
element's random bits with the call's key and the element's position in the whole array, and
NVFP4 takes its tensor amax over the whole array first (one reduction), so the chunking
changes nothing. Dask is imported only when a Dask array arrives.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..codec import sr_key


@dataclass(frozen=True)
class ChunkRandomness:
    """Stochastic rounding of one chunk of a larger array: the call's key, and the chunk's
    element positions (C order) in the whole array. Passed as ``rng`` to a chunk's quantize."""

    key: Any
    positions: np.ndarray


@dataclass(frozen=True)
class MeasuredAmax:
    """An NVFP4 tensor amax measured over the whole array (a float32 bit pattern, NaNs
    skipped), passed as ``global_amax`` to a chunk's quantize: unlike a caller's amax it may
    be 0 or Inf, as a measured one may."""

    bits: np.uint32


def check_chunks(chunks: tuple[tuple[int, ...], ...], axes: tuple[int, ...], block: tuple[int, ...]) -> None:
    """Refuse chunks that would cut a block in two, saying which chunking would do."""
    for axis, size in zip(axes, block):
        inner = chunks[axis][:-1]
        if any(c % size for c in inner):
            first = chunks[axis][0]
            good = max(size, first - first % size)
            raise ValueError(
                f"the Dask chunks along axis {axis} ({', '.join(map(str, chunks[axis][:4]))}"
                f"{', ...' if len(chunks[axis]) > 4 else ''}) cut blocks of {size} in two: "
                f"every chunk but the last must be a multiple of {size}, e.g. "
                f"x.rechunk({{{axis}: {good}}})")


def _chunk_positions(offsets: tuple[int, ...], shape: tuple[int, ...], full: tuple[int, ...]) -> np.ndarray:
    """Flat C-order positions in the whole array of a chunk's elements."""
    strides = [math.prod(full[a + 1:]) for a in range(len(full))]
    grid = np.zeros(shape, dtype=np.uint64)
    for axis, (start, n, stride) in enumerate(zip(offsets, shape, strides)):
        view = [1] * len(shape)
        view[axis] = n
        grid = grid + (np.arange(start, start + n, dtype=np.uint64) * np.uint64(stride)).reshape(view)
    return grid


def tensor_amax_bits(x: Any, to_float32: Callable[[np.ndarray], np.ndarray]) -> np.uint32:
    """max |x| over the whole Dask array as a float32 pattern, NaNs skipped (as NVFP4 does)."""
    def chunk_max(xb: np.ndarray) -> np.ndarray:
        bits = to_float32(xb).view(np.uint32) & np.uint32(0x7FFFFFFF)
        bits[bits > np.uint32(0x7F800000)] = 0
        return np.array([bits.max(initial=np.uint32(0))], dtype=np.uint32).reshape((1,) * xb.ndim)

    maxima = x.map_blocks(chunk_max, dtype=np.uint32, chunks=tuple((1,) * len(c) for c in x.chunks))
    return np.uint32(maxima.max().compute())


def quantize_chunks(x: Any, axes: tuple[int, ...], block: tuple[int, ...], stochastic: bool,
                    rng: Any, quantize_chunk: Callable[..., Any]) -> tuple[Any, Any]:
    """(codes, scales) of a Dask array as Dask arrays whose chunks pair up, chunk by chunk:
    ``quantize_chunk(chunk, rng)`` quantizes one chunk in memory."""
    import dask
    import dask.array as da

    check_chunks(x.chunks, axes, block)
    key = sr_key(rng) if stochastic else None
    starts = [np.cumsum((0,) + c[:-1]) for c in x.chunks]

    def one(xb: np.ndarray, offsets: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        chunk_rng = ChunkRandomness(key, _chunk_positions(offsets, xb.shape, x.shape)) if stochastic else rng
        q = quantize_chunk(xb, chunk_rng)
        return q.codes, q.scales

    delayed = x.to_delayed()
    codes = np.empty(delayed.shape, dtype=object)
    scales = np.empty(delayed.shape, dtype=object)
    for index in itertools.product(*(range(n) for n in delayed.shape)):
        shape = tuple(x.chunks[a][i] for a, i in enumerate(index))
        offsets = tuple(int(starts[a][i]) for a, i in enumerate(index))
        pair = dask.delayed(one, nout=2)(delayed[index], offsets)
        sshape = list(shape)
        for a, b in zip(axes, block):
            sshape[a] = -(-shape[a] // b)
        codes[index] = da.from_delayed(pair[0], shape, dtype=np.uint8)
        scales[index] = da.from_delayed(pair[1], tuple(sshape), dtype=np.uint8)
    return da.block(codes.tolist()), da.block(scales.tolist())


def dequantize_chunks(codes: Any, scales: Any, dequantize_chunk: Callable[[np.ndarray, np.ndarray], np.ndarray],
                      dtype: np.dtype) -> Any:
    """The values of Dask codes and scales whose chunks pair up (as quantize_chunks makes them)."""
    import dask
    import dask.array as da

    scales = da.asarray(scales)
    codes = da.asarray(codes)
    if codes.numblocks != scales.numblocks:
        raise ValueError("codes and scales of a Dask BlockArray must have as many chunks along "
                         "every axis (a chunk's blocks and their scales together)")
    code_parts, scale_parts = codes.to_delayed(), scales.to_delayed()
    out = np.empty(code_parts.shape, dtype=object)
    for index in itertools.product(*(range(n) for n in code_parts.shape)):
        shape = tuple(codes.chunks[a][i] for a, i in enumerate(index))
        values = dask.delayed(dequantize_chunk)(code_parts[index], scale_parts[index])
        out[index] = da.from_delayed(values, shape, dtype=dtype)
    return da.block(out.tolist())
