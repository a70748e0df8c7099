"""The public products, :func:`gemm` and :func:`dot`: one signature and one return type for
plain arrays and block arrays (MX, NVFP4). Operands checked (and plain ones rounded to their
formats), ``c`` and the output format read, the model looked up, the rows cut into pieces
(:mod:`.pieces`) on every core and handed to the kernels, the result in the output format.

Returns: float32 values exactly in the ``out`` format, as an array of the result's shape; a
dot of two 1-D operands gives one ``np.float32`` (as ``np.dot`` of float32 vectors does), a
0-d tensor with ``returns="torch"``. Dask arrays give a Dask array.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..codec import check_returns, deliver_values, is_dask, quantize
from ..formats import Format, get_format
from ..mx.array import BlockArray
from ..parallel import run_each
from .dask_gemm import dask_dot, dask_gemm
from .lookup import get_accumulator, input_formats
from .model import Accumulator, BlockFMA, BlockModel, BlockScaledAccumulator, Blockwise, DenseModel, RoundedModel
from .operands import accumulator_operand, block_pair, block_rows, check_block_matmul, check_block_options, real_array
from .pieces import row_pieces, values_per_row
from .tensor_scale import apply_tensor_scales

_OUTS = ("fp32", "fp16", "bf16")


def gemm(a, b, c=None, *, inputs=None, accumulator="exact", out: str = "fp32", instruction: str | None = None,
         workers: int | None = None, returns: str = "numpy") -> Any:  # fmt: skip
    """C = A @ B (+ C) as the chosen matrix unit computes it, on ``workers`` threads (default:
    ``FPEMU_WORKERS`` or the CPU count) over pieces of rows: the same bits for every number.

    Plain A (M, K) and B (K, N) are quantized to ``inputs`` (one format or a pair: format of A,
    format of B) with RNE first; fp32 operands meant as TF32 on hardware are truncated (RZ),
    so quantize them with ``rounding="rz"`` yourself to mimic that. Block-scaled A and B (two
    :class:`~fpemu.mx.BlockArray`, MX or NVFP4, A blocked along axis 1 and B along axis 0)
    carry their formats and take no ``inputs``. ``c`` broadcasts to (M, N): the unit's
    accumulator operand, rounded to fp32 (fp16 when ``out="fp16"``). ``accumulator`` is a name
    (``gpu[/family[/instruction]]``, see :func:`~fpemu.accumulator.get_accumulator`) or a model;
    the default ``"exact"`` is the exact sum rounded once (RNE), block by block for block
    arrays. ``instruction`` picks a unit's instruction family or instruction, for both kinds.
    ``out`` is "fp32", "fp16" or "bf16" (bf16: the fp32 result rounded RNE, as an epilogue
    would; block arrays: fp32 only). NVFP4's per-tensor scales multiply a block-scaled result
    last, as the model's ``alpha`` says. Returns a float32 (M, N) array of values in the
    ``out`` format, in the array type ``returns`` asks for (``"numpy"``, ``"input"``: A's
    type, NumPy for block arrays; ``"torch"``). Dask arrays tile over M and N with all of K in
    each task (:mod:`.dask_gemm`).

    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]]); B = np.array([[0.5, 0.0], [0.25, 1.0]])
    >>> gemm(A, B, inputs="fp16", accumulator="h100").tolist()
    [[1.0, 2.0], [2.5, 4.0]]
    >>> from fpemu import mx
    >>> x = mx.quantize([[1.0] + [0.0] * 31 + [2.0**-26] * 32], "mxfp8_e4m3")   # 2 blocks
    >>> y = mx.quantize(np.ones((64, 1)), "mxfp8_e4m3", axis=0)
    >>> [float(gemm(x, y, accumulator=acc)[0, 0]) - 1 for acc in ("exact", "b200", "mmasim-blackwell")]
    [4.76837158203125e-07, 4.76837158203125e-07, 0.0]
    """
    if block_pair(a, b):
        result = _block_gemm(a, b, c, inputs, accumulator, instruction, out, workers, rows_only=False)
        return deliver_values(result, check_returns(returns, a), a)
    fa, fb, out, acc = _dense_options(inputs, accumulator, instruction, out, "gemm", "A and B")
    returns = check_returns(returns, a)
    if is_dask(a) or is_dask(b) or is_dask(c):
        return dask_gemm(a, b, c, lambda ta, tb, tc: gemm(ta, tb, tc, inputs=inputs, accumulator=acc, out=out,
                                                          workers=1))
    A, B = _prepare(a, fa, "a"), _prepare(b, fb, "b")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"gemm needs A (M, K) and B (K, N), got shapes {A.shape} and {B.shape}")
    C = accumulator_operand(c, (A.shape[0], B.shape[1]), _c_format(out))
    return deliver_values(dense_gemm(A, B, C, acc, fa, fb, out, workers), returns, a)


#: Pieces of rows a GEMM with a progress bar is cut into at least (its steps).
PROGRESS_PIECES = 8


def dense_gemm(A: np.ndarray, B: np.ndarray, C: np.ndarray, acc: DenseModel, fa: Format, fb: Format, out: str,
               workers: int | None, step: Callable[[int], None] | None = None) -> np.ndarray:
    """The dense kernel of :func:`gemm`: A (M, K) and B (K, N) already in their formats
    (float64), C (M, N) in the accumulator's; B is prepared once for every piece of rows (a
    long K makes that preparation the largest work but the sums), and ``step(rows)`` is told
    of each piece done (a progress bar's)."""
    M, K = A.shape
    N = B.shape[1]
    from .kernels.operand import element_operand, with_bounds  # the kernels load on the first product
    from .kernels.products import element_products
    from .kernels.run import lane_permutation, run_model, ticks_as_it_goes

    result = np.empty((M, N), dtype=np.float32)
    ordered = isinstance(acc, BlockFMA) and acc.lane_order is not None
    if ordered:  # the model's lane order, once for all pieces
        order = lane_permutation(K, acc.instruction_k, acc.lane_order)
        A, B = A[:, order], B[order]
    # B's k-major values and exponents once for all pieces (not once per piece of rows), with
    # the bounds of the block FMA's exact fast path per block of products where it may pay.
    opb = element_operand(B, fb, acc.flush_subnormals, _zero_exponent(acc))
    bound_k = acc.block if _fast_path_pays(acc, fa, fb) else 0
    if bound_k:
        opb = with_bounds(opb, bound_k)

    def piece(rows: slice) -> None:
        prods = element_products(A[rows], opb, fa, fb, True, acc.flush_subnormals, _zero_exponent(acc), ordered,
                                 bound_k)
        # step(1) for each of its rows in all, as K runs where the model can tell
        parts = 0 if step is None else rows.stop - rows.start
        part = _finish(run_model(prods, C[rows].reshape(-1), acc, out, step, parts), acc, out)
        result[rows] = part.reshape(rows.stop - rows.start, N)  # not -1: N may be 0

    # With a progress bar, at least PROGRESS_PIECES pieces (rows are independent: the same
    # bits) where the model tells its steps only at the end: more pieces cost a kernel whose
    # work per k does not shrink with its rows (a block chain's) as much again each.
    steps_inside = step is None or ticks_as_it_goes(acc.for_output(out))
    pieces = row_pieces(M, values_per_row(acc, K, N, paired=False), workers, 1 if steps_inside else PROGRESS_PIECES)
    run_each(piece, pieces, workers)
    return result


def dot(a, b, c=None, *, inputs=None, accumulator="exact", out: str = "fp32", instruction: str | None = None,
        workers: int | None = None, returns: str = "numpy") -> Any:  # fmt: skip
    """Batched dot products over the last axis: d = sum_k a[..., k] * b[..., k] + c, each row
    with the bits the 1-D dot of that row gives (rows in pieces on ``workers`` threads; the
    same bits for every number). The arguments are :func:`gemm`'s: plain a and b (shape
    (..., K)) are quantized to ``inputs`` with RNE first, block arrays of one shape (...,
    K), blocked along that last axis, carry their formats; ``c`` (default 0) broadcasts to
    (...). Returns float32 values exactly in the ``out`` format, of shape (...): for 1-D
    operands one ``np.float32`` (``returns="torch"``: a 0-d tensor). Dask arrays give a Dask
    array, block by block over the batch axes with all of K in each task.

    >>> dot([[1.0, 1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0, 1.0]], [1 + 2**-22 + 2**-23],
    ...     inputs="fp16", accumulator="v100").tolist()
    [5.0]
    >>> from fpemu import mx
    >>> x = mx.quantize([1.0, 2.0, 3.0], "mxfp4"); y = mx.quantize([4.0, -1.0, 0.5], "mxfp4")
    >>> dot(x, y), dot(x, y, 1.0, accumulator="b200"), dot([1.0, 2.0], [3.0, 4.0], inputs="bf16")
    (np.float32(3.5), np.float32(4.5), np.float32(11.0))
    """
    if block_pair(a, b):
        result = _block_gemm(a, b, c, inputs, accumulator, instruction, out, workers, rows_only=True)
        return _one_or_many(result, check_returns(returns, a), a)
    fa, fb, out, acc = _dense_options(inputs, accumulator, instruction, out, "dot", "a and b")
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
    from .kernels.products import element_products  # the kernels load on the first product, not on import fpemu
    from .kernels.run import run_model

    result = np.empty(R, dtype=np.float32)

    def piece(rows: slice) -> None:
        prods = element_products(a2[rows], b2[rows], fa, fb, False, acc.flush_subnormals, _zero_exponent(acc))
        result[rows] = _finish(run_model(prods, c_arr[rows], acc, out), acc, out)

    run_each(piece, row_pieces(R, values_per_row(acc, K, 1, paired=True), workers), workers)
    return _one_or_many(result.reshape(shape), returns, a)


def _one_or_many(result: np.ndarray, returns: str, like: Any) -> Any:
    """The result in the array type asked for; a 0-d NumPy result as its np.float32."""
    out = deliver_values(result, returns, like)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _dense_options(inputs: Any, accumulator: Any, instruction: str | None, out: str, what: str,
                   operands: str) -> tuple[Format, Format, str, DenseModel]:
    """(format of A, of B, the output format's name, the model for that output) of plain
    operands: gemm's and dot's options checked by one rule."""
    if inputs is None:
        raise TypeError(f"{what} needs inputs= (the format of {operands}, or a pair of formats) for plain arrays")
    fa, fb = input_formats(inputs)
    out = _check_out(out)
    return fa, fb, out, _dense_model(accumulator, fa, fb, instruction, out)


def _dense_model(accumulator: Any, fa: Format, fb: Format, instruction: str | None, out: str) -> DenseModel:
    """The model of plain operands, for this output (a block-scaled one refused by the lookup)."""
    return get_accumulator(accumulator, (fa, fb), instruction=instruction).for_output(out)


def _prepare(x: Any, fmt: Format, what: str) -> np.ndarray:
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


#: Binades a block's products may spread over, besides their significands, in the fast path's
#: bounds for it to pay (measured on MiniLM's GEMMs: B200's 48 kept bits take FP8 blocks all
#: the fast way; H100's 25 bits take 0.3% of FP16 blocks, whose bounds then cost more).
FAST_SPREAD = 16


def _fast_path_pays(acc: DenseModel, fa: Format, fb: Format) -> bool:
    """Whether a dense model's blocks may mostly take the exact fast path
    (:func:`.kernels.block.product_sum`): a block FMA whose kept bits hold both significands
    and :data:`FAST_SPREAD` binades more. Either way the bits are the same.

    >>> from fpemu.accumulator import get_accumulator
    >>> e4m3 = get_format("e4m3")
    >>> _fast_path_pays(get_accumulator("b200", "e4m3"), e4m3, e4m3), _fast_path_pays(get_accumulator("h100", "e4m3"), e4m3, e4m3)
    (True, False)
    """
    return isinstance(acc, BlockFMA) and acc.frac_bits >= fa.mantissa_bits + fb.mantissa_bits + FAST_SPREAD


def _zero_exponent(acc: Accumulator) -> int | None:
    """The exponent a zero operand takes part in the alignment with (block models only)."""
    return acc.zero_exponent if isinstance(acc, BlockModel) else None


def _block_gemm(a: BlockArray, b: BlockArray, c: Any, inputs: Any, accumulator: Any, instruction: str | None,
                out: str, workers: int | None, rows_only: bool) -> np.ndarray:
    """The float32 results of a pair of block arrays: A @ B (``rows_only`` False: gemm), or
    each row of a with the same row of b (True: dot, shaped as the rows' batch), with C
    added and the tensor scales applied. One path for both, so that the two entry points
    check, look up and scale alike."""
    check_block_options(a, b, inputs, out)
    rows, columns, batch = block_rows(a, b) if rows_only else (a, b, (a.shape[0], b.shape[1]))
    bs = check_block_matmul(rows, columns)
    model = get_accumulator(accumulator, (a.format, b.format), instruction=instruction, block_size=bs)
    c0 = accumulator_operand(c, batch, "fp32")
    result = _block_products(rows, columns, c0.reshape(-1) if rows_only else c0, model, bs, rows_only, workers)
    return apply_tensor_scales(result, a, b, model).reshape(batch)


def _block_products(a: BlockArray, b: BlockArray, c: np.ndarray, model: BlockScaledAccumulator, bs: int,
                    paired: bool, workers: int | None) -> np.ndarray:  # fmt: skip
    """The fp32 accumulators of block arrays A (rows, K) and B (K, columns), before NVFP4's
    per-tensor scales: (rows, columns), or ``paired``: row i of A with column i of B, (rows,)."""
    pieces = row_pieces(a.shape[0], values_per_row(model, 0, b.shape[1], paired), workers)
    if isinstance(model, Blockwise):
        from .kernels.blockwise import exact_dot_rows, exact_matmul  # the kernels load on first use

        return (exact_dot_rows if paired else exact_matmul)(a, b, c, model, pieces, workers)
    from .kernels.block_scaled import check_fits, run_block_scaled
    from .kernels.operand import block_operand

    check_fits(model, a.format, b.format, bs)
    opa, opb = block_operand(a, 1, model), block_operand(b, 0, model)  # each once, for all pieces
    result = np.empty((a.shape[0],) if paired else (a.shape[0], b.shape[1]), np.float32)

    def piece(rows: slice) -> None:
        result[rows] = run_block_scaled(opa.take_rows(rows), opb.take_rows(rows) if paired else opb, c[rows],
                                        model, paired)  # fmt: skip

    run_each(piece, pieces, workers)
    return result
