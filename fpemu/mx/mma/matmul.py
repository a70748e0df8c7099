"""The public block-scaled products :func:`matmul` and :func:`dot`: operands checked, the model
looked up, ``c`` read, the rows cut into cache-sized pieces on every core, NVFP4's per-tensor
scales applied as the model says."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...codec import check_returns, deliver_values
from ...codec.operands import accumulator_operand
from ...parallel import run_each
from ..array import BlockArray
from ..dot_products import check_matmul, exact_dot_rows, exact_matmul
from ..formats import BlockFormat
from ..mx_scales import rn32_product
from .lookup import get_block_accumulator
from .model import BlockScaledAccumulator, Blockwise

#: TransformerEngine's ``factor_inv``: fp32(1 / (6 * 6 * 448 * 448)) (recipe/nvfp4.cu).
_TE_FACTOR_INV = np.float32(1.0 / (6.0 * 6.0 * 448.0 * 448.0))


def check_fits(model: BlockScaledAccumulator, fa: BlockFormat, fb: BlockFormat, block: int) -> None:
    """Refuse operands whose terms the fused model could not keep exact in float64 and int64."""
    for f in (fa, fb):
        if f.is_int:
            raise ValueError(f"fused block-scaled models take floating-point elements; {f.name} has the exact "
                             "model only (accumulator='exact')")
    sig = [2.0 if f.scale.mantissa_bits else 1.0 for f in (fa, fb)]
    if model.term_exponent == "scale":
        if block % model.sub_block:
            raise ValueError(f"{model.name}: sub-blocks of {model.sub_block} products must lie in one scale block, "
                             f"but the K blocks hold {block}")
        largest = model.sub_block * fa.max_value * fb.max_value
        bits = np.log2(largest) + fa.int_shift + fb.int_shift + fa.scale.mantissa_bits + fb.scale.mantissa_bits
        if bits > 52:
            raise ValueError(f"{model.name}: a sub-block sum of {model.sub_block} {fa.element.name} x "
                             f"{fb.element.name} products times its scales needs {bits:.0f} bits, more than float64 "
                             "keeps exactly: use fewer products per sub-block")
        terms = model.instruction_k // model.sub_block * largest * sig[0] * sig[1]
    else:
        terms = model.instruction_k * 4 * sig[0] * sig[1]
    if (terms + 2) * 2.0**model.frac_bits >= 2.0**63:
        raise ValueError(f"{model.name}: frac_bits={model.frac_bits} lets the aligned terms of one instruction pass "
                         "2**63 (int64): fewer kept bits or fewer products per instruction")


def cublaslt_alpha(a: BlockArray, b: BlockArray) -> np.float32:
    """NVFP4's per-tensor scales as one float32 alpha, as TransformerEngine hands it to
    cuBLASLt: ``((1 * amax_A) * amax_B) * fp32(1/(6*6*448*448))`` in float32 (recipe/nvfp4.cu
    ``compute_nvfp4_per_tensor_scale_kernel``, alpha_in = 1); operands of torchao's variant:
    ``fp32(per_tensor_scale_A * per_tensor_scale_B)`` (its ``_addmm_nvfp4_dispatch``).

    >>> from fpemu.mx import quantize
    >>> x = quantize(np.ones((1, 16)), "nvfp4", global_amax=2688.0)
    >>> float(cublaslt_alpha(x, x))
    1.0
    """
    f32 = np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        if a.variant == b.variant == "te":
            return f32(f32(f32(1.0) * a.global_amax) * f32(b.global_amax)) * _TE_FACTOR_INV
        return f32(a.global_scale) * f32(b.global_scale)


def _apply_global_scales(acc: np.ndarray, ga: np.float32, gb: np.float32) -> np.ndarray:
    """acc * fp32(ga * gb), as a GEMM's float32 alpha does; where that alpha overflows or is
    subnormal (it would turn finite results into Inf or lose bits), acc * ga * gb rounded once."""
    alpha = np.float32(ga) * np.float32(gb)
    if np.isfinite(alpha) and alpha >= np.finfo(np.float32).tiny:
        return acc * alpha
    p = acc.astype(np.float64) * float(ga)  # 24 x 24 bits: exact
    finite = np.isfinite(p)
    out = rn32_product(np.where(finite, p, 0.0), float(gb))
    out[~finite] = (p[~finite] * float(gb)).astype(np.float32)
    return np.where(out == 0, np.copysign(out, acc), out)  # alpha > 0: a zero keeps acc's sign


def _as_row(q: BlockArray) -> BlockArray:
    return q.with_layout(q.codes[None, :], q.scales[None, :], axis=1)


def _as_column(q: BlockArray) -> BlockArray:
    return q.with_layout(q.codes[:, None], q.scales[:, None], axis=0)


def _apply_alpha(acc: np.ndarray, a: BlockArray, b: BlockArray, model: BlockScaledAccumulator) -> np.ndarray:
    """The fp32 accumulator times NVFP4's per-tensor scales, as the model says (MX and
    nvfp4_ue5m3, which have none: unchanged)."""
    if not a.format.tensor_scale:
        return acc
    if model.alpha == "decode":
        with np.errstate(over="ignore", invalid="ignore"):
            return _apply_global_scales(acc, a.global_scale, b.global_scale)
    with np.errstate(over="ignore", invalid="ignore"):  # D = fp32(alpha * acc): Inf and NaN as IEEE
        return acc * cublaslt_alpha(a, b)


def _fused_matmul(a: BlockArray, b: BlockArray, c: np.ndarray, model: BlockScaledAccumulator,
                  workers: int | None) -> np.ndarray:  # fmt: skip
    from .fused import run_fused  # the tensor-core arithmetic loads on first use, not on import fpemu
    from .operands import Side

    m, n = a.shape[0], b.shape[1]
    side_a, side_b = Side(a, 1, model), Side(b, 0, model)
    out = np.empty((m, n), np.float32)
    rows = max(1, (1 << 16) // max(n, 1))  # about 2**16 results per piece: its arrays stay in cache

    def piece(i: int) -> None:
        part = slice(i, min(i + rows, m))
        out[part] = run_fused(side_a.take_rows(part), side_b, c[part], model)

    run_each(piece, range(0, m, rows), workers)
    return out


def matmul(a: BlockArray, b: BlockArray, c: Any = None, *, accumulator: str | BlockScaledAccumulator = "exact",
           instruction: str | None = None, workers: int | None = None, returns: str = "numpy") -> Any:  # fmt: skip
    """C = A @ B + c for block-scaled A (M, K) blocked along K and B (K, N) blocked along K,
    as the block-scaled accumulator model ``accumulator`` adds them; float32 (M, N).

    ``accumulator`` (see :func:`get_block_accumulator` and ``docs/mx.md``): ``"exact"`` (the
    default: each K-block's products summed exactly, times both scales, rounded once to
    float32, the blocks added in float32 in order, starting from c), ``"b200"``/``"blackwell"``
    (Blackwell's block-scaled MMA as the hardware evidence supports) or ``"mmasim-blackwell"``
    (MMA-Sim's model, bit for bit), or a :class:`BlockScaledAccumulator`; ``instruction``
    picks the Blackwell kind where two take the operands. ``c`` (default 0) broadcasts to
    (M, N) and is rounded to float32: the accumulator's starting value (the MMA's C operand,
    added inside the sum, not a GEMM epilogue's beta * C). NVFP4's per-tensor scales multiply
    the result last (the exact model: by ``fp32(global_scale_a * global_scale_b)``; hardware
    models: as cuBLASLt's alpha, :func:`cublaslt_alpha`). Rows run in pieces on ``workers``
    threads, with the same bits for every number. ``returns`` is the array type of the
    result, as for :func:`fpemu.gemm` (``"numpy"``, ``"torch"``; ``"input"`` is NumPy here:
    a BlockArray is no array type of its own).

    >>> from fpemu.mx import quantize
    >>> A = quantize(np.ones((2, 32)), "mxfp8_e4m3")
    >>> B = quantize(np.full((32, 3), 0.5), "mxfp8_e4m3", axis=0)
    >>> matmul(A, B).tolist()
    [[16.0, 16.0, 16.0], [16.0, 16.0, 16.0]]
    >>> x = quantize([[1.0] + [0.0] * 31 + [2.0**-26] * 32], "mxfp8_e4m3")   # 2 blocks
    >>> y = quantize(np.ones((64, 1)), "mxfp8_e4m3", axis=0)
    >>> [float(matmul(x, y, accumulator=acc)[0, 0]) - 1 for acc in ("exact", "b200", "mmasim-blackwell")]
    [4.76837158203125e-07, 4.76837158203125e-07, 0.0]
    """
    bs = check_matmul(a, b)
    returns = check_returns(returns, a)
    if instruction is not None and isinstance(accumulator, BlockScaledAccumulator):
        raise ValueError("instruction= picks a preset's kind; a BlockScaledAccumulator already is one")
    model = get_block_accumulator(accumulator, (a.format, b.format), block_size=bs, instruction=instruction)
    c0 = accumulator_operand(c, (a.shape[0], b.shape[1]), "fp32")
    if isinstance(model, Blockwise):
        acc = exact_matmul(a, b, c0, workers)
    else:
        check_fits(model, a.format, b.format, bs)
        acc = _fused_matmul(a, b, c0, model, workers)
    return deliver_values(_apply_alpha(acc, a, b, model), returns, a)


def _rows_2d(q: BlockArray, rows: int) -> BlockArray:
    """A (..., K) block array blocked along its last axis as (rows, K), blocked along axis 1."""
    k = q.shape[-1]
    return q.with_layout(q.codes.reshape(rows, k), q.scales.reshape(rows, q.scales.shape[-1]), axis=1)


def _fused_dot_rows(a: BlockArray, b: BlockArray, c: np.ndarray, model: BlockScaledAccumulator,
                    workers: int | None) -> np.ndarray:  # fmt: skip
    """Row i of a (R, K) against row i of b (R, K) in the fused model: (R,) fp32 values, each
    the bits the (1, K) x (K, 1) :func:`matmul` of that pair gives (the kernel's paired mode:
    the R products, not R x R)."""
    from .fused import run_fused
    from .operands import Side

    r = a.shape[0]
    side_a, side_b = Side(a, 1, model), Side(b, 1, model)  # b's rows read as B's columns are
    out = np.empty(r, np.float32)
    rows = 1 << 16  # results per piece: its arrays stay in cache

    def piece(i: int) -> None:
        part = slice(i, min(i + rows, r))
        out[part] = run_fused(side_a.take_rows(part), side_b.take_rows(part), c[part], model, paired=True)

    run_each(piece, range(0, r, rows), workers)
    return out


def _check_dot_layout(q: BlockArray) -> None:
    if not isinstance(q, BlockArray):
        raise TypeError(f"dot takes BlockArrays, got {type(q).__name__}")
    if q.codes.ndim == 0:
        raise ValueError("dot takes block arrays of shape (..., K), got a 0-d one")
    if len(q.axes) != 1 or q.axes[0] != q.codes.ndim - 1:
        raise ValueError(f"dot reduces the last axis, so its operands must be blocked along it (axis "
                         f"{q.codes.ndim - 1}), got {q!r}: quantize with axis=-1")


def dot(a: BlockArray, b: BlockArray, c: Any = None, *, accumulator: str | BlockScaledAccumulator = "exact",
        instruction: str | None = None, workers: int | None = None, returns: str = "numpy") -> Any:  # fmt: skip
    """Batched dot products over the last axis, d = sum_k a[..., k] * b[..., k] + c, of two
    block arrays of the same shape (..., K), both blocked along that last axis, in the model
    ``accumulator`` (see :func:`matmul` for the arithmetic): float32 of shape (...); two 1-D
    block arrays give a float32 scalar (``returns="torch"``: a 0-d tensor). ``c`` (default 0)
    broadcasts to (...): each row's accumulator start. Every row has the bits the 1-D dot of
    that row gives (the kernels pair row i with row i; no product of one row with another is
    formed); rows run in pieces on ``workers`` threads.

    >>> from fpemu.mx import quantize
    >>> x = quantize([1.0, 2.0, 3.0], "mxfp4"); y = quantize([4.0, -1.0, 0.5], "mxfp4")
    >>> float(dot(x, y)), float(dot(x, y, 1.0, accumulator="b200"))
    (3.5, 4.5)
    >>> X = quantize([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]], "mxfp4")
    >>> Y = quantize([[4.0, -1.0, 0.5], [1.0, 1.0, 1.0]], "mxfp4")
    >>> dot(X, Y, [0.0, 1.0], accumulator="b200").tolist()
    [3.5, 7.0]
    """
    for q in (a, b):
        _check_dot_layout(q)
    if a.shape != b.shape:
        raise ValueError(f"dot needs a and b of the same shape (..., K), with equal lengths K, got {a.shape} "
                         f"and {b.shape}")
    batch = a.shape[:-1]
    if not batch:  # 1-D: the scalar of the (1, K) x (K, 1) product, as always
        if c is not None and np.ndim(c) != 0:
            raise ValueError(f"c of a dot product of 1-D block arrays is one number, got shape {np.shape(c)}")
        returns = check_returns(returns, a)
        d = np.float32(matmul(_as_row(a), _as_column(b), c, accumulator=accumulator, instruction=instruction,
                              workers=workers)[0, 0])
        out = deliver_values(np.asarray(d), returns, a)
        return d if isinstance(out, np.ndarray) else out
    returns = check_returns(returns, a)
    if instruction is not None and isinstance(accumulator, BlockScaledAccumulator):
        raise ValueError("instruction= picks a preset's kind; a BlockScaledAccumulator already is one")
    r = math.prod(batch)
    a2, b2 = _rows_2d(a, r), _rows_2d(b, r)
    bt = b2.with_layout(b2.codes.T, b2.scales.T, axis=0)  # B = b's rows as columns: matmul's checks, as for 1-D
    bs = check_matmul(a2, bt)
    model = get_block_accumulator(accumulator, (a.format, b.format), block_size=bs, instruction=instruction)
    c0 = accumulator_operand(c, batch, "fp32").reshape(r)
    if isinstance(model, Blockwise):
        acc = exact_dot_rows(a2, b2, c0, workers)
    else:
        check_fits(model, a.format, b.format, bs)
        acc = _fused_dot_rows(a2, b2, c0, model, workers)
    return deliver_values(_apply_alpha(acc, a, b, model).reshape(batch), returns, a)
