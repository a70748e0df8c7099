"""Codes of values divided by a power of two per block, without the division: MX's elements
(each block of an MX array is divided by its E8M0 scale, a power of two, then encoded).

Where float32 input into the element format takes the top-half path
(:func:`.dispatch.encode_path` names ``top_half``), the division is folded into that path's
own arithmetic: each block's exponent comes off the exponent field in the rounding's
addition (:func:`.fast.top_half.encode_top_half_scaled`), and the quotients are formed only
for the few elements the arithmetic leaves to the table. This is a codec function, not MX
code, because it is a variant of one of the codec's paths (its plan, its table, its proof);
MX decides when it pays and calls it through :mod:`fpemu.codec`.

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

import numpy as np

from ..formats import Format
from .dispatch import encode_path
from .fast.fp32_table import encode_table
from .fast.top_half import arithmetic_plan, encode_top_half_scaled, scaled_blocks_hold
from .options import Conversion


def _reciprocals(exponents: np.ndarray) -> np.ndarray:
    """2**-e as float32 for scale exponents e in [-127, 127], built from bits (2**-127 is the
    subnormal 0x00400000): exact, so a product with one is the correctly rounded quotient."""
    biased = 127 - exponents.astype(np.int64)
    bits = np.where(biased >= 1, biased << 23, 1 << (22 + np.minimum(biased, 1)))
    return bits.astype(np.uint32).view(np.float32)


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
    if rows.dtype != np.float32 or rows.ndim != 2 or not (rows.flags.c_contiguous and out.flags.c_contiguous) \
            or opts.nan == "raise" or encode_path(fmt, opts, np.float32) != "top_half":
        return False
    if not amax_bits.size or int(amax_bits.max()) >= 0x7F800000:  # an Inf or NaN in some block
        return False
    plan, table = arithmetic_plan(fmt, opts), encode_table(fmt, opts)
    exponents = np.asarray(exponents, dtype=np.int64)
    if not scaled_blocks_hold(plan, exponents, amax_bits >> np.uint32(23)):
        return False
    flat, k = rows.reshape(-1), rows.shape[1]

    def divided(piece: slice, where: np.ndarray | None) -> np.ndarray:
        """The quotients, by 1/scale built for just these blocks: most chunks never ask, so
        the reciprocals of all blocks are never built."""
        first = piece.start // k
        with np.errstate(over="ignore", invalid="ignore"):
            if where is None:
                inv = _reciprocals(exponents[first: piece.stop // k])
                return (rows[first: piece.stop // k] * inv[:, None]).reshape(-1)
            return flat[piece][where] * _reciprocals(exponents[first + where // k])

    encode_top_half_scaled(flat.view(np.uint32), plan, table, exponents, k, divided, out.reshape(-1))
    return True
