"""Encode real numbers into any :class:`~fpemu.formats.Format`, decode codes, and quantize.

One generic kernel (:func:`_encode_generic`) serves every format and rounding mode: it splits
each float64 into sign, exponent and a 53-bit integer significand, drops the bits below the
format's quantum with integer arithmetic, rounds, and assembles the code. Fast paths exist only
where they are provably identical to it (tables are *built by* the generic kernel):

* float32 input into formats with at most 6 mantissa bits: a 2**17-entry table indexed by the
  top 16 bits of the float32 pattern plus one sticky bit for the low 16 bits. The round bit of
  such a format always lies in the top 16 bits, so those 17 bits decide the result.
* float64 input into those formats: first round to float32 *to odd* (which loses nothing for
  a later rounding to 2 or more bits fewer), then the table.
* float32 input into bf16/tf32 with round-to-nearest-even: integer rounding on the bit pattern.
* decode of formats of 16 bits or less: a table of every code.

>>> encode([1.0625, 1.1875, 464.0, 1000.0], "e4m3")
array([ 56,  58, 126, 127], dtype=uint8)
>>> encode([1000.0], "e4m3", overflow="saturate")
array([126], dtype=uint8)
>>> decode(encode([0.3], "e2m1"), "e2m1")
array([0.5])
>>> quantize(np.float32([1.0, 1e-9]), "bf16", rounding="up")
array([1.0000000e+00, 1.0040822e-09], dtype=float32)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from .formats import Format, get_format

__all__ = ["encode", "decode", "quantize", "explain", "ROUNDING_MODES", "OVERFLOW_MODES"]

#: Canonical rounding mode names and their accepted aliases.
ROUNDING_MODES: dict[str, str] = {
    "nearest_even": "nearest_even", "rne": "nearest_even",
    "nearest_away": "nearest_away", "rna": "nearest_away",
    "toward_zero": "toward_zero", "rz": "toward_zero", "truncate": "toward_zero",
    "up": "up", "ru": "up",
    "down": "down", "rd": "down",
    "odd": "odd", "rto": "odd",
    "stochastic": "stochastic", "sr": "stochastic",
}  # fmt: skip

#: Overflow policies: what a finite value that rounds above the largest finite value becomes.
OVERFLOW_MODES = ("saturate", "inf", "nan", "saturate_propagate")

_NAN_POLICIES_WITHOUT_NAN = ("raise", "zero", "ml_dtypes")
_NAN_POLICIES_WITH_NAN = ("sign", "positive", "payload", "quiet_payload")


@dataclass(frozen=True)
class _Options:
    """Validated encoding options (hashable, so tables can be cached per option set)."""

    rounding: str
    overflow: str
    nan: str


def _options(fmt: Format, rounding: str, overflow: str | None, nan: str | None) -> _Options:
    """Check the options against the format and resolve the defaults."""
    if not isinstance(rounding, str) or rounding.lower() not in ROUNDING_MODES:
        raise ValueError(
            f"unknown rounding {rounding!r}; choose one of {', '.join(sorted(set(ROUNDING_MODES)))}"
        )
    rounding = ROUNDING_MODES[rounding.lower()]
    if overflow is None:
        # The non-saturating behaviour of each format, as ml_dtypes implements it.
        overflow = "inf" if fmt.has_inf else "nan" if fmt.has_nan else "saturate"
    if overflow not in OVERFLOW_MODES:
        raise ValueError(f"unknown overflow {overflow!r}; choose one of {', '.join(OVERFLOW_MODES)}")
    if overflow == "inf" and not fmt.has_inf:
        raise ValueError(f"format {fmt.name} has no Inf: use overflow='saturate' or 'nan'")
    if overflow == "nan" and not fmt.has_nan:
        raise ValueError(f"format {fmt.name} has no NaN: use overflow='saturate'")
    if fmt.has_nan:
        nan = "sign" if nan is None else nan
        allowed = _NAN_POLICIES_WITH_NAN
    else:
        nan = "raise" if nan is None else nan
        allowed = _NAN_POLICIES_WITHOUT_NAN
    if nan not in allowed:
        kind = "has NaN" if fmt.has_nan else "has no NaN"
        raise ValueError(f"nan={nan!r} does not apply to {fmt.name}, which {kind}; choose one of {allowed}")
    if nan in ("payload", "quiet_payload") and fmt.nan != "ieee":
        raise ValueError(f"nan={nan!r} needs IEEE-style NaNs; {fmt.name} has nan={fmt.nan!r}")
    if nan == "ml_dtypes" and not fmt.signed:
        raise ValueError("nan='ml_dtypes' is defined for signed formats only")
    return _Options(rounding, overflow, nan)


# ---- input checking -----------------------------------------------------------------------
def _as_real_array(x: Any) -> np.ndarray:
    """x as an ndarray of float16/32/64 without rounding (integers handled by the caller)."""
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind in "fiu" and not arr.dtype.isnative:  # big-endian data: compute in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if kind == "f":
        if arr.dtype.itemsize > 8:
            raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
        return arr
    if kind in "iu":
        return arr
    if kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None:
        # ml_dtypes' narrow floats (bfloat16, float8_*, ...) all widen to float32 exactly.
        try:
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            pass
    what = {"c": "complex", "O": "object", "U": "string", "S": "bytes", "b": "boolean"}.get(
        kind, str(arr.dtype)
    )
    raise TypeError(f"cannot encode {what} input: pass real numbers (a float or integer array)")


def integers_to_float64(arr: np.ndarray) -> np.ndarray:
    """Integers as float64, rounded *to odd* from 2**53 up, so that no double rounding follows.

    Rounding to odd at 53 bits and then again to at most 51 bits gives the same result as one
    rounding of the integer (every format here has at most 24 bits of precision).
    """
    out = arr.astype(np.float64)
    big = np.abs(out) >= 2.0**53
    if not big.any():
        return out
    ints = arr[big]
    mag = ints.astype(np.uint64)
    if arr.dtype.kind == "i":
        mag = np.where(ints < 0, np.uint64(0) - mag, mag)  # two's complement: exact |v|
    f = mag.astype(np.float64)  # round to nearest even
    top = f >= 2.0**64  # only for uint64 inputs just below 2**64
    back = np.where(top, 0.0, f).astype(np.uint64)
    inexact = top | (back != mag)
    # RNE gave the truncation t or t + 1 (as bit patterns); to odd is t | 1 when inexact.
    bits = f.view(np.uint64).copy()
    fix = inexact & ((bits & np.uint64(1)) == 0)
    above = top | (back > mag)
    bits[fix & above] -= np.uint64(1)
    bits[fix & ~above] += np.uint64(1)
    f = bits.view(np.float64)
    out[big] = np.where(ints < 0, -f, f) if arr.dtype.kind == "i" else f
    return out


# Elementwise kernels run over chunks of this many elements so that their temporaries stay
# in the CPU cache: the arithmetic then costs little more than reading the input once.
_CHUNK = 1 << 16
_GENERIC_CHUNK = 1 << 14  # the generic kernel keeps a dozen 8-byte temporaries


def _chunks(n: int, size: int = _CHUNK):
    """Slices covering range(n) in cache-sized pieces."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


