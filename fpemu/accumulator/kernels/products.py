"""Products: the exact products of two operands (:mod:`.operand`) for every result, handed out
one k at a time, and the rule for Inf and NaN products and accumulators that every model
shares (:func:`with_specials`)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...formats import Format
from .operand import Operand, element_operand, with_bounds

#: Products of this magnitude overflow in models with ``product_overflow`` (beyond fp32).
_PRODUCT_LIMIT = 2.0**128


class Products:
    """Exact products for R results, handed out one k at a time.

    A GEMM pairs every row of A with every column of B (``outer``: R = rows x columns, the
    result raveled), a dot row i of a with row i of b (R = rows). ``value(k)`` is the float64
    product for every result (exact; a non-finite product is 0, the specials decide it),
    ``exponent(k)`` its model exponent, the operands' exponents added (a zero product's far
    below any real one, :data:`~fpemu.arith.NO_EXPONENT` twice, unless a zero operand has an
    exponent of its own). Both are computed on demand, so a product never holds more than a
    few (R,) arrays: R is kept cache-sized by the caller (:mod:`..pieces`). ``headroom``:
    |value(k)| < 2**(exponent(k) + headroom). ``bound_k``: where both operands carry their
    bounds per block of that many products (:attr:`.operand.Operand.high`, ``low``), the
    block sums may take the exact fast path (:func:`.block.product_sum`); 0 otherwise.
    """

    def __init__(self, a: Operand, b: Operand, outer: bool, lane_ordered: bool = False) -> None:
        self.outer = outer
        self.lane_ordered = lane_ordered  # k already in the model's lane order (the caller did it)
        self.nonfinite = a.nonfinite or b.nonfinite
        self.a_raw, self.a, self.ea = a.raw, a.finite, a.exponent
        self.b_raw, self.b, self.eb = b.raw, b.finite, b.exponent
        self.headroom = a.sig_bits + b.sig_bits
        self.K = a.raw.shape[0]
        self.R = a.rows * b.rows if outer else a.rows
        bounded = a.high is not None and b.high is not None and a.bound_k == b.bound_k
        self.bound_k = a.bound_k if bounded else 0
        self.high_a, self.low_a, self.high_b, self.low_b = (a.high, a.low, b.high, b.low) if bounded else (None,) * 4

    def _arrays(self) -> tuple[str, ...]:
        return ("a_raw", "b_raw", "a", "b", "ea", "eb")

    def reordered(self, order: np.ndarray) -> Products:
        """The same products with k taken in ``order`` (a permutation of 0..K-1)."""
        new = object.__new__(Products)
        new.__dict__.update(self.__dict__)
        new.lane_ordered = True
        new.bound_k = 0  # the bounds are per block of the old order
        for name in self._arrays():
            setattr(new, name, getattr(self, name)[order])
        return new

    def tiled(self, n: int) -> Products:
        """The products of a dot's rows repeated n times (row i + j R is row i): one set of
        operands for n models at once (``fpemu.fit``), prepared once."""
        if self.outer:
            raise ValueError("tiled() repeats the rows of a dot's products, not a GEMM's")
        new = object.__new__(Products)
        new.__dict__.update(self.__dict__)
        for name in self._arrays():
            setattr(new, name, np.tile(getattr(self, name), (1, n)))  # k-major: rows are columns
        new.R, new.bound_k = self.R * n, 0
        return new

    def pairs(self, i: np.ndarray, j: np.ndarray, k0: int, k1: int) -> Products:
        """The products k0..k1-1 of the results that pair row i of A with column j of B only
        (a dot's row i: i and j alike), as a dot's products of len(i) rows."""
        new = object.__new__(Products)
        new.__dict__.update(self.__dict__)
        for name, rows in zip(self._arrays(), (i, j) * 3):
            value = getattr(self, name)
            setattr(new, name, None if value is None else value[k0:k1][:, rows])
        new.outer, new.K, new.R, new.bound_k = False, k1 - k0, len(i), 0
        return new

    def _pair(self, x: np.ndarray, y: np.ndarray, k: int, op: Callable, out: np.ndarray | None = None) -> np.ndarray:
        if self.outer:
            shaped = None if out is None else out.reshape(x.shape[1], y.shape[1])
            return op(x[k][:, None], y[k][None, :], out=shaped).reshape(-1)
        return op(x[k], y[k], out=out)

    def value(self, k: int) -> np.ndarray:
        return self._pair(self.a, self.b, k, np.multiply)

    def term(self, k: int, out: np.ndarray) -> np.ndarray:
        """The products k as terms of an aligned sum, into ``out`` (float64, (R,)): the values
        of :meth:`value`, but a zero's sign is not kept (a GEMM's outer product by einsum, twice
        as fast as broadcasting np.multiply; the aligned sum starts from +0, where a zero term
        adds nothing whatever its sign)."""
        if self.outer:
            np.einsum("i,j->ij", self.a[k], self.b[k], out=out.reshape(self.a.shape[1], self.b.shape[1]))
            return out
        return np.multiply(self.a[k], self.b[k], out=out)

    def exponent(self, k: int, out: np.ndarray | None = None) -> np.ndarray:
        """The products' exponents k (R,), into ``out`` (of :attr:`exponent_dtype`) where given."""
        return self._pair(self.ea, self.eb, k, np.add, out)

    @property
    def exponent_dtype(self) -> np.dtype:
        return np.result_type(self.ea, self.eb)

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

    def touched(self, k0: int, k1: int) -> np.ndarray:
        """(R,) whether an Inf or NaN operand value takes part in products k0..k1-1."""
        bad_a = ~np.isfinite(self.a_raw[k0:k1]).all(axis=0)
        bad_b = ~np.isfinite(self.b_raw[k0:k1]).all(axis=0)
        return (bad_a[:, None] | bad_b[None, :]).reshape(-1) if self.outer else bad_a | bad_b

    def special(self, k0: int, k1: int, where: np.ndarray) -> np.ndarray:
        """The float64 sum of products k0..k1-1 of the results ``where`` (indices), Inf and NaN
        kept: the IEEE value that decides a result an Inf or NaN takes part in."""
        i, j = np.divmod(where, self.b_raw.shape[1]) if self.outer else (where, where)
        with np.errstate(invalid="ignore"):
            return (self.a_raw[k0:k1][:, i] * self.b_raw[k0:k1][:, j]).sum(axis=0)


