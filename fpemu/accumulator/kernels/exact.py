"""The exact dense model (:class:`~fpemu.accumulator.Exact`): every product and ``c`` added to
the one exact long sum (:mod:`.long_sum`), read out rounded to odd at 53 bits so that one final
rounding is correct, with IEEE 754's sign of zero. ``gemm_error`` uses it for its reference
product."""

from __future__ import annotations

import numpy as np

from collections.abc import Callable

from ..pieces import told_stretches
from .long_sum import LongSum
from .products import Products


def exact_sum(prods: Products, k0: int, k1: int, c: np.ndarray, tick: Callable[[int], None] | None = None,
              parts: int = 0) -> np.ndarray:
    """The exact sum of the products and c, rounded to odd at 53 bits (float64): every term
    added to the one long sum (:class:`.long_sum.LongSum`), vectorised over the R results,
    its limbs spanning the range the data have. ``tick(1)`` is called ``parts`` times in all
    as the terms go in (a progress bar's steps over a long K)."""
    c = np.where(np.isfinite(c), c, 0.0)
    lo_q, hi_q = _term_range(prods, c)
    total = LongSum(prods.R, lo_q, hi_q, k1 - k0)
    total.add_floats(c)
    for s, e in told_stretches(k0, k1, 1, parts, tick):
        for k in range(s, e):
            total.add_floats(prods.value(k))
    return total.read()


def signed_zero(prods: Products, k0: int, k1: int, c: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    """The rounded exact sum with IEEE 754's sign of zero (RNE): a non-zero sum that rounds to
    zero keeps its sign (``rounded`` has it already); an exact zero is -0 only when every term,
    c and each product, is -0 (-0 + -0 = -0), and +0 otherwise (1 - 1 = +0, +0 + -0 = +0).

    >>> from .products import element_products
    >>> from ...formats import get_format
    >>> f = get_format("fp32")
    >>> p = element_products(np.array([[-0.0, 0.0], [0.0, -0.0], [1.0, -1.0]]), np.array([[1.0, -1.0], [1.0, 1.0], [1.0, 1.0]]),
    ...               f, f, False, False)
    >>> np.signbit(signed_zero(p, 0, 2, np.array([-0.0, -0.0, -0.0]), np.zeros(3))).tolist()
    [True, False, False]
    """
    negative = (c == 0) & np.signbit(c)
    for k in range(k0, k1):
        v = prods.value(k)
        negative &= (v == 0) & np.signbit(v)
    zero = np.where(negative, -0.0, 0.0)
    return np.where(rounded == 0, np.where(np.signbit(rounded), rounded, zero), rounded)


def _term_range(prods: Products, c: np.ndarray) -> tuple[int, int]:
    """Lowest bit weight and highest exponent any term can have (float64 frexp terms)."""

    def span(v: np.ndarray) -> tuple[int, int]:
        nz = v[(v != 0) & np.isfinite(v)]
        if nz.size == 0:
            return 0, 0
        _, e = np.frexp(nz)
        return int(e.min()) - 53, int(e.max())

    la, ha = span(prods.a)
    lb, hb = span(prods.b)
    lc, hc = span(c)
    return min(la + lb, lc), max(ha + hb, hc)