# ---- the generic kernel -------------------------------------------------------------------
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


# ---- fast paths -----------------------------------------------------------------------------
def _table_path_ok(fmt: Format, opts: _Options) -> bool:
    """Whether the 17-bit table (and float64 -> float32 rounding to odd) is exact for fmt."""
    # The round bit must lie in the top 16 bits of every float32 pattern, including float32
    # subnormals (resolution 2**-133 there), and float32 must have 2 bits more than the format
    # wherever the format has values, for the float64 -> float32 rounding to odd.
    return (
        opts.rounding != "stochastic"
        and opts.nan not in ("payload", "quiet_payload")
        and fmt.mantissa_bits <= 6
        and fmt.emax <= 127
        and fmt.min_subnormal >= 2.0**-132
    )


@lru_cache(maxsize=64)
def _encode_table(fmt: Format, opts: _Options) -> np.ndarray:
    """Code for each (top 16 bits, sticky) index of a float32 pattern."""
    index = np.arange(1 << 17, dtype=np.uint32)
    patterns = ((index >> 1) << 16) | (index & 1)
    with np.errstate(invalid="ignore"):  # signalling-NaN patterns warn when widened
        x = patterns.view(np.float32).astype(np.float64)
    nan_free = opts if opts.nan != "raise" else _Options(opts.rounding, opts.overflow, "zero")
    codes = _encode_generic(x, fmt, nan_free)
    if opts.nan == "raise" and fmt.bits < 8:
        codes[np.isnan(x)] = 0xFF  # sentinel: no sub-byte code reaches it
    table = codes.astype(fmt.code_dtype)
    table.setflags(write=False)
    return table


