"""Input arrays as the kernels take them: real floats in native byte order, codes checked
against their format; integers as floats that round once (:func:`integers_as_floats`); and
the ``via`` option, which narrows the input to float32 first, as libraries that convert
through float32 do (and so round twice: :func:`narrow`).

>>> as_real_array(np.array([1.5], ">f8")).dtype.isnative
True
>>> integers_to_float64(np.array([2**53 + 1], dtype=np.int64)).tolist()  # to odd: ...0 + sticky
[9007199254740994.0]
>>> narrow(np.array([1 + 2.0**-8 + 2.0**-30]), "fp32")  # the float32 nearest, then encoded
array([1.0039062], dtype=float32)
>>> check_via("FP32"), check_via(None)
('fp32', None)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import as_array
from ..formats import Format, get_format  # noqa: F401  (get_format: the doctest)


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


def integers_as_floats(arr: np.ndarray, fmt: Format, rounding: str) -> np.ndarray:
    """Integer input as floats that round once into fmt under ``rounding`` (canonical).
    Integers of at most 16 bits as float32 (every one is a float32, exactly, so the codes are
    those of the same values as float64, and the float32 paths are the fast ones, as for
    float16 input); wider ones as float64: rounded to odd at 53 bits (exact for formats of up
    to 51 significant bits), or numpy's correctly rounded cast for binary64 under RNE."""
    if arr.dtype.itemsize <= 2:  # |v| < 2**16 <= 2**24: exact in float32
        return arr.astype(np.float32)
    if fmt.mantissa_bits < 51 or not arr.size:
        return integers_to_float64(arr)
    big = np.abs(arr.astype(np.float64)) >= 2.0**53
    if not big.any():
        return arr.astype(np.float64)
    if fmt.mantissa_bits == 52 and rounding == "nearest_even":
        return arr.astype(np.float64)  # numpy rounds integers to float64 to nearest even
    raise ValueError(f"integers of 2**53 or more into {fmt.name} ({fmt.mantissa_bits + 1} significant "
                     f"bits) under {rounding!r} would be rounded twice: convert them to float64 first")


def integers_to_float64(arr: np.ndarray) -> np.ndarray:
    """Integers as float64, rounded *to odd* from 2**53 up, so that no double rounding follows.

    Rounding to odd (truncate, then set the last bit if anything was dropped) at 53 bits and
    then again to at most 51 bits gives the same result as one rounding of the integer (Boldo
    and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
    rounding to odd", IEEE TC 2008; every format here has at most 24 bits of precision).
    """
    out = arr.astype(np.float64)
    if arr.dtype.itemsize <= 4:  # every 32-bit integer is a float64
        return out
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


#: The values of the ``via`` option (None: no narrowing).
VIAS = ("fp32",)


def check_via(via: str | None) -> str | None:
    """The canonical name of a ``via`` option (None: no narrowing), or a ValueError."""
    if via is None:
        return None
    if not isinstance(via, str) or via.lower() not in VIAS:
        raise ValueError(f"unknown via {via!r}; choose 'fp32' (convert to float32 first) or None")
    return via.lower()


def narrow(arr: np.ndarray, via: str | None) -> np.ndarray:
    """arr as float32 by numpy's cast (round to nearest even, Inf beyond float32's range, NaN
    payloads kept as C's cast keeps them) where ``via`` asks for it; float32 input unchanged."""
    if via is None or arr.dtype == np.float32:
        return arr
    with np.errstate(over="ignore"):  # overflow to Inf is the cast's defined result
        return arr.astype(np.float32)
