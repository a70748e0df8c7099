"""The block FMA, the one fused-sum kernel of every tensor-core model: a block of terms and
``c`` aligned to their largest exponent with ``F`` fraction bits, each term cut, summed
exactly, rounded once; each block's result the next one's ``c``; then the zero, overflow and
Inf/NaN rules. The models differ only in where a block's terms come from (``block_sum``):
the products of NVIDIA's :class:`~fpemu.accumulator.BlockFMA`, AMD CDNA3's two stages
(:mod:`.two_stage`), or a block-scaled instruction's scaled products or sub-block sums
(:mod:`.block_scaled`)."""

from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np

from ...arith import aligned_sum, exponent, round_to_odd_sum
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


def product_sum(prods: Products, term_rounding: str, c_bits: int = 23) -> BlockSum:
    """The block sum of a block FMA whose terms are the products: c and every product of the
    block aligned and cut (:func:`fpemu.arith.aligned_sum`), one k at a time.

    Where the products carry their bounds per block (``prods.bound_k``, the blocks of the
    sum), the results whose block provably loses no bit take the exact sum instead: every
    product's lowest set bit (at least the operands' lowest bits added) and c's (``c_bits``
    below its exponent: c is an fp32 or fp16 operand or a result of at most that many
    fraction bits) at or above ``E - F``, with E bounded from the operands' largest
    exponents; that sum is one float64 matrix product of the block (exact while it spans at
    most 53 bits, also checked from the bounds) and c added with one odd rounding. The
    others run the term loop (all of them where they are most)."""

    def loop(s: int, e: int, c: np.ndarray, ec: np.ndarray, F: int | np.ndarray) -> np.ndarray:
        ks = range(s, e)
        # aligned_sum takes each term before it asks for the next: one scratch buffer serves them
        # all (cut in place), c's copy aside; int16 exponents where the products' are (c's fits).
        dtype = prods.exponent_dtype if prods.exponent_dtype == np.int16 else np.int32
        vbuf, ebuf = np.empty(prods.R), np.empty(prods.R, dtype)
        total, _ = aligned_sum(itertools.chain([np.array(c, dtype=np.float64)], (prods.term(k, vbuf) for k in ks)),
                               itertools.chain([ec], (prods.exponent(k, ebuf) for k in ks)), F, term_rounding,
                               prods.headroom, dtype, scratch=True)  # fmt: skip
        return total

    n = prods.bound_k
    if not n:
        return loop
    span = 53 - prods.headroom - math.ceil(math.log2(n))  # bits an exact float64 sum of n products may span

    def block_sum(s: int, e: int, c: np.ndarray, ec: np.ndarray, F: int | np.ndarray) -> np.ndarray:
        if s % n or not s < e <= s + n:  # not one of the bounds' blocks
            return loop(s, e, c, ec, F)
        t = s // n
        high = np.maximum(ec, _outer(np.add, prods.high_a[t], prods.high_b[t], prods.outer))
        low = _outer(np.add, prods.low_a[t], prods.low_b[t], prods.outer)
        fast = (high - low <= np.minimum(F, span)) & ((c == 0) | (ec - c_bits >= high - F))
        count = int(np.count_nonzero(fast))
        if 2 * count < fast.size:  # mostly cut: the loop for all, no gathers
            return loop(s, e, c, ec, F)
        total = round_to_odd_sum(exact_products(prods.a[s:e], prods.b[s:e], prods.outer), c)
        if count < fast.size:
            slow = np.flatnonzero(~fast)
            i, j = np.divmod(slow, prods.b.shape[1]) if prods.outer else (slow, slow)
            F_slow = F if np.ndim(F) == 0 else F[slow]
            total[slow] = product_sum(prods.pairs(i, j, s, e), term_rounding)(0, e - s, c[slow], ec[slow], F_slow)
        return total

    return block_sum


def exact_products(x: np.ndarray, y: np.ndarray, outer: bool) -> np.ndarray:
    """sum_k x[k, i] * y[k, j] for every (i, j) (not ``outer``: i = j only), raveled, for sums
    that are exact in float64 in any order, without BLAS: NumPy's own loop. OpenBLAS's threads,
    spinning after each of these many small products, took the cores from the element-wise
    work between them (a 512x512x4096 GEMM 7x slower on 2 cores).

    >>> exact_products(np.array([[1.0], [2.0]]), np.array([[3.0, 1.0], [4.0, 0.0]]), True).tolist()
    [11.0, 1.0]
    """
    return np.einsum("ki,kj->ij" if outer else "ki,ki->i", x, y).reshape(-1)


def _outer(op: np.ufunc, x: np.ndarray, y: np.ndarray, outer: bool) -> np.ndarray:
    """op of a per-row array of A and a per-column array of B, for each raveled result (not
    ``outer``: row i with column i)."""
    return op(x[:, None], y[None, :]).reshape(-1) if outer else op(x, y)


def _c_bits(t: Target | RowTargets) -> int:
    """The fraction bits a block's c may have: an fp32 or fp16 operand's, or a result's."""
    bits = t.format.mantissa_bits if isinstance(t, Target) else int(np.max(t.frac_bits))
    return max(23, bits)


def _dense_sum(prods: Products, acc: BlockModel, t: Target | RowTargets) -> BlockSum:
    if isinstance(acc, TwoStage):
        return lambda s, e, c, ec, F: late_sum(prods, s, e, c, ec, acc, F)
    return product_sum(prods, acc.term_rounding, _c_bits(t))


def _chain(prods: Products, k0: int, k1: int, c: np.ndarray, acc: BlockModel, t: Target | RowTargets, c_emin: int,
           F: int | np.ndarray | None = None, zero_c: int | np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """A dense block model's blocks over products k0..k1-1 from c (F and the zero-c exponent
    the model's unless given)."""
    return chain_blocks(prods, k0, k1, c, acc.block, _dense_sum(prods, acc, t), t, c_emin,
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
