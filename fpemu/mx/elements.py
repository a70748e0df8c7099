"""Element codes: scaled values encoded into codes (MX: RNE, saturating, per OCP), and the
value (or scaled integer) of every code of a block format."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codec import decode, encode
from .formats import BlockFormat

# ---- element encoding -----------------------------------------------------------------------
#: Roundings that tell a tiny nonzero value from zero (up/down by its sign, odd always): for
#: them an element whose scaled value underflowed the working precision must stay nonzero.
_TINY_MATTERS = frozenset({"up", "down", "odd"})


def _restore_underflow(y: np.ndarray, x: np.ndarray) -> None:
    """Give elements whose scaled value underflowed to 0 the smallest subnormal back, signed.

    x * 2**-s underflows (float32: below 2**-149) only far below every element format's
    smallest step (>= 2**-17), where any nonzero magnitude rounds alike in every mode, so
    this equals rounding the exact quotient, in float32 and float64 alike.
    """
    lost = (y == 0) & (x != 0)
    if lost.any():
        y[lost] = np.copysign(np.finfo(y.dtype).smallest_subnormal, x[lost])


def _encode_elements(
    y: np.ndarray, bf: BlockFormat, rounding: str, rng: Any
) -> np.ndarray:
    """Element codes of already-scaled values y (RNE and saturation by default, per OCP)."""
    if bf.is_int:
        with np.errstate(invalid="ignore"):
            q = np.rint(y * y.dtype.type(64))  # exact scaling; rint is ties-to-even
            np.clip(q, -127, 127, out=q)  # symmetric: OCP clamps to +-max normal
            return q.astype(np.int8).view(np.uint8)
    nan = "zero" if not bf.element.has_nan else None
    return encode(y, bf.element, rounding=rounding, overflow="saturate", nan=nan, rng=rng)


def _nan_fill(bf: BlockFormat) -> int:
    """Element code written into a block whose scale is NaN."""
    if bf.element is not None and bf.element.has_nan:
        return int(bf.element.nan_code)
    return 0


def _element_table(bf: BlockFormat, dtype: Any) -> np.ndarray:
    """Value of every element code (built by the codec; MXINT8: two's complement / 64)."""
    if bf.is_int:
        return np.arange(256, dtype=np.uint8).view(np.int8).astype(dtype) * np.dtype(dtype).type(2.0**-6)
    return decode(np.arange(1 << bf.element.bits), bf.element, dtype=dtype)


def _int_table(bf: BlockFormat) -> tuple[np.ndarray, np.ndarray]:
    """(element value * 2**int_shift as int64, is-finite) for every code."""
    if bf.is_int:
        codes = np.arange(256, dtype=np.uint8)
        return codes.view(np.int8).astype(np.int64), np.ones(256, bool)
    v = decode(np.arange(1 << bf.element.bits), bf.element)
    finite = np.isfinite(v)
    ints = np.where(finite, np.ldexp(np.where(finite, v, 0.0), bf.int_shift), 0.0)
    return ints.astype(np.int64), finite
