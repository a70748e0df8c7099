"""quantize: round to a format's values and return them as floats, with two fast paths that
round by floating-point arithmetic (tested against the generic kernel)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..formats import Format, get_format
from .decoder import fits, decode
from .encoder import encode
from .exact_kernel import exact_to_float32
from .inputs import as_real_array, chunk_size, chunks
from .narrowing import check_via, narrow
from ..parallel import run_pieces
from .dask_arrays import is_dask
from .foreign import as_numpy
from .kernel import decode_generic, encode_generic, raise_nan
from .returns import check_returns, deliver_values
from ..arguments import option_name
from .option_names import check_random
from .options import ROUNDING_MODES, Conversion


def quantize(
    x: Any,
    fmt: str | Format,
    *,
    conversion: Conversion | Mapping | None = None,
    rounding: str | None = None,
    overflow: str | None = None,
    nan: str | None = None,
    rng: int | np.random.Generator | None = None,
    sr_bits: int | None = None,
    random_bits: Any = None,
    directed_overflow: str | None = None,
    via: str | None = None,
    workers: int | None = None,
    returns: str = "numpy",
) -> np.ndarray:
    """Round x to the values of ``fmt`` (per the options of :func:`encode`: a ``conversion``
    and/or the keywords), as floats, in the array type ``returns`` asks for (``"numpy"``,
    ``"input"``, ``"torch"``, ``"ml_dtypes"``).

    Exact input (Fractions, Decimals, decimal strings: see :func:`encode`) is rounded once
    from its exact value. The result has x's float dtype (float64 for integer and exact
    input); if the format has values that dtype cannot hold exactly (bf16 from float16 input,
    say), it is widened to float32 or float64 so no value is rounded a second time.

    >>> quantize([0.1, 1000.0], "e4m3", overflow="saturate")
    array([1.015625e-01, 4.480000e+02])
    >>> quantize([1 + 2**-8 + 2**-30], "bf16", via="fp32")  # rounded twice, as ml_dtypes 0.6 does
    array([1.])
    >>> quantize([1000.0], "e4m3", conversion=Conversion(overflow="saturate"))
    array([448.])
    """
    fmt = get_format(fmt)
    returns = check_returns(returns, x)
    conv = Conversion.of(conversion, rounding=rounding, overflow=overflow, nan=nan, sr_bits=sr_bits,
                         random_bits=random_bits, directed_overflow=directed_overflow, via=via)
    # the fast paths below never reach encode: the options are checked here, once, first
    check_random(conv.resolved(fmt).rounding, rng, conv.random_bits)
    values = _quantize(as_numpy(x), fmt, conv.replace(via=check_via(conv.via)), rng, workers)
    return deliver_values(values, returns, x)


def _quantize(x: Any, fmt: Format, conv: Conversion, rng: Any, workers: int | None) -> np.ndarray:
    """quantize of a NumPy or Dask array."""
    arr = x if is_dask(x) else as_real_array(x)
    dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)  # (exact input: float64)
    via = conv.via
    if via is not None and arr.dtype.kind in "OU":
        arr = exact_to_float32(arr)  # once, from the exact value
    if via is not None:  # the values come back in x's dtype, rounded twice as asked
        narrowed = arr.map_blocks(narrow, via, dtype=np.float32) if is_dask(arr) else narrow(arr, via)
        values = _quantize(narrowed, fmt, conv.replace(via=None), rng, workers)
        return values.astype(np.promote_types(dtype, values.dtype))
    for wider in (dtype, np.dtype(np.float32), np.dtype(np.float64)):
        if wider.itemsize >= dtype.itemsize and fits(fmt, wider):
            dtype = wider
            break
    opts = conv.resolved(fmt)
    fast = opts.sr_bits is None and conv.random_bits is None and opts.directed_overflow is None and not is_dask(arr)
    if fast and arr.dtype == np.float32 and _magic_path_ok(fmt, opts.rounding):
        return _in_pieces(_quantize_float32_magic, arr, fmt, opts, workers)
    if fast and arr.dtype == np.float64 and _scaled_path_ok(fmt, opts.rounding):
        return _in_pieces(_quantize_float64_scaled, arr, fmt, opts, workers)
    codes = encode(arr, fmt, conversion=conv, rng=rng, workers=workers)
    if dtype == np.float16:  # (a Dask array too: encode and decode take them)
        return decode(codes, fmt, dtype=np.float32, workers=workers).astype(np.float16)
    return decode(codes, fmt, dtype=dtype, workers=workers)


def _in_pieces(path, arr: np.ndarray, fmt: Format, opts: Conversion, workers: int | None) -> np.ndarray:
    """A fast quantize path over contiguous pieces of arr on ``workers`` threads."""
    if opts.nan == "raise" and not fmt.has_nan and np.isnan(arr).any():
        raise_nan(int(np.count_nonzero(np.isnan(arr))), fmt)  # counted over the whole input
    flat = np.ascontiguousarray(arr).reshape(-1)
    out = np.empty(flat.size, dtype=arr.dtype)

    def piece(part: slice) -> None:
        out[part] = path(flat[part], fmt, opts)

    run_pieces(piece, flat.size, workers, light=arr.dtype.itemsize <= 4)  # float32 arithmetic: light
    return out.reshape(arr.shape)


def _magic_path_ok(fmt: Format, rounding: str) -> bool:
    """Whether float32 addition can do the RNE rounding (fp16-like formats: 7 to 21 mantissa
    bits, subnormals, and an exponent range whose magic numbers stay finite in float32)."""
    return (
        ROUNDING_MODES.get(option_name(rounding)) == "nearest_even"
        and 7 <= fmt.mantissa_bits <= 21 and fmt.subnormals and fmt.signed and fmt.has_normals
        and not fmt.twos_complement
        and fmt.emin >= -126 and fmt.emax <= 103 + fmt.mantissa_bits
    )


def _quantize_float32_magic(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """RNE values of float32 x in fmt, by float32 addition of a "magic" number.

    For x in the binade [2**e, 2**(e+1)) (e clamped below at emin), M = 1.5 * 2**(e - m + 23)
    has float32 spacing 2**(e - m), the format's quantum at x, and x + M stays in M's binade; so
    the float32 addition rounds x to the format's precision, ties to even (M is an even multiple
    of the quantum), and subtracting M is exact. Overflow, Inf, NaN and signed zeros are then
    set per the options, as the generic kernel does (tested against it exhaustively).
    """
    if opts.nan == "raise" and not fmt.has_nan and np.isnan(x).any():
        raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)
    flat = np.asarray(x, order="C").reshape(-1)
    out = np.empty(flat.size, dtype=np.float32)
    size = chunk_size()
    magic_bits = np.empty(min(size, flat.size), dtype=np.uint32)
    low = np.uint32(fmt.emin + 127)
    high = np.uint32(fmt.emax + 127)
    offset = np.uint32(23 - fmt.mantissa_bits)
    for part in chunks(flat.size, size):
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


def _special_values(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Values for the (few) inputs that overflowed, are Inf or are NaN: the generic kernel
    decides them, so the overflow and NaN options mean the same on every path."""
    return decode_generic(encode_generic(x, fmt, opts), fmt).astype(x.dtype)


