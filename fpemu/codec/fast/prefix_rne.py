"""The prefix paths: float32-prefix formats (bf16, tf32: float32's own sign and exponent and
the top of its significand) by integer rounding of the float32 bit pattern. Under
round-to-nearest-even (``prefix_rne``): adding half an ulp less one plus the kept last bit,
then dropping the low bits. Under the other deterministic roundings (``prefix_directed``,
:func:`encode_prefix_directed`): adding what the mode adds for the sign (nearest-away: half an
ulp; up: an ulp less one to positives; down: to negatives), or setting the last kept bit where
a dropped one is set (odd), then dropping the low bits; exact for every value of magnitude
below the format's largest, the rest (and NaN) left to the caller.
float16 and float64 input is made float32 chunk by chunk first (:mod:`.float32_alike`).

>>> import numpy as np
>>> from ...formats import get_format
>>> [hex(c) for c in encode_prefix_rne(np.float32([1 + 2**-8, 1 + 3 * 2**-8, np.nan]), get_format("bf16"))]
['0x3f80', '0x3f82', '0x7fc0']
"""

from __future__ import annotations

import numpy as np

from ...formats import Format
from ..chunks import LIGHT_CHUNK, NARROW_CHUNK, chunk_size, chunks, scratch
from ..specials import holds_nan
from .float32_alike import as_float32_alike


# Input dtypes of the prefix path: float32, and those it narrows to float32 so that one
# rounding follows (float16 exactly; float64 to odd, exact for at most 22 significant bits).
PREFIX_INPUTS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def encode_prefix_rne(x: np.ndarray, fmt: Format, out: np.ndarray | None = None) -> np.ndarray:
    """RNE of float32 values into bf16/tf32-like formats, on the bit pattern.

    Adding 0x7FFF (for bf16) plus the last kept bit and dropping the low bits rounds to nearest
    even; a carry rolls into the exponent, and past the largest value into Inf, as IEEE wants.
    A NaN becomes the canonical quiet NaN with its sign. Whether a chunk holds a NaN is one
    maximum over it (NaN wins), not a mask and a scan.
    """
    source = np.asarray(x, order="C").reshape(-1)
    dtype = np.uint32 if fmt.container_bits else fmt.code_dtype
    out = np.empty(source.size, dtype=dtype) if out is None or out.dtype != dtype else out.reshape(-1)
    size = chunk_size(LIGHT_CHUNK if source.dtype == np.float32 else NARROW_CHUNK)
    work = scratch("prefix.0", min(size, source.size), np.uint32)
    drop = 23 - fmt.mantissa_bits
    for part in chunks(source.size, size):
        n, listed = part.stop - part.start, []
        flat = source[part] if source.dtype == np.float32 else \
            as_float32_alike(source[part], fmt, None, scratch("prefix.float32", n, np.float32), listed)  # (in cache)
        u = flat.view(np.uint32)
        ties = listed[0] if listed else None
        if ties is None:
            _prefix_rne(u, drop, out[part], work[:n])
        else:  # narrowed float64: the narrowing listed every tie (a decision point) already
            _prefix_rne(u, drop, out[part], work[:n], half_up=True)
            if ties.size:
                out[part][ties] = _prefix_rne(u[ties], drop, np.empty(ties.size, out.dtype), np.empty(ties.size, np.uint32))
        if holds_nan(flat):
            nan = np.isnan(flat)
            sign = (u[nan] >> np.uint32(31)).astype(out.dtype) << (fmt.bits - 1)
            out[part][nan] = sign | fmt.nan_code
    return out.reshape(x.shape)


#: The roundings of :func:`encode_prefix_directed`.
PREFIX_DIRECTED = ("toward_zero", "up", "down", "odd", "nearest_away")


def encode_prefix_directed(x: np.ndarray, fmt: Format, mode: str, out: np.ndarray | None = None) -> np.ndarray:
    """Codes of float values into bf16/tf32-like formats under ``mode`` (one of
    :data:`PREFIX_DIRECTED`), on the bit pattern, exact where ``|x|`` is below the format's
    largest value (Inf, NaN and overflow: the caller redoes them,
    :func:`~fpemu.codec.fast.in_range.redo_outside`). float64 is narrowed to float32 values
    that every deterministic rounding takes to the same codes.

    >>> import numpy as np
    >>> from ...formats import get_format
    >>> x = np.float32([1 + 2**-9, -(1 + 2**-9), 1 + 2**-8, 1.0])
    >>> [[hex(c) for c in encode_prefix_directed(x, get_format("bf16"), m)] for m in ("up", "odd", "nearest_away")]
    [['0x3f81', '0xbf80', '0x3f81', '0x3f80'], ['0x3f81', '0xbf81', '0x3f81', '0x3f80'], ['0x3f80', '0xbf80', '0x3f81', '0x3f80']]
    """
    source = np.asarray(x, order="C").reshape(-1)
    dtype = np.uint32 if fmt.container_bits else fmt.code_dtype
    out = np.empty(source.size, dtype=dtype) if out is None or out.dtype != dtype else out.reshape(-1)
    size = chunk_size(LIGHT_CHUNK if source.dtype == np.float32 else NARROW_CHUNK)
    work, extra = scratch("prefix.0", min(size, source.size), np.uint32), scratch("prefix.1", min(size, source.size), np.uint32)
    drop = np.uint32(23 - fmt.mantissa_bits)
    low = np.uint32((1 << int(drop)) - 1)
    for part in chunks(source.size, size):
        n = part.stop - part.start
        flat = source[part] if source.dtype == np.float32 else \
            as_float32_alike(source[part], fmt, None, scratch("prefix.float32", n, np.float32))
        u, w, e = flat.view(np.uint32), work[:n], extra[:n]
        if mode == "nearest_away":  # half an ulp: a tie carries away from zero
            np.add(u, np.uint32(1 << (int(drop) - 1)), out=w)
        elif mode in ("up", "down"):  # an ulp less one, to the positives (up) or negatives (down)
            np.right_shift(u, np.uint32(31), out=e)
            if mode == "up":
                e -= np.uint32(1)  # positives: all ones, negatives: zero
            else:
                np.negative(e, out=e)  # negatives: all ones
            e &= low
            np.add(u, e, out=w)
        elif mode == "odd":  # the last kept bit set where a dropped one is: (dropped + low) carries into it
            np.bitwise_and(u, low, out=e)
            e += low
            np.bitwise_or(u, e, out=w)
        else:  # toward zero: the bits dropped
            np.copyto(w, u)
        w >>= drop
        np.copyto(out[part], w, casting="unsafe")
    return out.reshape(x.shape)


def _prefix_rne(u: np.ndarray, drop: int, out: np.ndarray, w: np.ndarray, half_up: bool = False) -> np.ndarray:
    """Round-to-nearest-even of float32 patterns to their top 32 - drop bits, into out (and
    returned): whole-uint32 passes (a uint16 split of bf16 into halves costs a mixed uint16 +
    bool add). ``half_up``: round half up instead, nearest-even but at the ties (the low drop
    bits exactly half) whose kept last bit is even, in three passes instead of six: exact only
    where the caller fixes the ties."""
    if out.dtype == np.uint32 and not np.may_share_memory(out, u):  # tf32: the pattern's own width
        w = out
    if half_up:
        np.add(u, np.uint32(1 << (drop - 1)), out=w)
    else:
        np.right_shift(u, np.uint32(drop), out=w)
        w &= np.uint32(1)
        w += u
        w += np.uint32((1 << (drop - 1)) - 1)
    w >>= np.uint32(drop)
    if w is not out:
        np.copyto(out, w, casting="unsafe")
    return out
