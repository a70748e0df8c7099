"""The exact model (``kind="exact"``): a long fixed-point accumulator in int64 limbs, read
out rounded to odd at 53 bits so that one final rounding is correct. ``gemm_error`` uses it
for its reference product."""

from __future__ import annotations

import numpy as np

from ...arith import pow2
from .products import Products

_LIMB = 30  # bits per limb of the long accumulator


def exact_sum(prods: Products, k0: int, k1: int, c: np.ndarray) -> np.ndarray:
    """The exact sum of the products and c, rounded to odd at 53 bits (float64).

    A Kulisch-style long accumulator: every term (a float64, 53-bit integer significand m at
    weight 2**q) is added into int64 limbs of 30 bits, vectorised over the R elements; carries
    are propagated once at the end. The limb range is taken from the data.
    """
    R = prods.R
    c = np.where(np.isfinite(c), c, 0.0)
    lo_q, hi_q = _term_range(prods, c)
    base = lo_q - 2 * _LIMB  # two empty limbs below the lowest bit keep the read-out simple
    n_limbs = (hi_q + (k1 - k0 + 2).bit_length() + 2 - base) // _LIMB + 4
    limbs = np.zeros((R, n_limbs), dtype=np.int64)
    rows = np.arange(R) * n_limbs

    def add(v: np.ndarray) -> None:
        mant, e = np.frexp(np.abs(v))
        m = np.ldexp(mant, 53).astype(np.int64)
        offset = np.maximum(e.astype(np.int64) - 53 - base, 0)
        i, sh = offset // _LIMB, offset % _LIMB
        sign = np.where(v < 0, -1, 1)
        low = (m & ((np.int64(1) << (_LIMB - sh)) - 1)) << sh
        rest = m >> (_LIMB - sh)
        flat = limbs.reshape(-1)
        for j, part in enumerate((low, rest & ((1 << _LIMB) - 1), rest >> _LIMB)):
            flat[rows + np.minimum(i + j, n_limbs - 1)] += sign * part

    add(c)
    for k in range(k0, k1):
        add(prods.value(k))
    return _read_limbs(limbs, base)


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


def _read_limbs(limbs: np.ndarray, base: int) -> np.ndarray:
    """Value of signed limb rows as float64, rounded to odd at 53 bits."""
    R, L = limbs.shape
    mask = (1 << _LIMB) - 1

    def normalise(x: np.ndarray) -> np.ndarray:
        x = x.copy()
        for j in range(L - 1):
            carry = x[:, j] >> _LIMB  # floor division: lower limbs end in [0, 2**30)
            x[:, j] &= mask
            x[:, j + 1] += carry
        return x

    x = normalise(limbs)
    negative = x[:, -1] < 0
    x = np.where(negative[:, None], normalise(-x), x)
    nonzero = x != 0
    top = L - 1 - np.argmax(nonzero[:, ::-1], axis=1)  # highest non-zero limb (>= 2 if any)
    top = np.maximum(top, 2)
    pick = lambda j: np.take_along_axis(x, j[:, None], axis=1)[:, 0]  # noqa: E731
    hi = pick(top) * (1 << _LIMB) + pick(top - 1)  # between 2**30 and 2**60
    _, e = np.frexp(hi.astype(np.float64))
    nbits = e - ((hi >> np.maximum(e - 1, 0)) == 0)  # frexp may round up to the next power
    nbits = np.where(hi == 0, 0, nbits)
    # Bring the top to exactly 53 bits: drop low bits (sticky) or pull in bits of limb top-2.
    drop = np.maximum(nbits - 53, 0)
    pull = np.maximum(53 - nbits, 0)
    third = pick(top - 2)
    sticky = (hi & ((np.int64(1) << drop) - 1)) != 0
    sticky |= (third & ((np.int64(1) << np.maximum(_LIMB - pull, 0)) - 1)) != 0
    below = np.cumsum(nonzero, axis=1)
    sticky |= np.take_along_axis(below, np.maximum(top - 3, 0)[:, None], axis=1)[:, 0].astype(bool) & (top >= 3)
    m = np.where(pull > 0, (hi << pull) | (third >> (_LIMB - pull)), hi >> drop)
    m |= sticky.astype(np.int64)  # round to odd
    q = base + _LIMB * (top - 1) + drop - pull
    value = m.astype(np.float64) * pow2(q)
    value = np.where(hi == 0, 0.0, value)
    return np.where(negative, -value, value)
