"""Alignment on a grid of kept bits: the cut of one term below a reference exponent, and the
exact sum of terms aligned to their largest exponent (the heart of every fused model)."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from .rounding import _pow2, _round_to_odd_sum


def _cut(x: np.ndarray, rounding: str) -> np.ndarray:
    """Integer part of x (|x| < 2**53) as int64: toward zero ("rz") or down ("rd").

    >>> _cut(np.array([2.5, -2.5]), "rz").tolist(), _cut(np.array([2.5, -2.5]), "rd").tolist()
    ([2, -2], [2, -3])
    """
    i = x.astype(np.int64)  # the float -> int cast truncates toward zero
    if rounding == "rd":
        i -= i > x
    return i


def _cut_below(v: np.ndarray, ref: np.ndarray, bits: int, rounding: str) -> np.ndarray:
    """v cut to ``bits`` fraction bits below the exponent ``ref`` (per element), as float64.

    Exact while |v| * 2**(bits - ref) stays below 2**52 (the model's checks see to it).

    >>> _cut_below(np.array([1 + 2**-30, -(1 + 2**-30)]), np.array([0, 0]), 24, "rd").tolist() == [1.0, -1 - 2**-24]
    True
    """
    ref = np.asarray(ref, dtype=np.int64)
    return _cut(v * _pow2(np.clip(bits - ref, -1022, 1023)), rounding) * _pow2(np.clip(ref - bits, -1022, 1023))


def _grid_sum(values: Iterable[np.ndarray], exps: Iterable[np.ndarray], F: int, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """Align terms to the largest of their exponents E, keep F fraction bits below E (each
    term cut on its own), add exactly. Returns (the sum as a float64, E).

    Both arguments may be generators: the exponents are consumed first (to find E), then the
    values, one (R,) array at a time. Each cut term is below 2**(F+2) and exact in float64;
    the int64 total is exact too. When it may exceed 2**53 the float64 result is the sum
    rounded to odd, which the final rounding (to at most 24 bits) turns into the right answer.

    >>> total, E = _grid_sum([np.array([1.0]), np.array([2.0**-30])], [np.array([0]), np.array([-30])], 24, "rz")
    >>> total.tolist(), E.tolist()
    ([1.0], [0])
    """
    exps = iter(exps)
    E = next(exps).astype(np.int32)
    for e in exps:
        np.maximum(E, e, out=E)
    scale = _pow2(np.clip(F - E, -1022, 1023))
    unit = _pow2(np.clip(E - F, -1022, 1023))
    # Each cut term is an integer below 2**(F+2): a float64 total holds `exact` of them
    # exactly, cut and added in place with no integer conversion; past that, int64.
    exact = (1 << 53) >> (F + 2)
    cut = np.trunc if rounding == "rz" else np.floor
    total, term = np.zeros(E.shape), np.empty(E.shape)
    count = 0
    for v in values:
        if count == exact:
            total = total.astype(np.int64)
        np.multiply(v, scale, out=term)
        cut(term, out=term)
        if total.dtype == np.int64:
            total += term.astype(np.int64)
        else:
            total += term
        count += 1
    if total.dtype != np.int64:
        total *= unit
        return total, E
    high = total >> 26  # both halves are exact in float64; add them with one odd rounding
    low = total - (high << 26)
    return _round_to_odd_sum(high.astype(np.float64) * (unit * 2.0**26), low.astype(np.float64) * unit), E