# numpy's own integer rounding of float64 values, per rounding mode (each exact).
_INTEGER_ROUNDING = {"nearest_even": np.rint, "toward_zero": np.trunc, "up": np.ceil, "down": np.floor}


def _scaled_path_ok(fmt: Format, rounding: str) -> bool:
    """Whether float64 scaling by the quantum can do the rounding (signed formats with zero,
    1 to 51 mantissa bits, in a mode numpy rounds integers in). Without mantissa bits the
    integer's parity is not the code's, so ties to even would go wrong."""
    return (
        ROUNDING_MODES.get(option_name(rounding)) in _INTEGER_ROUNDING
        and fmt.subnormals and fmt.signed and 1 <= fmt.mantissa_bits <= 51 and not fmt.twos_complement
    )


def _quantize_float64_scaled(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Values of float64 x rounded in fmt, by scaling with the quantum and rounding to integer.

    v / 2**(max(e, emin) - m) has at most m + 1 integer bits and is exact (a power-of-two
    scaling), numpy's rint/trunc/ceil/floor round it, and scaling back is exact. Overflow,
    Inf, NaN and signed zeros then follow the options as in the generic kernel (tested against
    it).
    """
    if opts.nan == "raise" and not fmt.has_nan and np.isnan(x).any():
        raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)
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
