"""Any rounding, overflow rule or NaN policy, on the fields of the input's bit pattern.

For a float32 (or float64) x in the format's normal range, the pattern already holds what
the generic kernel works out with ``frexp``: its magnitude bits shifted right by ``k = 23 - M``
(52 - M) are the truncated magnitude code plus a constant (the exponent rebias), and the
``k`` bits dropped are the exact fraction of a unit, ``rem / 2**k``. The rounding itself is
the generic kernel's own :func:`~fpemu.codec.generic_kernel.round_code` on those integers,
so every mode (directed, nearest, odd, ``stochastic`` with the same SplitMix64 bits of each
element's position, P3109's A/B/C and gfloat's stochastic odd, drawn or given) decides
exactly as there: its decision is a function of the exact fraction alone, whatever the
width of ``rem`` (the rounding functions of :mod:`..rounding` are exact for any ``rem <
2**53`` and ``shift``). The stochastic modes take the same decisions as integer carries at
the normal range's one shift count (:func:`~..rounding.stochastic_carry`), from only the
top bits of each random number that they read (:func:`~..rounding.random_top_bits`).

Below the format's normal range (the subtraction of the rebias wraps around to a huge code)
the subnormal range is read off the fields too: element by element, all of a call's at once
in batches (:func:`_subnormal_range`), or, under stochastic rounding where it is a large
share of a chunk, by whole-chunk arithmetic (:func:`_subnormal_chunk`). An unsigned format's
negatives in the normal range all take the one code the generic kernel's rule gives them
(:func:`_negative_code`). Every element left is the generic kernel's, all of a call's at
once (so a refusal counts them as the generic kernel does): zero and the input's
subnormals, a truncated code at or past the largest finite one (overflow, and the overflow
rule), Inf and NaN (and the NaN policy), and the unsigned negatives the rules above leave.
On usual data they are few, so the options that only change what happens to them cost
nothing here.

bf16 and tf32 (float32 prefixes) from float32 under ``stochastic``, P3109's A and B skip the
fields: the pattern plus an addend that carries out of the dropped bits where the mode rounds
up (:func:`~..rounding.stochastic_addend`), shifted, is the code of every |x| < max.

float16 input is widened to float32 chunk by chunk (exactly); float64 input under a
deterministic rounding is narrowed to float32 values that round alike (:func:`narrows_alike`),
under P3109's A and B read from the top 32 bits of each pattern where the bits they decide
on all lie there (:func:`_high_word_serves`), else read as float64 fields.

>>> from ...formats import get_format
>>> from ..options import Conversion
>>> fmt = get_format("bf16")
>>> x = np.float32([1 + 2**-8, -(1 + 2**-8), 3.4e38, np.nan])
>>> [hex(c) for c in encode_float_fields(x, fmt, Conversion(rounding="up", overflow="saturate").resolved(fmt))]
['0x3f81', '0xbf80', '0x7f7f', '0x7fc0']
"""

from __future__ import annotations

import sys
import threading
from functools import lru_cache
from typing import Any

import numpy as np

from ...formats import Format
from ..chunks import LIGHT_CHUNK, chunk_size, chunks, scratch
from ..generic_kernel import chunk_random, encode_generic, finish_codes, is_fp32_prefix, round_code
from ..options import Conversion
from ..rounding import (addend_serves, carry_serves, random_top_bits, random_u64, sr_key, stochastic_addend,
                        stochastic_carry)
from ..specials import refuse_nan
from .in_range import positions_beyond, range_bound

# float32 and float64: the unsigned integer of the pattern, fraction bits, exponent bias
_WIDTHS = {4: (np.uint32, 23, 127), 8: (np.uint64, 52, 1023)}
# The top 32 bits of a float64 pattern, read as fields of their own (:func:`_high_word_serves`):
# sign, float64's 11 exponent bits and the top 20 of its fraction.
_HIGH_FIELDS = (np.uint32, 20, 1023)
# Which of a float64's two uint32 words holds its top 32 bits in memory.
_HIGH_WORD = 1 if sys.byteorder == "little" else 0
# Elements per chunk under stochastic rounding: its 64-bit random numbers and their
# temporaries then stay in the L2 cache (SplitMix64 costs a third as much as at LIGHT_CHUNK).
_STOCHASTIC_CHUNK = 1 << 16
# The share of a chunk outside the format's normal range from which a float32 chunk's
# subnormal range is rounded by whole-chunk arithmetic (:func:`_subnormal_chunk`) under
# stochastic rounding, rather than element by element (:func:`_subnormal_range`).
_BULK_SHARE = 1 / 4
# Elements sampled across the input whose share below the normal range picks, once per call,
# the one-way chunks (:func:`_stochastic_chunk`) where they serve, and the share from which
# they are taken (a step of speed: every way gives the same codes). e3m2 of normal data (a
# fifth below its smallest normal), stochastic, 2**20 float32, 6 alternating rounds: 81
# Melem/s at 1/4 (the carries, the subnormal range element by element), 95 at 1/20. (A
# sample per chunk cost bf16 and e4m3, which never take them, 3%.)
_SAMPLE = 4096
_UNIFIED_SHARE = 1 / 10
# Elements of the subnormal range per batch (their int64 temporaries in the L2 cache).
_SUBNORMAL_BATCH = 1 << 15


