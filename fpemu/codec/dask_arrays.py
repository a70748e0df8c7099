"""encode, decode and quantize of Dask arrays: the same work block by block, the same bits.

Every elementwise result depends on its element alone, and stochastic rounding's random bits
on the seed and the element's position in the whole array (:func:`.rounding.random_u64`),
so a Dask array gives exactly the codes the same array in memory gives, however it is
chunked. Dask is an optional extra (``pip install fpemu[dask]``); nothing here imports it
until a Dask array arrives.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def is_dask(x: Any) -> bool:
    """Whether x is a Dask array (without importing Dask).

    >>> is_dask(np.zeros(3))
    False
    """
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "map_blocks")


def positions(block_info: dict | None, shape: tuple) -> np.ndarray:
    """The flat (C-order) positions, in the whole array, of a block's elements."""
    info = (block_info or {}).get(0)
    if info is None:  # Dask's meta call: an empty block
        return np.zeros(shape, dtype=np.uint64)
    full = info["shape"]
    strides = np.cumprod((1,) + tuple(full[::-1]))[:-1][::-1].astype(np.uint64)
    grid = np.zeros(shape, dtype=np.uint64)
    for axis, ((a, b), stride) in enumerate(zip(info["array-location"], strides)):
        view = [1] * len(shape)
        view[axis] = b - a
        grid = grid + np.arange(a, b, dtype=np.uint64).reshape(view) * stride
    return grid


def blockwise(x, fn: Callable, dtype: np.dtype, extra: Any = None) -> Any:
    """A Dask array of ``fn(block, extra_block, positions)`` over x's blocks, where
    ``extra`` (broadcast to x's shape and chunks) is optional."""
    def block(xb: np.ndarray, eb: np.ndarray | None = None, block_info=None) -> np.ndarray:
        return fn(xb, eb, positions(block_info, xb.shape))

    if extra is None:
        return x.map_blocks(block, dtype=dtype)
    import dask.array as da

    eb = da.broadcast_to(da.asarray(extra), x.shape).rechunk(x.chunks)
    return da.map_blocks(block, x, eb, dtype=dtype)
