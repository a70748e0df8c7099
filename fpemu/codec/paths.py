"""The ways encode turns a flat float array into codes: the fastest path that is exact for the
format and options, else the generic kernel.

* float32 input into formats with at most 6 mantissa bits: a 2**17-entry table indexed by the
  top 16 bits of the float32 pattern plus one sticky bit for the low 16 bits. The round bit of
  such a format always lies in the top 16 bits, so those 17 bits decide the result.
* float16 and float64 input into those formats: chunk by chunk made float32 (float16
  exactly; float64 to the nearest float32 unless that is one of the format's decision
  points, a value or a midpoint, where it is rounded *to odd* instead: then the float32 rounds
  like the float64, see :func:`.odd.float64_to_float32_alike`), then the table, while the
  chunk is in the cache: about one pass more than float32 input.
* fp16/fp32/fp64 with round-to-nearest-even: numpy's own (correctly rounded) cast.
* float32 input into bf16/tf32 with round-to-nearest-even: integer rounding on the bit pattern
  (:mod:`.prefix`);
  float16 and float64 input made float32 the same way first (bf16 and tf32 have at most 22
  significant bits).
* everything else: the generic kernel.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..formats import Format
from .inputs import LIGHT_CHUNK, chunk_size, chunks
from .odd import as_float32_alike
from .kernel import encode_generic, is_fp32_prefix
from .options import STOCHASTIC_WITH_BITS, Conversion
from .prefix import PREFIX_INPUTS, encode_prefix_rne
from .scratch import scratch
from .specials import raise_nan
from .top_half import encode_top_half, top_half_plan


def _table_path_ok(fmt: Format, opts: Conversion) -> bool:
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
def _encode_table(fmt: Format, opts: Conversion) -> np.ndarray:
    """Code for each (top 16 bits, sticky) index of a float32 pattern."""
    index = np.arange(1 << 17, dtype=np.uint32)
    patterns = ((index >> 1) << 16) | (index & 1)
    with np.errstate(invalid="ignore"):  # signalling-NaN patterns warn when widened
        x = patterns.view(np.float32).astype(np.float64)
    nan_free = opts if opts.nan != "raise" else Conversion(opts.rounding, opts.overflow, "zero", opts.sr_bits)
    codes = encode_generic(x, fmt, nan_free)
    if opts.nan == "raise" and fmt.bits < 8:
        codes[np.isnan(x)] = 0xFF  # sentinel: no sub-byte code reaches it
    table = codes.astype(fmt.code_dtype)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=64)
def _arithmetic_plan(fmt: Format, opts: Conversion):
    """The checked top-half arithmetic for fmt and opts (codec.top_half), or None."""
    return top_half_plan(fmt, opts, _encode_table(fmt, opts))


def top_half_kernel(fmt: Format, opts: Conversion) -> tuple | None:
    """(plan, table) of the top-half arithmetic (:mod:`.top_half`) where encode takes it for
    float32 input into fmt under opts, else None: what MX's scaled blocks build on."""
    if not _table_path_ok(fmt, opts) or opts.nan == "raise":
        return None
    plan = _arithmetic_plan(fmt, opts)
    return None if plan is None else (plan, _encode_table(fmt, opts))


