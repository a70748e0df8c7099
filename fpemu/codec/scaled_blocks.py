"""Codes of values divided by a power of two per block, without the division: MX's elements
(each block of an MX array is divided by its E8M0 scale, a power of two, then encoded).

Where float32 input into the element format takes the top-half path
(:func:`.dispatch.encode_path` names ``top_half``), the division is folded into that path's
own arithmetic: each block's exponent comes off the exponent field in the rounding's
addition (:func:`.fast.top_half.encode_top_half_scaled`), and the quotients are formed only
for the few elements the arithmetic leaves to the table. This is a codec function, not MX
code, because it is a variant of one of the codec's paths (its plan, its table, its proof);
MX decides when it pays and calls it through :mod:`fpemu.codec`. Where a block's exponent
follows from its largest magnitude alone (MX's floor scale), :func:`encode_scaled_by_block_max`
reads those maxima off the same top halves, so the blocks' amax costs no pass of its own.

>>> from ..formats import get_format
>>> from .encoder import encode
>>> rows = np.float32([[3.0, -1.5, 0.25, 7.0], [1e-3, 2.0, 0.0, -40.0]])
>>> fmt, conv = get_format("e4m3"), Conversion(overflow="saturate", nan="sign")
>>> out = np.empty(rows.shape, np.uint8)
>>> amax = np.abs(rows).max(axis=1).view(np.uint32)
>>> encode_scaled_blocks(rows, np.array([1, 3]), amax, fmt, conv, out)
True
>>> bool((out == encode(rows / np.float32([[2.0], [8.0]]), fmt, conversion=conv)).all())
True
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ..formats import Format
from .dispatch import encode_path
from .fast.fp32_table import encode_table
from .fast.top_half import arithmetic_plan, encode_top_half_block_max, encode_top_half_scaled, scaled_blocks_hold
from .options import Conversion


def _reciprocals(exponents: np.ndarray) -> np.ndarray:
    """2**-e as float32 for scale exponents e in [-127, 127], built from bits (2**-127 is the
    subnormal 0x00400000): exact, so a product with one is the correctly rounded quotient."""
    biased = 127 - exponents.astype(np.int64)
    bits = np.where(biased >= 1, biased << 23, 1 << (22 + np.minimum(biased, 1)))
    return bits.astype(np.uint32).view(np.float32)


def _serves(rows: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray) -> bool:
    """Whether the top-half arithmetic serves these rows and options (resolved)."""
    return (rows.dtype == np.float32 and rows.ndim == 2 and rows.flags.c_contiguous and out.flags.c_contiguous
            and _top_half_serves(fmt, opts))


@lru_cache(maxsize=64)
def _top_half_serves(fmt: Format, opts: Conversion) -> bool:
    """Whether float32 input into fmt under opts takes the top-half path (and keeps its NaNs):
    asked once per format and options (the MX pipelines ask for every chunk)."""
    return opts.nan != "raise" and encode_path(fmt, opts, np.float32) == "top_half"


def _quotients(rows: np.ndarray, exponents: np.ndarray):
    """divided(piece, where) of the top-half kernels: the quotients of the flat rows' piece
    (at its positions where; None: all), by 1/scale built for just those blocks: most pieces
    never ask, so the reciprocals of all blocks are never built."""
    flat, k = rows.reshape(-1), rows.shape[1]

    def divided(piece: slice, where: np.ndarray | None) -> np.ndarray:
        first = piece.start // k
        with np.errstate(over="ignore", invalid="ignore"):
            if where is None:
                inv = _reciprocals(exponents[first: piece.stop // k])
                return (rows[first: piece.stop // k] * inv[:, None]).reshape(-1)
            return flat[piece][where] * _reciprocals(exponents[first + where // k])

    return divided


def encode_scaled_blocks(rows: np.ndarray, exponents: np.ndarray, amax_bits: np.ndarray, fmt: Format,
                         conversion: Conversion, out: np.ndarray) -> bool:
    """Codes (uint8, into ``out``, rows' shape) of each row of the float32 array ``rows``
    (one block a row, C-contiguous) divided by ``2**exponents[i]`` (integers in [-127, 127]),
    as encode would give for the exact quotients; ``amax_bits``: each row's largest magnitude
    as a float32 bit pattern (the caller has them: MX computes the scales from them).

    True where that is done; False, with nothing written, where the top-half path does not
    serve fmt and the conversion (or the conversion refuses NaN), or where these blocks lie
    outside what the folded division is exact for (a non-finite amax, extreme exponents:
    :func:`.fast.top_half.scaled_blocks_hold`). The caller then divides and encodes itself.
    """
    opts = conversion.resolved(fmt)
    if not _serves(rows, fmt, opts, out):
        return False
    if not amax_bits.size or int(amax_bits.max()) >= 0x7F800000:  # an Inf or NaN in some block
        return False
    plan, table = arithmetic_plan(fmt, opts), encode_table(fmt, opts)
    exponents = np.asarray(exponents, dtype=np.int64)
    if not scaled_blocks_hold(plan, exponents, amax_bits >> np.uint32(23)):
        return False
    encode_top_half_scaled(rows.reshape(-1).view(np.uint32), plan, table, exponents, rows.shape[1],
                           _quotients(rows, exponents), out.reshape(-1))
    return True


def encode_scaled_by_block_max(rows: np.ndarray, fmt: Format, conversion: Conversion,
                               exponents_of: Callable[[np.ndarray], np.ndarray | None],
                               out: np.ndarray) -> tuple[np.ndarray, list[slice]] | None:
    """As :func:`encode_scaled_blocks`, where each block's exponent follows from its largest
    magnitude alone by a rule of the caller's, read off in the element encode's own pass
    (MX's floor scale: no pass of its own for the amax).

    ``exponents_of(maxima)``: the exponents (int64, in [-127, 127]) of blocks whose largest
    magnitudes are ``maxima`` (uint16, one a block: the top half of that element's float32
    pattern, sign off, so its exponent field is ``maxima >> 7``), or None to decline them.
    Returned: every block's exponent (int64) and the row slices left undone (exponents_of
    declined them, some block holds Inf or NaN, or the exponents lie outside the folded
    division's exactness, :func:`.fast.top_half.scaled_blocks_hold`), whose codes and
    exponents are not written: the caller computes those rows itself. None, with nothing
    written, where the top-half path does not serve fmt and the conversion.

    >>> from ..formats import get_format
    >>> from .encoder import encode
    >>> rows = np.float32([[3.0, -1.5, 0.25, 7.0], [1e-3, 2.0, 0.0, -40.0]])
    >>> fmt, conv = get_format("e4m3"), Conversion(overflow="saturate", nan="sign")
    >>> out = np.empty(rows.shape, np.uint8)
    >>> floor = lambda maxima: (maxima >> 7).astype(np.int64) - 127 - 8  # floor(log2 amax) - emax
    >>> exponents, undone = encode_scaled_by_block_max(rows, fmt, conv, floor, out)
    >>> exponents.tolist(), undone
    ([-6, -3], [])
    >>> bool((out == encode(rows / np.float32([[2.0**-6], [2.0**-3]]), fmt, conversion=conv)).all())
    True
    """
    opts = conversion.resolved(fmt)
    if not _serves(rows, fmt, opts, out):
        return None
    exponents = np.zeros(rows.shape[0], np.int64)
    if not rows.size:
        return exponents, []
    k = rows.shape[1]
    undone = encode_top_half_block_max(rows.reshape(-1).view(np.uint32), arithmetic_plan(fmt, opts),
                                       encode_table(fmt, opts), k, exponents_of, _quotients(rows, exponents),
                                       exponents, out.reshape(-1))
    return exponents, [slice(piece.start // k, piece.stop // k) for piece in undone]
