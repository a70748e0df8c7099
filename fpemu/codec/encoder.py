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
from .kernel import _check_codes_exist, _encode_generic, _is_fp32_prefix, _raise_nan
from .options import _Options, _options


def _table_path_ok(fmt: Format, opts: _Options) -> bool:
    """Whether the 17-bit table (and float64 -> float32 rounding to odd) is exact for fmt."""
    # The round bit must lie in the top 16 bits of every float32 pattern, including float32
    # subnormals (resolution 2**-133 there, so the format's quantum, 2**(emin - M) also where
    # it has no subnormals, must be 2**-132 or more), and float32 must have 2 bits more than
    # the format wherever the format has values, for the float64 -> float32 rounding to odd.
    return (
        opts.rounding != "stochastic"
        and opts.nan not in ("payload", "quiet_payload")
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