def _fits(fmt: Format, mbits: int, bias: int) -> bool:
    """Whether fmt's normal range lies inside a float's of ``mbits`` fraction bits and that
    bias, with at most as many mantissa bits (Inf and NaN landing past its largest code)."""
    low = fmt.emin + bias  # the float's exponent field of the format's smallest normal
    max0 = fmt.max_code - (int(fmt.subnormals) << fmt.mantissa_bits)
    return (0 <= fmt.mantissa_bits <= mbits and 1 <= low and fmt.emax + bias <= 2 * bias
            and ((2 * bias + 1 - low) << fmt.mantissa_bits) >= max0)


def _width(dtype: np.dtype, fmt: Format) -> tuple:
    """The pattern's integer, fraction bits and bias of the float the fields are read from:
    float16 and float32 input as float32 where fmt fits its fields, else widened (exactly)
    to float64."""
    return _WIDTHS[4 if np.dtype(dtype).itemsize <= 4 and _fits(fmt, 23, 127) else 8]


def fields_serve(fmt: Format, opts: Conversion, dtype: Any) -> bool:
    """Whether :func:`encode_float_fields` serves fmt from float input of ``dtype`` (any: the
    fields are float32's or float64's): a sign-magnitude (or unsigned) format with normal
    values whose normal range lies inside float64's; any rounding and option."""
    return (
        not fmt.twos_complement and fmt.exponent_bits >= 1
        and fmt.max_code > (int(fmt.subnormals) << fmt.mantissa_bits)
        and opts.rounding != "ml_dtypes_e8m0"  # (its lowest binade rule reads the exponent)
        and _fits(fmt, 52, 1023)
    )


def _high_word_serves(dtype: Any, fmt: Format, opts: Conversion) -> bool:
    """Whether input read as float64 (``dtype``) is read from the top 32 bits of its patterns alone (uint32
    passes, half the memory of float64's fields after one copy), k = 20 - M bits dropped from
    the top word and the low word's value l / 2**32 below them:

    * P3109's A and B decide on the top N (B: N + 1) bits of the fraction dropped alone: where
      they lie in the top word (M + N <= 20), floor((rem + l / 2**32) / 2**(k - N)) =
      floor(rem / 2**(k - N)), the low word changes nothing;
    * P3109's C and gfloat's stochastic odd round the fraction to N bits first, which reads
      the round bit below them and whether any bit below it is set: with the low word's
      "non-zero" in the top word's last dropped bit, both lie in the top
      word where the round bit is not that last bit (M + N + 2 <= 20);
    * ``stochastic`` rounds up where the top 52 - M random bits are below the whole fraction
      dropped: where the top k of each differ, they decide; where they are equal (one
      element in 2**k), the element is left to the generic kernel (k >= 1: M <= 19).

    Zeros, subnormals, Inf and NaN (a payload in the low word alone looks like Inf) fall
    outside the normal range, to the exact ways from the input."""
    if np.dtype(dtype) != np.float64 or not _fits(fmt, _HIGH_FIELDS[1], _HIGH_FIELDS[2]):
        return False
    if opts.rounding == "stochastic":
        return fmt.mantissa_bits < _HIGH_FIELDS[1]
    if opts.sr_bits is None:
        return False
    if opts.rounding in ("stochastic_c", "stochastic_odd"):
        return fmt.mantissa_bits + opts.sr_bits + 2 <= _HIGH_FIELDS[1]
    return opts.rounding in ("stochastic_a", "stochastic_b") \
        and fmt.mantissa_bits + opts.sr_bits + (opts.rounding == "stochastic_b") <= _HIGH_FIELDS[1]


def _float64_words(x: np.ndarray) -> np.ndarray:
    """x as float64 patterns in two uint32 columns, the top word at :data:`_HIGH_WORD`."""
    with np.errstate(invalid="ignore"):  # (widening a signalling NaN warns; it stays NaN, left to the generic kernel)
        return np.ascontiguousarray(x, dtype=np.float64).view(np.uint32).reshape(-1, 2)


def _fields_of(x: np.ndarray, wide: np.dtype, uint, words: np.ndarray | None = None,
               out: np.ndarray | None = None) -> np.ndarray:
    """The patterns the fields are read from: x (as ``wide``) viewed as ``uint``, or, given
    x's :func:`_float64_words`, their top words, copied contiguous (into out when given)."""
    if words is None:
        with np.errstate(invalid="ignore"):  # (widening a signalling NaN warns; it stays NaN, left to the generic kernel)
            return x.astype(wide, copy=False).view(uint)
    if out is None:
        return words[:, _HIGH_WORD].copy()
    np.copyto(out, words[:, _HIGH_WORD])
    return out


