"""The exact float64 arithmetic every accumulation model shares, written once: powers of two,
model exponents, cuts to a grid of kept bits, the aligned sum, and the round-to-odd sum.

The aligned sum is the heart of every fused model (NVIDIA's block FMA, AMD CDNA3's stages,
Blackwell's block-scaled MMA, the fit kernels): the terms are aligned to the largest of their
exponents ``E``, each is cut on its own to ``F`` fraction bits below ``E`` (toward zero,
``"rz"``, or down, ``"rd"``), and the cut terms are added exactly. Every step is exact: a
scaling by a power of two, a cut to an integer, integer additions held in float64 while they
stay below 2**53 and in int64 past that. A total past 2**53 is rounded to odd, so that one
later rounding to at most 51 bits is still the correct rounding of the exact sum.

>>> total, E = aligned_sum([np.array([1.0, 3.0]), np.array([2.0**-30, -2.0**-30])],
...                        [np.array([0, 1]), np.array([-30, -30])], 24, "rd")
>>> total.tolist() == [1.0, 3.0 - 2.0**-23], E.tolist()
(True, [0, 1])
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

#: The exponent of a term that takes no part in the alignment (a zero, or a non-finite value
#: whose answer is decided elsewhere): below every real exponent, even with a partner's
#: exponent added, and twice of it still fits the int16 exponents of the product tables.
NO_EXPONENT = -4000


def pow2(e: np.ndarray) -> np.ndarray:
    """2.0**e for integer arrays, e clipped to float64's normal exponents -1022..1023, built
    from the bit pattern.

    >>> pow2(np.array([-1, 0, 3, 5000])).tolist() == [0.5, 1.0, 8.0, 2.0**1023]
    True
    """
    return ((np.asarray(np.clip(e, -1022, 1023), dtype=np.int64) + 1023) << 52).view(np.float64)


def exponent(v: np.ndarray, emin: int | np.ndarray = -1074) -> np.ndarray:
    """floor(log2|v|), at least ``emin`` (a subnormal counts at its format's emin; the default
    clamps nothing); :data:`NO_EXPONENT` for zero and non-finite v. int32.

    >>> exponent(np.array([1.5, -0.25, 2.0**-140, 0.0, np.inf]), -126).tolist()
    [0, -2, -126, -4000, -4000]
    """
    _, e = np.frexp(v)
    e = np.asarray(e)  # int32, as frexp gives it; worked on in place
    e -= 1
    np.maximum(e, emin, out=e)
    return np.where(np.isfinite(v) & (v != 0), e, NO_EXPONENT).astype(np.int32, copy=False)


def cut(x: np.ndarray, rounding: str) -> np.ndarray:
    """The integer part of x as int64 (|x| < 2**63): toward zero ("rz") or down ("rd").

    >>> cut(np.array([2.5, -2.5]), "rz").tolist(), cut(np.array([2.5, -2.5]), "rd").tolist()
    ([2, -2], [2, -3])
    """
    i = x.astype(np.int64)  # the float -> int cast truncates toward zero
    if rounding == "rd":
        i -= i > x
    return i


def cut_below(v: np.ndarray, ref: np.ndarray, bits: int, rounding: str) -> np.ndarray:
    """v cut to ``bits`` fraction bits below the exponent ``ref`` (per element), as float64.

    Exact while |v| * 2**(bits - ref) stays below 2**52 (the models' checks see to it).

    >>> cut_below(np.array([1 + 2**-30, -(1 + 2**-30)]), np.array([0, 0]), 24, "rd").tolist() == [1.0, -1 - 2**-24]
    True
    """
    ref = np.asarray(ref, dtype=np.int64)
    return cut(v * pow2(bits - ref), rounding) * pow2(ref - bits)


def aligned_sum(values: Iterable[np.ndarray], exps: Iterable[np.ndarray], F: int | np.ndarray, rounding: str,
                headroom: int | None = 2, exponent_dtype: type = np.int32,
                scratch: bool = False) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Terms aligned to the largest of their exponents E, each cut to F fraction bits below E
    toward zero ("rz") or down ("rd"), added exactly. Returns (the sum as float64, E of
    ``exponent_dtype``: int32, or int16 where every exponent is int16, as the product tables'
    are, whose maximum then takes a quarter of the time).

    ``values`` and ``exps`` give one array per term, all of one shape (the result's: a term
    for every element); lists, generators or the rows of a 2-D array: the exponents are
    consumed first (to find E), then the values one at a time. ``F`` is an int or an array of
    that shape (one per element). A term must be finite, and zero where its exponent is
    :data:`NO_EXPONENT`; |value| < 2**(exponent + ``headroom``), so that each cut term is an
    integer below 2**(F + headroom) (``None``: no such bound; every cut term below 2**63).
    ``scratch``: the value arrays are the caller's scratch (float64), cut in place.

    While the float64 total provably stays below 2**53 the terms are cut and added in place in
    float64; past that (or without a bound) in int64. The result is exact, or rounded to odd
    where the sum needs more than 53 bits (one later rounding to fp32 is then still correct).

    >>> total, E = aligned_sum([np.array([1.0]), np.array([2.0**-30])], [np.array([0]), np.array([-30])], 24, "rz")
    >>> total.tolist(), E.tolist()
    ([1.0], [0])
    >>> terms = [np.array([2.0**52]), np.array([1.0]), np.array([0.5])]  # 2**52 + 1.5: 54 bits, to odd
    >>> aligned_sum(terms, [np.array([52]), np.array([0]), np.array([-1])], 54, "rz")[0] == 2.0**52 + 1
    array([ True])
    """
    exps = iter(exps)
    E = np.array(next(exps), dtype=exponent_dtype)
    for e in exps:
        np.maximum(E, e, out=E)
    scale = pow2(F - E)
    unit = pow2(E - F)
    # Each cut term is an integer below 2**(F + headroom): a float64 total holds `exact` of
    # them exactly, cut and added in place with no integer conversion; past that, int64.
    top = F if isinstance(F, int) else int(np.max(F))
    exact = 0 if headroom is None else (1 << 53) >> (top + headroom)
    trunc = np.trunc if rounding == "rz" else np.floor
    total, term = np.zeros(E.shape, np.float64 if exact else np.int64), np.empty(E.shape)
    count = 0
    for v in values:
        if count == exact and total.dtype != np.int64:
            total = total.astype(np.int64)
        if scratch:
            term = v
        np.multiply(v, scale, out=term)
        if total.dtype == np.int64:
            if rounding == "rd":
                np.floor(term, out=term)
            total += term.astype(np.int64)  # the float -> int cast truncates toward zero
        else:
            trunc(term, out=term)
            total += term
        count += 1
    if total.dtype != np.int64:
        total *= unit
        return total, E
    if np.all(np.abs(total) < 1 << 53):
        return total.astype(np.float64) * unit, E
    high = total >> 26  # both halves are exact in float64; add them with one odd rounding
    low = total - (high << 26)
    return round_to_odd_sum(high.astype(np.float64) * (unit * 2.0**26), low.astype(np.float64) * unit), E


def round_to_odd_sum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y rounded to odd at float64 precision (53 bits), from an error-free two-sum.

    Round-to-odd keeps a sticky bit in the last place, so a later rounding to at most 51 bits
    equals the correct rounding of the exact sum (Boldo and Melquiond, IEEE TC 2008).

    >>> round_to_odd_sum(np.array([1.0]), np.array([2.0**-60])).tolist() == [1.0 + 2.0**-52]
    True
    """
    with np.errstate(invalid="ignore", over="ignore"):  # Inf partial sums are passed through
        s = np.asarray(np.add(x, y, dtype=np.float64))
        yy = s - x
        err = (x - (s - yy)) + (y - yy)
    fix = np.flatnonzero(err)  # most sums are exact: the rest (and NaN errors) looked at alone
    if fix.size == 0:
        return s
    flat = s.reshape(-1)  # a view: s is a fresh array
    sf, ef = flat[fix], err.reshape(-1)[fix]
    bits = sf.view(np.int64)
    inexact = ((bits & 1) == 0) & np.isfinite(sf)
    # Move one float64 ulp toward the exact value: up in magnitude when err has s's sign.
    step = np.where((ef > 0) == (sf > 0), 1, -1)
    flat[fix] = np.where(inexact, (bits + step).view(np.float64), sf)
    return s
