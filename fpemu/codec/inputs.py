"""Input arrays as the kernels want them: real floats in native byte order (integers rounded
once, exactly), and cache-sized chunks to walk them in.

>>> _as_real_array(np.array([1.5], ">f8")).dtype.isnative
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..parallel import in_worker


def _as_real_array(x: Any) -> np.ndarray:
    """x as an ndarray of float16/32/64 without rounding (integers handled by the caller)."""
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind in "fiu" and not arr.dtype.isnative:  # big-endian data: compute in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if kind == "f" and arr.dtype in (np.float16, np.float32, np.float64):
        return arr
    if kind == "f" and arr.dtype.itemsize > 8:
        raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
    if kind in "iu":
        return arr
    if kind in "fV" and arr.dtype.itemsize <= 2 and arr.dtype.names is None:
        # ml_dtypes' narrow floats (bfloat16, float8_*, ...) all widen to float32 exactly.
        try:
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            pass
    what = {"c": "complex", "O": "object", "U": "string", "S": "bytes", "b": "boolean"}.get(
        kind, str(arr.dtype)
    )
    raise TypeError(f"cannot encode {what} input: pass real numbers (a float or integer array)")


# Elementwise kernels run over chunks of this many elements so that their temporaries stay
# in the CPU cache: the arithmetic then costs little more than reading the input once.
_CHUNK = 1 << 16


_GENERIC_CHUNK = 1 << 14  # the generic kernel keeps a dozen 8-byte temporaries


def _chunk_size(base: int = _CHUNK) -> int:
    """Elements per chunk: ``base``, four times that in a parallel worker thread (there the
    GIL's hand-over between threads, once per NumPy call, outweighs the cache's gain)."""
    return base * 4 if in_worker() else base


def _chunks(n: int, size: int | None = None):
    """Slices covering range(n) in cache-sized pieces (default: :func:`_chunk_size`)."""
    size = _chunk_size() if size is None else size
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))
