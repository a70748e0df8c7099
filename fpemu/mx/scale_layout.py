"""The scale-factor layout of block-scaled GEMMs on NVIDIA Blackwell: 128x4 tiles, as cuBLASLt
and CUTLASS read them.

An operand blocked along K has one scale per (row, K-block): a ``(rows, k_blocks)`` matrix,
``rows`` = M for A and N for B (the kernel reads B as (N, K), K-major, so B's scales are taken
transposed). The kernel reads that matrix in tiles of 128 rows by 4 K-blocks, 512 bytes each;
the tiles follow one another row-major over (row tile, K-block tile), and inside a tile the
scale of row ``r`` and K-block ``c`` sits at byte ``(r % 32) * 16 + (r // 32) * 4 + c``. Rows
and K-blocks are padded with zero bytes to whole tiles.

Sources: NVIDIA's cuBLAS documentation, section "1D Block Scaling Factors Layout"
(docs.nvidia.com/cuda/cublas, ``#d-block-scaling-factors-layout``); PyTorch's ``to_blocked``
(``torch/testing/_internal/common_quantized.py``, 2.13; the same function in torchao's
``prototype/mx_formats/utils.py``), which writes that offset formula as a reshape and
transpose; CUTLASS's SM100 block-scaled examples index the same bytes as
``[32, 4, rows/128, 4, k_blocks/4]``. Here the offsets are computed from the formula itself.

>>> s = np.arange(8, dtype=np.uint8).reshape(2, 4)     # 2 rows, 4 K-blocks
>>> buf = to_blocked(s)
>>> buf.size, buf[:4].tolist(), buf[16:20].tolist()    # row 0 at byte 0, row 1 at byte 16
(512, [0, 1, 2, 3], [4, 5, 6, 7])
>>> np.array_equal(from_blocked(buf, 2, 4), s)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import is_whole

#: Rows and K-blocks of one tile, and its size in bytes.
TILE_ROWS, TILE_COLS, TILE_BYTES = 128, 4, 512


def blocked_size(rows: int, k_blocks: int) -> int:
    """Bytes of the tiled buffer of a (rows, k_blocks) scale matrix (whole tiles).

    >>> blocked_size(129, 5)
    2048
    """
    _check_dims(rows, k_blocks)
    return TILE_BYTES * -(-rows // TILE_ROWS) * -(-k_blocks // TILE_COLS)


def blocked_offsets(rows: int, k_blocks: int) -> np.ndarray:
    """(rows, k_blocks) int64 array: the byte of each scale in the tiled buffer.

    >>> blocked_offsets(130, 5)[[0, 31, 32, 127, 128], :][:, [0, 3, 4]].tolist()
    [[0, 3, 512], [496, 499, 1008], [4, 7, 516], [508, 511, 1020], [1024, 1027, 1536]]
    """
    _check_dims(rows, k_blocks)
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(k_blocks, dtype=np.int64)[None, :]
    tile = (r // TILE_ROWS) * -(-k_blocks // TILE_COLS) + c // TILE_COLS
    return TILE_BYTES * tile + (r % 32) * 16 + (r % TILE_ROWS) // 32 * 4 + c % TILE_COLS


def to_blocked(scales: Any) -> np.ndarray:
    """A (rows, k_blocks) matrix of scale codes as the tiled 1-D uint8 buffer a kernel reads
    (padding bytes zero). The input is not modified."""
    arr = np.asarray(scales)
    if arr.ndim != 2:
        raise ValueError(f"scales must be a (rows, k_blocks) matrix, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" or (arr.size and (int(arr.min()) < 0 or int(arr.max()) > 255)):
        raise ValueError("scales must be integer codes 0..255")
    out = np.zeros(blocked_size(*arr.shape), dtype=np.uint8)
    out[blocked_offsets(*arr.shape)] = arr
    return out


def from_blocked(buffer: Any, rows: int, k_blocks: int) -> np.ndarray:
    """The (rows, k_blocks) uint8 scale matrix held in a tiled buffer (padding ignored)."""
    buf = np.asarray(buffer)
    if buf.ndim != 1 or buf.dtype != np.uint8:
        raise ValueError(f"a tiled scale buffer is a 1-D uint8 array, got {buf.dtype} of shape {buf.shape}")
    size = blocked_size(rows, k_blocks)
    if buf.size != size:
        raise ValueError(f"a tiled buffer of {rows} x {k_blocks} scales holds {size} bytes (whole 128x4 tiles), "
                         f"got {buf.size}")
    return buf[blocked_offsets(rows, k_blocks)]


def _check_dims(rows: Any, k_blocks: Any) -> None:
    for name, v in (("rows", rows), ("k_blocks", k_blocks)):
        if not is_whole(v) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
