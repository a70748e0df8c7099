""":func:`fpemu.gemm` and :func:`fpemu.dot` of block-scaled operands: two
:class:`~fpemu.mx.BlockArray` (MX, NVFP4) run through a block-scaled accumulator model, so the
one ``gemm`` takes dense and micro-scaled operands alike.

The operands carry their formats, so ``inputs=`` is not given; ``accumulator`` names a
block-scaled model (``"exact"``, ``"b200"``, ``"blackwell"``, ``"mmasim-blackwell"``, or
``"b200/mxf8f6f4"`` to pick an instruction kind) or is a
:class:`~fpemu.accumulator.BlockScaledAccumulator`. A dense model (``"h100"``, an ``Accumulator``)
and a mix of a BlockArray with a plain array are refused by name.

>>> from fpemu import mx
>>> A = mx.quantize(np.ones((2, 32)), "mxfp8_e4m3"); B = mx.quantize(np.ones((32, 1)), "mxfp8_e4m3", axis=0)
>>> block_gemm(A, B, None, inputs=None, accumulator="b200", out="fp32", instruction=None, workers=None,
...            returns="numpy").tolist()
[[32.0], [32.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import get_format
from ..mx import BlockArray
from .block_matmul import block_dot as _block_dot
from .block_matmul import matmul as block_matmul


def is_block_gemm(a: Any, b: Any) -> bool:
    """Whether gemm's operands are block arrays (both); a mix of one with a plain array is refused.

    >>> is_block_gemm(np.ones((2, 2)), [[1.0]])
    False
    """
    ka, kb = isinstance(a, BlockArray), isinstance(b, BlockArray)
    if ka != kb:
        which, other = ("a", b) if ka else ("b", a)
        raise TypeError(f"gemm and dot multiply two BlockArrays or two plain arrays; {which} is a BlockArray and the other "
                        f"a {type(other).__name__}: quantize it too (fpemu.mx.quantize, B along axis 0) or "
                        "dequantize the BlockArray")
    return ka


def block_gemm(a: BlockArray, b: BlockArray, c: Any, *, inputs: Any, accumulator: Any, out: str,
               instruction: str | None, workers: int | None, returns: str) -> np.ndarray:  # fmt: skip
    """C = A @ B (+ c) of block arrays A (M, K) and B (K, N), both blocked along K, through the
    block-scaled model ``accumulator`` (see :func:`.block_matmul.matmul`); float32 (M, N)."""
    _check_block_arguments(a, b, inputs, out)
    return block_matmul(a, b, c, accumulator=accumulator, instruction=instruction, workers=workers, returns=returns)


def block_dot(a: BlockArray, b: BlockArray, c: Any, *, inputs: Any, accumulator: Any, out: str,
              instruction: str | None, workers: int | None, returns: str) -> Any:  # fmt: skip
    """Batched dot products of block arrays over their last axis (see :func:`.block_matmul.block_dot`)."""
    _check_block_arguments(a, b, inputs, out)
    return _block_dot(a, b, c, accumulator=accumulator, instruction=instruction, workers=workers, returns=returns)


def _check_block_arguments(a: BlockArray, b: BlockArray, inputs: Any, out: str) -> None:
    if inputs is not None:
        raise ValueError(f"inputs= gives the formats of plain arrays; BlockArray operands carry theirs "
                         f"({a.format.name}, {b.format.name}): leave inputs out")
    if get_format(out).name != "fp32":
        raise ValueError(f"block-scaled MMA accumulates in fp32, so out must be 'fp32', got {out!r}; round the "
                         "result yourself for an epilogue (fpemu.quantize(result, 'bf16'))")
