"""float64 and float16 input made float32 for the float32 fast paths, without changing a code.

float16 widens exactly. float64 is narrowed to a float32 that every deterministic rounding
into the format takes to the same code (:func:`float64_to_float32_alike`): numpy's nearest
float32, unless that is one of the format's decision points (a value or a midpoint), where
the float64 is rounded *to odd* instead. Rounding to odd (truncate, and set the last bit when
anything was dropped: the last bit then remembers that the value was inexact) followed by a
rounding to at least two bits fewer gives the same result as rounding the exact value once
(Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
rounding to odd", IEEE TC 2008); the formats these paths serve have at most 22 significant
bits, two fewer than float32.

:func:`encode_through_float32` runs a float32 kernel so, chunk by chunk, while each narrowed
chunk is in the cache: about one pass more than float32 input.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...formats import Format
from ..chunks import NARROW_CHUNK, chunk_size, chunks, scratch
from ..generic_kernel import encode_generic
from ..options import Conversion


# float64 bits below float32's last significand bit (in float32's normal range)
_LOW29 = np.uint64((1 << 29) - 1)
_NOT_LOW29 = np.uint64(~((1 << 29) - 1) & ((1 << 64) - 1))
# 2 * |float32 pattern| at or below this (zero up to the smallest normal), or at or above
# _DOUBLED_INF (Inf, NaN): where the bit-pattern narrowing below may be wrong
_DOUBLED_MIN_NORMAL = 0x00800000 * 2
_DOUBLED_INF = 0x7F800000 * 2


def _float64_to_float32_odd(x: np.ndarray, specials: list | None = None) -> np.ndarray:
    """float64 -> float32 rounded to odd (inexact results get their last bit set); beyond
    float32's largest value, its largest (odd) value. ``specials``, when given, receives the
    flat positions of the non-zero inputs whose result is no float32 normal, or whose cast
    overflows (beyond float32's range), or NaN: the only ones where the input's range matters.

    In float32's normal range rounding to odd is bit arithmetic on the float64 pattern:
    keep the bits that float32 keeps, OR into its last one whether any dropped bit is set,
    clear the rest; the float cast of that is exact. Elsewhere (few in usual data) the
    cast's rounding is undone by :func:`_float32_odd_by_cast`.

    >>> x = np.array([1 + 2.0**-40, 1.0, -3e-45, 1e300, np.nan])
    >>> [hex(b) for b in _float64_to_float32_odd(x).view(np.uint32).tolist()]
    ['0x3f800001', '0x3f800000', '0x80000003', '0x7f7fffff', '0x7fc00000']
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.size, dtype=np.float32)
    size = chunk_size(NARROW_CHUNK)
    work = scratch("odd.work", min(size, flat.size), np.uint64)
    doubled = scratch("odd.doubled", work.size, np.uint32)
    found = []
    with np.errstate(over="ignore", invalid="ignore"):  # Inf, NaN: redone below
        for part in chunks(flat.size, max(size, 1)):
            n = part.stop - part.start
            u, w, d, o = flat[part].view(np.uint64), work[:n], doubled[:n], out[part]
            np.bitwise_and(u, _LOW29, out=w)
            w += _LOW29  # carries into bit 29 exactly when a dropped bit is set
            w |= u
            w &= _NOT_LOW29
            np.copyto(o, w.view(np.float64), casting="same_kind")
            np.left_shift(o.view(np.uint32), np.uint32(1), out=d)  # the magnitude, doubled
            if d.min() <= _DOUBLED_MIN_NORMAL or d.max() >= _DOUBLED_INF:  # (reductions: fast)
                edge = (d <= _DOUBLED_MIN_NORMAL) | (d >= _DOUBLED_INF)
                where = np.flatnonzero(edge) + part.start
                found.append(where[flat[where] != 0])  # exact zeros are right
    for where in found:
        out[where] = _float32_odd_by_cast(flat[where])
    if specials is not None:
        specials.append(np.concatenate(found) if found else np.empty(0, dtype=np.intp))
    return out.reshape(np.shape(x))


