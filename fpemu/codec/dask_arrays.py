"""encode, decode and quantize of Dask arrays: the same work block by block, the same bits.

Every elementwise result depends on its element alone, and stochastic rounding's random bits
on the seed and the element's position in the whole array (:func:`.rounding._random_u64`),
so a Dask array gives exactly the codes the same array in memory gives, however it is
chunked. Dask is an optional extra (``pip install fpemu[dask]``); nothing here imports it
until a Dask array arrives.

>>> import dask.array as da  # doctest: +SKIP
>>> x = da.from_array(np.linspace(-1, 1, 10), chunks=4)  # doctest: +SKIP
>>> encode(x, "e4m3").compute().tolist() == encode(x.compute(), "e4m3").tolist()  # doctest: +SKIP
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import Format


def is_dask(x: Any) -> bool:
    """Whether x is a Dask array (without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "map_blocks")


def _positions(block_info: dict | None, shape: tuple) -> np.ndarray:
    """The flat (C-order) positions, in the whole array, of a block's elements."""
    info = (block_info or {}).get(0)
    if info is None:  # Dask's meta call: an empty block
        return np.zeros(shape, dtype=np.uint64)
    full = info["shape"]
    ranges = [np.arange(a, b, dtype=np.uint64) for a, b in info["array-location"]]
    strides = np.cumprod((1,) + tuple(full[::-1]))[:-1][::-1].astype(np.uint64)
    grid = np.zeros(shape, dtype=np.uint64)
    for axis, (r, stride) in enumerate(zip(ranges, strides)):
        view = [1] * len(shape)
        view[axis] = r.size
        grid = grid + r.reshape(view) * stride
    return grid


def encode_dask(x, fmt: Format, opts, rng: Any, random_bits: Any, workers: int | None):
    """encode of a Dask array of real numbers, block by block (see the module docstring)."""
    from .encoder import _encode_array, _integers
    from .inputs import _as_real_array
    from .options import STOCHASTIC_WITH_BITS
    from .rounding import _sr_key

    stochastic = opts.rounding == "stochastic" or opts.rounding in STOCHASTIC_WITH_BITS
    key = _sr_key(rng) if stochastic else None

    def block(xb: np.ndarray, rb: np.ndarray | None = None, block_info=None) -> np.ndarray:
        arr = _as_real_array(xb)
        if arr.dtype.kind in "iu":
            arr = _integers(arr, fmt, opts)
        index = _positions(block_info, arr.shape) if stochastic else 0
        return _encode_array(arr, fmt, opts, random_bits=rb, workers=workers or 1, index=index, key=key)

    if random_bits is None:
        return x.map_blocks(block, dtype=fmt.code_dtype)
    import dask.array as da

    bits = da.broadcast_to(da.asarray(random_bits), x.shape).rechunk(x.chunks)
    return da.map_blocks(block, x, bits, dtype=fmt.code_dtype)


def decode_dask(codes, fmt: Format, dtype: np.dtype, workers: int | None):
    """decode of a Dask array of codes, block by block."""
    from .decoder import decode

    return codes.map_blocks(lambda c: decode(c, fmt, dtype=dtype, workers=workers or 1), dtype=dtype)


def quantize_dask(x, fmt: Format, dtype: np.dtype, options: dict, workers: int | None):
    """quantize of a Dask array: encode then decode, block by block, in the result dtype."""
    from .decoder import decode
    from .options import _options

    opts = _options(fmt, options["rounding"], options["overflow"], options["nan"], options["sr_bits"],
                    options["directed_overflow"])
    codes = encode_dask(x, fmt, opts, options["rng"], options["random_bits"], workers)
    wide = np.dtype(np.float32) if dtype == np.float16 else dtype

    def block(c: np.ndarray) -> np.ndarray:
        return decode(c, fmt, dtype=wide, workers=workers or 1).astype(dtype, copy=False)

    return codes.map_blocks(block, dtype=dtype)
