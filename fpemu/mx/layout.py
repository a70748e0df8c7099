"""Where blocks lie: block sizes and axes checked, block axes moved last, cut into regions.

A block axis whose length is not a multiple of the block size ends in a shorter block; that
short block is its own region of real length, so padding is never materialised. The
pipelines work on a region's tiles as rows (tiles, elements per tile), chunk by chunk.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arguments import is_whole
from ..codec import MX_CHUNK
from .formats import BlockFormat

#: Largest block size (each axis) accepted: far beyond any real format (32, 16, 16x16) while
#: keeping block offsets and the exact integer dot-product limbs well inside int64.
_MAX_BLOCK = 1 << 31


# ---- layout: block sizes, axes ---------------------------------------------------------------
def block_tuple(block_size: Any) -> tuple[int, ...]:
    """A block size (or a pair, for 2-D tiles) as validated ints in 1 .. 2**31."""
    block = tuple(block_size) if isinstance(block_size, (tuple, list)) else (block_size,)
    if not 1 <= len(block) <= 2:
        raise ValueError(f"block_size must be an int or a pair of ints, got {block_size!r}")
    for b in block:
        if not is_whole(b):
            raise ValueError(f"block size must be a positive integer, got {b!r}")
        if not 1 <= b <= _MAX_BLOCK:
            raise ValueError(f"block size must be an integer from 1 to 2**31, got {b!r}")
    return tuple(int(b) for b in block)


def axes_tuple(axis: Any, ndim: int, block: tuple[int, ...]) -> tuple[int, ...]:
    """Validated non-negative block axes, one per block dimension."""
    if axis is None:
        axis = -1 if len(block) == 1 else (-2, -1)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(axes) != len(block):
        raise ValueError(
            f"{len(block)}-D blocks {block} need {len(block)} axes, got axis={axis!r}"
        )
    if ndim < len(axes):
        raise ValueError(f"a {ndim}-D array has no room for {len(axes)}-D blocks")
    out = []
    for a in axes:
        if not is_whole(a):
            raise ValueError(f"axis must be an integer, got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a {ndim}-D array")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"the two tile axes must differ, got {axis!r}")
    return tuple(out)


def normalize_layout(
    ndim: int, axis: Any, block_size: Any, bf: BlockFormat
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validated (axes, block shape): one axis for 1-D blocks, two for 2-D tiles."""
    block = block_tuple(bf.block_size if block_size is None else block_size)
    return axes_tuple(axis, ndim, block), block


# ---- blocking: block axes last, cut into regions of equal tiles -------------------------------
def moved(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x with the block axes moved last (a view; the identity for the default layout)."""
    lead_axes = [a for a in range(x.ndim) if a not in axes]
    return np.transpose(x, lead_axes + list(axes))


def unmoved(xm: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`moved`, as a C-contiguous array."""
    lead_axes = [a for a in range(xm.ndim) if a not in axes]
    return np.ascontiguousarray(np.transpose(xm, np.argsort(lead_axes + list(axes))))


@dataclass(frozen=True)
class _Region:
    """Part of the block axes holding tiles of one shape: the full blocks, or the shorter
    last block of an axis whose length is not a multiple of the block size."""

    elems: tuple[slice, ...]  # along the block axes, in elements
    blocks: tuple[slice, ...]  # the same part in blocks
    tile: tuple[int, ...]  # the tile shape (a full block, or the real part of the last one)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.elems)

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.blocks)


def block_regions(lengths: tuple[int, ...], block: tuple[int, ...]) -> list[_Region]:
    """The block axes cut into at most 2 (1-D) or 4 (2-D tiles) regions of equal tiles.

    A short last block is its own region with its real length, so padding is never
    allocated: a block size of 10**9 for three values costs three values.
    """
    per_axis = []
    for n, b in zip(lengths, block):
        full = n // b
        parts = [(slice(0, full * b), slice(0, full), b)] if full else []
        if n > full * b:
            parts.append((slice(full * b, n), slice(full, full + 1), n - full * b))
        per_axis.append(parts)
    return [_Region(tuple(p[0] for p in combo), tuple(p[1] for p in combo),
                    tuple(p[2] for p in combo)) for combo in itertools.product(*per_axis)]


def nblocks(lengths: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-(-n // b) for n, b in zip(lengths, block))


def _tiles_as_rows(sub: np.ndarray, tile: tuple[int, ...]) -> np.ndarray:
    """(lead..., n0*t0[, n1*t1]) -> (tiles, elements per tile), tiles in row-major order of
    (lead..., n0[, n1]): a view for 1-D blocks whenever numpy can make one."""
    if len(tile) == 1:
        return sub.reshape(-1, tile[0])
    lead = sub.shape[:-2]
    t = sub.reshape(*lead, sub.shape[-2] // tile[0], tile[0], sub.shape[-1] // tile[1], tile[1])
    return np.swapaxes(t, -3, -2).reshape(-1, tile[0] * tile[1])


def _rows_as_tiles(rows: np.ndarray, shape: tuple[int, ...], tile: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`_tiles_as_rows`: rows back to a region of the given shape."""
    if len(tile) == 1:
        return rows.reshape(shape)
    lead = shape[:-2]
    t = rows.reshape(*lead, shape[-2] // tile[0], shape[-1] // tile[1], tile[0], tile[1])
    return np.swapaxes(t, -3, -2).reshape(shape)


def region_rows(xm: np.ndarray, r: _Region) -> np.ndarray:
    """The tiles of region r of the moved array as rows (tiles, elements per tile)."""
    return _tiles_as_rows(xm[(Ellipsis,) + r.elems], r.tile)


def output_rows(out_m: np.ndarray, r: _Region) -> tuple[np.ndarray, bool]:
    """Rows to write region r's results into: a view of out_m when numpy can make one (the
    default layout), else scratch rows that :func:`store_rows` copies back."""
    sub = out_m[(Ellipsis,) + r.elems]
    k = int(np.prod(r.tile))
    if len(r.tile) == 1:
        rows = sub.reshape(-1, k)
        if np.may_share_memory(rows, out_m):
            return rows, False
    return np.empty((sub.size // k, k), out_m.dtype), True


def store_rows(out_m: np.ndarray, r: _Region, rows: np.ndarray, scratch: bool) -> None:
    if scratch:
        lead = out_m.shape[: out_m.ndim - len(r.tile)]
        out_m[(Ellipsis,) + r.elems] = _rows_as_tiles(rows, lead + r.sizes, r.tile)


def row_chunks(rows: int, block_elements: int) -> list[slice]:
    """Slices of block rows, each about :data:`fpemu.codec.chunks.MX_CHUNK` elements (the
    chunk sizes of the codec and the MX pipelines are all there, with their reasons)."""
    step = max(1, MX_CHUNK // max(block_elements, 1))
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)] or [slice(0, 0)]
