"""The 17-bit table: float32 input into formats of at most 6 mantissa bits by one gather.

The round bit of such a format always lies in the top 16 bits of a float32 pattern (sign, 8
exponent bits, 7 fraction bits), float32 subnormals included, so the top 16 bits plus one
sticky bit for the low 16 decide the code. The table holds the generic kernel's code for each
of those 2**17 (top half, sticky) patterns, so it is the generic kernel by construction; a
float32 array then costs one gather (:func:`encode_float32_by_table`). The top-half arithmetic
(:mod:`.top_half`) computes the same function faster where it can, and looks its specials up
here.

>>> from ...formats import get_format
>>> from ..options import Conversion
>>> fmt = get_format("e4m3")
>>> encode_float32_by_table(np.float32([1.0625, 1.1875, 464.0, 1000.0]), fmt, Conversion().resolved(fmt)).tolist()
[56, 58, 126, 127]
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...formats import Format
from ..chunks import LIGHT_CHUNK, chunk_size, chunks, scratch
from ..generic_kernel import encode_generic
from ..options import Conversion
from ..specials import raise_nan, refuse_nan

#: The table entry of a NaN that the conversion refuses (``nan="raise"``), in formats of
#: fewer than 8 bits: no code of theirs reaches it, so one maximum over the codes finds it.
NAN_SENTINEL = 0xFF


@lru_cache(maxsize=64)
def encode_table(fmt: Format, opts: Conversion) -> np.ndarray:
    """Code for each (top 16 bits, sticky) index of a float32 pattern, by the generic kernel."""
    index = np.arange(1 << 17, dtype=np.uint32)
    patterns = ((index >> 1) << 16) | (index & 1)
    with np.errstate(invalid="ignore"):  # signalling-NaN patterns warn when widened
        x = patterns.view(np.float32).astype(np.float64)
    nan_free = opts if opts.nan != "raise" else Conversion(opts.rounding, opts.overflow, "zero", opts.sr_bits,
                                                             no_code=opts.no_code)
    codes = encode_generic(x, fmt, nan_free)
    if opts.nan == "raise" and fmt.bits < 8:
        codes[np.isnan(x)] = NAN_SENTINEL
    table = codes.astype(fmt.code_dtype)
    table.setflags(write=False)
    return table


def refuse_nan_before(x: np.ndarray, fmt: Format, opts: Conversion) -> None:
    """Where the conversion refuses NaN and the table has no spare code to flag it with (8
    bits or more), count the NaNs of float32 input first."""
    if opts.nan == "raise" and fmt.bits >= 8:
        refuse_nan(np.asarray(x), fmt)


def refuse_nan_after(codes: np.ndarray, fmt: Format, opts: Conversion) -> None:
    """Where the conversion refuses NaN in a format of fewer than 8 bits, the NaNs' codes are
    :data:`NAN_SENTINEL`: one maximum finds them."""
    if opts.nan == "raise" and fmt.bits < 8 and codes.size and codes.max() == NAN_SENTINEL:
        raise_nan(int(np.count_nonzero(codes == NAN_SENTINEL)), fmt)


def _halves(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Low and high 16-bit halves of a flat uint32 array, as strided views (no copy)."""
    pairs = u.view(np.uint16).reshape(-1, 2)
    return (pairs[:, 0], pairs[:, 1]) if np.little_endian else (pairs[:, 1], pairs[:, 0])


def table_lookup(u: np.ndarray, table: np.ndarray) -> np.ndarray:
    """table[(u >> 16) * 2 + (low 16 bits non-zero)] for a flat uint32 array."""
    low, high = _halves(u)
    out = np.empty(u.size, dtype=table.dtype)
    idx = scratch("lookup.index", min(chunk_size(LIGHT_CHUNK), u.size), np.uint32)
    sticky = scratch("lookup.sticky", idx.size, bool)
    for part in chunks(u.size, max(idx.size, 1)):
        n = part.stop - part.start
        np.left_shift(high[part], 1, out=idx[:n], dtype=np.uint32)
        np.not_equal(low[part], 0, out=sticky[:n])
        idx[:n] |= sticky[:n]
        table.take(idx[:n], out=out[part])
    return out


def encode_float32_by_table(x: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray | None = None) -> np.ndarray:
    """Codes of a float32 array through the table (a new array: the gather's own)."""
    refuse_nan_before(x, fmt, opts)
    codes = table_lookup(np.asarray(x, order="C").reshape(-1).view(np.uint32), encode_table(fmt, opts))
    refuse_nan_after(codes, fmt, opts)
    return codes.reshape(x.shape)
