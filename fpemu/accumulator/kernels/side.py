"""One operand of a fused block-scaled model, prepared once: its rows (M of A; N of B, read
K-major as the kernel reads it) zero-padded to whole instructions, with each element's value,
exponent and lowest set bit, each block's scale as significand and exponent, and which
(row, instruction) pairs hold a NaN or Inf.

Everything is exact: an element value times a scale (at most 4 + 4 significant bits, exponent
within +-300) is a float64, and so is an FP4 sub-block sum as an integer.
"""

from __future__ import annotations

import copy

import numpy as np

from ...arith import NO_EXPONENT, exponent
from ...codec import decode
from ...mx.array import BlockArray
from ...mx.gemm_buffers import k_scales
from ..model import BlockScaledAccumulator

#: "No set bit": the lowest-bit bound of a row without a non-zero element.
NO_BIT = 1 << 20


def _lowest_bits(v: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set bit of finite dyadic v (NO_BIT for zero and non-finite)."""
    finite = np.isfinite(v) & (v != 0)
    m, e = np.frexp(np.where(finite, v, 1.0))
    ints = np.abs(m * 2.0**53).astype(np.int64)  # the significand as a 53-bit integer
    tz = np.zeros(ints.shape, np.int32)
    for shift in (32, 16, 8, 4, 2, 1):  # trailing zeros, by halving
        empty = (ints & ((1 << shift) - 1)) == 0
        tz += np.where(empty, shift, 0).astype(np.int32)
        ints = np.where(empty, ints >> shift, ints)
    return np.where(finite, e.astype(np.int32) - 53 + tz, NO_BIT).astype(np.int32)


class _ScaleTable:
    """Every scale code of a format: value, significand, exponent, lowest set bit, and whether
    it is NaN or zero (E8M0 has no zero; UE4M3's 0x00 is one)."""

    def __init__(self, q: BlockArray, zero_exponent: int | None) -> None:
        fmt = q.format.scale
        codes = np.arange(1 << fmt.bits)
        value = decode(codes, fmt)
        self.nan = np.isnan(value)
        self.zero = value == 0
        self.exponent = np.where(self.zero, NO_EXPONENT if zero_exponent is None else zero_exponent,
                                 exponent(value, fmt.emin)).astype(np.int32)  # NaN: NO_EXPONENT
        finite = np.where(self.nan, 0.0, value)
        unit = np.ldexp(1.0, np.where(self.zero | ~np.isfinite(value), 0, self.exponent))
        self.significand = np.where(self.zero, 0.0, finite / unit)
        self.value = value
        self.low = _lowest_bits(finite)
        self.has_fraction = fmt.mantissa_bits > 0


class Side:
    """One operand of a fused model: ``rows`` x ``kp`` elements (K padded to whole
    instructions), per block scales, and per (row, instruction) bounds and specials.

    Attributes (all (rows, kp) unless said):
        value: element times its block's scale, float64 (0 where NaN/Inf takes part).
        exponent: the term exponent of that element for ``term_exponent="product"`` (its own
            floor(log2) plus the scale's; zeros by ``zero_exponent``; NO_EXPONENT if dropped).
        ints: element values times 2**int_shift (integers as float64; 0 for NaN/Inf).
        scale_sig, scale_exp: (rows, blocks) scale significand and exponent.
        high, low: (rows, instructions) the largest ``exponent`` and the lowest set bit of any
            non-zero ``value`` in the instruction (bounds for the exact fast path).
        bad: (rows, instructions) a NaN or Inf element or a NaN scale takes part.
    """

    def __init__(self, q: BlockArray, k_axis: int, model: BlockScaledAccumulator) -> None:
        codes = q.codes if k_axis == 1 else q.codes.T
        scales = k_scales(q, k_axis)
        scales = scales if k_axis == 1 else scales.T
        ik = model.instruction_k
        k = codes.shape[1]
        self.rows, self.k = codes.shape[0], k
        self.kp = -(-k // ik) * ik if k else ik
        self.block = q.block_shape[q.axes.index(k_axis)]
        nb = -(-self.kp // self.block)
        codes = np.pad(codes.astype(np.intp), ((0, 0), (0, self.kp - k)))
        scales = np.pad(scales.astype(np.intp), ((0, 0), (0, nb - scales.shape[1])))
        self.format = q.format
        self.codes, self.scales = codes, scales
        self.table = _ScaleTable(q, model.zero_exponent)
        blocks = np.arange(self.kp) // self.block
        self._elements(model, blocks)
        t = self.kp // ik
        bad = ~self.element_finite[codes] | self.table.nan[scales][:, blocks]
        self.bad = bad.reshape(self.rows, t, ik).any(axis=2)

    def _elements(self, model: BlockScaledAccumulator, blocks: np.ndarray) -> None:
        fmt = self.format.element
        ev = decode(np.arange(1 << fmt.bits), fmt)
        self.element_finite = np.isfinite(ev)
        ev0 = np.where(self.element_finite, ev, 0.0)
        tab, s = self.table, self.scales
        self.scale_sig = np.where(tab.nan[s], 0.0, tab.significand[s])
        self.scale_exp = tab.exponent[s]
        if model.term_exponent == "scale":
            self.ints = np.ldexp(ev0, self.format.int_shift)[self.codes]
            return
        scale_value = np.where(tab.nan, 0.0, np.where(tab.zero, 0.0, tab.value))[s][:, blocks]
        self.value = ev0[self.codes] * scale_value
        zero_exp = NO_EXPONENT if model.zero_exponent is None else model.zero_exponent
        e_elem = np.where(ev0 == 0, zero_exp, exponent(ev0, fmt.emin)).astype(np.int32)
        e_term = e_elem[self.codes] + self.scale_exp[:, blocks]
        dropped = ~self.element_finite[self.codes] | tab.nan[s][:, blocks]
        if model.zero_exponent is None:
            dropped |= self.value == 0
        self.exponent = np.where(dropped, NO_EXPONENT, e_term).astype(np.int32)
        self.sig_bits = 1 + int(tab.has_fraction)  # |value| < 2**(exponent + sig_bits)
        ik = model.instruction_k
        t = self.kp // ik
        self.high = self.exponent.reshape(self.rows, t, ik).max(axis=2)
        low = _lowest_bits(ev0)[self.codes] + tab.low[s][:, blocks]
        low = np.where(self.value == 0, NO_BIT, low)
        self.low = low.reshape(self.rows, t, ik).min(axis=2)

    def take_rows(self, rows: slice) -> "Side":
        """The same operand restricted to some rows (views, nothing recomputed)."""
        part = copy.copy(self)
        for name in ("codes", "scales", "value", "exponent", "ints", "scale_sig", "scale_exp", "high", "low", "bad"):
            if hasattr(self, name):
                setattr(part, name, getattr(self, name)[rows])
        part.rows = part.codes.shape[0]
        return part

    def raw(self, rows: np.ndarray, ks: slice) -> np.ndarray:
        """Elements times scales with their NaN and Inf, (len(rows), k) float64: the IEEE
        values that decide a result where one of them takes part."""
        fmt = self.format.element
        ev = decode(np.arange(1 << fmt.bits), fmt)
        blocks = np.arange(ks.start, ks.stop) // self.block
        sv = self.table.value[self.scales[rows][:, blocks]]
        with np.errstate(invalid="ignore"):
            return ev[self.codes[rows, ks]] * sv