def element_products(a: np.ndarray, b: np.ndarray | Operand, fa: Format, fb: Format, outer: bool, flush: bool,
                     zero_exponent: int | None = None, lane_ordered: bool = False, bound_k: int = 0) -> Products:  # fmt: skip
    """The products of plain operands: a GEMM's A (M, K) and B (K, N), or a dot's a and b
    (R, K); B may be an Operand already (prepared once for every piece of A's rows). With
    ``bound_k``, A gets its bounds per block of that many products (B too, unless it is an
    Operand already, which carries its own).

    >>> from fpemu.formats import get_format
    >>> p = element_products(np.array([[2.0, 3.0]]), np.array([[4.0], [0.5]]), get_format("fp16"),
    ...                      get_format("fp16"), True, False)
    >>> p.value(0).tolist(), p.value(1).tolist(), p.exponent(1).tolist()
    ([8.0], [1.5], [0])
    """
    opa = element_operand(a.T, fa, flush, zero_exponent)
    opb = b if isinstance(b, Operand) else element_operand(b if outer else b.T, fb, flush, zero_exponent)
    if bound_k:
        opa = with_bounds(opa, bound_k)
        opb = opb if isinstance(b, Operand) else with_bounds(opb, bound_k)
    return Products(opa, opb, outer, lane_ordered)


def with_specials(prods: Products, k0: int, k1: int, c: np.ndarray, result: np.ndarray) -> np.ndarray:
    """Where a product or c is Inf/NaN, the answer is their float64 sum (NaN for NaN inputs,
    Inf*0 and Inf-Inf; otherwise the Inf), whatever the model did with the finite terms.

    >>> from fpemu.formats import get_format
    >>> f = get_format("fp32")
    >>> p = element_products(np.array([[np.inf, 1.0], [1.0, 1.0]]), np.array([[1.0, 1.0], [0.0, 1.0]]), f, f,
    ...                      False, False)
    >>> with_specials(p, 0, 2, np.array([0.0, -np.inf]), np.array([1.0, 2.0])).tolist()
    [inf, -inf]
    """
    bad_c = ~np.isfinite(c)
    if not (prods.nonfinite or bad_c.any()):
        return result
    bad = bad_c | prods.touched(k0, k1) if prods.nonfinite else bad_c
    where = np.flatnonzero(bad)
    if where.size == 0:
        return result
    with np.errstate(invalid="ignore"):
        s = prods.special(k0, k1, where) + c[where]
    out = np.array(result, dtype=np.float64)
    out[where] = np.where(np.isfinite(s), out[where], s)
    return out
