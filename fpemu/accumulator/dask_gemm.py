"""GEMM and batched dot products of Dask arrays: tiles of the result over M and N (over the
batch axes for dot), each task holding all of K, so the order of summation (part of every
accumulator model) is the in-memory one and the bits are the same. K is never split across
tasks.

>>> import numpy as np
>>> dask_gemm(np.ones((2, 3)), np.ones((3, 2)), None, lambda a, b, c: a @ b)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def dask_gemm(a: Any, b: Any, c: Any, tile_gemm: Callable[[Any, Any, Any], np.ndarray]) -> Any:
    """A Dask array of C = A @ B (+ C), tile by tile: ``tile_gemm(A rows, B columns, C tile)``
    on each output block, A rechunked to whole rows of K and B to whole columns."""
    import dask.array as da

    A, B = da.asarray(a), da.asarray(b)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"gemm needs A (M, K) and B (K, N), got shapes {A.shape} and {B.shape}")
    A = A.rechunk({1: -1})  # all of K in every task
    B = B.rechunk({0: -1})
    if c is None:
        return da.blockwise(lambda ta, tb: tile_gemm(ta, tb, None), "ij", A, "ik", B, "kj",
                            dtype=np.float32, concatenate=True)
    C = da.broadcast_to(da.asarray(c), (A.shape[0], B.shape[1])).rechunk((A.chunks[0], B.chunks[1]))
    return da.blockwise(tile_gemm, "ij", A, "ik", B, "kj", C, "ij", dtype=np.float32, concatenate=True)


def dask_dot(a: Any, b: Any, c: Any, tile_dot: Callable[[Any, Any, Any], np.ndarray]) -> Any:
    """A Dask array of the dot products over the last axis of a and b (+ c), block by block:
    ``tile_dot(a block, b block, c block)`` on each block of the batch axes, with all of K.

    >>> import dask.array as da  # doctest: +SKIP
    >>> dask_dot(da.ones((4, 3), chunks=2), np.ones((4, 3)), None, lambda a, b, c: (a * b).sum(-1)).compute()  # doctest: +SKIP
    array([3., 3., 3., 3.])
    """
    import dask.array as da

    A, B = da.asarray(a), da.asarray(b)
    if A.ndim == 0 or A.shape != B.shape:
        raise ValueError(f"a and b must have the same shape (..., K), got {A.shape} and {B.shape}")
    A = A.rechunk({A.ndim - 1: -1})  # all of K in every task
    B = B.rechunk(A.chunks)
    ind = "abcdefghijklmnopqrstuvwxyz"[: A.ndim]
    if c is None:
        return da.blockwise(lambda ta, tb: tile_dot(ta, tb, None), ind[:-1], A, ind, B, ind,
                            dtype=np.float32, concatenate=True)
    C = da.asarray(c)
    try:
        C = da.broadcast_to(C, A.shape[:-1])
    except ValueError:
        raise ValueError(f"c of shape {C.shape} does not broadcast to the result shape {A.shape[:-1]}") from None
    C = C.rechunk(A.chunks[:-1])
    return da.blockwise(tile_dot, ind[:-1], A, ind, B, ind, C, ind[:-1], dtype=np.float32, concatenate=True)
