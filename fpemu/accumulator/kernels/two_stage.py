"""The two-stage fused sum of a block (:class:`~fpemu.accumulator.TwoStage`), as MMA-Sim models AMD CDNA3: the products
(in one lane, or even and odd lanes apart) aligned to their largest exponent and cut; the
lanes combined; then the product sum and ``c`` aligned to the larger of their exponents, each
cut to its own kept bits (``c`` dropped when far below), and added exactly.

The first CDNA3 guess (``sum_frac_bits`` None: the partial sums realigned at their leading
bit, every cut with ``F`` bits) stays available, as ``fpemu.fit`` searches it.
"""

from __future__ import annotations

import numpy as np

from ...arith import NO_EXPONENT, aligned_sum, cut_below, exponent
from ..model import TwoStage
from .products import Products


def _lanes(s: int, e: int, even_odd: bool) -> list[range]:
    """The product indices of each lane (an empty lane is left out, as zero padding would
    add nothing to it).

    >>> _lanes(16, 21, True), _lanes(4, 5, True)
    ([range(16, 21, 2), range(17, 21, 2)], [range(4, 5, 2)])
    """
    lanes = [range(s, e, 2), range(s + 1, e, 2)] if even_odd else [range(s, e)]
    return [ks for ks in lanes if len(ks)]


def late_sum(prods: Products, s: int, e: int, c: np.ndarray, ec: np.ndarray, acc: TwoStage,
             F: int | np.ndarray | None = None) -> np.ndarray:
    """The exact (float64) value of one two-stage block: products s..e-1 and accumulator c
    (finite, exponent ec), before the final rounding; ``F``: the model's ``frac_bits``, or
    one a row (:func:`~.block.block_rows`).

    >>> from ..lookup import get_accumulator
    >>> from .products import element_products
    >>> from ...formats import get_format
    >>> bf16 = get_format("bf16")
    >>> p = element_products(np.array([[2.0**-24]]), np.array([[1 + 2**-7]]), bf16, bf16, False, False, -126)
    >>> late_sum(p, 0, 1, np.array([1.0]), np.array([0]), get_accumulator("mi300", "bf16")) == 1 + 2**-24 + 2**-31
    array([ True])
    """
    F = acc.frac_bits if F is None else F
    sums, exps = [], []
    for ks in _lanes(s, e, acc.even_odd):
        v, E = aligned_sum((prods.value(k) for k in ks), (prods.exponent(k) for k in ks), F, acc.term_rounding)
        sums.append(v)
        exps.append(E)
    if acc.sum_frac_bits is None:  # the first guess: partial sums at their leading bit
        vals = [c] + sums
        lead = [ec] + [exponent(v) for v in sums]
        return aligned_sum(vals, lead, F, acc.term_rounding)[0]
    if not sums:  # no products at all (K = 0): c alone, cut like any c
        sums, exps = [np.zeros_like(c)], [np.full(c.shape, NO_EXPONENT, dtype=np.int32)]
    Ep = exps[0].copy()
    for E in exps[1:]:
        np.maximum(Ep, E, out=Ep)
    if acc.lane_frac_bits is not None:
        sums = [cut_below(v, Ep, acc.lane_frac_bits, acc.late_rounding) for v in sums]
    S = sums[0] if len(sums) == 1 else sums[0] + sums[1]  # exact: both on Ep's grid
    M = np.maximum(Ep, ec)
    total = cut_below(S, M, acc.sum_frac_bits, acc.late_rounding)
    cf = acc.sum_frac_bits if acc.c_frac_bits is None else acc.c_frac_bits
    c_cut = cut_below(c, M, cf, acc.late_rounding)
    if acc.c_window is not None:
        c_cut = np.where(ec < M - acc.c_window, 0.0, c_cut)
    return total + c_cut  # exact: two terms on M's grid, at most 52 bits
