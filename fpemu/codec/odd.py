"""Rounding to odd: truncate, and set the last bit when anything was dropped.

The last bit then remembers ("sticks") that the value was inexact, so one later rounding to at
least two bits fewer gives the same result as rounding the exact value once (Boldo and
Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
odd", IEEE TC 2008). fpemu uses it wherever a value must pass through float64 or float32 on
its way to a narrower format: integers beyond 2**53 and float64 input to the float32 tables
here; exact sums held in two parts in :mod:`fpemu.arith` (``round_to_odd_sum``).

>>> integers_to_float64(np.array([2**53 + 1], dtype=np.int64)).tolist()  # odd: ...0 + sticky
[9007199254740994.0]
"""

from __future__ import annotations

import numpy as np


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


def _float64_to_float32_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded to odd (inexact results get their last bit set)."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to Inf; NaN payloads
        f = x.astype(np.float32)
    bits = f.view(np.uint32)
    with np.errstate(invalid="ignore"):
        inexact = f.astype(np.float64) != x
    inexact &= ~np.isnan(x)
    if inexact.any():
        # Step back toward zero where RNE went away from zero, then set the last bit.
        away = np.abs(f.astype(np.float64)) > np.abs(x)
        bits[inexact & away] -= np.uint32(1)
        bits[inexact] |= np.uint32(1)
    return f

