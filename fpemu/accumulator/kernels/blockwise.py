"""The exact model of block dot products (:class:`~fpemu.accumulator.Blockwise`, what
``accumulator="exact"`` gives block arrays): the OCP Dot/DotGeneral with each K-block summed
exactly and rounded once to float32."""

from __future__ import annotations

import copy

import numpy as np

from ...arith import round_to_odd_sum
from ...codec import decode
from ...mx.array import BlockArray
from ...mx.elements import element_table, int_table
from ...mx.gemm_buffers import k_scales
from ...mx.mx_scales import pow2_from_e8m0
from ...parallel import run_each
from ..operands import check_block_matmul


#: K elements per exact partial sum: products below 2**48, so 2**14 of them stay below 2**62.
_K_PART = 1 << 14


def _exact_sums_odd(ia: np.ndarray, ib: np.ndarray, paired: bool = False) -> np.ndarray:
    """sum_k ia[m, k] * ib[k, n], exact, as float64 rounded to odd (``paired``: ib is (M, K)
    and the result sum_k ia[m, k] * ib[m, k], (M,)).

    ia and ib are integers below 2**32 in magnitude. ia is split into 16-bit halves so every
    product is below 2**48; K is summed 2**14 at a time so no int64 sum overflows, and the
    parts are carried into three limbs (top * 2**48 + mid * 2**16 + low) that hold any K up to
    2**31. Rounding to odd at 53 bits followed by one rounding to float32 equals a single
    rounding of the exact sum (Boldo and Melquiond), so no double rounding creeps in.
    """
    shape = (ia.shape[0],) if paired else (ia.shape[0], ib.shape[1])
    top, mid, low = (np.zeros(shape, np.int64) for _ in range(3))
    for s in range(0, max(ia.shape[1], 1), _K_PART):
        a = ia[:, s : s + _K_PART]
        if paired:  # integer sums: exact in any order, the same limbs as the matrix product's
            b = ib[:, s : s + _K_PART]
            hi, lo = ((a >> 16) * b).sum(axis=1), ((a & 0xFFFF) * b).sum(axis=1)
        else:
            b = ib[s : s + _K_PART]
            hi, lo = (a >> 16) @ b, (a & 0xFFFF) @ b  # the part's sum is hi * 2**16 + lo
        hi += lo >> 16  # carry so that 0 <= lo < 2**16 (arithmetic shift keeps the sign)
        low += lo & 0xFFFF
        mid += hi & 0xFFFFFFFF
        top += hi >> 32
    mid += low >> 16
    top += mid >> 32
    rest = ((mid & 0xFFFFFFFF) << 16) | (low & 0xFFFF)  # below 2**48: exact in float64
    return round_to_odd_sum(top.astype(np.float64) * 2.0**48, rest.astype(np.float64))


