"""Products: a source of (value, exponent) blocks for every output element, and the rule
for Inf and NaN products and accumulators (every model shares it)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...arith import exponent
from ...formats import Format

#: Products of this magnitude overflow in models with ``product_overflow`` (beyond fp32).
_PRODUCT_LIMIT = 2.0**128


def _flush_inputs(v: np.ndarray, fmt: Format) -> np.ndarray:
    """Inputs below the format's smallest normal read as +0 (DAZ; the sign is not kept)."""
    return np.where(np.abs(v) < fmt.min_normal, 0.0, v)


class Products:
    """Exact products for R output elements, handed out one k at a time.

    ``value(k)`` is the float64 product for every element (exact; non-finite products are
    replaced by 0 and handled by ``special``), ``exponent(k)`` its model exponent e_a + e_b
    (int16; for a zero product ``arith.NO_EXPONENT`` plus the partner's, far below any real
    one, or ``zero_exponent`` plus the partner's exponent when a zero operand has one). Both
    are computed on demand, so a GEMM never holds more than a few (R,) arrays: R is kept
    cache-sized by the caller. A GEMM prepares B once
    (:func:`prepare_operand`) and hands it to every chunk of rows of A.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray | _Operand, fa: Format, fb: Format, outer: bool, flush: bool,
                 zero_exponent: int | None = None, lane_ordered: bool = False):  # fmt: skip
        # gemm: a (M, K), b (K, N), element (i, j) uses a[i, k] * b[k, j];
        # dot: a, b (R, K), element r uses a[r, k] * b[r, k].
        self.outer = outer
        self.lane_ordered = lane_ordered  # k already in the model's lane order (the caller did it)
        opa = prepare_operand(a.T, fa, flush, zero_exponent)
        opb = b if isinstance(b, _Operand) else prepare_operand(b if outer else b.T, fb, flush, zero_exponent)
        self.nonfinite = opa.nonfinite or opb.nonfinite
        self.a_raw, self.a, self.ea = opa.raw, opa.finite, opa.exponent
        self.b_raw, self.b, self.eb = opb.raw, opb.finite, opb.exponent
        self.K = self.a.shape[0]
        self.R = a.shape[0] * self.b.shape[1] if outer else a.shape[0]

    def reordered(self, order: np.ndarray) -> Products:
        """The same products with k taken in ``order`` (a permutation of 0..K-1)."""
        new = object.__new__(Products)
        new.__dict__.update(self.__dict__)
        new.lane_ordered = True
        for name in ("a_raw", "b_raw", "a", "b", "ea", "eb"):
            setattr(new, name, getattr(self, name)[order])
        return new

    def tiled(self, n: int) -> Products:
        """The products of a dot's rows repeated n times (row i + j R is row i): one set of
        operands for n models at once (``fpemu.fit``), prepared once."""
        if self.outer:
            raise ValueError("tiled() repeats the rows of a dot's products, not a GEMM's")
        new = object.__new__(Products)
        new.__dict__.update(self.__dict__)
        for name in ("a_raw", "b_raw", "a", "b", "ea", "eb"):
            setattr(new, name, np.tile(getattr(self, name), (1, n)))  # k-major: rows are columns
        new.R = self.R * n
        return new

    def _pair(self, x: np.ndarray, y: np.ndarray, k: int, op) -> np.ndarray:
        if self.outer:
            return op(x[k][:, None], y[k][None, :]).reshape(-1)
        return op(x[k], y[k])

    def value(self, k: int) -> np.ndarray:
        return self._pair(self.a, self.b, k, np.multiply)

    def exponent(self, k: int) -> np.ndarray:
        return self._pair(self.ea, self.eb, k, np.add)

    def values(self, k0: int, k1: int) -> np.ndarray:
        """Products k0..k1-1 stacked, shape (k1 - k0, R)."""
        return np.stack([self.value(k) for k in range(k0, k1)]) if k1 > k0 else np.zeros((0, self.R))

    def raw_value(self, k: int) -> np.ndarray:
        """The float64 product with its Inf and NaN (Inf*0 is NaN)."""
        with np.errstate(invalid="ignore"):
            return self._pair(self.a_raw, self.b_raw, k, np.multiply)

    def overflow(self, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
        """Whether some finite product of k0..k1-1 reaches +2**128, and -2**128."""
        pos, neg = np.zeros(self.R, dtype=bool), np.zeros(self.R, dtype=bool)
        for k in range(k0, k1):
            v = self.value(k)
            pos |= v >= _PRODUCT_LIMIT
            neg |= v <= -_PRODUCT_LIMIT
        return pos, neg

    def special(self, k0: int, k1: int) -> np.ndarray:
        total = np.zeros(self.R)
        with np.errstate(invalid="ignore"):
            for k in range(k0, k1):
                total += self._pair(self.a_raw, self.b_raw, k, np.multiply)
        return total


class _Operand(NamedTuple):
    """One operand, k-major (one k is a contiguous row): its values, the same with Inf/NaN
    as 0, its model exponents (int16), and whether it holds Inf/NaN."""

    raw: np.ndarray
    finite: np.ndarray
    exponent: np.ndarray
    nonfinite: bool


def prepare_operand(x_kmajor: np.ndarray, fmt: Format, flush: bool, zero_exponent: int | None) -> _Operand:
    """An operand prepared once (k-major: B of a GEMM as it is, A and dot operands transposed)."""
    raw = np.ascontiguousarray(_flush_inputs(x_kmajor, fmt) if flush else x_kmajor)
    nonfinite = not np.isfinite(raw).all()
    finite = np.where(np.isfinite(raw), raw, 0.0) if nonfinite else raw
    exps = exponent(raw, fmt.emin).astype(np.int16)
    if zero_exponent is not None:  # MMA-Sim: a zero operand has an exponent too
        exps[raw == 0] = zero_exponent
    return _Operand(raw, finite, exps, nonfinite)


def with_specials(prods: Products, k0: int, k1: int, c: np.ndarray, result: np.ndarray) -> np.ndarray:
    """Where a product or c is Inf/NaN, the answer is their float64 sum (NaN for NaN inputs,
    Inf*0 and Inf-Inf; otherwise the Inf)."""
    bad_c = ~np.isfinite(c)
    if not (prods.nonfinite or bad_c.any()):
        return result
    with np.errstate(invalid="ignore"):
        s = prods.special(k0, k1) + c
    return np.where(np.isfinite(s), result, s)
