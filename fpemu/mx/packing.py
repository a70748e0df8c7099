"""Packing of element codes into bytes: two FP4 codes per byte, four FP6 codes per three."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import is_whole
from .formats import BlockFormat, get_block_format


# ---- packing ------------------------------------------------------------------------------------
def pack_codes(codes: Any, bits: int) -> np.ndarray:
    """Pack element codes densely along the last axis.

    * ``bits=4``: two codes per byte, element ``2i`` in the low nibble and ``2i+1`` in the high
      nibble (PyTorch's ``float4_e2m1fn_x2`` as fed to cuBLAS, torchao ``pack_uint4``);
    * ``bits=6``: four codes per three bytes as a little-endian bit stream (element ``j`` in bits
      ``6j .. 6j+5``; byte 0 = ``c0 | c1 << 6``, byte 1 = ``c1 >> 2 | c2 << 4``, byte 2 =
      ``c2 >> 4 | c3 << 2``), the layout of AMD rocRoller's ``getFp6`` (the FP4 order, extended);
    * ``bits=8``: the codes unchanged.

    The last axis is padded with zero codes to a multiple of 2 (FP4) or 4 (FP6).

    >>> pack_codes([0x1, 0x2, 0xF], 4).tolist()
    [33, 15]
    >>> pack_codes([1, 2, 3, 63], 6).tolist()
    [129, 48, 252]
    """
    c = np.asarray(codes)
    if c.dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got {c.dtype}")
    if c.ndim == 0:
        c = c.reshape(1)
    _check_bits(bits)
    if c.size and (int(c.min()) < 0 or int(c.max()) >= 1 << bits):
        raise ValueError(f"codes do not fit in {bits} bits")
    c = c.astype(np.uint8)
    if bits == 8:
        return c.copy()
    group = 2 if bits == 4 else 4
    pad = (-c.shape[-1]) % group
    if pad:
        c = np.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, pad)])
    g = c.reshape(*c.shape[:-1], c.shape[-1] // group, group)
    if bits == 4:
        return (g[..., 0] | (g[..., 1] << 4)).astype(np.uint8)
    a, b, d, e = (g[..., i] for i in range(4))
    out = np.stack([a | (b << 6), (b >> 2) | (d << 4), (d >> 4) | (e << 2)], axis=-1)
    return out.reshape(*c.shape[:-1], 3 * g.shape[-2]).astype(np.uint8)


def unpack_codes(packed: Any, bits: int, length: int | None = None) -> np.ndarray:
    """Inverse of :func:`pack_codes`: codes along the last axis (``length`` of them, default
    all that the bytes hold).

    >>> unpack_codes([33, 15], 4, 3).tolist()
    [1, 2, 15]
    >>> unpack_codes([129, 48, 252], 6).tolist()
    [1, 2, 3, 63]
    """
    p = np.asarray(packed)
    if p.dtype.kind not in "iu" or (p.size and (int(p.min()) < 0 or int(p.max()) > 255)):
        raise ValueError("packed data must be bytes (integers 0..255)")
    p = np.atleast_1d(p).astype(np.uint8)
    _check_bits(bits)
    if bits == 8:
        out = p.copy()
    elif bits == 4:
        out = np.stack([p & 0xF, p >> 4], axis=-1).reshape(*p.shape[:-1], 2 * p.shape[-1])
    elif bits == 6:
        if p.shape[-1] % 3:
            raise ValueError(f"packed FP6 data has {p.shape[-1]} bytes, not a multiple of 3")
        t = p.reshape(*p.shape[:-1], p.shape[-1] // 3, 3)
        b0, b1, b2 = t[..., 0], t[..., 1], t[..., 2]
        out = np.stack(
            [b0 & 0x3F, (b0 >> 6) | ((b1 & 0xF) << 2), (b1 >> 4) | ((b2 & 0x3) << 4), b2 >> 2],
            axis=-1,
        ).reshape(*p.shape[:-1], 4 * t.shape[-2])
    if length is not None:
        if not is_whole(length):
            raise ValueError(f"length must be a non-negative integer, got {length!r}")
        if not 0 <= length <= out.shape[-1]:
            raise ValueError(f"length {length} is not between 0 and the {out.shape[-1]} codes "
                             "the bytes hold")
        out = out[..., :length]
    return np.ascontiguousarray(out.astype(np.uint8))


def unpack(packed: Any, fmt: str | BlockFormat, length: int | None = None) -> np.ndarray:
    """Element codes of a block format from :meth:`BlockArray.pack` output.

    >>> from fpemu.mx import quantize
    >>> q = quantize([1.0, 2.0, 3.0], "mxfp4")
    >>> unpack(q.pack(), "mxfp4", 3).tolist() == q.codes.tolist()
    True
    """
    return unpack_codes(packed, get_block_format(fmt).bits, length)


def _check_bits(bits: Any) -> None:
    if not is_whole(bits) or bits not in (4, 6, 8):
        raise ValueError(f"bits must be 4, 6 or 8, got {bits!r}")