def _float32_odd_by_cast(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded to odd through numpy's cast (also in float32's subnormal
    range), stepping back where it rounded away from zero; saturates at float32's largest."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to Inf; NaN payloads
        f = x.astype(np.float32)
    bits = f.view(np.uint32)
    with np.errstate(invalid="ignore"):
        inexact = f.astype(np.float64) != x
    inexact &= ~np.isnan(x)
    if inexact.any():
        # Step back toward zero where RNE went away from zero, then set the last bit.
        away = np.abs(f.astype(np.float64)) > np.abs(x)
        bits[inexact & away] -= np.uint32(1)
        bits[inexact] |= np.uint32(1)
    return f


def _few_true(mask: np.ndarray) -> np.ndarray | None:
    """Flat positions of the True elements of a flat bool mask (as ``mask.nonzero()[0]``),
    found eight at a time: the 8-byte words that hold one, then the elements of just those.
    None where more than one word in 16 holds one (then a scan of every element is cheaper).
    For a few suspects in a chunk this is a scan of an eighth as many elements, and no count
    before it.

    >>> m = np.zeros(403, bool); m[[3, 170, 401]] = True
    >>> _few_true(m).tolist(), _few_true(np.ones(16, bool))
    ([3, 170, 401], None)
    """
    head = mask.size - mask.size % 8
    words = np.not_equal(mask[:head].view(np.uint64), np.uint64(0))
    hit = words.nonzero()[0]
    if hit.size * 16 > max(words.size, 1):
        return None
    candidates = (hit[:, None] * 8 + np.arange(8)).reshape(-1)
    found = candidates[mask[candidates]]
    return np.concatenate([found, mask[head:].nonzero()[0] + head]) if head < mask.size else found


