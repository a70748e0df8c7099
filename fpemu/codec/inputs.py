"""Input arrays as the kernels want them: real floats in native byte order (integers rounded
once, exactly), and cache-sized chunks to walk them in.

>>> integers_to_float64(np.array([2**53 + 1], dtype=np.int64)).tolist()  # to odd: no double rounding
[9007199254740994.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _as_real_array(x: Any) -> np.ndarray:
    """x as an ndarray of float16/32/64 without rounding (integers handled by the caller)."""
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind in "fiu" and not arr.dtype.isnative:  # big-endian data: compute in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if kind == "f":
        if arr.dtype.itemsize > 8:
            raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
        return arr
    if kind in "iu":
        return arr
    if kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None:
        # ml_dtypes' narrow floats (bfloat16, float8_*, ...) all widen to float32 exactly.
        try:
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            pass
    what = {"c": "complex", "O": "object", "U": "string", "S": "bytes", "b": "boolean"}.get(
        kind, str(arr.dtype)
    )
    raise TypeError(f"cannot encode {what} input: pass real numbers (a float or integer array)")


def integers_to_float64(arr: np.ndarray) -> np.ndarray:
    """Integers as float64, rounded *to odd* from 2**53 up, so that no double rounding follows.

    Rounding to odd at 53 bits and then again to at most 51 bits gives the same result as one
    rounding of the integer (every format here has at most 24 bits of precision).
    """
    out = arr.astype(np.float64)
    big = np.abs(out) >= 2.0**53
    if not big.any():
        return out
    ints = arr[big]
    mag = ints.astype(np.uint64)
    if arr.dtype.kind == "i":
        mag = np.where(ints < 0, np.uint64(0) - mag, mag)  # two's complement: exact |v|
    f = mag.astype(np.float64)  # round to nearest even
    top = f >= 2.0**64  # only for uint64 inputs just below 2**64
    back = np.where(top, 0.0, f).astype(np.uint64)
    inexact = top | (back != mag)
    # RNE gave the truncation t or t + 1 (as bit patterns); to odd is t | 1 when inexact.
    bits = f.view(np.uint64).copy()
    fix = inexact & ((bits & np.uint64(1)) == 0)
    above = top | (back > mag)
    bits[fix & above] -= np.uint64(1)
    bits[fix & ~above] += np.uint64(1)
    f = bits.view(np.float64)
    out[big] = np.where(ints < 0, -f, f) if arr.dtype.kind == "i" else f
    return out


# Elementwise kernels run over chunks of this many elements so that their temporaries stay
# in the CPU cache: the arithmetic then costs little more than reading the input once.
_CHUNK = 1 << 16


_GENERIC_CHUNK = 1 << 14  # the generic kernel keeps a dozen 8-byte temporaries


def _chunks(n: int, size: int = _CHUNK):
    """Slices covering range(n) in cache-sized pieces."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))