def _halves(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Low and high 16-bit halves of a flat uint32 array, as strided views (no copy)."""
    pairs = u.view(np.uint16).reshape(-1, 2)
    return (pairs[:, 0], pairs[:, 1]) if np.little_endian else (pairs[:, 1], pairs[:, 0])


def _table_lookup(u: np.ndarray, table: np.ndarray) -> np.ndarray:
    """table[(u >> 16) * 2 + (low 16 bits non-zero)] for a flat uint32 array."""
    low, high = _halves(u)
    out = np.empty(u.size, dtype=table.dtype)
    idx = np.empty(min(_CHUNK, u.size), dtype=np.uint32)
    sticky = np.empty(idx.size, dtype=bool)
    for part in _chunks(u.size):
        n = part.stop - part.start
        np.left_shift(high[part], 1, out=idx[:n], dtype=np.uint32)
        np.not_equal(low[part], 0, out=sticky[:n])
        idx[:n] |= sticky[:n]
        table.take(idx[:n], out=out[part])
    return out


def _float64_to_float32_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded to odd (inexact results get their last bit set)."""
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


def _encode_by_table(x: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    if x.dtype == np.float64:
        x = _float64_to_float32_odd(x)
    elif x.dtype != np.float32:
        x = x.astype(np.float32)
    if opts.nan == "raise" and fmt.bits >= 8 and np.isnan(x).any():
        _raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)  # no spare code for a sentinel
    u = np.asarray(x, order="C").reshape(-1).view(np.uint32)
    codes = _table_lookup(u, _encode_table(fmt, opts)).reshape(x.shape)
    if opts.nan == "raise" and fmt.bits < 8 and codes.size and codes.max() == 0xFF:
        _raise_nan(int(np.count_nonzero(codes == 0xFF)), fmt)
    return codes


# Formats numpy casts to natively with IEEE round-to-nearest-even (a correctly rounded cast).
_NUMPY_NATIVE = {
    Format("fp16", 5, 10, 15): np.dtype(np.float16),
    Format("fp32", 8, 23, 127): np.dtype(np.float32),
}


def _encode_numpy_native(x: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    """fp16/fp32 RNE through numpy's own cast; only NaNs are re-encoded per the nan policy."""
    native = _NUMPY_NATIVE[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        codes = x.astype(native).view(fmt.code_dtype)  # a fresh array: astype copies
    isnan = np.isnan(x)
    # numpy keeps NaN payloads from float32 only (float64 NaNs pass through the FPU), so the
    # generic kernel re-encodes NaNs unless that payload rule is the one asked for.
    if isnan.any() and (opts.nan != "payload" or x.dtype != np.float32):
        codes[isnan] = _encode_generic(x[isnan], fmt, opts)
    return codes


def _is_fp32_prefix(fmt: Format) -> bool:
    """fp32, bf16, tf32: fp32's sign and exponent with the top mantissa bits (the code is a
    prefix of the fp32 bit pattern)."""
    return (
        fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.inf == "ieee" and fmt.subnormals
        and fmt.signed and fmt.mantissa_bits <= 23
    )


def _encode_fp32_prefix_rne(x: np.ndarray, fmt: Format) -> np.ndarray:
    """RNE of float32 values into bf16/tf32-like formats, on the bit pattern.

    Adding 0x7FFF (for bf16) plus the last kept bit and dropping the low bits rounds to nearest
    even; a carry rolls into the exponent, and past the largest value into Inf, as IEEE wants.
    """
    u = np.asarray(x, order="C").reshape(-1).view(np.uint32)
    drop = np.uint32(23 - fmt.mantissa_bits)
    half_minus_one = np.uint32((1 << (drop - 1)) - 1)
    out = np.empty(u.size, dtype=np.uint32 if fmt.container_bits else fmt.code_dtype)
    lsb = np.empty(min(_CHUNK, u.size), dtype=np.uint32)
    r = np.empty_like(lsb)
    for part in _chunks(u.size):
        n = part.stop - part.start
        np.right_shift(u[part], drop, out=lsb[:n])
        lsb[:n] &= np.uint32(1)
        np.add(u[part], half_minus_one, out=r[:n])
        r[:n] += lsb[:n]
        r[:n] >>= drop
        out[part] = r[:n]
        np.bitwise_and(u[part], np.uint32(0x7FFFFFFF), out=lsb[:n])
        nan = lsb[:n] > np.uint32(0x7F800000)
        if nan.any():  # canonical quiet NaN with the input's sign
            sign = (u[part][nan] >> np.uint32(31)).astype(out.dtype) << (fmt.bits - 1)
            out[part][nan] = sign | fmt.nan_code
    return out.reshape(x.shape)


# ---- public API -----------------------------------------------------------------------------
def encode(
    x: Any,
    fmt: str | Format,
    *,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    nan: str | None = None,
    rng: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Encode real numbers into integer codes of ``fmt``.

    Args:
        x: real array-like (float16/32/64, integers, Python numbers, ml_dtypes arrays). It is
            converted exactly once; it is never modified.
        fmt: a format name or :class:`Format`.
        rounding: ``nearest_even`` (``rne``), ``nearest_away`` (``rna``), ``toward_zero``
            (``rz``), ``up`` (``ru``), ``down`` (``rd``), ``odd`` (``rto``: truncate, then set
            the last bit if inexact), ``stochastic`` (``sr``: round up with probability equal to
            the dropped fraction; 64 random bits per element are compared with the dropped bits,
            which is exactly unbiased whenever at most 64 bits are dropped, i.e. always except
            for inputs far below the smallest subnormal, where the bias is below 2**-64 ulp).
        overflow: ``saturate`` (+-max, also for +-Inf input), ``inf``, ``nan``,
            ``saturate_propagate`` (P3109 SatPropagate: finite overflow saturates, Inf stays),
            or None for the format's non-saturating default (ml_dtypes): Inf where the format
            has it, else NaN, else saturate. Non-saturating overflow follows IEEE 754 7.4 for
            directed modes: rounding toward zero (for that sign) gives +-max.
        nan: for a NaN input. Formats without NaN: ``raise`` (default), ``zero``, ``ml_dtypes``
            (its codes: sign bit set for +NaN, clear for -NaN). Formats with NaN: ``sign``
            (default: canonical quiet NaN, input sign kept where the format is signed),
            ``positive``, ``payload`` (numpy's float->half rule: top payload bits, non-zero),
            ``quiet_payload`` (what FPUs do: top payload bits with the quiet bit set).
        rng: seed or ``np.random.Generator`` for stochastic rounding.

    Returns:
        Codes as uint8 (<= 8 bits, right-aligned), uint16 (<= 16 bits) or uint32; TF32 codes are
        fp32 patterns with the low 13 bits zero.

    >>> encode([0.25, 0.26, 5.0, 5.01, -100.0], "e2m1")
    array([ 0,  1,  6,  7, 15], dtype=uint8)
    >>> hex(int(encode(1024.5, "tf32", rounding="rna")))
    '0x44802000'
    """
    fmt = get_format(fmt)
    opts = _options(fmt, rounding, overflow, nan)
    arr = _as_real_array(x)
    if arr.dtype.kind in "iu":
        arr = integers_to_float64(arr)
    _check_codes_exist(arr, fmt, opts)
    if _table_path_ok(fmt, opts):
        codes = _encode_by_table(arr, fmt, opts)
    elif arr.dtype.kind == "f" and opts.rounding == "nearest_even" and opts.overflow == "inf" \
            and fmt in _NUMPY_NATIVE and arr.dtype.itemsize >= _NUMPY_NATIVE[fmt].itemsize:
        codes = _encode_numpy_native(arr, fmt, opts)
    elif (
        arr.dtype == np.float32
        and _is_fp32_prefix(fmt)
        and fmt.mantissa_bits < 23
        and opts == _Options("nearest_even", "inf", "sign")
    ):
        codes = _encode_fp32_prefix_rne(arr, fmt)
    else:
        codes = _encode_generic(arr, fmt, opts, rng)
    codes = np.asarray(codes)
    if fmt.code_shift:
        codes = codes.astype(fmt.code_dtype) << fmt.code_dtype.type(fmt.code_shift)
    return codes.astype(fmt.code_dtype, copy=False)


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


@lru_cache(maxsize=64)
def _decode_table(fmt: Format, dtype: np.dtype) -> np.ndarray:
    table = _decode_generic(np.arange(1 << fmt.bits, dtype=np.int64), fmt).astype(dtype)
    table.setflags(write=False)
    return table


def _as_codes(codes: Any, fmt: Format) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got {arr.dtype} (did you mean encode()?)")
    limit = 1 << (fmt.storage_bits if fmt.container_bits else fmt.bits)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= limit):
        bad = arr[(arr < 0) | (arr >= limit)].ravel()[0]
        raise ValueError(f"code {int(bad)} is out of range for {fmt.name} (codes are 0..{limit - 1})")
    return arr


def decode(codes: Any, fmt: str | Format, *, dtype: Any = np.float64) -> np.ndarray:
    """Values of integer codes of ``fmt`` as float64 (exact for every format) or float32.

    >>> decode([0x01, 0x07, 0x7E, 0x80, 0x7F], "e4m3").tolist()
    [0.001953125, 0.013671875, 448.0, -0.0, nan]
    """
    fmt = get_format(fmt)
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise TypeError(f"decode dtype must be float64 or float32, got {dtype}")
    if dtype == np.float32 and not _fits(fmt, dtype):
        raise ValueError(f"format {fmt.name} has values float32 cannot hold exactly "
                         f"(largest {fmt.max:g}, smallest {fmt.min_subnormal:g}, "
                         f"{fmt.mantissa_bits} mantissa bits): decode to float64")
    arr = _as_codes(codes, fmt)
    if _is_fp32_prefix(fmt) and fmt.bits > 16:
        # The code is the top of an fp32 pattern: drop the ignored low bits (TF32's 13) and
        # reinterpret.
        u = (arr.astype(np.uint32) >> np.uint32(fmt.code_shift)) << np.uint32(32 - fmt.bits)
        return _widen(u.view(np.float32), dtype)
    if fmt.code_shift:  # left-aligned in a wider container: the low bits are ignored
        arr = np.right_shift(arr.astype(np.uint32), np.uint32(fmt.code_shift))
    if fmt.bits == 16 and _is_fp32_prefix(fmt):
        # bf16: the code is the top half of the float32 pattern.
        pairs = np.zeros(arr.shape + (2,), dtype=np.uint16)
        pairs[..., 1 if np.little_endian else 0] = arr
        return _widen(pairs.view(np.float32).reshape(arr.shape), dtype)
    if fmt.bits <= 16:
        return _lookup(arr, _decode_table(fmt, dtype))
    return _decode_generic(arr.astype(np.int64), fmt).astype(dtype)


def _widen(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32 -> dtype; signalling NaNs stay NaN (quiet) without a floating-point warning."""
    with np.errstate(invalid="ignore"):
        return values.astype(dtype, copy=False)


def _lookup(index: np.ndarray, table: np.ndarray) -> np.ndarray:
    """table[index] computed chunk by chunk (the gathered output stays cache-friendly)."""
    flat = index.reshape(-1)
    if flat.dtype.itemsize > 2 or flat.dtype.kind != "u":
        flat = flat.astype(np.intp)
    out = np.empty(flat.size, dtype=table.dtype)
    for part in _chunks(flat.size):
        table.take(flat[part], out=out[part])
    return out.reshape(index.shape)


def _fits(fmt: Format, dtype: np.dtype) -> bool:
    """Whether every finite value of fmt is exactly a value of the float dtype."""
    info = np.finfo(dtype)
    return (
        fmt.mantissa_bits <= info.nmant
        and fmt.emax <= info.maxexp - 1
        and fmt.min_subnormal >= float(info.smallest_subnormal)
    )


def quantize(
    x: Any,
    fmt: str | Format,
    *,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    nan: str | None = None,
    rng: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Round x to the nearest values of ``fmt`` (per the options), returned as floats.

    The result has x's float dtype (float64 for integer input); if the format has values that
    dtype cannot hold exactly (bf16 from float16 input, say), it is widened to float32 or
    float64 so no value is rounded a second time.

    >>> quantize([0.1, 1000.0], "e4m3", overflow="saturate")
    array([1.015625e-01, 4.480000e+02])
    """
    fmt = get_format(fmt)
    arr = _as_real_array(x)
    dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
    for wider in (dtype, np.dtype(np.float32), np.dtype(np.float64)):
        if wider.itemsize >= dtype.itemsize and _fits(fmt, wider):
            dtype = wider
            break
    if arr.dtype == np.float32 and _magic_path_ok(fmt, rounding):
        return _quantize_float32_magic(arr, fmt, _options(fmt, rounding, overflow, nan))
    if arr.dtype == np.float64 and _scaled_path_ok(fmt, rounding):
        return _quantize_float64_scaled(arr, fmt, _options(fmt, rounding, overflow, nan))
    codes = encode(arr, fmt, rounding=rounding, overflow=overflow, nan=nan, rng=rng)
    if dtype == np.float16:
        return decode(codes, fmt, dtype=np.float32).astype(np.float16)
    return decode(codes, fmt, dtype=dtype)


def _magic_path_ok(fmt: Format, rounding: str) -> bool:
    """Whether float32 addition can do the RNE rounding (fp16-like formats: 7 to 21 mantissa
    bits, subnormals, and an exponent range whose magic numbers stay finite in float32)."""
    return (
        isinstance(rounding, str) and ROUNDING_MODES.get(rounding.lower()) == "nearest_even"
        and 7 <= fmt.mantissa_bits <= 21 and fmt.subnormals and fmt.signed and fmt.has_normals
        and fmt.emin >= -126 and fmt.emax <= 103 + fmt.mantissa_bits
    )


def _quantize_float32_magic(x: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    """RNE values of float32 x in fmt, by float32 addition of a "magic" number.

    For x in the binade [2**e, 2**(e+1)) (e clamped below at emin), M = 1.5 * 2**(e - m + 23)
    has float32 spacing 2**(e - m), the format's quantum at x, and x + M stays in M's binade; so
    the float32 addition rounds x to the format's precision, ties to even (M is an even multiple
    of the quantum), and subtracting M is exact. Overflow, Inf, NaN and signed zeros are then
    set per the options, as the generic kernel does (tested against it exhaustively).
    """
    if opts.nan == "raise" and not fmt.has_nan and np.isnan(x).any():
        _raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)
    flat = np.asarray(x, order="C").reshape(-1)
    out = np.empty(flat.size, dtype=np.float32)
    magic_bits = np.empty(min(_CHUNK, flat.size), dtype=np.uint32)
    low = np.uint32(fmt.emin + 127)
    high = np.uint32(fmt.emax + 127)
    offset = np.uint32(23 - fmt.mantissa_bits)
    for part in _chunks(flat.size):
        n = part.stop - part.start
        xs, m, q = flat[part], magic_bits[:n], out[part]
        np.right_shift(xs.view(np.uint32), np.uint32(23), out=m)
        m &= np.uint32(0xFF)
        np.clip(m, low, high, out=m)
        m += offset
        m <<= np.uint32(23)
        m |= np.uint32(0x400000)
        magic = m.view(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            np.add(xs, magic, out=q)
            q -= magic
        np.copysign(q, xs, out=q)
        with np.errstate(invalid="ignore"):
            big = ~(np.abs(q) <= fmt.max)  # overflowed, Inf or NaN
        if big.any():
            q[big] = _special_values(xs[big], fmt, opts)
    if not fmt.has_neg_zero:
        out[out == 0] = 0.0
    return out.reshape(x.shape)


def _special_values(x: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    """Values for the (few) inputs that overflowed, are Inf or are NaN: the generic kernel
    decides them, so the overflow and NaN options mean the same on every path."""
    codes = _encode_generic(x, fmt, opts).astype(np.int64)
    return _decode_generic(codes, fmt).astype(x.dtype)


# numpy's own integer rounding of float64 values, per rounding mode (each exact).
_INTEGER_ROUNDING = {"nearest_even": np.rint, "toward_zero": np.trunc, "up": np.ceil, "down": np.floor}


def _scaled_path_ok(fmt: Format, rounding: str) -> bool:
    """Whether float64 scaling by the quantum can do the rounding (signed formats with zero,
    1 to 51 mantissa bits, in a mode numpy rounds integers in). Without mantissa bits the
    integer's parity is not the code's, so ties to even would go wrong."""
    return (
        isinstance(rounding, str) and ROUNDING_MODES.get(rounding.lower()) in _INTEGER_ROUNDING
        and fmt.subnormals and fmt.signed and 1 <= fmt.mantissa_bits <= 51
    )


def _quantize_float64_scaled(x: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    """Values of float64 x rounded in fmt, by scaling with the quantum and rounding to integer.

    v / 2**(max(e, emin) - m) has at most m + 1 integer bits and is exact (a power-of-two
    scaling), numpy's rint/trunc/ceil/floor round it, and scaling back is exact. Overflow,
    Inf, NaN and signed zeros then follow the options as in the generic kernel (tested against
    it).
    """
    if opts.nan == "raise" and not fmt.has_nan and np.isnan(x).any():
        _raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = np.frexp(x)
        quantum = np.ldexp(1.0, np.maximum(e - 1, fmt.emin) - fmt.mantissa_bits)
        scaled = x / quantum
        if opts.rounding in ("up", "down") and fmt.emin - fmt.mantissa_bits >= 1:
            # A quantum of 2 or more can scale the tiniest inputs to 0, where ceil/floor
            # no longer see that they were not zero.
            scaled = np.where((scaled == 0) & (x != 0), np.copysign(5e-324, x), scaled)
        r = _INTEGER_ROUNDING[opts.rounding](scaled) * quantum
        bad = ~(np.abs(r) <= fmt.max)  # overflowed, Inf or NaN
    if bad.any():
        r[bad] = _special_values(x[bad], fmt, opts)
    if not fmt.has_neg_zero:
        r[r == 0] = 0.0
    return r


# ---- teaching -----------------------------------------------------------------------------
def _classify(code: int, fmt: Format) -> str:
    value = float(decode(np.array([code]), fmt)[0])
    mag = (code >> fmt.code_shift) & fmt.top_code
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf"
    if value == 0:
        return "zero"
    if fmt.subnormals and (mag >> fmt.mantissa_bits) == 0:
        return "subnormal"
    return "normal"


def explain(
    x: float,
    fmt: str | Format,
    *,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    nan: str | None = None,
    color: bool = False,
) -> str:
    """Describe in plain words how one number is encoded: fields, class, value and error.

    >>> print(explain(0.3, "e4m3"))
    0.3 in e4m3 (rounding nearest_even, overflow nan)
      code      0x2A = 0 0101 010
      sign      0 -> +
      exponent  0101 = 5, minus bias 7 -> 2^-2
      mantissa  010 -> 1 + 2/8 = 1.25 (normal)
      value     0.3125
      error     +0.0125 (relative +4.17%)
    """
    fmt = get_format(fmt)
    opts = _options(fmt, rounding, overflow, nan)
    arr = np.asarray(x)
    if arr.ndim != 0:
        raise ValueError("explain takes a single number")
    code = int(encode(arr, fmt, rounding=rounding, overflow=overflow, nan=nan))
    value = float(decode(np.array([code], dtype=fmt.code_dtype), fmt)[0])
    cls = _classify(code, fmt)
    raw = code >> fmt.code_shift
    M, E = fmt.mantissa_bits, fmt.exponent_bits
    sign_bit = (raw >> (E + M)) & 1 if fmt.signed else None
    efield = (raw >> M) & ((1 << E) - 1)
    frac = raw & ((1 << M) - 1)
    ebits = format(efield, f"0{E}b")
    mbits = format(frac, f"0{M}b") if M else ""

    def paint(text: str, ansi: str) -> str:
        return f"\033[{ansi}m{text}\033[0m" if color and text else text

    fields = [paint(str(sign_bit), "31")] if fmt.signed else []
    fields += [paint(ebits, "32")] + ([paint(mbits, "34")] if M else [])
    width = (fmt.storage_bits + 3) // 4
    lines = [f"{float(arr)!r} in {fmt.name} (rounding {opts.rounding}, overflow {opts.overflow})"]
    lines.append(f"  code      0x{code:0{width}X} = {' '.join(fields)}")
    if fmt.signed:
        lines.append(f"  sign      {sign_bit} -> {'-' if sign_bit else '+'}")
    if cls in ("normal", "subnormal"):
        if cls == "subnormal":
            lines.append(f"  exponent  {ebits} = 0 (subnormal) -> 2^{fmt.emin}")
            lead = 0
        else:
            lines.append(f"  exponent  {ebits} = {efield}, minus bias {fmt.bias} -> 2^{efield - fmt.bias}")
            lead = 1
        if M:
            lines.append(f"  mantissa  {mbits} -> {lead} + {frac}/{1 << M} = {lead + frac / (1 << M):g} ({cls})")
        else:
            lines.append(f"  mantissa  (none) -> {lead} ({cls})")
    else:
        lines.append(f"  class     {cls}")
    lines.append(f"  value     {value!r}")
    xf = float(arr)
    if np.isfinite(xf) and np.isfinite(value):
        err = Fraction(value) - Fraction(xf)
        rel = f" (relative {float(err / Fraction(xf)) * 100:+.3g}%)" if xf != 0 else ""
        lines.append(f"  error     {float(err):+.6g}{rel}")
    elif not np.isnan(xf) and not np.isfinite(value):
        lines.append(f"  error     {_why_not_finite(xf, fmt)}")
    return "\n".join(lines)


def _why_not_finite(x: float, fmt: Format) -> str:
    """Why a number that is not NaN got a NaN or Inf code (for explain)."""
    if x == 0 and not fmt.subnormals:
        return "no code: the format has no zero"
    if not fmt.signed and x < 0:
        return "no code: the format is unsigned, it has no negative values"
    if np.isinf(x):
        return "Inf input" + ("" if fmt.has_inf else ": the format has no Inf")
    return "overflow: the value is beyond the format's largest finite value"
