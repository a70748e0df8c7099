"""quantize: round to a format's values and return them as floats: where
:func:`.dispatch.encode_path` (asked with ``values=True``) names one of the two paths that
round by floating-point arithmetic (:mod:`.fast.float_arithmetic`), by that; else encode,
then decode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..formats import Format, get_format
from ..parallel import run_pieces
from .dask_arrays import is_dask
from .decoder import decode, fits
from .dispatch import encode_path
from .encoder import encode
from .exact_kernel import exact_to_float32
from .fast.float_arithmetic import quantize_by_magic_number, quantize_by_quantum_scaling
from .foreign import as_numpy
from .inputs import as_real_array, check_via, narrow
from .option_names import check_random
from .options import Conversion
from .returns import check_returns, deliver_values
from .specials import refuse_nan


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
    no_code: str | None = None,
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
                         random_bits=random_bits, directed_overflow=directed_overflow, via=via, no_code=no_code)
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
    path = None if is_dask(arr) else encode_path(fmt, conv, arr.dtype, arr.size, values=True)
    if path == "magic_number":
        return _in_pieces(quantize_by_magic_number, arr, fmt, conv.resolved(fmt), workers)
    if path == "quantum_scaling":
        return _in_pieces(quantize_by_quantum_scaling, arr, fmt, conv.resolved(fmt), workers)
    codes = encode(arr, fmt, conversion=conv, rng=rng, workers=workers)
    if dtype == np.float16:  # (a Dask array too: encode and decode take them)
        return decode(codes, fmt, dtype=np.float32, workers=workers).astype(np.float16)
    return decode(codes, fmt, dtype=dtype, workers=workers)


def _in_pieces(path, arr: np.ndarray, fmt: Format, opts: Conversion, workers: int | None) -> np.ndarray:
    """A fast quantize path over contiguous pieces of arr on ``workers`` threads."""
    if opts.nan == "raise" and not fmt.has_nan:
        refuse_nan(arr, fmt)  # counted over the whole input
    flat = np.ascontiguousarray(arr).reshape(-1)
    out = np.empty(flat.size, dtype=arr.dtype)

    def piece(part: slice) -> None:
        out[part] = path(flat[part], fmt, opts)

    run_pieces(piece, flat.size, workers, light=arr.dtype.itemsize <= 4)  # float32 arithmetic: light
    return out.reshape(arr.shape)


