"""The generic kernel: every format, every rounding mode, every option, on float64 values.

Encoding splits each float64 into sign, exponent and a 53-bit integer significand, drops the
bits below the format's quantum with integer arithmetic, rounds, applies the overflow rule to
the rounded magnitude, then places the sign and the special codes. Decoding builds each value
from the format's definition. Every fast path of the codec is either built from this kernel
(tables) or tested against it.

>>> from ..formats import get_format
>>> fmt = get_format("e2m1")
>>> _encode_generic(np.array([0.25, 0.26, 5.0, -100.0]), fmt, _options(fmt, "rne", None, None)).tolist()
[0, 1, 6, 15]
>>> _decode_generic(np.array([1, 7, 15]), fmt).tolist()
[0.5, 6.0, -6.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import Format
from .inputs import _GENERIC_CHUNK, _chunks
from .options import _Options, _options  # noqa: F401  (_options: the doctest)


_U64 = np.uint64


def _round_increment(odd, rem, shift, negative, mode: str) -> np.ndarray:
    """Whether to add one unit in the last kept place, per rounding mode.

    odd: whether the truncated code is odd (ties-to-even and to-odd look at the *code's* last
    bit, which for formats without mantissa bits is the exponent's); rem: the dropped bits as
    an integer; shift: how many bits were dropped (1 <= shift <= 60, rem < 2**shift; beyond 54
    every dropped bit is sticky, since the significand has 53); negative: the sign.
    """
    if mode in ("nearest_even", "nearest_away"):
        half = _U64(1) << (shift - _U64(1))
        if mode == "nearest_away":
            return rem >= half
        return (rem > half) | ((rem == half) & odd)
    if mode == "toward_zero":
        return np.zeros(rem.shape, dtype=bool)
    if mode == "up":
        return (rem != 0) & ~negative
    if mode == "down":
        return (rem != 0) & negative
    if mode == "odd":
        return (rem != 0) & ~odd
    raise AssertionError(mode)


def _stochastic_increment(rem, shift_full, gen: np.random.Generator) -> np.ndarray:
    """Round up with probability rem / 2**shift_full, using 64 random bits per element.

    u < rem * 2**(64 - shift) for u uniform on [0, 2**64): exactly unbiased whenever at most 64
    bits are dropped; below that (values far under the smallest subnormal) the threshold is
    floored, a bias under 2**-64 of a unit in the last place.
    """
    u = gen.integers(0, 2**64, size=rem.shape, dtype=np.uint64, endpoint=False)
    left = np.clip(64 - shift_full, 0, 63).astype(np.uint64)
    right = np.clip(shift_full - 64, 0, 63).astype(np.uint64)
    return u < ((rem << left) >> right)


def _encode_generic(source: np.ndarray, fmt: Format, opts: _Options, rng=None) -> np.ndarray:
    """Codes (right-aligned, uint32) of float values; the reference kernel for every path.

    source is float16/32/64; it is widened to float64 (exactly) and only its NaN payloads are
    read from the original bits. Runs chunk by chunk (its many temporaries then stay in cache).
    """
    source = np.asarray(source)
    if opts.nan == "raise" and not fmt.has_nan:
        count = int(np.count_nonzero(np.isnan(source)))
        if count:
            _raise_nan(count, fmt)
    gen = _generator(rng) if opts.rounding == "stochastic" else None
    flat = source.reshape(-1)
    out = np.empty(flat.size, dtype=np.uint32)
    for part in _chunks(flat.size, _GENERIC_CHUNK):
        out[part] = _encode_chunk(flat[part], fmt, opts, gen)
    return out.reshape(source.shape)


def _generator(rng: Any) -> np.random.Generator:
    """A numpy Generator from rng: None (fresh entropy), an int seed, or a Generator."""
    if rng is None or isinstance(rng, (int, np.integer, np.random.Generator, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be None, an int seed or a numpy.random.Generator, got {type(rng).__name__}")


def _encode_chunk(source: np.ndarray, fmt: Format, opts: _Options, gen) -> np.ndarray:
    """The generic kernel on one flat chunk (see _encode_generic)."""
    with np.errstate(invalid="ignore"):  # widening a signalling NaN warns; it stays NaN
        x = np.asarray(source, dtype=np.float64)
    M = fmt.mantissa_bits
    negative = np.signbit(x)
    isnan = np.isnan(x)
    isinf = np.isinf(x)
    finite = ~(isnan | isinf)
    iszero = x == 0

    # |x| = sig * 2**(ex - 52) with sig a 53-bit integer (frexp normalises float64 subnormals).
    m, e = np.frexp(np.where(finite, np.abs(x), 0.0))
    sig = (m * 2.0**53).astype(np.uint64)
    ex = e.astype(np.int64) - 1
    # Drop every bit below the quantum 2**(max(ex, emin) - M); at least 53 - 31 bits go.
    shift_full = np.maximum(ex, fmt.emin) - M - (ex - 52)
    shift = np.minimum(shift_full, 60).astype(np.uint64)  # beyond 54 everything is "sticky"
    kept = (sig >> shift).astype(np.int64)
    rem = sig & ((_U64(1) << shift) - _U64(1))
    # Truncated code = binade offset + kept significand (with its hidden bit, which makes the
    # offset of field E land on E << M); a carry when rounding up rolls into the next binade.
    code = ((np.maximum(ex, fmt.emin) - fmt.emin) << M) + kept
    if not fmt.subnormals:
        code -= 1 << M  # field 0 is an ordinary binade: the hidden bit is not part of the code
    if opts.rounding == "stochastic":
        code += _stochastic_increment(rem, shift_full, gen)
    else:
        code += _round_increment((code & 1) == 1, rem, shift, negative, opts.rounding)
    if not fmt.subnormals:
        code = np.maximum(code, 0)  # no zero to round to: the smallest value is the closest
    code = np.where(iszero, 0, code)

    result = np.empty(x.shape, dtype=np.int64)
    overflowed = finite & (code > fmt.max_code)
    result[...] = code
    _apply_overflow(result, overflowed, isinf, negative, fmt, opts)
    _apply_sign_and_specials(result, negative, isnan, iszero, fmt, opts, source)
    return result.astype(np.uint32)


def _apply_overflow(result, overflowed, isinf, negative, fmt: Format, opts: _Options) -> None:
    """Replace magnitudes that overflowed (and Inf inputs) per the overflow policy, in place."""
    big = fmt.max_code
    special = fmt.inf_code if fmt.has_inf else fmt.nan_code
    if opts.overflow == "saturate":
        result[overflowed | isinf] = big
        return
    if opts.overflow == "saturate_propagate":
        result[overflowed] = big
        result[isinf] = special if special is not None else big
        return
    # Non-saturating: IEEE 754-2019 7.4 sends an overflow to the largest finite value in the
    # modes that round toward zero for that sign, and to Inf (here: the policy's code) otherwise.
    mode = opts.rounding
    if mode in ("toward_zero", "odd"):
        toward_zero = np.ones(result.shape, dtype=bool)
    elif mode == "down":
        toward_zero = ~negative
    elif mode == "up":
        toward_zero = negative
    else:
        toward_zero = np.zeros(result.shape, dtype=bool)
    over_code = fmt.inf_code if opts.overflow == "inf" else fmt.nan_code
    result[overflowed & toward_zero] = big
    result[overflowed & ~toward_zero] = over_code
    result[isinf] = fmt.inf_code if fmt.has_inf else fmt.nan_code


def _apply_sign_and_specials(result, negative, isnan, iszero, fmt: Format, opts: _Options, source) -> None:
    """Add the sign bit and give the inputs that have no code (NaN; negatives in an unsigned
    format; zero in a format without zero) the NaN code or the NaN option's code, in place."""
    if fmt.signed:
        signable = negative.copy()
        if fmt.subnormals and not fmt.has_neg_zero:
            signable &= result != 0  # FNUZ and P3109: zero is unsigned, the -0 code is NaN
        if fmt.nan == "neg_zero":
            signable &= result != fmt.nan_code  # an overflow to NaN must not gain a sign bit
        result[signable] |= fmt.sign_mask
    no_code = _without_code(negative, iszero, fmt)
    if no_code is not None:
        no_code &= ~isnan
        if no_code.any():
            if not fmt.has_nan:
                if opts.nan == "raise":
                    _raise_no_code(int(np.count_nonzero(no_code)), fmt)
                # 'zero' and 'ml_dtypes' treat these values as they treat NaN.
            isnan = isnan | no_code
    if not isnan.any():
        return
    if fmt.has_nan:
        nan_codes = np.full(result.shape, fmt.nan_code, dtype=np.int64)
        if opts.nan == "payload":
            # numpy's float->half rule: keep the top payload bits, force non-zero.
            nan_codes = fmt.inf_code | np.maximum(_nan_payload(source, fmt.mantissa_bits), 1)
        elif opts.nan == "quiet_payload":
            # What FPUs do (numpy float64->float32, torch float32->float16): top payload bits
            # with the quiet bit set.
            quiet = 1 << (fmt.mantissa_bits - 1)
            nan_codes = fmt.inf_code | quiet | _nan_payload(source, fmt.mantissa_bits)
        if fmt.signed and fmt.nan != "neg_zero" and opts.nan != "positive":
            nan_codes = np.where(negative, nan_codes | fmt.sign_mask, nan_codes)
        result[isnan] = nan_codes[isnan]
        return
    if opts.nan == "raise":
        _raise_nan(int(np.count_nonzero(isnan)), fmt)
    if opts.nan == "zero":
        result[isnan] = 0
    else:  # ml_dtypes: the sign bit is set for +NaN and clear for -NaN
        result[isnan] = np.where(negative[isnan], 0, fmt.sign_mask)


def _without_code(negative, iszero, fmt: Format):
    """Mask of the finite inputs that no code represents (None when every one has a code):
    negative numbers in an unsigned format, zero in a format without zero (E8M0)."""
    if fmt.signed and fmt.subnormals:
        return None
    mask = np.zeros(negative.shape, dtype=bool) if fmt.signed else negative & ~iszero
    return mask | iszero if not fmt.subnormals else mask


def _check_codes_exist(x: np.ndarray, fmt: Format, opts: _Options) -> None:
    """Raise, under nan='raise' in an unsigned or zero-less format without NaN, for inputs
    that have no code at all: NaN and the values of :func:`_without_code` (checked up front:
    the table path has no code to flag them with; the other formats' paths check NaN
    themselves)."""
    if fmt.has_nan or opts.nan != "raise" or (fmt.signed and fmt.subnormals):
        return
    isnan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    if isnan.any():
        _raise_nan(int(np.count_nonzero(isnan)), fmt)
    no_code = _without_code(np.signbit(x), x == 0, fmt)
    if no_code is not None and no_code.any():
        _raise_no_code(int(np.count_nonzero(no_code)), fmt)


def _raise_nan(count: int, fmt: Format) -> None:
    raise ValueError(
        f"{count} NaN value{'s' if count != 1 else ''} in the input: format {fmt.name} has no "
        "NaN (pass nan='zero' or nan='ml_dtypes' to choose a code)"
    )


def _raise_no_code(count: int, fmt: Format) -> None:
    what = " or ".join((["negative numbers"] if not fmt.signed else [])
                       + (["zero"] if not fmt.subnormals else []))
    raise ValueError(
        f"{count} value{'s' if count != 1 else ''} in the input have no code in format "
        f"{fmt.name}, which has no {what} and has no NaN (pass nan='zero' to give them code 0)"
    )


def _nan_payload(source: np.ndarray, width: int) -> np.ndarray:
    """The top `width` fraction bits of each float's own bit pattern (its NaN payload)."""
    nmant = np.finfo(source.dtype).nmant
    uint = np.dtype(f"u{source.dtype.itemsize}")
    frac = (np.asarray(source, order="C").view(uint) & uint.type((1 << nmant) - 1)).astype(np.int64)
    return frac >> (nmant - width) if nmant >= width else frac << (width - nmant)


def _decode_generic(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """float64 values of right-aligned codes (int64), straight from the format's definition."""
    M = fmt.mantissa_bits
    mag = codes & fmt.top_code
    efield = mag >> M
    frac = mag & ((1 << M) - 1)
    if fmt.subnormals:
        is_sub = efield == 0
        significand = np.where(is_sub, frac, frac + (1 << M)).astype(np.float64)
        exponent = np.where(is_sub, fmt.emin, efield - fmt.bias) - M
    else:
        significand = (frac + (1 << M)).astype(np.float64)
        exponent = efield - fmt.bias - M
    with np.errstate(over="ignore"):  # only the Inf/NaN codes, replaced below, can overflow
        values = np.ldexp(significand, exponent.astype(np.int32))
    negative = (codes & fmt.sign_mask) != 0 if fmt.signed else np.zeros(codes.shape, bool)
    values = np.where(negative, -values, values)
    if fmt.has_inf:
        values = np.where(mag == fmt.inf_code, np.where(negative, -np.inf, np.inf), values)
    if fmt.nan == "ieee":
        values = np.where((efield == (1 << fmt.exponent_bits) - 1) & (frac != 0), np.nan, values)
    elif fmt.nan == "top":
        values = np.where(mag == fmt.top_code, np.nan, values)
    elif fmt.nan == "neg_zero":
        values = np.where(codes == fmt.sign_mask, np.nan, values)
    return values


def _is_fp32_prefix(fmt: Format) -> bool:
    """fp32, bf16, tf32: fp32's sign and exponent with the top mantissa bits (the code is a
    prefix of the fp32 bit pattern)."""
    return (
        fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.inf == "ieee" and fmt.subnormals
        and fmt.signed and fmt.mantissa_bits <= 23
    )
