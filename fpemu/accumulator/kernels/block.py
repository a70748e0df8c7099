"""The tensor-core block FMA (``kind="block"``): a block of products and ``c`` aligned to
their largest exponent with ``F`` fraction bits, each term cut, summed exactly, rounded once;
CDNA3's late ``c`` and even/odd lanes included."""

from __future__ import annotations

import itertools
from typing import Iterable

import numpy as np

from ..model import Accumulator
from .products import _Products, _with_specials
from .rounding import _exponent, _pow2, _round, _round_to_odd_sum, _Target


def _cut(x: np.ndarray, rounding: str) -> np.ndarray:
    """Integer part of x (|x| < 2**53) as int64: toward zero ("rz") or down ("rd")."""
    i = x.astype(np.int64)  # the float -> int cast truncates toward zero
    if rounding == "rd":
        i -= i > x
    return i


def _grid_sum(values: Iterable[np.ndarray], exps: Iterable[np.ndarray], F: int, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """Align terms to the largest of their exponents E, keep F fraction bits below E (each
    term cut on its own), add exactly. Returns (the sum as a float64, E).

    Both arguments may be generators: the exponents are consumed first (to find E), then the
    values, one (R,) array at a time. Each cut term is below 2**(F+2) and exact in float64;
    the int64 total is exact too. When it may exceed 2**53 the float64 result is the sum
    rounded to odd, which the final rounding (to at most 24 bits) turns into the right answer.
    """
    exps = iter(exps)
    E = next(exps).astype(np.int32)
    for e in exps:
        np.maximum(E, e, out=E)
    scale = _pow2(np.clip(F - E, -1022, 1023))
    total = np.zeros(E.shape, dtype=np.int64)
    count = 0
    for v in values:
        total += _cut(v * scale, rounding)
        count += 1
    unit = _pow2(np.clip(E - F, -1022, 1023))
    if count << (F + 2) <= 1 << 53:
        return total.astype(np.float64) * unit, E
    high = total >> 26  # both halves are exact in float64; add them with one odd rounding
    low = total - (high << 26)
    return _round_to_odd_sum(high.astype(np.float64) * (unit * 2.0**26), low.astype(np.float64) * unit), E


def _block_step(prods: _Products, s: int, e: int, c: np.ndarray, ec: np.ndarray, acc: Accumulator, t: _Target) -> np.ndarray:
    """One block FMA on products s..e-1 and accumulator c (exponent ec)."""
    F = acc.frac_bits
    if not acc.late_c:
        ks = range(s, e)
        total, _ = _grid_sum(
            itertools.chain([c], (prods.value(k) for k in ks)),
            itertools.chain([ec], (prods.exponent(k) for k in ks)),
            F,
            acc.term_rounding,
        )
        return _round(total, t) + 0.0  # -0 -> +0
    # CDNA3: products first (even and odd lanes separately for FP8), c joins afterwards.
    groups = [range(s, e, 2), range(s + 1, e, 2)] if acc.even_odd else [range(s, e)]
    vals, exps = [c], [ec]
    for ks in groups:
        if len(ks) == 0:
            continue
        v, _ = _grid_sum((prods.value(k) for k in ks), (prods.exponent(k) for k in ks), F, acc.term_rounding)
        vals.append(v)
        exps.append(_exponent(v, -100000))
    total, _ = _grid_sum(vals, exps, F, acc.term_rounding)
    return _round(total, t) + 0.0


def _run_block(prods: _Products, k0: int, k1: int, c: np.ndarray, acc: Accumulator, t: _Target, c_emin: int) -> np.ndarray:
    n = acc.block
    # No products (K = 0): c alone goes through one block FMA, exactly as it does when K is
    # zero-padded (zero products are dropped), so it is rounded as the unit rounds (-0 -> +0).
    starts = range(k0, k1, n) if k1 > k0 else range(k0, k0 + 1)
    for s in starts:
        e = min(s + n, k1)
        ec = np.where(c == 0, acc.zero_c_exponent, _exponent(c, c_emin))
        finite_c = np.where(np.isfinite(c), c, 0.0)
        c = _with_specials(prods, s, e, c, _block_step(prods, s, e, finite_c, ec, acc, t))
    return c
