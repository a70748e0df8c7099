"""GEMM of Dask arrays: tiles of the result over M and N, each task holding all of K, so the
order of summation (part of every accumulator model) is the in-memory one and the bits are
the same. K is never split across tasks.

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