class _Operand:
    """One operand's integer elements and per-(row, K-block) scales, prepared once, its rows
    (M of A; N of B, read K-major) sliced for each piece (:meth:`take_rows`).

    ``ints(ks)``: element values * 2**int_shift (times the integer significand of the block's
    scale for NVFP4) of the K slice ks, ``bad(ks)``: whether a row holds a non-finite element
    there; ``exp`` the power of two of each block's scale (E8M0) or of its significand's last
    place (NVFP4's UE4M3 and UE5M3, whose significands are folded into the integers),
    ``nan_scale`` where the scale is NaN.
    """

    def __init__(self, q: BlockArray, k_axis: int) -> None:
        self.format = q.format
        self.table, self.finite = int_table(q.format)
        self.all_codes = q.codes if k_axis == 1 else q.codes.T  # (rows, K)
        s = k_scales(q, k_axis)
        if k_axis == 0:
            s = s.T  # (N, nb): rows of B's transpose
        self.scales = s
        if q.format.is_nvfp4:
            sf = q.format.scale
            self.nan_scale = s == sf.nan_code
            # each scale value = sig * 2**exp, sig an integer of at most M + 1 bits (0 for zero)
            values = decode(np.arange(sf.num_codes), sf)
            m, e = np.frexp(np.where(np.isnan(values), 0.0, values))
            sig = (m * 2.0 ** (sf.mantissa_bits + 1)).astype(np.int64)
            exp = np.where(sig == 0, 0, e - sf.mantissa_bits - 1).astype(np.int64)
            self.fold = np.where(self.nan_scale, 0, sig[s])
            self.exp = exp[s]
        else:
            self.nan_scale = s == 255
            self.fold = None
            self.exp = s - 127

    @property
    def rows(self) -> int:
        return self.all_codes.shape[0]

    def take_rows(self, rows: slice) -> _Operand:
        """The same operand restricted to some rows (views, nothing recomputed)."""
        part = copy.copy(self)
        for name in ("all_codes", "scales", "nan_scale", "fold", "exp"):
            value = getattr(self, name)
            setattr(part, name, None if value is None else value[rows])
        return part

    def codes(self, ks: slice) -> np.ndarray:
        """(rows, k) element codes of the K slice ks as indices."""
        return self.all_codes[:, ks].astype(np.intp)

    def ints(self, j: int, ks: slice) -> tuple[np.ndarray, np.ndarray]:
        """(rows, k) integers of K-block j and whether each row is non-finite there."""
        c = self.codes(ks)
        ints = self.table[c]
        if self.fold is not None:
            ints = ints * self.fold[:, j, None]
        bad = ~self.finite[c].all(axis=1) | self.nan_scale[:, j]
        return ints, bad

    def values(self, j: int, ks: slice) -> np.ndarray:
        """(rows, k) float64 values of MX K-block j (exact; NaN rows where the scale is)."""
        v = element_table(self.format, np.float64)[self.codes(ks)]
        return v * pow2_from_e8m0(self.scales[:, j], np.float64)[:, None]


def exact_matmul(a: BlockArray, b: BlockArray, c: np.ndarray, pieces: list[slice],
                 workers: int | None = None) -> np.ndarray:  # fmt: skip
    """C = A @ B + c in the exact model, before NVFP4's per-tensor scales, A's rows in the
    given pieces on ``workers`` threads (the same bits for every number).

    For every K-block, the sum of the element products is formed *exactly* (integer
    arithmetic on the scaled significands), multiplied by both scales and rounded once to
    float32; the per-block results are then added in float32 in block order (block 0 first)
    to the running sum, which starts at the float32 accumulator ``c`` (M, N). NVFP4: the
    significands of both block scales (UE4M3, UE5M3) are folded into the exact integer sum.
    Blocks holding NaN/Inf (scale or element) are computed with float64 arithmetic instead
    so they propagate NaN/Inf as IEEE arithmetic would. Zeros have IEEE 754's signs at each
    step: a K-block whose exact sum is not zero but rounds to zero keeps the sum's sign; an
    exactly zero block is -0 only when every product in it is -0; the float32 additions then
    give -0 + -0 = -0 and +0 otherwise.
    """
    bs = check_block_matmul(a, b)
    opa, opb = _Operand(a, 1), _Operand(b, 0)  # each once, for all pieces
    out = np.empty((a.shape[0], b.shape[1]), np.float32)

    def piece(rows: slice) -> None:
        out[rows] = _matmul_rows(opa.take_rows(rows), opb, a.shape[1], bs, c[rows])

    run_each(piece, pieces, workers)
    return out


def exact_dot_rows(a: BlockArray, b: BlockArray, c: np.ndarray, pieces: list[slice],
                   workers: int | None = None) -> np.ndarray:  # fmt: skip
    """d[i] = A[i] . B[:, i] + c[i] in the exact model for A (R, K) and B (K, R) blocked along
    K, before NVFP4's per-tensor scales: (R,) float32, each row the bits the (1, K) x (K, 1)
    :func:`exact_matmul` of that pair gives, without forming the R x R products."""
    bs = check_block_matmul(a, b)
    opa, opb = _Operand(a, 1), _Operand(b, 0)
    out = np.empty(a.shape[0], np.float32)

    def piece(rows: slice) -> None:
        out[rows] = _matmul_rows(opa.take_rows(rows), opb.take_rows(rows), a.shape[1], bs, c[rows], paired=True)

    run_each(piece, pieces, workers)
    return out


