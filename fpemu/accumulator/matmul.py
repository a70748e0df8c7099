"""The public products :func:`dot` and :func:`gemm`: operands checked and rounded to their
formats, ``c`` and the output format read, the model looked up, the work cut into cache-sized
row chunks and handed to the kernels, the result converted to the output format."""

from __future__ import annotations

import math

import numpy as np

from ..codec import check_returns, deliver_values, is_dask, quantize
from ..codec.operands import accumulator_operand, real_array
from ..parallel import run_each
from .block_gemm import block_gemm, is_block_gemm
from .dask_gemm import dask_dot, dask_gemm
from ..formats import Format, get_format
from .lookup import input_formats, get_accumulator
from .model import Accumulator, BlockFMA, BlockModel, Exact, Pairwise, RoundedModel

_OUTS = ("fp32", "fp16", "bf16")


def _prepare(x, fmt: Format, what: str) -> np.ndarray:
    """x rounded (RNE) to the input format, as float64 (exact: these formats fit in fp32).

    The codec rounds integers beyond 2**53 once, from their exact value: a cast to float64
    first would round them twice.
    """
    return np.asarray(quantize(real_array(x, what), fmt), dtype=np.float64)


def _check_out(out: str) -> str:
    name = get_format(out).name
    if name not in _OUTS:
        raise ValueError(f"out must be one of {', '.join(_OUTS)}, got {out!r}")
    return name


def _c_format(out: str) -> str:
    """The format of the accumulator operand c: fp32, fp16 when the output is fp16 (the unit's
    accumulator operand has the output's type)."""
    return "fp16" if out == "fp16" else "fp32"


def _finish(result: np.ndarray, acc: Accumulator, out: str) -> np.ndarray:
    """Final conversion to the output format (float32 array holding its values)."""
    if isinstance(acc, RoundedModel) and get_format(acc.acc_format).name != out:
        result = quantize(result, out)
    elif out == "bf16":
        result = quantize(result, "bf16")  # block models: fp32 result, RNE epilogue to bf16
    result = np.where(np.isnan(result), np.nan, result)
    return result.astype(np.float32)


