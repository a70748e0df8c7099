"""One operand of a matrix product, prepared once for the kernels: :class:`Operand`.

Everything is k-major: row k of an array holds element k of every row of A (every column of
B), so a kernel that walks K reads one contiguous row at a time. A piece of rows is a slice of
the second axis (:meth:`Operand.take_rows`), nothing recomputed.

* Plain operands (:func:`element_operand`): the values (Inf and NaN kept, ``raw``; as 0,
  ``finite``) and each value's model exponent, inputs flushed first where the model does.
* Block arrays (:func:`block_operand`): the element codes (K padded with zero codes to the
  model's instruction, a kernel's zero tiles) and, per K-block, the scale as an integer
  significand and the exponent of its leading bit. What a model's kernel streams is made
  here too: a fused model with a term per product gets each element times its scale and that
  term's exponent, with bounds per instruction for the exact fast path; one with sub-block
  terms gets the elements as integers; the exact blockwise model reads the codes slice by
  slice (:meth:`Operand.ints`, :meth:`Operand.values`).

Everything is exact: a product of two fp32 values, or of an element and a scale (at most
4 + 4 significant bits), is a float64, and so is an integer sub-block sum.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ...arith import NO_EXPONENT, exponent
from ...codec import decode
from ...formats import Format
from ...mx.array import BlockArray
from ...mx.formats import BlockFormat
from ...mx.gemm_buffers import k_scales
from ..model import Accumulator, BlockScaledFMA

#: "No set bit": the lowest-bit bound of a row without a non-zero element.
NO_BIT = 1 << 20


@dataclass
class Operand:
    """One operand, k-major (arrays (K, rows), per-block ones (blocks, rows), per-instruction
    ones (instructions, rows)).

    Attributes:
        raw: the values (a block array's: element times scale), Inf and NaN kept.
        finite: the same with Inf and NaN as 0 (``raw`` itself when there are none).
        exponent: each value's model exponent (its floor(log2), clamped at the format's emin;
            :data:`~fpemu.arith.NO_EXPONENT` for a value that takes no part, a zero unless the
            model gives zeros ``zero_exponent``), int16 for plain operands.
        nonfinite: whether any value is Inf or NaN.
        sig_bits: |finite| < 2**(exponent + sig_bits) (2 where a block scale has fraction bits).
        format: the block format (None for plain operands); ``block`` its K-block size.
        codes: (K, rows) element codes; ``scales``: (blocks, rows) scale codes.
        scale_int, scale_exp: each block's scale as ``scale_int * 2**(scale_exp - M)`` (M the
            scale's fraction bits; 0 for a NaN or zero scale, whose exponent is NO_EXPONENT,
            or ``zero_exponent`` for a zero one).
        ints: (K, rows) element values times 2**int_shift, integers (0 for Inf and NaN).
        high, low: (blocks, rows) the largest term exponent and the lowest set bit of any
            non-zero value in each block of ``bound_k`` products along K (a block-scaled
            model's instruction, a dense model's block): the bounds of the exact fast path of
            :func:`~.block.product_sum`; None where the kernel runs without it.
        bound_k: the products per block of ``high`` and ``low`` (0 without them).
    """

    raw: np.ndarray | None
    finite: np.ndarray | None
    exponent: np.ndarray | None
    nonfinite: bool
    sig_bits: int = 1
    format: BlockFormat | None = None
    block: int = 0
    codes: np.ndarray | None = None
    scales: np.ndarray | None = None
    scale_int: np.ndarray | None = None
    scale_exp: np.ndarray | None = None
    ints: np.ndarray | None = None
    high: np.ndarray | None = None
    low: np.ndarray | None = None
    bound_k: int = 0

    @property
    def rows(self) -> int:
        """Rows of A (columns of B) the operand holds."""
        held = self.raw if self.raw is not None else self.codes
        return held.shape[1]

    def take_rows(self, rows: slice | np.ndarray) -> Operand:
        """The same operand restricted to some rows (views for a slice)."""
        part = copy.copy(self)
        for name in ("raw", "finite", "exponent", "codes", "scales", "scale_int", "scale_exp", "ints", "high", "low"):
            value = getattr(self, name)
            if value is not None:
                setattr(part, name, value[:, rows])
        return part

    def ints_at(self, ks: slice) -> np.ndarray:
        """(k, rows) element integers of the K slice ks (block arrays)."""
        return _tables(self.format).ints[self.codes[ks]]

    def largest_int(self) -> int:
        """The largest magnitude an integer of :func:`~.blockwise` can have: an element's,
        times the largest scale significand where the scale has fraction bits (folded in)."""
        largest = int(np.abs(_tables(self.format).ints).max())
        if self.format.scale.mantissa_bits:
            largest *= int(_scale_tables(self.format, None).int.max())
        return largest

    def bad_at(self, j: int, ks: slice) -> np.ndarray:
        """(rows,) whether an Inf or NaN element of the K slice ks, or the NaN scale of its
        K-block j, takes part (block arrays)."""
        return ~_tables(self.format).finite[self.codes[ks]].all(axis=0) | _scale_tables(self.format, None).nan[self.scales[j]]

    def scale_values(self, ks: slice) -> np.ndarray:
        """(k, rows) the scale of each element of the K slice ks, NaN kept (block arrays)."""
        blocks = np.arange(ks.start, ks.stop) // self.block
        return _scale_tables(self.format, None).value[self.scales[blocks]]

    def values(self, ks: slice) -> np.ndarray:
        """(k, rows) element times scale over the K slice ks, Inf and NaN kept (block arrays):
        the IEEE values that decide a result where one of them takes part."""
        with np.errstate(invalid="ignore"):
            return _tables(self.format).value[self.codes[ks]] * self.scale_values(ks)


def element_operand(x_kmajor: np.ndarray, fmt: Format, flush: bool, zero_exponent: int | None) -> Operand:
    """A plain operand (k-major: B of a GEMM as it is, A and dot operands transposed): values
    below the format's smallest normal read as +0 where the model flushes (DAZ, the sign not
    kept); a zero takes ``zero_exponent`` where the model gives it one (MMA-Sim).

    >>> op = element_operand(np.array([[1.5], [0.0]]), Format("fp16", 5, 10, 15), False, -126)
    >>> op.exponent[:, 0].tolist(), op.nonfinite
    ([0, -126], False)
    """
    raw = np.where(np.abs(x_kmajor) < fmt.min_normal, 0.0, x_kmajor) if flush else x_kmajor
    raw = np.ascontiguousarray(raw)
    nonfinite = not np.isfinite(raw).all()
    finite = np.where(np.isfinite(raw), raw, 0.0) if nonfinite else raw
    exps = exponent(raw, fmt.emin).astype(np.int16)
    if zero_exponent is not None:  # MMA-Sim: a zero operand has an exponent too
        exps[raw == 0] = zero_exponent
    return Operand(raw, finite, exps, nonfinite)


def with_bounds(op: Operand, n: int) -> Operand:
    """A plain operand with its fast-path bounds per block of ``n`` products along K (a
    short last block padded with terms that take no part): each block's largest exponent
    and the lowest set bit of its non-zero values.

    >>> op = with_bounds(element_operand(np.array([[1.5], [0.0], [0.25]]), Format("fp16", 5, 10, 15), False, None), 2)
    >>> op.high[:, 0].tolist(), op.low[:, 0].tolist()
    ([0, -2], [-1, -2])
    """
    K, rows = op.finite.shape
    t = -(-K // n)
    pad = ((0, t * n - K), (0, 0))
    high = np.pad(op.exponent.astype(np.int32), pad, constant_values=NO_EXPONENT).reshape(t, n, rows).max(axis=1)
    low = np.pad(_lowest_bits(op.finite), pad, constant_values=NO_BIT).reshape(t, n, rows).min(axis=1)
    bounded = copy.copy(op)
    bounded.high, bounded.low, bounded.bound_k = high, low, n
    return bounded


def block_operand(q: BlockArray, k_axis: int, model: Accumulator) -> Operand:
    """A block array as ``model`` reads it: A (k_axis 1) or B (k_axis 0) of a product, its
    rows (A's) or columns (B's) K-major, with one scale per (row, K-block) (a 2-D tile's for
    each of its rows), K padded with zero codes to whole instructions of a fused model."""
    codes = (q.codes if k_axis == 1 else q.codes.T).astype(np.intp)  # (rows, K)
    scales = k_scales(q, k_axis)
    scales = scales if k_axis == 1 else scales.T  # (rows, blocks)
    fused = isinstance(model, BlockScaledFMA)
    zero_exponent = model.zero_exponent if fused else None
    ik = model.instruction_k if fused else 1
    k = codes.shape[1]
    kp = -(-k // ik) * ik if k else ik  # no products: one instruction of zero padding
    block = q.block_shape[q.axes.index(k_axis)]
    nb = -(-kp // block)
    codes = np.ascontiguousarray(np.pad(codes, ((0, 0), (0, kp - k))).T)
    scales = np.ascontiguousarray(np.pad(scales.astype(np.intp), ((0, 0), (0, nb - scales.shape[1]))).T)
    table = _scale_tables(q.format, zero_exponent)
    op = Operand(None, None, None, False, 1 + int(q.format.scale.mantissa_bits > 0), q.format, block, codes, scales,
                 table.int[scales], table.exponent[scales])  # fmt: skip
    if fused:
        _terms(op, model)
    return op


def _terms(op: Operand, model: BlockScaledFMA) -> None:
    """What a fused model's kernel streams: the values (for the specials), and the product
    terms with their bounds (``term_exponent="product"``) or the element integers."""
    elements, scales = _tables(op.format), _scale_tables(op.format, model.zero_exponent)
    blocks = np.arange(op.codes.shape[0]) // op.block
    s = op.scales[blocks]  # (K, rows): each element's scale code
    with np.errstate(invalid="ignore"):
        op.raw = elements.value[op.codes] * scales.value[s]
    op.nonfinite = not np.isfinite(op.raw).all()
    if model.term_exponent == "scale":
        op.ints = elements.float_ints[op.codes]  # float64 integers: the sub-block sums are float64 products
        op.finite = np.where(np.isfinite(op.raw), op.raw, 0.0) if op.nonfinite else op.raw
        return
    ev0 = elements.finite_value[op.codes]
    op.finite = ev0 * scales.finite_value[s]
    zero_exp = NO_EXPONENT if model.zero_exponent is None else model.zero_exponent
    e_elem = np.where(elements.finite_value == 0, zero_exp, elements.exponent)[op.codes]
    dropped = ~elements.finite[op.codes] | scales.nan[s]
    if model.zero_exponent is None:
        dropped |= op.finite == 0
    op.exponent = np.where(dropped, NO_EXPONENT, e_elem + scales.exponent[s]).astype(np.int32)
    ik = model.instruction_k
    t = op.codes.shape[0] // ik
    op.high = op.exponent.reshape(t, ik, -1).max(axis=1)
    low = np.where(op.finite == 0, NO_BIT, elements.low[op.codes] + scales.low[s])
    op.low = low.reshape(t, ik, -1).min(axis=1)
    op.bound_k = ik


@dataclass(frozen=True)
class _ElementTable:
    value: np.ndarray  # every code's value, Inf and NaN kept
    finite: np.ndarray
    finite_value: np.ndarray  # Inf and NaN as 0
    exponent: np.ndarray  # floor(log2) clamped at emin (NO_EXPONENT for 0 and Inf/NaN)
    low: np.ndarray  # the exponent of the lowest set bit (NO_BIT for 0 and Inf/NaN)
    ints: np.ndarray  # value * 2**int_shift, int64 (0 for Inf/NaN)
    float_ints: np.ndarray  # the same as float64


@dataclass(frozen=True)
class _ScaleTable:
    value: np.ndarray  # every scale code's value, NaN kept
    nan: np.ndarray
    finite_value: np.ndarray  # NaN and zero as 0
    exponent: np.ndarray  # floor(log2) clamped at emin; a zero's is zero_exponent (or NO_EXPONENT), NaN's NO_EXPONENT
    int: np.ndarray  # the significand times 2**M, int64 (0 for a zero or NaN scale)
    low: np.ndarray


_ELEMENTS: dict[BlockFormat, _ElementTable] = {}
_SCALES: dict[tuple[BlockFormat, int | None], _ScaleTable] = {}


def _tables(bf: BlockFormat) -> _ElementTable:
    """Every element code of a block format, tabulated once."""
    if bf not in _ELEMENTS:
        fmt = bf.element
        value = decode(np.arange(1 << fmt.bits), fmt)
        finite = np.isfinite(value)
        v0 = np.where(finite, value, 0.0)
        ints = np.ldexp(v0, bf.int_shift).astype(np.int64)
        _ELEMENTS[bf] = _ElementTable(value, finite, v0, exponent(v0, fmt.emin), _lowest_bits(v0), ints,
                                      ints.astype(np.float64))
    return _ELEMENTS[bf]


def _scale_tables(bf: BlockFormat, zero_exponent: int | None) -> _ScaleTable:
    """Every scale code of a block format, tabulated once per zero exponent (E8M0 has no zero;
    UE4M3's 0x00 is one)."""
    key = (bf, zero_exponent)
    if key not in _SCALES:
        fmt = bf.scale
        value = decode(np.arange(1 << fmt.bits), fmt)
        nan, zero = np.isnan(value), value == 0
        exps = np.where(zero, NO_EXPONENT if zero_exponent is None else zero_exponent, exponent(value, fmt.emin))
        finite = np.where(nan | zero, 0.0, value)
        unit = np.ldexp(1.0, np.where(zero | nan, 0, exps))
        ints = np.ldexp(finite / unit, fmt.mantissa_bits).astype(np.int64)
        _SCALES[key] = _ScaleTable(value, nan, finite, exps.astype(np.int32), ints, _lowest_bits(finite))
    return _SCALES[key]


def _lowest_bits(v: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set bit of finite dyadic v (NO_BIT for zero and non-finite).

    >>> _lowest_bits(np.array([1.5, 4.0, 0.0])).tolist()
    [-1, 2, 1048576]
    """
    finite = np.isfinite(v) & (v != 0)
    m, e = np.frexp(np.where(finite, v, 1.0))
    ints = np.abs(m * 2.0**53).astype(np.int64)  # the significand as a 53-bit integer
    tz = np.zeros(ints.shape, np.int32)
    for shift in (32, 16, 8, 4, 2, 1):  # trailing zeros, by halving
        empty = (ints & ((1 << shift) - 1)) == 0
        tz += np.where(empty, shift, 0).astype(np.int32)
        ints = np.where(empty, ints >> shift, ints)
    return np.where(finite, e.astype(np.int32) - 53 + tz, NO_BIT).astype(np.int32)
