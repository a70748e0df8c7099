"""The input table: inputs of at most 16 bits (float16, int8, uint8, int16, uint16) by one
gather from a table of the codes of all their bit patterns.

Such an input has at most 2**16 distinct bit patterns, so every deterministic rounding of it
into any format is a function of the pattern alone. The table of that function is built once
per (input dtype, format, conversion) by encoding every pattern through the ordinary exact
paths, so it holds their codes by construction; a large input then costs one gather
(:func:`lookup`), instead of a widening pass into float32 followed by the float32 kernel.

>>> from ...formats import get_format
>>> from ..encoder import encode
>>> from ..options import Conversion
>>> table = input_table(np.dtype(np.float16), get_format("e4m3"), Conversion("nearest_even", "saturate", "sign"),
...                     lambda v, f, o: encode(v, f, conversion=o))
>>> [hex(int(table[np.float16(v).view(np.uint16)])) for v in (1.0625, 1.1875, 1e4)]  # two ties, one overflow
['0x38', '0x3a', '0x7e']
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ...formats import Format
from ..chunks import chunks
from ..options import Conversion
from .fp32_table import NAN_SENTINEL


@lru_cache(maxsize=32)
def input_table(dtype: np.dtype, fmt: Format, opts: Conversion,
                encode_all: Callable[[np.ndarray, Format, Conversion], np.ndarray]) -> np.ndarray | None:
    """The code of every bit pattern of dtype (indexed by the pattern as an unsigned integer),
    as ``encode_all(values, fmt, opts)`` gives them (the encoder's exact paths). A NaN pattern
    of a float dtype whose NaN the conversion refuses (``nan="raise"``) gets
    :data:`NAN_SENTINEL` in a sub-byte format, else 0: the caller looks for the sentinel after
    the lookup, or for NaN before it. None where some other pattern has no code and
    the conversion raises for it (a negative number of an unsigned format without NaN): then
    only the ordinary path can tell whether the input holds one, and how many."""
    patterns = np.arange(1 << (8 * dtype.itemsize), dtype=np.uint64).astype(f"u{dtype.itemsize}")
    values = patterns.view(dtype)
    table = np.zeros(patterns.size, dtype=fmt.code_dtype)
    nan = np.isnan(values) if dtype.kind == "f" and opts.nan == "raise" else np.zeros(values.size, bool)
    try:
        table[~nan] = encode_all(values[~nan], fmt, opts)
    except ValueError:
        return None
    if fmt.bits < 8 and fmt.code_dtype == np.uint8:
        table[nan] = NAN_SENTINEL  # no code of a sub-byte format reaches it
    table.setflags(write=False)
    return table


def lookup(index: np.ndarray, table: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """table[index] computed chunk by chunk (the gathered output stays cache-friendly); an
    unsigned index of at most 16 bits is used as it is, any other is made intp first.

    >>> lookup(np.array([2, 0], np.uint8), np.array([10.0, 11.0, 12.0])).tolist()
    [12.0, 10.0]
    """
    flat = index.reshape(-1)
    if flat.dtype.itemsize > 2 or flat.dtype.kind != "u":
        flat = flat.astype(np.intp)
    if out is None or out.dtype != table.dtype:
        out = np.empty(flat.size, dtype=table.dtype)
    for part in chunks(flat.size):
        table.take(flat[part], out=out[part])
    return out.reshape(index.shape)
