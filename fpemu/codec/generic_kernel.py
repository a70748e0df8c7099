"""The generic kernel: every format, every rounding mode, every option, on float64 values.

Encoding splits each float64 into sign, exponent and a 53-bit integer significand, drops the
bits below the format's quantum with integer arithmetic, rounds, applies the overflow rule to
the rounded magnitude, then places the sign and the special codes. Decoding builds each value
from the format's definition. Every fast path of the codec (:mod:`.fast`) is either built from this
kernel (tables) or tested against it.

>>> from ..formats import get_format
>>> fmt = get_format("e2m1")
>>> encode_generic(np.array([0.25, 0.26, 5.0, -100.0]), fmt, resolved_options(fmt, "rne", None, None)).tolist()
[0, 1, 6, 15]
>>> decode_generic(np.array([1, 7, 15]), fmt).tolist()
[0.5, 6.0, -6.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import Format
from .chunks import GENERIC_CHUNK, chunks
from .options import STOCHASTIC_WITH_BITS, Conversion, resolved_options  # noqa: F401  (resolved_options: the doctest)
from .rounding import random_u64, round_increment, sr_increment, sr_key, stochastic_increment
from .specials import nan_codes, place_sign, refuse_nan, resolve_no_code, resolve_overflow, sign_read

_U64 = np.uint64


def encode_generic(source: np.ndarray, fmt: Format, opts: Conversion, key: Any = None, start: Any = 0,
                    random_bits: np.ndarray | None = None) -> np.ndarray:
    """Codes (right-aligned, uint64) of float values; the reference kernel for every path.

    source is float16/32/64; it is widened to float64 (exactly) and only its NaN payloads are
    read from the original bits. Runs chunk by chunk (its many temporaries then stay in cache).
    Stochastic rounding: the random bits of element i are those of position ``start + i``
    under ``key`` (an int seed or rng, see :func:`.sr_key`), or of position ``start[i]``
    where start is an array of positions (a Dask block's); ``random_bits``, the caller's flat
    N-bit integers for P3109's modes, replace them.
    """
    source = np.asarray(source)
    if opts.nan == "raise" and not fmt.has_nan:
        refuse_nan(source, fmt)
    stochastic = opts.stochastic
    if stochastic and not isinstance(key, np.uint64):
        key = sr_key(key)
    flat = source.reshape(-1)
    out = np.empty(flat.size, dtype=np.uint64)
    for part in chunks(flat.size, GENERIC_CHUNK):
        u, bits = chunk_random(opts, stochastic, key, start, part, random_bits)
        out[part] = _encode_chunk(flat[part], fmt, opts, u, bits)
    return out.reshape(source.shape)


def chunk_random(opts: Conversion, stochastic: bool, key: Any, start: Any, part: slice, random_bits):
    """The random bits of the elements in ``part``: u, 64 per element (a function of key and
    each position: ``start`` + index, or ``start[index]``), and P3109's N-bit integers (the
    caller's ``random_bits``, else the top N bits of u); None where the mode takes none."""
    u = bits = None
    if stochastic and random_bits is None:
        positions = (np.arange(start + part.start, start + part.stop, dtype=np.uint64)
                     if np.ndim(start) == 0 else np.asarray(start)[part])
        u = random_u64(key, positions)
    if random_bits is not None:
        bits = random_bits[part]
    elif u is not None and opts.sr_bits is not None:
        bits = u >> np.uint64(64 - opts.sr_bits)  # the top N bits: uniform on [0, 2**N)
    return u, bits


def _encode_chunk(source: np.ndarray, fmt: Format, opts: Conversion, u, bits) -> np.ndarray:
    """The generic kernel on one flat chunk (see encode_generic)."""
    with np.errstate(invalid="ignore"):  # widening a signalling NaN warns; it stays NaN
        x = np.asarray(source, dtype=np.float64)
    negative = sign_read(np.signbit(x), fmt, opts)
    isnan = np.isnan(x)
    isinf = np.isinf(x)
    finite = ~(isnan | isinf)
    mag = _rounded_magnitude(x, finite, negative, fmt, opts, u, bits)
    return finish_codes(mag, negative, isnan, isinf, finite, x == 0, fmt, opts, source)


def finish_codes(mag, negative, isnan, isinf, finite, iszero, fmt: Format, opts: Conversion, source) -> np.ndarray:
    """Codes from rounded magnitudes (:func:`round_code`): overflow, no code, the sign and the
    NaN codes (:mod:`.specials`); source: the float inputs, for NaN payloads."""
    mag[iszero] = 0
    result = mag.astype(np.uint64)
    nan_out = isnan.copy()
    largest = np.where(negative & fmt.twos_complement, fmt.max_code + 1, fmt.max_code)
    over = finite & (mag > largest)
    resolve_overflow(result, nan_out, over, isinf, negative, fmt, opts)
    resolve_no_code(result, nan_out, negative, iszero, finite, isnan, mag, fmt, opts)
    place_sign(result, negative, nan_out, fmt)
    nan_codes(result, nan_out, isnan, negative, fmt, opts, source)
    return result


def _rounded_magnitude(x, finite, negative, fmt: Format, opts: Conversion, u, bits) -> np.ndarray:
    """The magnitude code of |x| rounded per the mode, on a grid unbounded above (int64; codes
    past the largest finite one are overflow)."""
    M = fmt.mantissa_bits
    # |x| = sig * 2**(ex - 52) with sig a 53-bit integer (frexp normalises float64 subnormals).
    m, e = np.frexp(np.where(finite, np.abs(x), 0.0))
    sig = (m * 2.0**53).astype(np.uint64)
    ex = e.astype(np.int64) - 1
    # Drop every bit below the quantum 2**(max(ex, emin) - M): 52 - M bits or more.
    binade = np.maximum(ex, fmt.emin)
    shift_full = binade - M - (ex - 52)
    shift = np.minimum(shift_full, 60).astype(np.uint64)  # beyond 54 everything is "sticky"
    kept = (sig >> shift).astype(np.int64)
    rem = sig & ((_U64(1) << shift) - _U64(1))
    return round_code(binade, kept, rem, shift, shift_full, ex, negative, fmt, opts, u, bits)


def round_code(binade, kept, rem, shift, shift_full, ex, negative, fmt: Format, opts: Conversion, u,
                bits) -> np.ndarray:
    """The rounded magnitude code (int64, unbounded above) of a value in ``binade`` (its
    exponent ``ex``, clamped below at emin) that is ``kept`` quanta plus the fraction
    ``rem / 2**shift_full`` of one (rem < 2**shift, shift = min(shift_full, 60): the
    deterministic modes compare rem with 2**(shift - 1), see :mod:`.rounding`). Float input
    gives the exact fraction; exact input (:mod:`.exact_kernel`) one that decides the same.
    ``binade`` None: ``kept`` is the truncated code already, with the hidden bit's ``2**M``
    (a caller's array, rounded in place: :mod:`.fast.float_fields`). ``negative`` is read by
    the modes that look at the sign (up, down) only."""
    M = fmt.mantissa_bits
    # Truncated code = binade offset + kept significand (with its hidden bit, which makes the
    # offset of field E land on E << M); a carry when rounding up rolls into the next binade.
    code = kept if binade is None else ((binade - fmt.emin) << M) + kept
    if not fmt.subnormals:
        code -= 1 << M  # field 0 is an ordinary binade: the hidden bit is not part of the code
    mode = opts.rounding
    if mode == "stochastic":
        code += stochastic_increment(rem, shift_full, u)
    elif mode in STOCHASTIC_WITH_BITS:
        code += sr_increment(mode, rem, shift_full, opts.sr_bits, bits)
    elif mode != "toward_zero":  # (toward zero adds nothing)
        code += round_increment((code & 1) == 1, rem, shift, negative, mode)
    if mode == "ml_dtypes_e8m0":
        # ml_dtypes rounds the lowest binade as a denormal one: between 0 and the next value,
        # so everything above the smallest value goes up to the next one.
        code = np.where((code == 0) & (rem != 0) & (ex == fmt.emin), 1, code)
    if not fmt.subnormals:
        code = np.maximum(code, 0)  # no zero to round to: the smallest value is the closest
    return code


def decode_generic(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """float64 values of right-aligned codes, straight from the format's definition."""
    codes = np.asarray(codes).astype(np.uint64)
    M = fmt.mantissa_bits
    if fmt.twos_complement:
        negative = codes >= _U64(1 << M)
        mag = np.where(negative, _U64(1 << (M + 1)) - codes, codes)
    else:
        negative = (codes & _U64(fmt.sign_mask)) != 0
        mag = codes & _U64(fmt.top_code)
    efield = (mag >> _U64(M)).astype(np.int64)
    frac = mag & _U64((1 << M) - 1)
    values = fmt.magnitudes(mag)  # the Inf/NaN codes, replaced below, may read as anything
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


def is_fp32_prefix(fmt: Format) -> bool:
    """fp32, bf16, tf32: fp32's sign and exponent with the top mantissa bits (the code is a
    prefix of the fp32 bit pattern)."""
    return (
        fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.inf == "ieee" and fmt.subnormals
        and fmt.signed and fmt.mantissa_bits <= 23
    )