def _share_below(flat: np.ndarray, fmt: Format, wide: np.dtype, fields: tuple, high: bool) -> float:
    """The share of a sample across the input (every ``len // _SAMPLE``-th element) whose
    magnitude (sign ignored) lies outside fmt's normal range, read from ``fields``; 0 for no
    input. (A choice of way, never of a code.)"""
    if not flat.size:
        return 0.0
    uint, mbits, bias = fields
    M = fmt.mantissa_bits
    sample = flat[:: max(1, flat.size // _SAMPLE)]
    probe = _fields_of(sample, wide, uint, _float64_words(sample) if high else None)
    magnitude = ((probe >> uint(mbits - M)) - uint((fmt.emin + bias) << M)) & uint((1 << (8 * probe.itemsize - 1 - mbits + M)) - 1)
    return np.count_nonzero(magnitude >= uint(fmt.max_code - (int(fmt.subnormals) << M))) / probe.size


def narrows_alike(fmt: Format, opts: Conversion) -> bool:
    """Whether float64 input may be made float32 first (:mod:`.float32_alike`, chunk by chunk)
    and read as float32 fields, at half the memory traffic: a deterministic rounding (every
    one takes the narrowed value to the same code), no NaN payloads to keep, and a format of
    at most 22 significant bits whose decision points are float32 values."""
    return (
        not opts.stochastic and opts.nan not in ("payload", "quiet_payload")
        and fmt.mantissa_bits <= 21 and fmt.emax <= 127 and fmt.emin - fmt.mantissa_bits - 1 >= -149
        and _fits(fmt, 23, 127) and fields_serve(fmt, opts, np.float64)
    )


def _subnormal_range(flat: np.ndarray, where: np.ndarray, codes: np.ndarray, wide: np.dtype, fmt: Format,
                     opts: Conversion, random_at) -> np.ndarray:
    """Codes (into codes) of the elements ``flat[where]`` (all of a call's at once) that are
    normal in the float ``wide`` and below the format's normal range (positive ones only, in
    an unsigned format); the rest of ``where``, returned, is left to the generic kernel. There
    the quantum is the format's smallest, so ``k + (smallest normal's exponent field - field)``
    bits are dropped from the significand (hidden bit included); beyond 60 every one is
    sticky, as in the generic kernel. ``random_at(indices)``: the random bits (u, P3109's) of
    those elements."""
    uint, mbits, bias = _WIDTHS[wide.itemsize]
    width = 8 * wide.itemsize
    low = fmt.emin + bias
    with np.errstate(invalid="ignore"):
        patterns = flat[where].astype(wide).view(uint)
    field = ((patterns >> uint(mbits)) & uint((1 << (width - 1 - mbits)) - 1)).astype(np.int64)
    small = (field >= 1) & (field < low)
    if not fmt.signed:
        small &= (patterns >> uint(width - 1)) == 0
    rest, where = where[~small], where[small]
    patterns, field = patterns[small], field[small]
    shift_full = (mbits - fmt.mantissa_bits) + low - field
    significand = (patterns & uint((1 << mbits) - 1)).astype(np.uint64) | np.uint64(1 << mbits)
    negative = (patterns >> uint(width - 1)).astype(bool)
    # Stochastic modes: where at most ``wide`` bits are dropped, the significand moved to drop
    # exactly ``wide`` (no bit lost, the code below 2**M) leaves the same fraction at one
    # shift count, decided by the carries as in the normal range.
    wide_shift = _wide_shift(fmt)
    if opts.stochastic and carry_serves(opts.rounding, wide_shift, opts.sr_bits, 64):
        u_random, bits = random_at(where)
        code = np.left_shift(significand, np.maximum(wide_shift - shift_full, 0).astype(np.uint64))
        rem = code & np.uint64((1 << wide_shift) - 1)
        r = u_random >> np.uint64(64 - wide_shift) if opts.sr_bits is None else bits
        carry = stochastic_carry(opts.rounding, rem, wide_shift, opts.sr_bits, r, np.empty_like(rem))
        code >>= np.uint64(wide_shift)
        code += carry
        lossy = shift_full > wide_shift  # (bits below the wide shift: rounded as below)
        if lossy.any():
            code[lossy] = _rounded_below(significand[lossy], shift_full[lossy], negative[lossy], fmt, opts,
                                         None if u_random is None else u_random[lossy],
                                         None if bits is None else bits[lossy])
    else:
        code = _rounded_below(significand, shift_full, negative, fmt, opts, *random_at(where))
    if fmt.signed:
        if not fmt.has_neg_zero:
            negative &= code != 0  # zero is unsigned there
        code |= negative.astype(np.uint64) << np.uint64(fmt.sign_mask.bit_length() - 1)
    codes[where] = code
    return rest


def _wide_shift(fmt: Format) -> int:
    """The one shift count of the subnormal range by whole-chunk arithmetic: a code below 2**M
    and that many fraction bits fill at most 63 bits (the carries' sums stay below 2**64)."""
    return min(62, 63 - fmt.mantissa_bits)


def _random_shift(fmt: Format, uint) -> int:
    """How many top random bits ``stochastic`` reads in the subnormal range by whole-chunk
    arithmetic: the fraction bits of float64's binade emin (float32 input) or :func:`_wide_shift`."""
    return 52 - fmt.mantissa_bits if uint is np.uint32 else _wide_shift(fmt)


def _subnormal_chunk32(u: np.ndarray, code: np.ndarray, outside: np.ndarray, r64: np.ndarray, fmt: Format,
                     opts: Conversion) -> np.ndarray | None:
    """:func:`_subnormal_chunk` for float32 patterns u and uint32 codes, in fewer passes (84
    Melem/s against 59 for e2m1 on the busy machine): in float64, t = |x| + 2**emin is exact
    where |x| >= 2**(emin - 29) (x's last bit is then at or above 2**(emin - 52)) and lies in
    binade emin, whose quantum is the subnormal range's: the top M bits of t's fraction field
    are x's truncated code and the 52 - M below, the exact fraction dropped. The carry then
    decides as in the normal range, from ``r64``: the top 52 - M random bits (stochastic) or
    P3109's N. (An unsigned format's negatives stay with the rest.)"""
    n, M = u.size, fmt.mantissa_bits
    magnitude = scratch("fields.mag", n, np.uint32)  # |x|'s pattern (unsigned: x's)
    np.bitwise_and(u, np.uint32(0x7FFFFFFF if fmt.signed else 0xFFFFFFFF), out=magnitude)
    t = scratch("fields.t", n, np.float64)
    with np.errstate(invalid="ignore"):  # (a signalling NaN widened: it stays NaN, not served)
        np.copyto(t, magnitude.view(np.float32))
        t += 2.0 ** fmt.emin
    bits64 = t.view(np.uint64)
    sub = scratch("fields.s", n, np.uint64)
    rem = scratch("fields.m", n, np.uint64)
    np.bitwise_and(bits64, np.uint64((1 << (52 - M)) - 1), out=rem)
    np.right_shift(bits64, np.uint64(52 - M), out=sub)
    sub &= np.uint64((1 << M) - 1)
    sub += stochastic_carry(opts.rounding, rem, 52 - M, opts.sr_bits, r64, bits64)
    sub32 = scratch("fields.s32", n, np.uint32)
    np.copyto(sub32, sub, casting="unsafe")
    if fmt.signed:  # the sign bit (not on zero where there is no -0)
        sign = scratch("fields.sign", n, np.uint32)
        np.right_shift(u, np.uint32(31), out=sign)
        if not fmt.has_neg_zero:
            sign *= np.minimum(sub32, np.uint32(1), out=scratch("fields.nonzero", n, np.uint32))
        sign <<= np.uint32(fmt.sign_mask.bit_length() - 1)
        sub32 |= sign
    # the elements served: |x| in [max(2**(emin - 29), float32's smallest normal), 2**emin);
    # codes blended in where |x| < 2**emin by an all-ones mask (a masked copy mispredicts
    # its branches on such data: 4-5 ns an element), those below the first bound redone
    # with the rest of ``outside``
    lo = int(np.float32(max(2.0 ** (fmt.emin - 29), 2.0 ** -126)).view(np.uint32))
    hi = int(np.float32(2.0 ** fmt.emin).view(np.uint32))
    below = scratch("fields.below", n, np.uint32)
    if fmt.signed:  # (|x| as int32: x - hi is negative, its arithmetic shift all ones, where |x| < 2**emin)
        np.subtract(magnitude.view(np.int32), np.int32(hi), out=below.view(np.int32))
        np.right_shift(below.view(np.int32), np.int32(31), out=below.view(np.int32))
    else:  # (the negatives too are past hi: not served)
        np.less(magnitude, np.uint32(hi), out=below, casting="unsafe")
        np.negative(below, out=below)
    sub32 ^= code
    sub32 &= below
    code ^= sub32
    magnitude -= np.uint32(lo)
    rest = np.greater_equal(magnitude, np.uint32(hi - lo), out=scratch("fields.rest", n, bool))
    rest &= outside
    return np.flatnonzero(rest) if rest.any() else None


def _unified_shift(opts: Conversion, width: int) -> int:
    """S, the bits of the exact fraction :func:`_stochastic_chunk` hands the carries, for
    patterns of ``width`` bits: width - 1 for ``stochastic`` (its top random bits), width - 2
    for P3109's modes (their sums need a bit more)."""
    return width - 1 if opts.rounding == "stochastic" else width - 2


def _unified_serves(fmt: Format, opts: Conversion, uint) -> bool:
    """Whether :func:`_stochastic_chunk` serves fmt under opts on fields of ``uint``: a signed
    format with subnormals, a mode the carries decide at S bits."""
    width = 8 * np.dtype(uint).itemsize
    return fmt.signed and fmt.subnormals and carry_serves(opts.rounding, _unified_shift(opts, width), opts.sr_bits,
                                                          width)


def _stochastic_chunk(u: np.ndarray, r: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray,
                      fields: tuple | None = None, sticky: np.ndarray | None = None) -> np.ndarray | None:
    """Stochastic codes (into out, the format's code dtype) of a chunk of float32 or float64
    patterns u whose subnormal range is a large share, the normal and the subnormal range in
    one way, in passes of u's integer: an element d binades below the normal range (0 in it)
    drops s = k + d of its significand's bits (hidden bit set), which leaves the code's low
    part; the exponent part is the binades above the lowest. The dropped bits moved to the top
    of S bits (:func:`_unified_shift`) are the exact fraction dropped, times 2**S, wherever
    s <= S: the carries decide from it at one count (:func:`~..rounding.stochastic_carry`),
    from ``r``, what the mode reads of the random numbers (the top S bits, or P3109's N), of
    u's integer. Returns the positions it leaves (s > S: zeros, input subnormals and the
    tiny; a code past the largest: overflow, Inf, NaN), or None.

    Against the normal range's carries with :func:`_subnormal_chunk32`, e2m1, 2**20 float32
    normals, one core: stochastic 0.26 -> 0.32x of the default path, P3109's A with given bits
    0.32 -> 0.41x (the random numbers are most of what is left). ``fields``: the layout of u
    (uint, fraction bits, bias) where it is not float32's or float64's (:data:`_HIGH_FIELDS`);
    ``sticky``: bits below those (bool, one an element) that set the fraction's last bit."""
    uint, mbits, bias = fields or _WIDTHS[u.dtype.itemsize]
    width = 8 * u.dtype.itemsize
    signed = np.dtype(f"i{u.dtype.itemsize}").type
    n, M, S = u.size, fmt.mantissa_bits, _unified_shift(opts, width)
    k, low = mbits - M, fmt.emin + bias  # the normal range's dropped bits; its lowest exponent field
    deepest = S - k  # binades below the normal range whose dropped bits still fit S
    field = scratch("fields.uf", n, uint)
    np.right_shift(u, uint(mbits), out=field)
    field &= uint(2 * bias + 1)
    # t = field - (low - deepest): d = low - field binades below the normal range leave the
    # fraction S - s = deepest - d = t bits to move up, clipped to [0, deepest] (S - k in the
    # normal range); t - that is the binades above the lowest (0 below it)
    t = scratch("fields.ud", n, uint).view(signed)
    np.add(field.view(signed), signed(deepest - low), out=t)
    up = scratch("fields.uu", n, uint).view(signed)  # S - s
    np.maximum(t, _constant(0, n, signed), out=up)
    np.minimum(up, _constant(deepest, n, signed), out=up)
    sig = scratch("fields.ug", n, uint)  # the significand, hidden bit set
    np.bitwise_and(u, uint((1 << mbits) - 1), out=sig)
    sig |= uint(1 << mbits)
    dropped = scratch("fields.us", n, uint)  # s (less what the mode reads)
    code = scratch("fields.uc", n, uint)
    read = None if opts.sr_bits is None else opts.sr_bits + (opts.rounding == "stochastic_b")
    if opts.rounding in ("stochastic_a", "stochastic_b") and read <= k:
        # P3109's A and B read floor(nu * 2**read) of the fraction nu dropped: the significand
        # shifted right by s - read holds it below the truncated code; plus R (A) or 2R + 1
        # (B), it carries into the code exactly where the mode rounds up (below 2**(read + 1)),
        # and one more shift by read leaves the rounded code
        np.subtract(_constant(S - read, n, signed), up, out=dropped.view(signed))
        np.right_shift(sig, dropped, out=code)
        code += r
        if opts.rounding == "stochastic_b":
            code += r
            code += uint(1)
        code >>= uint(read)
    else:
        np.subtract(_constant(S, n, signed), up, out=dropped.view(signed))
        np.right_shift(sig, dropped, out=code)
        np.left_shift(sig, up.view(uint), out=sig)
        sig &= uint((1 << S) - 1)  # the fraction dropped, times 2**S
        if sticky is not None:
            sig |= sticky
        code += stochastic_carry(opts.rounding, sig, S, opts.sr_bits, r, dropped)
    t -= up  # the exponent part, in place: (binades above the lowest) << M
    t <<= signed(M)
    code += t.view(uint)
    # left: a magnitude code past the largest (overflow, Inf, NaN), or too far below the
    # normal range (t < 0: its exponent part, negative, wraps the code past the largest where
    # it is at least 2 (M >= 1) and a zero field lies that far (low - deepest >= 1))
    rest = np.greater(code, uint(fmt.max_code & ~fmt.sign_mask), out=scratch("fields.ur", n, bool))
    if M < 1 or low - deepest < 1:
        rest |= np.less(field, uint(max(low - deepest, 1)), out=scratch("fields.ut", n, bool))
    # the sign bit (not on zero where there is no -0), in u's integer: NumPy has no SIMD loop
    # for shifts of uint8 (x86 has no such instruction), nor for a shift that casts
    sign_at = fmt.sign_mask.bit_length() - 1
    sign = field  # (free now)
    np.right_shift(u, uint(width - 1 - sign_at), out=sign)
    sign &= uint(1 << sign_at)
    if not fmt.has_neg_zero:
        sign *= np.minimum(code, _constant(1, n, uint), out=dropped)
    code |= sign
    np.copyto(out, code, casting="unsafe")
    return np.flatnonzero(rest) if rest.any() else None


_CONSTANTS = threading.local()


def _constant(value: int, n: int, dtype) -> np.ndarray:
    """n copies of value in dtype, read-only, kept per thread (NumPy's maximum and minimum
    against a scalar take no SIMD loop; against an array they do)."""
    arrays = getattr(_CONSTANTS, "arrays", None)
    if arrays is None:
        arrays = _CONSTANTS.arrays = {}
    key = (value, np.dtype(dtype))
    array = arrays.get(key)
    if array is None or array.size < n:
        array = arrays[key] = np.full(max(n, 1), value, dtype)
    return array[:n]


def _subnormal_chunk(u: np.ndarray, code: np.ndarray, outside: np.ndarray, r: np.ndarray, fmt: Format,
                     opts: Conversion) -> np.ndarray | None:
    """Stochastic codes (into code) of a chunk's elements (float32 or float64 patterns u) in
    fmt's subnormal range, all at once by whole-chunk arithmetic; returns the indices of the
    rest of those ``outside`` the normal range (a mask, overwritten), or None. There each
    element drops its own ``shift_full = k + low - field`` bits; its significand moved left
    by ``S - shift_full`` (S: :func:`_wide_shift`) drops exactly S, no bit lost where
    shift_full <= S: the code in the top bits, the exact fraction in the S below, decided by
    the carries at one shift count as in the normal range, from ``r``: the top S random bits
    (:func:`_random_shift`; stochastic) or P3109's N. The codes are blended in by an all-ones mask (a masked copy
    mispredicts its branches on such data: 4-5 ns an element); those that drop more than S
    bits, and an unsigned format's negatives, stay with the rest."""
    if u.dtype == np.uint32:
        return _subnormal_chunk32(u, code, outside, r, fmt, opts)
    uint, mbits, bias = _WIDTHS[u.dtype.itemsize]
    width, n, M, S = 8 * u.dtype.itemsize, u.size, fmt.mantissa_bits, _wide_shift(fmt)
    low, k = fmt.emin + bias, mbits - fmt.mantissa_bits
    u64 = np.uint64
    count = scratch("fields.count", n, np.int64)  # S - shift_full = field + (S - k - low)
    np.right_shift(u, uint(mbits), out=count.view(u64))
    count &= (1 << (width - 1 - mbits)) - 1
    count += S - k - low
    # served: 1 <= field < low and shift_full <= S, i.e. lowest <= count < S - k
    lowest = max(0, 1 + S - k - low)
    served = scratch("fields.served", n, u64)
    np.subtract(count, lowest, out=served.view(np.int64))
    np.less(served, u64(S - k - lowest), out=served, casting="unsafe")
    np.negative(served, out=served)  # all ones where served
    np.clip(count, 0, 63, out=count)
    sub = scratch("fields.s", n, u64)
    np.bitwise_and(u, uint((1 << mbits) - 1), out=sub)
    sub |= u64(1 << mbits)
    np.left_shift(sub, count.view(u64), out=sub)
    rem = scratch("fields.m", n, u64)
    np.bitwise_and(sub, u64((1 << S) - 1), out=rem)
    sub >>= u64(S)
    sub += stochastic_carry(opts.rounding, rem, S, opts.sr_bits, r, count.view(u64))
    sign = count.view(u64)
    np.right_shift(u, uint(width - 1), out=sign)
    if fmt.signed:  # the sign bit (not on zero where there is no -0)
        if not fmt.has_neg_zero:
            sign *= np.minimum(sub, u64(1), out=rem)
        sign <<= u64(fmt.sign_mask.bit_length() - 1)
        sub |= sign
    else:  # an unsigned format's negatives: not served
        sign -= u64(1)
        served &= sign
    np.bitwise_xor(sub, code, out=sub)
    sub &= served
    code ^= sub
    rest = np.equal(served, 0, out=scratch("fields.rest", n, bool))
    rest &= outside
    return np.flatnonzero(rest) if rest.any() else None


def _rounded_below(significand, shift_full, negative, fmt: Format, opts: Conversion, u_random, bits) -> np.ndarray:
    """The rounded magnitude codes of significands (hidden bit included) of which
    ``shift_full`` bits are dropped, each its own count (the generic kernel's round_code)."""
    shift = np.minimum(shift_full, 60).astype(np.uint64)
    kept = significand >> shift
    rem = significand & ((np.uint64(1) << shift) - np.uint64(1))
    return round_code(None, kept, rem, shift, shift_full, None, negative, fmt, opts, u_random, bits)


def _blend_negatives(code: np.ndarray, u: np.ndarray, value: int, mask: np.ndarray) -> None:
    """code = value where the pattern u is negative, in place, through an all-ones mask of
    the sign (a copy masked by the sign mispredicts its branches on mixed signs: 4.3 against
    0.5 ns an element); mask: a scratch array of u's size and dtype.

    >>> code = np.uint32([5, 6])
    >>> _blend_negatives(code, np.float32([1.0, -1.0]).view(np.uint32), 255, np.empty(2, np.uint32))
    >>> code.tolist()
    [5, 255]
    """
    uint = u.dtype.type
    np.right_shift(u, uint(8 * u.itemsize - 1), out=mask)
    np.negative(mask, out=mask)  # all ones where negative
    flips = np.bitwise_xor(code, uint(value), out=scratch("fields.flips", code.size, code.dtype))
    flips &= mask
    code ^= flips


def _code_of_one(magnitude: int, negative: bool, fmt: Format, opts: Conversion) -> int | None:
    """The code the generic kernel's rules (:func:`~..generic_kernel.finish_codes`) give one
    finite value of that sign rounded to ``magnitude``, or None where they refuse it (the
    refusal's message counts the values: the generic kernel's to give)."""
    one, no = np.ones(1, dtype=bool), np.zeros(1, dtype=bool)
    try:
        return int(finish_codes(np.full(1, magnitude, np.int64), one if negative else no, no, no, one, no, fmt, opts,
                                np.full(1, -1.0 if negative else 1.0))[0])
    except ValueError:
        return None


@lru_cache(maxsize=256)
def _overflow_codes(fmt: Format, opts: Conversion) -> tuple[int | None, int | None]:
    """The codes of a finite positive and negative value whose truncated code is past the
    largest finite one, which every rounding keeps past it, as the generic kernel's rules
    give them (:func:`~..generic_kernel.finish_codes`: the overflow rule, and the NaN policy
    where the rule makes a NaN); None for a sign whose code is not one code (a refusal, whose
    message counts the values; an unsigned format's negatives)."""
    past = fmt.max_code + 1
    return _code_of_one(past, False, fmt, opts), _code_of_one(past, True, fmt, opts) if fmt.signed else None


def _far_overflow(flat: np.ndarray, where: np.ndarray, codes: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Codes (into codes) of the finite elements ``flat[where]`` at or past the value of the
    code after the largest finite one: truncated past it, rounded anywhere they stay past it,
    so each sign has one code (:func:`_overflow_codes`), set here rather than by the generic
    kernel element by element (P3109's p7 formats of normal data: 5% of the elements). The
    rest of ``where`` is returned."""
    positive, negative = _overflow_codes(fmt, opts)
    if positive is None and negative is None:
        return where
    threshold = float(fmt.magnitudes(np.uint64(fmt.max_code + 1)))  # (inf where float64 has none: nothing is past it)
    with np.errstate(invalid="ignore"):  # (widening a signalling NaN warns; it is not far)
        values = flat[where].astype(np.float64)
    far = (np.abs(values) >= threshold) & np.isfinite(values)
    negatives = np.signbit(values)
    if positive is None:
        far &= negatives
    if negative is None:
        far &= ~negatives
    if not far.any():
        return where
    codes[where[far]] = np.where(negatives[far], negative if negative is not None else 0,
                                 positive if positive is not None else 0).astype(codes.dtype)
    return where[~far]


def _negative_code(fmt: Format, opts: Conversion) -> int | None:
    """The code of every negative number in the normal range of an unsigned format, as the
    generic kernel's rules for values without a code give it (:func:`~..generic_kernel.finish_codes`
    on a rounded magnitude above zero: zero, or the NaN result the policy names); None where
    those are the generic kernel's to settle (a signed format, ``no_code="magnitude"``, or a
    refusal, whose message counts them)."""
    if fmt.signed or opts.no_code == "magnitude":
        return None
    return _code_of_one(1, True, fmt, opts)


def _top_bits(opts: Conversion, key: np.uint64, start: Any, part: slice, bits: np.ndarray | None, uint,
              k: int) -> np.ndarray:
    """What :func:`~..rounding.stochastic_carry` reads of the random numbers of the elements in
    ``part`` (positions ``start + i`` or ``start[i]``), as ``uint``: P3109's N given bits,
    else the top N (``stochastic``: k) bits of each position's 64."""
    n = part.stop - part.start
    top = k if opts.sr_bits is None else opts.sr_bits
    if bits is not None:
        r = bits[part]
    elif np.ndim(start) == 0:
        return random_top_bits(key, int(start) + part.start, n, top, uint)
    else:
        r = random_u64(key, np.asarray(start)[part]) >> np.uint64(64 - top)
    if r.dtype == uint:
        return r
    narrow = scratch("fields.r", n, uint)
    np.copyto(narrow, r, casting="unsafe")  # (values below 2**top: exact)
    return narrow


def _random_at(opts: Conversion, key: np.uint64, start: Any, bits: np.ndarray | None):
    """A function of indices into the input: the random bits (u, P3109's) of those elements,
    as :func:`~..generic_kernel.chunk_random` gives them (None where the mode takes none)."""
    def at(index: np.ndarray) -> tuple:
        if not opts.stochastic:
            return None, None
        positions = np.asarray(start)[index] if np.ndim(start) else index.astype(np.uint64) + np.uint64(int(start))
        return chunk_random(opts, True, key, positions, slice(0, index.size), None if bits is None else bits[index])
    return at


def encode_float_fields(x: np.ndarray, fmt: Format, opts: Conversion, key: Any = None, start: Any = 0,
                        bits: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Codes (right-aligned, the format's code dtype; into out when given) of a float16/32/64
    array for fmt and opts that :func:`fields_serve`; stochastic rounding draws the bits of
    positions ``start``.. (or ``start[i]``) under ``key``, ``bits``: P3109's given bits, as
    :func:`~fpemu.codec.generic_kernel.encode_generic` does."""
    flat = np.ascontiguousarray(x).reshape(-1)
    if opts.nan == "raise" and not fmt.has_nan:  # (counted over the whole input, as the generic kernel does)
        refuse_nan(flat, fmt)
    if opts.stochastic and not isinstance(key, np.uint64):
        key = sr_key(key)
    uint, mbits, bias = _width(flat.dtype, fmt)
    wide = np.dtype(np.float32 if uint is np.uint32 else np.float64)  # the float the input is read as
    high = _high_word_serves(wide, fmt, opts)  # the fields of float64's top words (float32 input widened too)
    if high and opts.rounding == "stochastic" and _share_below(flat, fmt, wide, _HIGH_FIELDS, True) > _UNIFIED_SHARE:
        high = False  # (much below the normal range: the one way on float64's fields, which lists no ties)
    if high:
        uint, mbits, bias = _HIGH_FIELDS
    width = 8 * np.dtype(uint).itemsize
    M, k = fmt.mantissa_bits, mbits - fmt.mantissa_bits
    top = width - 1 - k  # where the input's sign lands in pattern >> k
    # v = (pattern >> k) - rebias is the truncated magnitude code, less the smallest normal's
    # (2**M with subnormals, else 0), plus the sign at bit ``top``; below the normal range
    # the magnitude wraps around (past the largest code, as Inf, NaN and overflow are)
    rebias = uint((fmt.emin + bias) << M)
    max0 = uint(fmt.max_code - (int(fmt.subnormals) << M))
    # an unsigned format's negatives: past max0 too (to the generic kernel), or, where one code
    # serves them all, that code
    negative_code = _negative_code(fmt, opts)
    low_bits = uint((1 << top) - 1) if fmt.signed or negative_code is not None else None
    # the sign from bit ``top`` to the format's: less ``top_less`` for each negative
    sign_at = fmt.sign_mask.bit_length() - 1 if fmt.signed else top
    top_less = uint((1 << top) - (1 << sign_at))
    mode = opts.rounding
    codes = out.reshape(-1) if out is not None and out.dtype == fmt.code_dtype else np.empty(flat.size, fmt.code_dtype)
    shift, hidden = np.uint64(k), uint(1 << M)
    size = chunk_size(_STOCHASTIC_CHUNK if opts.stochastic else LIGHT_CHUNK)
    v_all, w_all = scratch("fields.v", min(size, flat.size), uint), scratch("fields.w", min(size, flat.size), uint)
    # stochastic modes decided by integer carries (the normal range drops k bits, one count)
    # (k = 0, fp32 from float32: nothing is dropped there, no random number is needed)
    carry = opts.stochastic and (k == 0 or carry_serves(mode, k, opts.sr_bits, width))
    c_all = scratch("fields.c", min(size, flat.size), uint) if carry else None
    # a chunk's subnormal range too by the carries, where it is a large share
    # (not on float64's top words: the whole-chunk ways read float32's or float64's fields)
    sub_bulk = carry and fmt.subnormals and not high and carry_serves(mode, _random_shift(fmt, uint), opts.sr_bits, 64)
    # both ranges in one way where it serves and the data has much below the normal range (by
    # a sample across the input: a speed step, decided once, never the codes)
    unified = False
    # (nor under ``stochastic`` on the top words, whose ties the one way does not list)
    if (sub_bulk or (high and mode != "stochastic")) and _unified_serves(fmt, opts, uint):
        unified = _share_below(flat, fmt, wide, (uint, mbits, bias), high) > _UNIFIED_SHARE
    # float32 prefixes (bf16, tf32) from float32 under stochastic, A and B: the pattern is the
    # code with the bits dropped below it, so an addend that carries where the mode rounds up
    # (rounding.stochastic_addend) and a shift give every code of |x| < max (a rounded value
    # stays at most max there), whatever the overflow rule and NaN policy: the rest, found by
    # a maximum and a minimum, are left to the exact ways below
    prefix = carry and uint is np.uint32 and not high and mbits == 23 and is_fp32_prefix(fmt) \
        and addend_serves(mode, k, opts.sr_bits)
    bound = range_bound(fmt, np.float32) if prefix else None
    left = []
    for part in chunks(flat.size, max(size, 1)):
        n = part.stop - part.start
        x_part = flat[part]
        words = _float64_words(x_part) if high else None
        u, v, w = _fields_of(x_part, wide, uint, words, scratch("fields.high", n, uint) if high else None), v_all[:n], w_all[:n]
        if prefix:
            r = _top_bits(opts, key, start, part, bits, uint, k)
            np.add(u, stochastic_addend(mode, k, opts.sr_bits, r, c_all[:n]), out=v)
            v >>= uint(k)
            np.copyto(codes[part], v, casting="unsafe")
            with np.errstate(invalid="ignore"):  # (NaN: it wins both reductions, and is found)
                where = positions_beyond(u.view(np.float32), bound)
            if where is not None:
                left.append(where + part.start)
            continue
        # C and odd on float64's top words: the low word's "non-zero" into the last bit dropped
        sticky = None if words is None or mode not in ("stochastic_c", "stochastic_odd") else \
            np.not_equal(words[:, 1 - _HIGH_WORD], np.uint32(0), out=scratch("fields.sticky", n, bool))
        if unified:
            r = _top_bits(opts, key, start, part, bits, uint, _unified_shift(opts, width))
            where = _stochastic_chunk(u, r, fmt, opts, codes[part], (uint, mbits, bias), sticky)
            if where is not None:
                left.append(where + part.start)
            continue
        np.right_shift(u, uint(k), out=v)
        v -= rebias
        magnitude = v if low_bits is None else np.bitwise_and(v, low_bits, out=w)
        if sub_bulk:  # (how many lie outside the normal range decides the way, not the codes)
            outside = np.greater_equal(magnitude, max0, out=scratch("fields.outside", n, bool))
            count = np.count_nonzero(outside)
            bulk = count > n * _BULK_SHARE  # a large share below the normal range
            where = None if bulk or not count else np.flatnonzero(outside)
        else:
            bulk = False
            where = np.flatnonzero(magnitude >= max0) if n and magnitude.max() >= max0 else None  # (a reduction: fast)
        rem = None if mode == "toward_zero" else np.bitwise_and(u, uint((1 << k) - 1), out=w)
        negative = np.signbit(x_part) if mode in ("up", "down") else None
        if carry:  # the stochastic decision from the random number's top bits, as an integer carry
            if fmt.subnormals:  # (round_code adds the hidden bit and, without subnormals, takes it away)
                v += hidden
            if bulk:  # one draw for both: the subnormal range reads S bits (stochastic) or N
                r64 = _top_bits(opts, key, start, part, bits, np.uint64, _random_shift(fmt, uint))
                r = scratch("fields.r", n, uint)
                np.right_shift(r64, np.uint64(_random_shift(fmt, uint) - k if opts.sr_bits is None else 0), out=r,
                               casting="unsafe")
            elif k:
                r = _top_bits(opts, key, start, part, bits, uint, k)
            if sticky is not None:
                rem |= sticky
            if k:
                v += stochastic_carry(mode, rem, k, opts.sr_bits, r, c_all[:n])
            if high and mode == "stochastic":  # r and rem equal on the top word: the low words decide
                tied = np.equal(r, rem, out=scratch("fields.tied", n, bool))
                if tied.any():
                    tied = np.flatnonzero(tied)
                    where = tied if where is None else np.union1d(where, tied)
            code = v
        else:
            v += hidden
            code = round_code(None, v, rem, shift, k, None, negative, fmt, opts,
                              *chunk_random(opts, opts.stochastic, key, start, part, bits))
        if top_less:  # negatives: the sign from bit top to the format's
            np.right_shift(u, uint(width - 1), out=w)
            w *= top_less
            code -= w
        if negative_code is not None:
            _blend_negatives(code, u, negative_code, w)
        if bulk:
            where = _subnormal_chunk(u, code, outside, r64, fmt, opts)
        np.copyto(codes[part], code, casting="unsafe")
        if where is not None:
            left.append(where + part.start)
    where = np.concatenate(left) if left else None
    if where is not None and where.size:  # finite values past the largest code's next: one code a sign
        where = _far_overflow(flat, where, codes, fmt, opts)
    if where is not None and fmt.subnormals:  # the format's subnormal range, by the fields too (in batches)
        random_at = _random_at(opts, key, start, bits)
        where = np.concatenate([_subnormal_range(flat, where[batch], codes, wide, fmt, opts, random_at)
                                for batch in chunks(where.size, _SUBNORMAL_BATCH)] or [where])
    if where is not None and where.size:  # every element the fields leave, at once
        positions = np.asarray(start)[where] if np.ndim(start) else start + where.astype(np.uint64)
        codes[where] = encode_generic(flat[where], fmt, opts, key, positions,
                                      None if bits is None else bits[where]).astype(codes.dtype)
    return codes.reshape(np.shape(x))
