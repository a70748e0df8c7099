"""A block-scaled GEMM operand as the buffers a Blackwell kernel reads, and back.

cuBLASLt's block-scaled GEMMs (and CUTLASS's SM100 ones, and ``torch._scaled_mm``) take both
operands K-major ("TN": A as (M, K) row-major, B as (N, K) row-major, i.e. B transposed), the
elements packed along K (FP4: two per byte, element ``2i`` in the low nibble, as PyTorch's
``float4_e2m1fn_x2``; FP6: four per three bytes, :func:`~fpemu.mx.pack_codes`; 8-bit formats
one per byte), and the scales of each operand as a (rows, K-blocks) matrix in 128x4 tiles
(:mod:`.scale_layout`). :func:`gemm_buffers` writes those two buffers for a
:class:`BlockArray`; :func:`from_gemm_buffers` reads them back into one, so the buffers a kernel
reads can be handed to :func:`fpemu.gemm` for the golden output.

>>> from fpemu.mx import quantize
>>> A = quantize(np.arange(64.0).reshape(2, 32), "mxfp4")          # (M, K), blocked along K
>>> data, scales = gemm_buffers(A, "a")
>>> data.shape, scales.shape                                      # two codes a byte; one 128x4 tile
((2, 16), (512,))
>>> back = from_gemm_buffers(data, scales, "mxfp4", (2, 32), "a")
>>> np.array_equal(back.codes, A.codes) and np.array_equal(back.scales, A.scales)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import is_whole
from .array import BlockArray
from .mx_array import MXArray
from .nvfp4_array import NVFP4Array
from .formats import get_block_format
from .packing import pack_codes, unpack_codes
from .scale_layout import from_blocked, to_blocked

_K_AXIS = {"a": 1, "b": 0}


def k_scales(q: BlockArray, k_axis: int) -> np.ndarray:
    """Scale codes (int64) with one entry per (row, K-block): a 2-D tile's scale is taken
    for each of its rows (by index, so the cost follows the rows, not the tile size)."""
    axes, block = q.axes, q.block_shape
    if len(axes) == 1:
        if axes[0] != k_axis:
            raise ValueError(f"operand must be blocked along its K axis ({k_axis}), got axis={axes[0]}")
        return q.scales.astype(np.int64)
    other = 1 - k_axis
    rows = np.arange(q.shape[other]) // block[axes.index(other)]
    return q.scales.take(rows, axis=other).astype(np.int64)


def k_block(q: BlockArray, k_axis: int) -> int:
    """The block size along the K axis ``k_axis``; -1 when q is not blocked along it."""
    return q.block_shape[q.axes.index(k_axis)] if k_axis in q.axes else -1


def _operand(operand: Any) -> str:
    if operand not in _K_AXIS:
        raise ValueError(f"operand must be 'a' (M, K) or 'b' (K, N), got {operand!r}")
    return operand


def gemm_buffers(q: BlockArray, operand: str) -> tuple[np.ndarray, np.ndarray]:
    """(data, scales) of a GEMM operand as a block-scaled kernel reads them.

    ``operand="a"``: q is A, shape (M, K), blocked along K (axis 1); ``"b"``: q is B, shape
    (K, N), blocked along K (axis 0). ``data`` is (rows, bytes per row) uint8, rows = M or N,
    the K elements of each row packed; ``scales`` the 1-D uint8 tiled buffer of the
    (rows, K-blocks) scale matrix. A 16x16-tile operand (NVFP4 weights) gives each row its
    tile's scale, as the kernel reads it. NVFP4's per-tensor scale is not in either buffer
    (the GEMM takes it as alpha: ``q.global_amax``, ``q.global_scale``).
    """
    k_axis = _K_AXIS[_operand(operand)]
    if not isinstance(q, BlockArray):
        raise TypeError(f"gemm_buffers takes a BlockArray, got {type(q).__name__}")
    if q.codes.ndim != 2:
        raise ValueError(f"a GEMM operand is 2-D, got shape {q.shape}")
    if k_block(q, k_axis) < 1:
        raise ValueError(f"operand {operand!r} must be blocked along K (axis {k_axis}), got axis={q.axis}")
    codes = q.codes if k_axis == 1 else q.codes.T
    scales = k_scales(q, k_axis)
    scales = scales if k_axis == 1 else scales.T
    return pack_codes(np.ascontiguousarray(codes), q.format.bits), to_blocked(scales)


def from_gemm_buffers(
    data: Any,
    scales: Any,
    fmt: Any,
    shape: tuple[int, int],
    operand: str,
    *,
    block_size: int | None = None,
    global_amax: Any = None,
    global_scale: Any = None,
    variant: str | None = None,
) -> BlockArray:
    """The :class:`BlockArray` of a GEMM operand held in kernel buffers (see :func:`gemm_buffers`).

    ``shape`` is the operand's logical shape: (M, K) for ``"a"``, (K, N) for ``"b"``; ``data``
    holds rows of packed codes (rows = M or N), ``scales`` the tiled buffer; ``block_size``
    defaults to the format's. NVFP4 needs ``global_amax`` (or, torchao, ``global_scale``).
    Returns A blocked along axis 1, or B (K, N) blocked along axis 0. Nothing is written into
    the buffers given.
    """
    k_axis = _K_AXIS[_operand(operand)]
    bf = get_block_format(fmt)
    if (not isinstance(shape, (tuple, list)) or len(shape) != 2
            or any(not is_whole(s) or s < 0 for s in shape)):
        raise ValueError(f"shape must be two non-negative integers, got {shape!r}")
    k = int(shape[k_axis])
    rows = int(shape[1 - k_axis])
    bs = bf.block_size if block_size is None else block_size
    if not is_whole(bs) or bs < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    d = np.asarray(data)
    per_row = -(-k * bf.bits // 8) if bf.bits != 6 else 3 * -(-k // 4)
    if d.dtype != np.uint8 or d.shape != (rows, per_row):
        raise ValueError(f"data of {operand!r} must be uint8 of shape ({rows}, {per_row}) "
                         f"({rows} rows of {k} {bf.element.name} codes, packed), got {d.dtype} {d.shape}")
    codes = unpack_codes(d, bf.bits, k) if k else np.zeros((rows, 0), np.uint8)
    kb = -(-k // bs)
    s = from_blocked(scales, rows, kb)
    if k_axis == 0:
        codes, s = codes.T, s.T
    if not bf.tensor_scale and (global_amax, global_scale, variant) != (None, None, None):
        raise ValueError(f"global_amax, global_scale and variant describe NVFP4's per-tensor scale, "
                         f"which {bf.name} has not")
    codes, s = np.ascontiguousarray(codes), np.ascontiguousarray(s)
    if not bf.is_nvfp4:
        return MXArray(codes, s, bf, k_axis, int(bs))
    return NVFP4Array(codes, s, bf, k_axis, int(bs), global_scale, global_amax, variant)