def _halves(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Low and high 16-bit halves of a flat uint32 array, as strided views (no copy)."""
    pairs = u.view(np.uint16).reshape(-1, 2)
    return (pairs[:, 0], pairs[:, 1]) if np.little_endian else (pairs[:, 1], pairs[:, 0])


def _table_lookup(u: np.ndarray, table: np.ndarray) -> np.ndarray:
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


def _encode_by_table(x: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray | None = None) -> np.ndarray:
    if x.dtype != np.float32:
        return _encode_wide_by_table(x, fmt, opts, out)
    if opts.nan == "raise" and fmt.bits >= 8 and np.isnan(x).any():
        raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)  # no spare code for a sentinel
    u = np.asarray(x, order="C").reshape(-1).view(np.uint32)
    plan = _arithmetic_plan(fmt, opts)
    table = _encode_table(fmt, opts)
    flat_out = None if out is None or out.dtype != table.dtype else out.reshape(-1)
    codes = (_table_lookup(u, table) if plan is None else encode_top_half(u, plan, table, out=flat_out))
    codes = codes.reshape(x.shape)
    if opts.nan == "raise" and fmt.bits < 8 and codes.size and codes.max() == 0xFF:
        raise_nan(int(np.count_nonzero(codes == 0xFF)), fmt)
    return codes


def _encode_wide_by_table(x: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray | None) -> np.ndarray:
    """The table path for float16 and float64 input: each chunk made float32 (float16
    widened, exactly; float64 narrowed to values that round alike,
    :func:`.odd.float64_to_float32_alike`: the table's formats have 2 bits fewer than float32
    wherever they have values), then encoded as float32 while it is still in the cache."""
    flat = np.ascontiguousarray(x).reshape(-1)
    table = _encode_table(fmt, opts)
    codes = out.reshape(-1) if out is not None and out.dtype == table.dtype else np.empty(flat.size, table.dtype)
    for part in chunks(flat.size, chunk_size(LIGHT_CHUNK)):
        specials: list = []
        narrow = as_float32_alike(flat[part], fmt, specials, scratch("wide.float32", part.stop - part.start, np.float32))
        got = _encode_by_table(narrow, fmt, opts, codes[part])
        if not np.may_share_memory(got, codes):  # (the plain table lookup writes a new array)
            codes[part] = got
        where = specials[0] if specials else ()
        huge = where[np.abs(flat[part][where]) >= 2.0**128] if len(where) else ()
        if len(huge):  # no float32 holds them: the generic kernel decides them
            codes[part][huge] = encode_generic(flat[part][huge], fmt, opts).astype(codes.dtype)
    return codes.reshape(x.shape)


# Formats numpy casts to natively with IEEE round-to-nearest-even (a correctly rounded cast).
_NUMPY_NATIVE = {
    Format("fp16", 5, 10, 15): np.dtype(np.float16),
    Format("fp32", 8, 23, 127): np.dtype(np.float32),
    Format("fp64", 11, 52, 1023): np.dtype(np.float64),
}


def _encode_numpy_native(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
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
        codes[isnan] = encode_generic(x[isnan], fmt, opts)
    return codes


def encode_path(fmt: Format, opts: Conversion, dtype: np.dtype) -> str:
    """Which way encode takes for fmt, opts and input dtype: "table", "native", "prefix"
    (all light: a few ns an element) or "generic"."""
    if _table_path_ok(fmt, opts):
        return "table"
    if opts.rounding == "nearest_even" and opts.overflow == "inf" and fmt in _NUMPY_NATIVE \
            and (dtype.itemsize >= _NUMPY_NATIVE[fmt].itemsize or fmt.bits == 64):
        return "native"
    if dtype in PREFIX_INPUTS and is_fp32_prefix(fmt) \
            and (fmt.mantissa_bits <= 21 or dtype == np.float32 and fmt.mantissa_bits < 23) \
            and opts == Conversion("nearest_even", "inf", "sign"):  # (directed_overflow: RNE is never spared)
        return "prefix"
    return "generic"


def encode_flat(x: np.ndarray, fmt: Format, opts: Conversion, key, start, bits,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Codes of a flat float array (elements ``start``.. of the whole input, or at the
    positions of the array ``start``, for stochastic rounding's random bits), in the format's
    code dtype and container position; written into ``out`` when given (the fast paths write
    there directly)."""
    path = encode_path(fmt, opts, x.dtype)
    if path == "table":
        codes = _encode_by_table(x, fmt, opts, out)
    elif path == "native":
        codes = _encode_numpy_native(x, fmt, opts)
    elif path == "prefix":
        codes = encode_prefix_rne(x, fmt, None if fmt.code_shift else out)
    else:
        codes = encode_generic(x, fmt, opts, key, start, bits)
    codes = np.asarray(codes)
    if fmt.code_shift:
        codes = codes.astype(fmt.code_dtype) << fmt.code_dtype.type(fmt.code_shift)
    codes = codes.astype(fmt.code_dtype, copy=False)
    if out is None:
        return codes
    if not np.shares_memory(codes, out):
        out[...] = codes
    return out
