"""The operands of a matrix product as every matrix-unit model reads them (plain arrays and
block arrays alike): real arrays checked by name, two block arrays checked as the A and B of
one product, and the accumulator operand ``c`` broadcast to the result and rounded to the
accumulator's format.

>>> accumulator_operand([[1 + 2.0**-30]], (1, 2), "fp32").tolist()
[[1.0, 1.0]]
>>> accumulator_operand(None, (2,), "fp16").tolist()
[0.0, 0.0]
>>> block_pair(np.ones((2, 2)), [[1.0]])
False
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..codec import as_numpy, quantize
from ..mx import BlockArray
from ..mx.gemm_buffers import k_block

_KINDS = {"O": "Python objects (dtype object; convert to float64 or int64 first)", "b": "booleans",
          "c": "complex numbers", "U": "strings", "S": "bytes"}  # fmt: skip


def real_array(x: Any, what: str) -> np.ndarray:
    """x as an ndarray of real numbers (float, integer or ml_dtypes' narrow floats), unchanged;
    a torch tensor as its values (bf16 and float8 read by their bits, exactly).

    >>> real_array([True], "a")
    Traceback (most recent call last):
    ...
    TypeError: a must be an array of real numbers, got booleans
    """
    try:
        arr = np.asarray(as_numpy(x))
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ValueError(f"{what} is not a rectangular array of numbers ({exc})") from None
    kind = arr.dtype.kind
    narrow_float = kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None
    if kind in "fiu" or narrow_float:
        return arr
    raise TypeError(f"{what} must be an array of real numbers, got {_KINDS.get(kind, f'dtype {arr.dtype}')}")


def accumulator_operand(c: Any, shape: tuple[int, ...], fmt: str) -> np.ndarray:
    """c broadcast to the result's ``shape`` and rounded (RNE) to the accumulator's format
    ``fmt`` (a unit's C operand has its accumulator's type), as float64; zeros for None. The
    input is never changed."""
    if c is None:
        return np.zeros(shape)
    arr = real_array(c, "c")
    try:
        arr = np.broadcast_to(arr, shape)
    except ValueError:
        raise ValueError(f"c of shape {arr.shape} does not broadcast to the result shape {shape}") from None
    return np.asarray(quantize(arr, fmt), dtype=np.float64)


def check_block_matmul(a: BlockArray, b: BlockArray) -> int:
    """The K block size shared by A (M, K) and B (K, N), after checking both operands."""
    for q in (a, b):
        if not isinstance(q, BlockArray):
            raise TypeError(f"matmul takes BlockArrays, got {type(q).__name__}")
    if a.format.is_nvfp4 != b.format.is_nvfp4:
        raise ValueError("cannot mix MX and NVFP4 operands")
    if a.format.tensor_scale != b.format.tensor_scale:
        raise ValueError(f"cannot mix {a.format.name} and {b.format.name} operands (one has a per-tensor scale)")
    if a.codes.ndim != 2 or b.codes.ndim != 2:
        raise ValueError(f"matmul operands must be 2-D, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    bs = k_block(a, 1)
    if bs < 1 or bs != k_block(b, 0):
        raise ValueError(
            f"K block sizes differ or K is not blocked: A {a.block_size} on axis {a.axis}, "
            f"B {b.block_size} on axis {b.axis}"
        )
    return bs


def block_pair(a: Any, b: Any) -> bool:
    """Whether a product's operands are block arrays (both); a mix of one with a plain array
    is refused."""
    ka, kb = isinstance(a, BlockArray), isinstance(b, BlockArray)
    if ka != kb:
        which, other = ("a", b) if ka else ("b", a)
        raise TypeError(f"gemm and dot multiply two BlockArrays or two plain arrays; {which} is a BlockArray and the "
                        f"other a {type(other).__name__}: quantize it too (fpemu.mx.quantize, B along axis 0) or "
                        "dequantize the BlockArray")
    return ka


def check_block_options(a: BlockArray, b: BlockArray, inputs: Any, out: Any) -> None:
    """The options block arrays do not take: their formats are theirs, their sums fp32."""
    from ..formats import get_format

    if inputs is not None:
        raise ValueError(f"inputs= gives the formats of plain arrays; BlockArray operands carry theirs "
                         f"({a.format.name}, {b.format.name}): leave inputs out")
    if get_format(out).name != "fp32":
        raise ValueError(f"block-scaled MMA accumulates in fp32, so out must be 'fp32', got {out!r}; round the "
                         "result yourself for an epilogue (fpemu.quantize(result, 'bf16'))")


def block_rows(a: BlockArray, b: BlockArray) -> tuple[BlockArray, BlockArray, tuple[int, ...]]:
    """Two block arrays of shape (..., K), blocked along K, as the (R, K) and (K, R) operands
    whose paired rows are their dot products, with the batch shape (...)."""
    for q in (a, b):
        if q.codes.ndim == 0:
            raise ValueError("dot takes block arrays of shape (..., K), got a 0-d one")
        if len(q.axes) != 1 or q.axes[0] != q.codes.ndim - 1:
            raise ValueError(f"dot reduces the last axis, so its operands must be blocked along it (axis "
                             f"{q.codes.ndim - 1}), got {q!r}: quantize with axis=-1")
    if a.shape != b.shape:
        raise ValueError(f"dot needs a and b of the same shape (..., K), with equal lengths K, got {a.shape} "
                         f"and {b.shape}")
    batch = a.shape[:-1]
    r, k = math.prod(batch), a.shape[-1]
    rows = [q.with_layout(q.codes.reshape(r, k), q.scales.reshape(r, q.scales.shape[-1]), axis=1) for q in (a, b)]
    columns = rows[1].with_layout(rows[1].codes.T, rows[1].scales.T, axis=0)  # b's rows as B's columns
    return rows[0], columns, batch
