"""fp16, fp32 and fp64 under round-to-nearest-even through numpy's own cast, which is correctly
rounded (IEEE 754); only NaNs are re-encoded, by the generic kernel, per the ``nan`` option.
From an input no wider than the format the cast is exact, so it serves every deterministic
rounding (which leaves the format's own values as they are).

>>> from ...formats import get_format
>>> from ..options import Conversion
>>> fp16 = get_format("fp16")
>>> encode_numpy_cast(np.array([1 + 2.0**-11, 65520.0, np.nan]), fp16, Conversion().resolved(fp16)).tolist()
[15360, 31744, 32256]
"""

from __future__ import annotations

import numpy as np

from ...formats import Format
from ..generic_kernel import encode_generic
from ..chunks import chunks, scratch
from .in_range import positions_beyond, range_bound
from ..options import Conversion

#: Formats numpy casts to natively, and their numpy dtypes.
NUMPY_NATIVE = {
    Format("fp16", 5, 10, 15): np.dtype(np.float16),
    Format("fp32", 8, 23, 127): np.dtype(np.float32),
    Format("fp64", 11, 52, 1023): np.dtype(np.float64),
}


def encode_numpy_cast(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Codes of float input into fmt (one of :data:`NUMPY_NATIVE`) by numpy's cast."""
    native = NUMPY_NATIVE[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        codes = x.astype(native).view(fmt.code_dtype)  # a fresh array: astype copies
    isnan = np.isnan(x)
    # numpy keeps the payloads of float32 NaNs narrowed to float16 (or copied) bit for bit, but
    # widening and float64 NaNs pass through the FPU, which quiets them: the generic kernel
    # re-encodes NaNs unless numpy's rule is the one asked for.
    numpy_rule = opts.nan == "payload" and x.dtype == np.float32 and native.itemsize <= 4
    if isnan.any() and not numpy_rule:
        codes[isnan] = encode_generic(x[isnan], fmt, opts)
    return codes


#: The roundings of :func:`encode_cast_directed`.
CAST_DIRECTED = ("toward_zero", "up", "down", "odd", "nearest_away")
# Elements per chunk: the input, the cast and its widening stay in the L2 cache.
_DIRECTED_CHUNK = 1 << 15


def encode_cast_directed(x: np.ndarray, fmt: Format, mode: str, out: np.ndarray | None = None,
                         outside: list | None = None) -> np.ndarray:
    """Codes of a float array into fmt (one of :data:`NUMPY_NATIVE`, narrower than x) under
    ``mode`` (one of :data:`CAST_DIRECTED`), exact where ``|x|`` is below the format's largest
    value; ``outside`` receives the flat positions of the rest (NaN among them), found chunk
    by chunk, for the caller to redo (:func:`~fpemu.codec.fast.in_range.redo_at`).

    numpy's cast rounds to nearest (IEEE 754, subnormals included); its result widened back
    (exactly) and compared with x says whether it went up or down, and where that is not the
    mode's way the code steps one unit of the pattern toward it (magnitude codes are ordered:
    a unit step crosses binades and the subnormal boundary alike; below the largest value it
    never reaches Inf). x and its cast have the same sign, so comparing their bit patterns
    compares magnitudes. Nearest-away steps away from zero at the ties the cast took toward
    zero: only patterns that end in enough zeros can be ties, and only those few are looked
    at (x exactly half way to the next value; both differences are exact). Chunk by chunk,
    in the L2 cache.

    >>> from ...formats import get_format
    >>> x = np.array([1 + 2.0**-12, -(1 + 2.0**-12), 1 + 3 * 2.0**-12, -1e-30, 1.0])
    >>> [[hex(c) for c in encode_cast_directed(x, get_format("fp16"), m)] for m in ("up", "odd")]
    [['0x3c01', '0xbc00', '0x3c01', '0x8000', '0x3c00'], ['0x3c01', '0xbc01', '0x3c01', '0x8001', '0x3c00']]
    """
    native = NUMPY_NATIVE[fmt]
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.size, fmt.code_dtype) if out is None or out.dtype != fmt.code_dtype else out.reshape(-1)
    wide_uint, signed = np.dtype(f"u{flat.dtype.itemsize}"), np.dtype(f"i{out.dtype.itemsize}")
    size = min(_DIRECTED_CHUNK, max(flat.size, 1))
    back, flag = scratch("cast.back", size, flat.dtype), scratch("cast.flag", size, bool)
    sign, step = scratch("cast.sign", size, signed), scratch("cast.step", size, signed)
    top = signed.type(8 * signed.itemsize - 1)
    low_bits = scratch("cast.low", size, wide_uint)
    tie_zeros = wide_uint.type((1 << (np.finfo(flat.dtype).nmant - np.finfo(native).nmant - 1)) - 1)
    bound = range_bound(fmt, flat.dtype)
    views = (back, flag, sign, step, low_bits)
    with np.errstate(over="ignore", invalid="ignore"):  # (outside the range: redone by the caller)
        for part in chunks(flat.size, size):
            n = part.stop - part.start
            if n < size:  # (the last chunk: the scratch arrays cut to it; sliced once, not per use)
                back, flag, sign, step, low_bits = (v[:n] for v in views)
            xs, codes = flat[part], out[part]
            narrow = codes.view(native)
            np.copyto(narrow, xs, casting="same_kind")  # round to nearest even
            if outside is not None:  # (two reductions of the chunk while it is in the cache)
                beyond = positions_beyond(xs, bound)
                if beyond is not None:
                    outside.append(beyond + part.start)
            if mode == "nearest_away":  # nearest even, but away at the ties it took toward zero
                # A tie's pattern ends in as many zeros as the bits dropped less one, or more
                # (more below the normal range): those few are looked at, the rest is nearest even.
                low = np.bitwise_and(xs.view(wide_uint), tie_zeros, out=low_bits)
                found = np.flatnonzero(np.equal(low, 0, out=flag))
                if found.size:
                    x_at, code_at = xs[found], codes[found]
                    g_at = code_at.view(native).astype(flat.dtype)
                    past = (code_at + out.dtype.type(1)).view(native).astype(flat.dtype)  # the value beyond
                    # where the cast went toward zero both differences have x's sign: their
                    # patterns compare as their magnitudes; x at least half way there is a tie
                    toward_at = g_at.view(wide_uint) < x_at.view(wide_uint)
                    half_way = (x_at - g_at).view(wide_uint) >= (past - x_at).view(wide_uint)  # (exact: Sterbenz)
                    codes[found[toward_at & half_way]] += out.dtype.type(1)
                continue
            g = back
            np.copyto(g, narrow)
            if mode in ("up", "down"):  # one step toward +Inf (up) or -Inf (down) where the cast went the other way
                s = np.right_shift(codes.view(signed), top, out=sign)  # 0, or -1 for negatives
                if mode == "up":
                    d = np.bitwise_xor(np.less(g, xs, out=flag), s, out=step)
                    d -= s  # +1 for positives, -1 (toward zero) for negatives
                else:
                    d = np.bitwise_xor(np.greater(g, xs, out=flag), s, out=step)
                    np.subtract(s, d, out=d)  # -1 for positives, +1 (away from zero) for negatives
                codes += d.view(codes.dtype)  # (wrapping: -1 is all ones)
                continue
            gu, xu = g.view(wide_uint), xs.view(wide_uint)
            codes -= np.greater(gu, xu, out=flag)  # toward zero where the cast went away
            if mode == "odd":  # then the last bit set where inexact
                codes |= np.not_equal(gu, xu, out=flag)
    return out.reshape(np.shape(x))