def float64_to_float32_alike(x: np.ndarray, zero_bits: int, specials: list | None = None,
                              out: np.ndarray | None = None, decision_points: list | None = None) -> np.ndarray:
    """float64 -> float32 values that every deterministic rounding into a format takes to the
    same code as x does, for a format each of whose decision points (its values and the
    midpoints between them) is a float32 whose pattern ends in ``zero_bits`` zero bits.

    numpy's cast rounds to the nearest float32, f; no float32 lies strictly between x and f,
    so neither does a decision point, and x and f round alike unless f *is* one: then f ends
    in ``zero_bits`` zeros. Only such f (one in 2**zero_bits of random data) are replaced,
    where inexact, by x rounded to odd (:func:`_float64_to_float32_odd`: exact for the
    format, which has at least 2 bits fewer); a chunk full of inexact ones is rounded to odd
    whole (one full of exact ones, such as integers or values on a grid, is kept).
    ``specials`` receives the flat positions replaced (beyond float32's range among them);
    ``out``, a flat float32 array of x's size, receives the result when given;
    ``decision_points`` receives the flat positions of every result whose pattern ends in
    ``zero_bits`` zero bits (or ended, before it was replaced), found on the way, or None
    where a chunk held too many to list: a caller whose rounding differs from a cheaper one
    only there fixes just those.

    >>> x = np.full(32, 1.1)
    >>> x[0] = 1 + 2.0**-8 + 2.0**-30  # the float32 nearest is a bf16 midpoint: to odd
    >>> [hex(b) for b in float64_to_float32_alike(x, 15)[:2].view(np.uint32).tolist()]
    ['0x3f808001', '0x3f8ccccd']
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.size, dtype=np.float32) if out is None else out
    mask = np.uint32((1 << zero_bits) - 1)
    size = chunk_size(NARROW_CHUNK)
    low = scratch("alike.low", min(size, flat.size), np.uint32)
    flag, inexact = scratch("alike.flag", low.size, bool), scratch("alike.inexact", low.size, bool)
    # Where one chunk of random data holds a decision point or more (bf16: one pattern in
    # 2**15), the reduction that would skip the chunk is a wasted pass: go straight to them.
    rare = 1 << zero_bits >= 2 * size
    found, suspects, dense = [], [], False
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to Inf, NaN: decided below
        for part in chunks(flat.size, max(size, 1)):
            n, o = part.stop - part.start, out[part]
            np.copyto(o, flat[part], casting="same_kind")
            np.bitwise_and(o.view(np.uint32), mask, out=low[:n])
            if rare and low[:n].min():  # (a reduction: fast) no decision point
                continue
            suspect = np.equal(low[:n], 0, out=flag[:n])
            where = _few_true(suspect)
            if where is None and np.count_nonzero(suspect) * 16 > n:  # e.g. data on a grid
                dense = True
                with np.errstate(invalid="ignore"):  # keep the inexact (NaN: redone, as the cast does)
                    suspect &= np.not_equal(o.astype(np.float64), flat[part], out=inexact[:n])
                if np.count_nonzero(suspect) * 16 > n:
                    o[...] = _float64_to_float32_odd(flat[part], found)
                    found[-1] = found[-1] + part.start
                    continue
            suspects.append((np.flatnonzero(suspect) if where is None else where) + part.start)
        if suspects:  # all chunks' few suspects at once (a dozen NumPy calls, not a dozen a chunk)
            where = np.concatenate(suspects)
            where = where[flat[where] != out[where]]
            out[where] = _float32_odd_by_cast(flat[where])
            found.append(where)
    if specials is not None:
        specials.append(np.concatenate(found) if found else np.empty(0, dtype=np.intp))
    if decision_points is not None:
        decision_points.append(None if dense else np.concatenate(suspects) if suspects else np.empty(0, np.intp))
    return out.reshape(np.shape(x))


def as_float32_alike(flat: np.ndarray, fmt: Format, specials: list | None, out: np.ndarray,
                     decision_points: list | None = None) -> np.ndarray:
    """A flat float16/float64 array as float32 (into out) that rounds to the same codes into
    fmt, a format of at most 22 significant bits: float16 widened, float64 narrowed to values
    that round alike (beyond float32's range: its largest value, odd, which rounds to Inf as
    the input does; ``specials`` gets the positions to check for such values;
    ``decision_points`` those of the float32 values that may be fmt's decision points, where
    float64 narrowing lists them, see :func:`float64_to_float32_alike`)."""
    if flat.dtype == np.float64:
        return float64_to_float32_alike(flat, decision_zero_bits(fmt), specials, out, decision_points)
    np.copyto(out, flat, casting="safe")
    return out


def decision_zero_bits(fmt: Format) -> int:
    """The trailing zero bits of every float32 pattern that is a decision point of fmt (a
    value, or a midpoint, spaced 2**(e - M - 1) in binade e, above 2**(emin - M - 1)), for a
    format of at most 22 significant bits whose range lies within float32's: 22 - M in
    float32's normal range, ``emin - M - 1`` + 149 in its subnormal range.

    >>> from ...formats import get_format
    >>> decision_zero_bits(get_format("bf16")), decision_zero_bits(get_format("e4m3"))
    (15, 19)
    """
    return min(22 - fmt.mantissa_bits, fmt.emin - fmt.mantissa_bits + 148)


def encode_through_float32(x: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray | None,
                           encode32: Callable[[np.ndarray, Format, Conversion, np.ndarray], np.ndarray]) -> np.ndarray:
    """Codes of float16 or float64 input by a float32 kernel, ``encode32(x32, fmt, opts,
    out)``: each chunk made float32 (float16 widened, exactly; float64 narrowed to values
    that round alike, :func:`as_float32_alike`), then encoded while it is still in the cache;
    values beyond float32's range are decided by the generic kernel. For formats of at most 22
    significant bits whose range lies within float32's."""
    flat = np.ascontiguousarray(x).reshape(-1)
    codes = out.reshape(-1) if out is not None and out.dtype == fmt.code_dtype else np.empty(flat.size, fmt.code_dtype)
    for part in chunks(flat.size, chunk_size(NARROW_CHUNK)):
        specials: list = []
        narrow = as_float32_alike(flat[part], fmt, specials, scratch("wide.float32", part.stop - part.start, np.float32))
        got = encode32(narrow, fmt, opts, codes[part])
        if not np.may_share_memory(got, codes):  # (a kernel that writes a new array)
            codes[part] = got
        where = specials[0] if specials else ()
        huge = where[np.abs(flat[part][where]) >= 2.0**128] if len(where) else ()
        if len(huge):  # no float32 holds them: the generic kernel decides them
            codes[part][huge] = encode_generic(flat[part][huge], fmt, opts).astype(codes.dtype)
    return codes.reshape(x.shape)
