"""Element codes: scaled values encoded into codes of the block format's element
:class:`~fpemu.formats.Format` (saturating, as OCP MX requires, in every rounding mode of the
codec), and the value (or scaled integer) of every code."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codec import Conversion, decode, encode, encode_array
from ..formats import Format
from .formats import BlockFormat

# ---- element encoding -----------------------------------------------------------------------
#: Roundings that tell a tiny nonzero value from zero (up/down by its sign, odd always): for
#: them an element whose scaled value underflowed the working precision must stay nonzero.
TINY_MATTERS = frozenset({"up", "down", "odd"})


def restore_underflow(y: np.ndarray, x: np.ndarray) -> None:
    """Give elements whose scaled value underflowed to 0 the smallest subnormal back, signed.

    x * 2**-s underflows (float32: below 2**-149) only far below every element format's
    smallest step (>= 2**-17), where any nonzero magnitude rounds alike in every mode, so
    this equals rounding the exact quotient, in float32 and float64 alike.
    """
    lost = (y == 0) & (x != 0)
    if lost.any():
        y[lost] = np.copysign(np.finfo(y.dtype).smallest_subnormal, x[lost])


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """v rounded to an integer, ties away from zero. Exact: ``v - trunc(v)`` drops only the
    integer bits of v, so the tie test sees the true fraction (``floor(|v| + 0.5)`` would not:
    in float32, 0.5 - 2**-25 plus 0.5 rounds up to 1)."""
    t = np.trunc(v)
    return t + np.copysign(np.abs(v - t) >= 0.5, v)


def _round_odd(v: np.ndarray) -> np.ndarray:
    """v rounded to odd: v where it is an integer, else the odd one of floor(v) and ceil(v),
    which is 2 * floor(v/2) + 1 (v/2 is exact)."""
    return np.where(v == np.trunc(v), v, 2 * np.floor(v * 0.5) + 1)


#: A fixed-point element is an integer times 2**-int_shift: for these modes numpy's exact
#: roundings to an integer give the codec's codes (tests/mx/test_mx_quantization.py, tests/mx/test_elements.py).
#: Stochastic rounding stays with the codec, whose random bits ``rng`` seeds.
_FIXED_POINT_ROUNDINGS = {
    "nearest_even": np.rint, "nearest_away": _round_half_away, "toward_zero": np.trunc,
    "up": np.ceil, "down": np.floor, "odd": _round_odd,
}  # fmt: skip


def _fixed_point_codes(n: np.ndarray, fmt: Format) -> np.ndarray:
    """Two's complement codes of integer-valued floats n, |n| < 2**(bits - 1). A NaN (only in
    NaN blocks, whose codes the caller overwrites) gives an arbitrary code."""
    with np.errstate(invalid="ignore"):
        codes = n.astype(np.dtype(f"int{fmt.storage_bits}")).view(fmt.code_dtype)
    if fmt.bits < fmt.storage_bits:
        codes &= fmt.code_dtype.type((1 << fmt.bits) - 1)
    return codes


def encode_elements(
    y: np.ndarray, bf: BlockFormat, rounding: str, key: Any = None, positions: np.ndarray | None = None
) -> np.ndarray:
    """Element codes of already-scaled values y (a scratch array, changed in place).

    OCP MX v1.0 (SPEC.md section 3): element magnitudes above the element's maximum are
    clamped to it, sign kept. For two's complement elements (INT8) that is +-127/64, so the
    lowest code (-2.0, 0x80, which the spec says "may be left unused") never comes out,
    as in microxcaling (``clamp(round(64 * V/X), -127, 127)``). +-max are representable, so
    clamping before rounding equals rounding then clamping in every mode, stochastic included.
    """
    fmt = bf.element
    if fmt.twos_complement:
        np.clip(y, -fmt.max, fmt.max, out=y)  # NaN stays NaN
        to_integer = _FIXED_POINT_ROUNDINGS.get(rounding)
        if to_integer is not None:  # the codec's codes, at numpy's speed
            y *= y.dtype.type(2.0**bf.int_shift)  # exact: a power of two, |y| <= max
            return _fixed_point_codes(to_integer(y), fmt)
    conversion = Conversion(rounding=rounding, overflow="saturate", nan="zero" if not fmt.has_nan else None)
    if key is None:
        return encode(y, fmt, conversion=conversion)
    # Stochastic: the bits of each element follow its position in the input (see inputs.py).
    return encode_array(y, fmt, conversion, key=key, positions=positions)


def nan_fill(bf: BlockFormat) -> int:
    """Element code written into a block whose scale is NaN (0 where elements have no NaN)."""
    return int(bf.element.nan_code) if bf.element.has_nan else 0


def element_table(bf: BlockFormat, dtype: Any) -> np.ndarray:
    """Value of every element code, built by the codec (INT8: two's complement / 64, so a
    hand-made 0x80 reads -2.0)."""
    return decode(np.arange(1 << bf.element.bits), bf.element, dtype=dtype)


def int_table(bf: BlockFormat) -> tuple[np.ndarray, np.ndarray]:
    """(element value * 2**int_shift as int64, is-finite) for every code (INT8: the two's
    complement value of the code)."""
    v = decode(np.arange(1 << bf.element.bits), bf.element)
    finite = np.isfinite(v)
    ints = np.where(finite, np.ldexp(np.where(finite, v, 0.0), bf.int_shift), 0.0)
    return ints.astype(np.int64), finite
