"""Input arrays as the kernels want them: real floats in native byte order (integers rounded
once, exactly), and cache-sized chunks to walk them in.

>>> as_real_array(np.array([1.5], ">f8")).dtype.isnative
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import as_array
from ..formats import Format, get_format  # noqa: F401  (get_format: the doctest)
from ..parallel import in_worker


def as_codes(codes: Any, fmt: Format) -> np.ndarray:
    """codes as an integer array, each checked to be a code of ``fmt`` (decode and the exports
    refuse the same codes with the same words; a dtype whose every value is a code is not
    scanned).

    >>> as_codes([16], get_format("e2m1"))
    Traceback (most recent call last):
    ...
    ValueError: code 16 is out of range for e2m1 (codes are 0..15)
    """
    arr = as_array(codes, "codes")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got {arr.dtype} (did you mean encode()?)")
    limit = 1 << (fmt.storage_bits if fmt.container_bits else fmt.bits)
    if arr.dtype.kind == "u" and 1 << (8 * arr.dtype.itemsize) <= limit:
        return arr  # every value of the dtype is a code: nothing to check
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= limit):
        bad = arr[(arr < 0) | (arr >= limit)].ravel()[0]
        raise ValueError(f"code {int(bad)} is out of range for {fmt.name} (codes are 0..{limit - 1})")
    return arr


def as_real_array(x: Any) -> np.ndarray:
    """x as an ndarray of float16/32/64 without rounding (integers handled by the caller), or
    as an object or string array: exact input (Fractions, Decimals, decimal strings), which
    the caller rounds from the exact rationals (:mod:`.exact_kernel`)."""
    arr = as_array(x, "x")
    kind = arr.dtype.kind
    if kind in "fiu" and not arr.dtype.isnative:  # big-endian data: compute in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if kind == "f" and arr.dtype in (np.float16, np.float32, np.float64):
        return arr
    if kind == "f" and arr.dtype.itemsize > 8:
        raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
    if kind in "iuOU":
        return arr
    if kind in "fV" and arr.dtype.itemsize <= 2 and arr.dtype.names is None:
        # ml_dtypes' narrow floats (bfloat16, float8_*, ...) all widen to float32 exactly.
        try:
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            pass
    what = {"c": "complex", "S": "bytes", "b": "boolean"}.get(kind, str(arr.dtype))
    raise TypeError(f"cannot encode {what} input: pass real numbers (a float or integer array; "
                    "exact values as Fractions, Decimals or decimal strings)")


# Elementwise kernels run over chunks of this many elements so that their temporaries stay
# in the CPU cache: the arithmetic then costs little more than reading the input once.
# (2**16 spread NumPy's per-call cost over too few elements: float16 and int16 input through
# the lookup tables ran 1.07-1.13x faster at 2**18.)
_CHUNK = 1 << 18


GENERIC_CHUNK = 1 << 14  # the generic kernel keeps a dozen 8-byte temporaries

# The light kernels (a table lookup, bf16/tf32 bit rounding, bf16 decode: a few same-type
# passes) in chunks this long: each NumPy call costs 1-2 us whatever its size, and 2**19
# elements spread that thin while the temporaries stay in the cache (L3 at least). 2**16
# ran 0.77x as fast for bf16 encode, 0.72x for bf16 -> float64 decode (into a used array);
# 2**18 0.89x for bf16 from float64, whose narrowing makes two dozen calls a chunk.
LIGHT_CHUNK = 1 << 19


# The most elements a chunk of a parallel worker thread grows to: two threads' temporaries
# of 2**20 elements no longer stay in the cache (e4m3 on 2 workers: 496 Melem/s, 957 at 2**19)
_WORKER_CHUNK = 1 << 19


def chunk_size(base: int = _CHUNK) -> int:
    """Elements per chunk: ``base``; in a parallel worker thread four times that, up to
    2**19 (there the GIL's hand-over between threads, once per NumPy call, outweighs the
    cache's gain, until two threads' temporaries outgrow the cache)."""
    return max(base, min(base * 4, _WORKER_CHUNK)) if in_worker() else base


def chunks(n: int, size: int | None = None):
    """Slices covering range(n) in cache-sized pieces (default: :func:`chunk_size`)."""
    size = chunk_size() if size is None else size
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))
