"""The exact model of block dot products (:class:`~fpemu.accumulator.Blockwise`, what
``accumulator="exact"`` gives block arrays): the OCP Dot/DotGeneral with each K-block summed
exactly and rounded once to float32."""

from __future__ import annotations

import numpy as np

from ...mx.array import BlockArray
from ...parallel import run_each
from ..model import Blockwise
from ..operands import check_block_matmul
from .long_sum import LongSum
from .operand import Operand, block_operand


#: A K-block's integer sums whose bound stays below 2**FLOAT_SUM_BITS are float64 products.
FLOAT_SUM_BITS = 53
#: K elements per integer partial sum: products below 2**48, so 2**14 of them stay below 2**62.
_K_PART = 1 << 14


def _exact_sums(ia: np.ndarray, ib: np.ndarray, paired: bool, fits: bool) -> np.ndarray:
    """sum_k ia[k, m] * ib[k, n] for every (m, n) (``paired``: m = n only), exact, as float64
    rounded to odd (exact, where it ``fits`` in 53 bits).

    ia and ib are (k, rows) integers below 2**32 in magnitude. Where every sum of the block
    stays below 2**53 (``fits``: the formats' largest integers times the block size say so),
    a float64 matrix product is exact in any order. Otherwise ia is split into 16-bit halves
    so every product is below 2**48, K is summed 2**14 at a time so no int64 sum overflows,
    and the parts go to the one long sum (:class:`.long_sum.LongSum`), read rounded to odd.
    """
    if fits:
        a, b = ia.astype(np.float64), ib.astype(np.float64)
        return np.einsum("ki,ki->i" if paired else "ki,kj->ij", a, b)
    shape = (ia.shape[1],) if paired else (ia.shape[1], ib.shape[1])
    total = LongSum(int(np.prod(shape)), 0, 96, 2 * -(-max(ia.shape[0], 1) // _K_PART))
    for s in range(0, max(ia.shape[0], 1), _K_PART):
        a, b = ia[s : s + _K_PART], ib[s : s + _K_PART]
        if paired:  # integer sums: exact in any order
            hi, lo = ((a >> 16) * b).sum(axis=0), ((a & 0xFFFF) * b).sum(axis=0)
        else:
            hi, lo = (a >> 16).T @ b, (a & 0xFFFF).T @ b  # the part's sum is hi * 2**16 + lo
        total.add_integers(hi.reshape(-1), 16)
        total.add_integers(lo.reshape(-1), 0)
    return total.read().reshape(shape)


def exact_matmul(a: BlockArray, b: BlockArray, c: np.ndarray, model: Blockwise, pieces: list[slice],
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
    opa, opb = block_operand(a, 1, model), block_operand(b, 0, model)  # each once, for all pieces
    out = np.empty((a.shape[0], b.shape[1]), np.float32)

    def piece(rows: slice) -> None:
        out[rows] = _matmul_rows(opa.take_rows(rows), opb, a.shape[1], bs, c[rows])

    run_each(piece, pieces, workers)
    return out


def exact_dot_rows(a: BlockArray, b: BlockArray, c: np.ndarray, model: Blockwise, pieces: list[slice],
                   workers: int | None = None) -> np.ndarray:  # fmt: skip
    """d[i] = A[i] . B[:, i] + c[i] in the exact model for A (R, K) and B (K, R) blocked along
    K, before NVFP4's per-tensor scales: (R,) float32, each row the bits the (1, K) x (K, 1)
    :func:`exact_matmul` of that pair gives, without forming the R x R products."""
    bs = check_block_matmul(a, b)
    opa, opb = block_operand(a, 1, model), block_operand(b, 0, model)
    out = np.empty(a.shape[0], np.float32)

    def piece(rows: slice) -> None:
        out[rows] = _matmul_rows(opa.take_rows(rows), opb.take_rows(rows), a.shape[1], bs, c[rows], paired=True)

    run_each(piece, pieces, workers)
    return out


def _block_ints(op: Operand, j: int, ks: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the (k, rows) integers of K-block j, whose value is the integer times 2**exp, each row's
    exp, whether a row holds an Inf or NaN element or a NaN scale there). NVFP4's scale
    significands (UE4M3, UE5M3) are folded into the integers."""
    ints = op.ints_at(ks)
    mantissa = op.format.scale.mantissa_bits
    if mantissa:
        ints = ints * op.scale_int[j]
    return ints, op.scale_exp[j].astype(np.int64) - mantissa - op.format.int_shift, op.bad_at(j, ks)


def _matmul_rows(opa: Operand, opb: Operand, k: int, bs: int, c: np.ndarray, paired: bool = False) -> np.ndarray:
    """The rows of C that opa holds (see :func:`exact_matmul`), from their accumulator c;
    ``paired``: opb holds as many columns as opa rows and row i meets column i only, (R,)
    results (see :func:`exact_dot_rows`)."""
    acc = np.array(c, dtype=np.float32)
    fits = opa.largest_int() * opb.largest_int() * bs < 2**FLOAT_SUM_BITS
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(-(-k // bs)):
            ks = slice(j * bs, min((j + 1) * bs, k))
            ia, ea, bad_a = _block_ints(opa, j, ks)
            ib, eb, bad_b = _block_ints(opb, j, ks)
            exact = _exact_sums(ia, ib, paired, fits)
            if paired:
                e = ea + eb
                special = bad_a | bad_b
            else:
                e = ea[:, None] + eb[None, :]
                special = bad_a[:, None] | bad_b[None, :]
            block = np.ldexp(exact, e.astype(np.int32)).astype(np.float32)
            if special.any():
                block = np.where(special, _special_block(opa, opb, ks, paired), block)
            # The sign of an exactly zero block matters only where the running sum is -0.
            where = np.nonzero((exact == 0) & (acc == 0) & np.signbit(acc) & ~special)
            if where[0].size:
                i, n = (where[0], where[0]) if paired else where
                block[where] = np.where(_all_products_negative_zero(opa, opb, i, n, ks), -0.0, 0.0)
            acc = acc + block
    return acc


def _all_products_negative_zero(opa: Operand, opb: Operand, i: np.ndarray, n: np.ndarray, ks: slice) -> np.ndarray:
    """Whether every product of row i of A and column n of B over the K slice ks is -0: zero
    (a zero element, or NVFP4's zero block scale) with factors of opposite signs."""
    za, sa = _zeros_and_signs(opa, i, ks)
    zb, sb = _zeros_and_signs(opb, n, ks)
    return np.all((za | zb) & (sa != sb), axis=0)


def _zeros_and_signs(op: Operand, rows: np.ndarray, ks: slice) -> tuple[np.ndarray, np.ndarray]:
    """(k, len(rows)): which factors of the given rows (K slice ks) are zero (a zero element,
    or its block scale 0) and which are negative (sign bit set, -0 included)."""
    v = op.take_rows(rows).values(ks)  # element times scale: 0 for a zero element or scale, the element's sign
    return v == 0, np.signbit(v)


def _special_block(opa: Operand, opb: Operand, ks: slice, paired: bool = False) -> np.ndarray:
    """float32 of K-block j's product in float64 (only read where a NaN/Inf takes part, so
    the result is NaN or +-Inf there whatever the rounding of the finite terms)."""
    if opa.format.is_nvfp4:  # E2M1 has no Inf: only a NaN scale makes a block special
        shape = (opa.rows,) if paired else (opa.rows, opb.rows)
        return np.full(shape, np.nan, np.float32)
    va, vb = opa.values(ks), opb.values(ks)
    if paired:
        return (va * vb).sum(axis=0).astype(np.float32)
    return (va.T @ vb).astype(np.float32)
