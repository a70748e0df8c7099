"""The block models (:class:`~fpemu.accumulator.BlockFMA`, :class:`~fpemu.accumulator.TwoStage`):
a block of products and ``c`` aligned to their largest exponent with ``F`` fraction bits, each
term cut, summed exactly, rounded once; or the two-stage sum of ``two_stage``; then the zero, overflow and Inf/NaN
rules of the model."""

from __future__ import annotations

import itertools

import numpy as np

from ...arith import aligned_sum, exponent
from ..model import BlockFMA, BlockModel, TwoStage
from .products import Products, with_specials
from .rounding import RowTargets, Target, add_rounded, round_to_target
from .two_stage import late_sum


def _block_step(prods: Products, s: int, e: int, c: np.ndarray, ec: np.ndarray, acc: BlockModel, t: Target,
                F: int | np.ndarray) -> np.ndarray:
    """One block FMA on products s..e-1 and accumulator c (exponent ec), rounded."""
    if isinstance(acc, TwoStage):
        total = late_sum(prods, s, e, c, ec, acc, F)
    else:
        ks = range(s, e)
        total, _ = aligned_sum(
            itertools.chain([c], (prods.value(k) for k in ks)),
            itertools.chain([ec], (prods.exponent(k) for k in ks)),
            F,
            acc.term_rounding,
        )
    # total is +0 when the sum is exactly zero; a non-zero sum may still round to a zero,
    # which keeps its sign (signed_underflow) or becomes +0.
    return round_to_target(total, t) if acc.signed_underflow else round_to_target(total, t) + 0.0


def _overflowed(prods: Products, s: int, e: int, result: np.ndarray) -> np.ndarray:
    """product_overflow: a product of magnitude >= 2**128 makes the block +-Inf (NaN for both
    signs), whatever the other terms.

    >>> from .products import Products
    >>> from ...formats import get_format
    >>> bf16 = get_format("bf16")
    >>> p = Products(np.array([[2.0**100, 1.0], [2.0**100, -2.0**100]]), np.array([[2.0**28, 1.0], [2.0**30] * 2]),
    ...               bf16, bf16, False, False)
    >>> _overflowed(p, 0, 2, np.array([1.0, 2.0])).tolist()
    [inf, nan]
    """
    pos, neg = prods.overflow(s, e)
    if not (pos.any() or neg.any()):
        return result
    return np.where(pos & neg, np.nan, np.where(pos, np.inf, np.where(neg, -np.inf, result)))


def run_block(prods: Products, k0: int, k1: int, c: np.ndarray, acc: BlockModel, t: Target, c_emin: int) -> np.ndarray:
    if not (isinstance(acc, BlockFMA) and acc.c_after):
        return _chain_blocks(prods, k0, k1, c, acc, t, c_emin)
    # c_after: each instruction's blocks run from a zero accumulator; c (then the previous
    # instruction's result) is added to their result, the exact sum rounded once.
    step = acc.instruction_k or max(k1 - k0, 1)
    for s in range(k0, max(k1, k0 + 1), step):
        e = min(s + step, k1)
        part = _chain_blocks(prods, s, e, np.zeros(prods.R), acc, t, c_emin)
        finite = np.isfinite(part) & np.isfinite(c)
        rounded = add_rounded(np.where(finite, part, 0.0), np.where(finite, c, 0.0), t)
        with np.errstate(invalid="ignore"):  # Inf + -Inf is NaN, as IEEE has it
            c = np.where(finite, rounded if acc.signed_underflow else rounded + 0.0, part + c)
    return c


def block_rows(prods: Products, c: np.ndarray, acc: BlockModel, t: Target | RowTargets, c_emin: int,
               frac_bits: np.ndarray, zero_c_exponent: np.ndarray) -> np.ndarray:
    """Many models of one structure at once (``fpemu.fit``'s search): the blocks of ``acc``
    over all of prods' k from c, but with ``frac_bits`` and ``zero_c_exponent`` given per row
    and the result rounded to each row's target, so each row gets the bits of its own model."""
    return _chain_blocks(prods, 0, prods.K, c, acc, t, c_emin, frac_bits, zero_c_exponent)


def _chain_blocks(prods: Products, k0: int, k1: int, c: np.ndarray, acc: BlockModel, t: Target | RowTargets,
                  c_emin: int, F: int | np.ndarray | None = None, zero_c: int | np.ndarray | None = None) -> np.ndarray:
    """Blocks of products k0..k1-1 chained, the first from c (each result the next one's c);
    F and the zero-c exponent are the model's unless given (one a row: :func:`block_rows`)."""
    n = acc.block
    F = acc.frac_bits if F is None else F
    zero_c = acc.zero_c_exponent if zero_c is None else zero_c
    # No products (K = 0): c alone goes through one block FMA, exactly as it does when K is
    # zero-padded (zero products are dropped), so it is rounded as the unit rounds (-0 -> +0).
    starts = range(k0, k1, n) if k1 > k0 else range(k0, k0 + 1)
    for s in starts:
        e = min(s + n, k1)
        ec = np.where(c == 0, zero_c, exponent(c, c_emin))
        finite_c = np.where(np.isfinite(c), c, 0.0)
        result = _block_step(prods, s, e, finite_c, ec, acc, t, F)
        if acc.product_overflow:
            result = _overflowed(prods, s, e, result)
        # Inf/NaN operands first (as their float64 sum has it), then the overflowed products.
        c = with_specials(prods, s, e, c, result)
    return c
