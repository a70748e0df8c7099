"""The block FMA, the one fused-sum kernel of every tensor-core model: a block of terms and
``c`` aligned to their largest exponent with ``F`` fraction bits, each term cut, summed
exactly, rounded once; each block's result the next one's ``c``; then the zero, overflow and
Inf/NaN rules. The models differ only in where a block's terms come from (``block_sum``):
the products of NVIDIA's :class:`~fpemu.accumulator.BlockFMA`, AMD CDNA3's two stages
(:mod:`.two_stage`), or a block-scaled instruction's scaled products or sub-block sums
(:mod:`.block_scaled`)."""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from ...arith import aligned_sum, exponent
from ..model import BlockFMA, BlockModel, TwoStage
from .products import Products, with_specials
from .rounding import RowTargets, Target, add_rounded, round_to_target
from .two_stage import late_sum

#: A block's exact sum: block_sum(s, e, c, e_c, F) of products s..e-1 and the finite c (its
#: exponent e_c), float64 (rounded to odd past 53 bits), before the block's one rounding.
BlockSum = Callable[[int, int, np.ndarray, np.ndarray, "int | np.ndarray"], np.ndarray]


def chain_blocks(prods: Products, k0: int, k1: int, c: np.ndarray, n: int, block_sum: BlockSum, t: Target | RowTargets,
                 c_emin: int, F: int | np.ndarray, zero_c: int | np.ndarray, signed_underflow: bool = False,
                 product_overflow: bool = False) -> np.ndarray:  # fmt: skip
    """Blocks of ``n`` products k0..k1-1 chained, the first from c, each result the next one's
    c: c's exponent is its own (clamped at ``c_emin``) or ``zero_c`` for a zero c; the block's
    exact sum (``block_sum``) rounded to the target ``t``, a zero result +0 unless
    ``signed_underflow``; with ``product_overflow`` a product beyond fp32 makes it Inf; Inf
    and NaN operands have the last word. ``F`` and ``zero_c`` are ints, or arrays of one a
    result (:func:`block_rows`)."""
    # No products (K = 0): c alone goes through one block FMA, exactly as it does when K is
    # zero-padded (zero products are dropped), so it is rounded as the unit rounds (-0 -> +0).
    starts = range(k0, k1, n) if k1 > k0 else range(k0, k0 + 1)
    for s in starts:
        e = min(s + n, k1)
        ec = np.where(c == 0, zero_c, exponent(c, c_emin))
        result = round_to_target(block_sum(s, e, np.where(np.isfinite(c), c, 0.0), ec, F), t)
        # A non-zero sum may round to a zero, which keeps its sign (signed_underflow) or is +0.
        result = result if signed_underflow else result + 0.0
        if product_overflow:
            result = _overflowed(prods, s, e, result)
        # Inf/NaN operands first (as their float64 sum has it), then the overflowed products.
        c = with_specials(prods, s, e, c, result)
    return c


def product_sum(prods: Products, term_rounding: str) -> BlockSum:
    """The block sum of a block FMA whose terms are the products: c and every product of the
    block aligned and cut (:func:`fpemu.arith.aligned_sum`)."""

    def block_sum(s: int, e: int, c: np.ndarray, ec: np.ndarray, F: int | np.ndarray) -> np.ndarray:
        ks = range(s, e)
        total, _ = aligned_sum(itertools.chain([c], (prods.value(k) for k in ks)),
                               itertools.chain([ec], (prods.exponent(k) for k in ks)), F, term_rounding,
                               prods.headroom)  # fmt: skip
        return total

    return block_sum


def _dense_sum(prods: Products, acc: BlockModel) -> BlockSum:
    if isinstance(acc, TwoStage):
        return lambda s, e, c, ec, F: late_sum(prods, s, e, c, ec, acc, F)
    return product_sum(prods, acc.term_rounding)


def _chain(prods: Products, k0: int, k1: int, c: np.ndarray, acc: BlockModel, t: Target | RowTargets, c_emin: int,
           F: int | np.ndarray | None = None, zero_c: int | np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """A dense block model's blocks over products k0..k1-1 from c (F and the zero-c exponent
    the model's unless given)."""
    return chain_blocks(prods, k0, k1, c, acc.block, _dense_sum(prods, acc), t, c_emin,
                        acc.frac_bits if F is None else F, acc.zero_c_exponent if zero_c is None else zero_c,
                        acc.signed_underflow, acc.product_overflow)  # fmt: skip


def _overflowed(prods: Products, s: int, e: int, result: np.ndarray) -> np.ndarray:
    """product_overflow: a product of magnitude >= 2**128 makes the block +-Inf (NaN for both
    signs), whatever the other terms.

    >>> from .products import element_products
    >>> from ...formats import get_format
    >>> bf16 = get_format("bf16")
    >>> p = element_products(np.array([[2.0**100, 1.0], [2.0**100, -2.0**100]]), np.array([[2.0**28, 1.0], [2.0**30] * 2]),
    ...                      bf16, bf16, False, False)
    >>> _overflowed(p, 0, 2, np.array([1.0, 2.0])).tolist()
    [inf, nan]
    """
    pos, neg = prods.overflow(s, e)
    if not (pos.any() or neg.any()):
        return result
    return np.where(pos & neg, np.nan, np.where(pos, np.inf, np.where(neg, -np.inf, result)))


def run_block(prods: Products, k0: int, k1: int, c: np.ndarray, acc: BlockModel, t: Target, c_emin: int) -> np.ndarray:
    """A dense block model over products k0..k1-1 from c; ``c_after``: each instruction's
    blocks run from a zero accumulator, and c (then the previous instruction's result) is
    added to their result, the exact sum rounded once."""
    if not (isinstance(acc, BlockFMA) and acc.c_after):
        return _chain(prods, k0, k1, c, acc, t, c_emin)
    step = acc.instruction_k or max(k1 - k0, 1)
    for s in range(k0, max(k1, k0 + 1), step):
        e = min(s + step, k1)
        part = _chain(prods, s, e, np.zeros(prods.R), acc, t, c_emin)
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
    return _chain(prods, 0, prods.K, c, acc, t, c_emin, frac_bits, zero_c_exponent)