def dot(a, b, c=None, *, inputs, accumulator="exact", out: str = "fp32", workers: int | None = None,
        returns: str = "numpy") -> np.ndarray:
    """Batched dot products over the last axis: d = sum_k a[..., k] * b[..., k] + c (rows in
    pieces on ``workers`` threads for a large batch; the same bits for every number).

    a and b (shape (..., K)) are quantized to ``inputs`` with RNE first (a no-op for values
    already in the format); c (shape (...), default 0) is taken in fp32, or in fp16 when
    ``out="fp16"`` (rounded RNE, as the unit's accumulator operand has the output's type).
    Returns float32 values that are exactly in the ``out`` format, in the array type
    ``returns`` asks for (``"numpy"``, ``"input"``: a's type, ``"torch"``). Dask arrays give a
    Dask array, block by block over the batch axes with all of K in each task (the same bits).

    >>> dot([[1.0, 1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0, 1.0]], [1 + 2**-22 + 2**-23],
    ...     inputs="fp16", accumulator="v100").tolist()
    [5.0]
    """
    fa, fb = input_formats(inputs)
    out = _check_out(out)
    acc = get_accumulator(accumulator, (fa, fb)).for_output(out)
    returns = check_returns(returns, a)
    if is_dask(a) or is_dask(b) or is_dask(c):
        return dask_dot(a, b, c, lambda ta, tb, tc: dot(ta, tb, tc, inputs=inputs, accumulator=acc, out=out,
                                                        workers=1))
    a_arr, b_arr = _prepare(a, fa, "a"), _prepare(b, fb, "b")
    if a_arr.ndim == 0 or a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must have the same shape (..., K), got {a_arr.shape} and {b_arr.shape}")
    shape = a_arr.shape[:-1]
    K = a_arr.shape[-1]
    R = math.prod(shape)  # explicit: reshape(-1, 0) cannot infer the rows when K = 0
    c_arr = accumulator_operand(c, shape, _c_format(out)).reshape(R)
    a2, b2 = a_arr.reshape(R, K), b_arr.reshape(R, K)
    from .kernels.products import Products  # the kernels load on the first product, not on import fpemu
    from .kernels.run import run_model

    result = np.empty(R, dtype=np.float32)
    rows = max(1, (1 << 16) // max(K, 1))

    def chunk(i: int) -> None:
        part = slice(i, i + rows)
        prods = Products(a2[part], b2[part], fa, fb, False, acc.flush_subnormals, _zero_exponent(acc))
        result[part] = _finish(run_model(prods, c_arr[part], acc, out), acc, out)

    run_each(chunk, range(0, R, rows), workers)
    return deliver_values(result.reshape(shape), returns, a)


def _zero_exponent(acc: Accumulator) -> int | None:
    """The exponent a zero operand takes part in the alignment with (block models only)."""
    return acc.zero_exponent if isinstance(acc, BlockModel) else None


def chunk_rows(acc: Accumulator, K: int, N: int) -> int:
    """Rows of A per pass: about 2**16 output elements (each (R,) array stays in cache), fewer
    when the model holds many products per element at once (pairwise trees, long limbs)."""
    held = 1
    if isinstance(acc, Pairwise):
        held = max(K if acc.block is None else acc.block, 1)
    elif isinstance(acc, Exact):
        held = 16  # limbs of the long accumulator
    return max(1, (1 << 16) // max(1, N) // held if held > 1 else (1 << 16) // max(1, N))


def gemm(a, b, c=None, *, inputs=None, accumulator="exact", out: str = "fp32", workers: int | None = None,
         returns: str = "numpy") -> np.ndarray:
    """C = A @ B (+ C) as the chosen matrix unit computes it, on ``workers`` threads (default:
    ``FPEMU_WORKERS`` or the CPU count) over chunks of rows: the same bits for every number.
    Dask arrays tile over M and N with all of K in each task (:mod:`.dask_gemm`).

    A (M, K) and B (K, N) are quantized to ``inputs`` (one format or a pair: format of A,
    format of B) with RNE first; fp32 operands meant as TF32 on hardware are truncated (RZ),
    so quantize them with ``rounding="rz"`` yourself to mimic that. ``c`` broadcasts to
    (M, N). ``accumulator`` is a name (see :func:`get_accumulator`) or an Accumulator; the
    default ``"exact"`` is the exact sum rounded once (RNE), as :func:`fpemu.mx.matmul`'s
    default is for block-scaled operands;
    ``out`` is "fp32", "fp16" or "bf16" (bf16: the fp32 result rounded RNE, as an epilogue
    would). Returns a float32 (M, N) array of values in the ``out`` format, in the array type
    ``returns`` asks for (``"numpy"``, ``"input"``: A's type, ``"torch"``).

    Block-scaled A and B (two :class:`~fpemu.mx.BlockArray`, MX or NVFP4, blocked along K)
    take no ``inputs`` and a block-scaled ``accumulator`` (``"exact"``, ``"b200"``,
    ``"mmasim-blackwell"``, ...): they run through :func:`fpemu.mx.matmul` (:mod:`.block_gemm`).

    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]]); B = np.array([[0.5, 0.0], [0.25, 1.0]])
    >>> gemm(A, B, inputs="fp16", accumulator="h100").tolist()
    [[1.0, 2.0], [2.5, 4.0]]
    """
    if is_block_gemm(a, b):
        return block_gemm(a, b, c, inputs=inputs, accumulator=accumulator, out=out, workers=workers, returns=returns)
    if inputs is None:
        raise TypeError("gemm needs inputs= (the format of A and B, or a pair of formats) for plain arrays")
    fa, fb = input_formats(inputs)
    out = _check_out(out)
    acc = get_accumulator(accumulator, (fa, fb)).for_output(out)
    returns = check_returns(returns, a)
    if is_dask(a) or is_dask(b) or is_dask(c):
        return dask_gemm(a, b, c, lambda ta, tb, tc: gemm(ta, tb, tc, inputs=inputs, accumulator=acc, out=out,
                                                          workers=1))
    A, B = _prepare(a, fa, "a"), _prepare(b, fb, "b")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"gemm needs A (M, K) and B (K, N), got shapes {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    C = accumulator_operand(c, (M, N), _c_format(out))
    from .kernels.products import prepare_operand, Products  # loaded on the first product
    from .kernels.run import run_model, lane_permutation

    result = np.empty((M, N), dtype=np.float32)
    # Rows per chunk: keep one block of products (or all of K for trees) near 2**23 values.
    rows = chunk_rows(acc, K, N)
    ordered = isinstance(acc, BlockFMA) and acc.lane_order is not None
    if ordered:  # the model's lane order, once for all chunks
        order = lane_permutation(K, acc.instruction_k, acc.lane_order)
        A, B = A[:, order], B[order]
    # B's k-major values and exponents once for all chunks (not once per chunk of rows).
    opb = prepare_operand(B, fb, acc.flush_subnormals, _zero_exponent(acc))

    def chunk(i: int) -> None:
        prods = Products(A[i : i + rows], opb, fa, fb, True, acc.flush_subnormals, _zero_exponent(acc), ordered)
        part = _finish(run_model(prods, C[i : i + rows].reshape(-1), acc, out), acc, out)
        result[i : i + rows] = part.reshape(min(rows, M - i), N)  # not -1: N may be 0

    run_each(chunk, range(0, M, rows), workers)
    return deliver_values(result, returns, a)
