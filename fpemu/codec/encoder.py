"""encode: real numbers to codes, through the fastest path that is exact for the format.

* float32 input into formats with at most 6 mantissa bits: a 2**17-entry table indexed by the
  top 16 bits of the float32 pattern plus one sticky bit for the low 16 bits. The round bit of
  such a format always lies in the top 16 bits, so those 17 bits decide the result.
* float64 input into those formats: first round to float32 *to odd* (which loses nothing for
  a later rounding to 2 or more bits fewer), then the table.
* fp16/fp32 with round-to-nearest-even: numpy's own (correctly rounded) cast.
* float32 input into bf16/tf32 with round-to-nearest-even: integer rounding on the bit pattern.
* everything else: the generic kernel.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..formats import Format, get_format
from .inputs import _CHUNK, _as_real_array, _chunks
from .odd import _float64_to_float32_odd, integers_to_float64
from .kernel import _encode_generic, _is_fp32_prefix
from .options import STOCHASTIC_WITH_BITS, _Options, _options
from .specials import _raise_nan


def _table_path_ok(fmt: Format, opts: _Options) -> bool:
    """Whether the 17-bit table (and float64 -> float32 rounding to odd) is exact for fmt."""
    # The round bit must lie in the top 16 bits of every float32 pattern, including float32
    # subnormals (resolution 2**-133 there, so the format's quantum, 2**(emin - M) also where
    # it has no subnormals, must be 2**-132 or more), and float32 must have 2 bits more than
    # the format wherever the format has values, for the float64 -> float32 rounding to odd.
    no_code_raises = opts.nan == "raise" and not fmt.has_nan and not (fmt.signed and fmt.subnormals)
    return (
        opts.rounding != "stochastic" and opts.rounding not in STOCHASTIC_WITH_BITS
        and opts.nan not in ("payload", "quiet_payload")
        and not no_code_raises  # the table has no code to flag such values with
        and fmt.mantissa_bits <= 6
        and fmt.emax <= 127
        and fmt.emin - fmt.mantissa_bits >= -132
    )


@lru_cache(maxsize=64)
def _encode_table(fmt: Format, opts: _Options) -> np.ndarray:
    """Code for each (top 16 bits, sticky) index of a float32 pattern."""
    index = np.arange(1 << 17, dtype=np.uint32)
    patterns = ((index >> 1) << 16) | (index & 1)
    with np.errstate(invalid="ignore"):  # signalling-NaN patterns warn when widened
        x = patterns.view(np.float32).astype(np.float64)
    nan_free = opts if opts.nan != "raise" else _Options(opts.rounding, opts.overflow, "zero", opts.sr_bits)
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
    Format("fp64", 11, 52, 1023): np.dtype(np.float64),
}


def _encode_numpy_native(x: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    """fp16/fp32/fp64 RNE through numpy's own cast; only NaNs are re-encoded per the nan policy."""
    native = _NUMPY_NATIVE[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        codes = x.astype(native).view(fmt.code_dtype)  # a fresh array: astype copies
    isnan = np.isnan(x)
    # numpy keeps the payloads of float32 NaNs narrowed to float16 (or copied) bit for bit, but
    # widening and float64 NaNs pass through the FPU, which quiets them: the generic kernel
    # re-encodes NaNs unless numpy's rule is the one asked for.
    numpy_rule = opts.nan == "payload" and x.dtype == np.float32 and native.itemsize <= 4
    if isnan.any() and not numpy_rule:
        codes[isnan] = _encode_generic(x[isnan], fmt, opts)
    return codes


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


def encode(
    x: Any,
    fmt: str | Format,
    *,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    nan: str | None = None,
    rng: int | np.random.Generator | None = None,
    sr_bits: int | None = None,
    random_bits: Any = None,
    directed_overflow: str | None = None,
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
            for inputs far below the smallest subnormal, where the bias is below 2**-64 ulp),
            ``stochastic_a``/``_b``/``_c`` (IEEE P3109's stochastic rounding with ``sr_bits``
            random bits per value: ``random_bits`` given, or drawn from ``rng``; A is PTX
            ``cvt.rs``), ``ml_dtypes_e8m0`` (ml_dtypes' E8M0 cast: ties away, and everything
            between the two smallest values up to the larger).
        overflow: ``saturate`` (``sat_finite``: +-max, also for +-Inf input),
            ``saturate_propagate`` (``sat_propagate``: finite overflow saturates, Inf stays Inf,
            or saturates where the format has none), ``ml_dtypes_saturate`` (the same, but Inf
            becomes NaN where the format has no Inf: ml_dtypes' C++ saturating conversion),
            ``inf``, ``nan`` (Inf or NaN, except in the modes ``directed_overflow`` spares),
            ``sat_none`` (P3109 SatNone: round-to-odd overflows too, except into an unsigned
            extended format; a format without Inf saturates), or None for the format's
            non-saturating default (ml_dtypes): Inf where the format has it, else NaN, else
            saturate. Negative numbers of an unsigned format, and zero of a format without
            zero, saturate to the lowest value under the saturating rules, and are NaN
            otherwise (except, for negatives, in the spared modes).
        nan: the code of NaN results. Formats without NaN: ``raise`` (default), ``zero``,
            ``max`` (+max: PTX ``cvt .satfinite`` into FP4/FP6), ``ml_dtypes`` (its codes:
            sign bit set for +NaN, clear for -NaN). Formats with NaN:
            ``sign`` (default: the canonical quiet NaN, with the sign where the format is
            signed), ``positive`` (sign dropped), ``all_ones`` (every bit set: gfloat),
            ``ones_with_sign`` (every magnitude bit set, the sign kept: torch's E5M2),
            ``ones_positive`` (every magnitude bit set, no sign),
            ``payload`` (numpy's float->half rule: top payload bits, non-zero),
            ``quiet_payload`` (what FPUs do: top payload bits with the quiet bit set).
        rng: seed or ``np.random.Generator`` for the stochastic roundings.
        sr_bits: N, the random bits per value of ``stochastic_a``/``_b``/``_c`` (1..32).
        random_bits: their values, integers in [0, 2**N) broadcast to ``x``'s shape (a
            kernel's own random bits, to check its output bit for bit); None draws them.
        directed_overflow: which rounding modes an ``inf``/``nan`` overflow spares, giving
            +-max: ``ieee`` (default; IEEE 754 7.4: the modes that round toward zero for that
            sign, and round-to-odd, which truncates), ``p3109`` (the same without round-to-odd,
            for which Inf is the next code up: P3109 and gfloat), ``none`` (every overflow is Inf
            or NaN: ml_dtypes' C++ ``ConvertFrom<kTruncate>``).

    Returns:
        Codes as uint8 (<= 8 bits, right-aligned), uint16, uint32 or uint64; TF32 codes are
        fp32 patterns with the low 13 bits zero.

    >>> encode([0.25, 0.26, 5.0, 5.01, -100.0], "e2m1")
    array([ 0,  1,  6,  7, 15], dtype=uint8)
    >>> hex(int(encode(1024.5, "tf32", rounding="rna")))
    '0x44802000'
    >>> encode([1.3, 1.3], "e4m3", rounding="stochastic_a", sr_bits=4, random_bits=[2, 14]).tolist()
    [58, 59]
    """
    fmt = get_format(fmt)
    opts = _options(fmt, rounding, overflow, nan, sr_bits, directed_overflow)
    if random_bits is not None and opts.rounding not in STOCHASTIC_WITH_BITS:
        raise ValueError(f"random_bits apply to {', '.join(STOCHASTIC_WITH_BITS)}, not {opts.rounding!r}")
    arr = _as_real_array(x)
    if arr.dtype.kind in "iu":
        arr = _integers(arr, fmt, opts)
    if _table_path_ok(fmt, opts):
        codes = _encode_by_table(arr, fmt, opts)
    elif arr.dtype.kind == "f" and opts.rounding == "nearest_even" and opts.overflow == "inf" \
            and fmt in _NUMPY_NATIVE and (arr.dtype.itemsize >= _NUMPY_NATIVE[fmt].itemsize or fmt.bits == 64):
        codes = _encode_numpy_native(arr, fmt, opts)
    elif (
        arr.dtype == np.float32
        and _is_fp32_prefix(fmt)
        and fmt.mantissa_bits < 23
        and opts == _Options("nearest_even", "inf", "sign")
    ):  # (directed_overflow does not matter: RNE is never spared)
        codes = _encode_fp32_prefix_rne(arr, fmt)
    else:
        codes = _encode_generic(arr, fmt, opts, rng, random_bits)
    codes = np.asarray(codes)
    if fmt.code_shift:
        codes = codes.astype(fmt.code_dtype) << fmt.code_dtype.type(fmt.code_shift)
    return codes.astype(fmt.code_dtype, copy=False)


def _integers(arr: np.ndarray, fmt: Format, opts: _Options) -> np.ndarray:
    """Integer input as float64 that rounds once: to odd at 53 bits (exact for formats of up to
    51 significant bits), or numpy's correctly rounded cast for binary64 under RNE."""
    if fmt.mantissa_bits < 51 or not arr.size:
        return integers_to_float64(arr)
    big = np.abs(arr.astype(np.float64)) >= 2.0**53
    if not big.any():
        return arr.astype(np.float64)
    if fmt.mantissa_bits == 52 and opts.rounding == "nearest_even":
        return arr.astype(np.float64)  # numpy rounds integers to float64 to nearest even
    raise ValueError(f"integers of 2**53 or more into {fmt.name} ({fmt.mantissa_bits + 1} significant "
                     f"bits) under {opts.rounding!r} would be rounded twice: convert them to float64 first")