def _matmul_rows(opa: _Operand, opb: _Operand, k: int, bs: int, c: np.ndarray, paired: bool = False) -> np.ndarray:
    """The rows of C that opa holds (see :func:`exact_matmul`), from their accumulator c;
    ``paired``: opb holds as many rows as opa (b read as (R, K)) and row i meets row i only,
    (R,) results (see :func:`exact_dot_rows`)."""
    shift = opa.format.int_shift + opb.format.int_shift
    acc = np.array(c, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(-(-k // bs)):
            ks = slice(j * bs, min((j + 1) * bs, k))
            ia, bad_a = opa.ints(j, ks)
            ib, bad_b = opb.ints(j, ks)
            if paired:
                exact = _exact_sums_odd(ia, ib, True)
                e = opa.exp[:, j] + opb.exp[:, j] - shift
                special = bad_a | bad_b
            else:
                exact = _exact_sums_odd(ia, ib.T)
                e = opa.exp[:, j, None] + opb.exp[None, :, j] - shift
                special = bad_a[:, None] | bad_b[None, :]
            block = np.ldexp(exact, e.astype(np.int32)).astype(np.float32)
            if special.any():
                block = np.where(special, _special_block(opa, opb, j, ks, paired), block)
            # The sign of an exactly zero block matters only where the running sum is -0.
            where = np.nonzero((exact == 0) & (acc == 0) & np.signbit(acc) & ~special)
            if where[0].size:
                i, n = (where[0], where[0]) if paired else where
                block[where] = np.where(_all_products_negative_zero(opa, opb, i, n, ks, bs), -0.0, 0.0)
            acc = acc + block
    return acc


def _all_products_negative_zero(opa: _Operand, opb: _Operand, i: np.ndarray, n: np.ndarray, ks: slice,
                                bs: int) -> np.ndarray:
    """Whether every product of row i of A and column n of B over the K slice ks is -0: zero
    (a zero element, or NVFP4's zero block scale) with factors of opposite signs."""
    za, sa = _zeros_and_signs(opa, i, ks, bs)
    zb, sb = _zeros_and_signs(opb, n, ks, bs)
    return np.all((za | zb) & (sa != sb), axis=1)


def _zeros_and_signs(op: _Operand, rows: np.ndarray, ks: slice, bs: int) -> tuple[np.ndarray, np.ndarray]:
    """Which factors of the given rows (K slice ks) are zero (a zero element, or its NVFP4
    block scale 0) and which are negative (sign bit set, -0 included)."""
    v = element_table(op.format, np.float64)[op.codes(ks)[rows]]
    zero = v == 0
    if op.fold is not None:
        zero |= op.fold[rows][:, np.arange(ks.start, ks.stop) // bs] == 0
    return zero, np.signbit(v)


def _special_block(opa: _Operand, opb: _Operand, j: int, ks: slice, paired: bool = False) -> np.ndarray:
    """float32 of K-block j's product in float64 (only read where a NaN/Inf takes part, so
    the result is NaN or +-Inf there whatever the rounding of the finite terms)."""
    if opa.format.is_nvfp4:  # E2M1 has no Inf: only a NaN scale makes a block special
        shape = (opa.rows,) if paired else (opa.rows, opb.rows)
        return np.full(shape, np.nan, np.float32)
    if paired:
        return (opa.values(j, ks) * opb.values(j, ks)).sum(axis=1).astype(np.float32)
    return (opa.values(j, ks) @ opb.values(j, ks).T).astype(np.float32)
