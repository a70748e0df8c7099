"""Every value of a small format, straight from the codec: the codes in order, the finite values
in order, their classes, and where overflow begins.

A format of at most 16 bits has at most 65536 codes, so its values are listed by decoding every
code with :func:`fpemu.decode`: the teaching tools' own helpers, built on the codec alone, so
that a figure shows what the codec does. Wider formats are refused: FP32 has four billion codes.

>>> finite_values("e2m1").tolist()
[-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
>>> overflow_threshold("e4m3")  # halfway between 448 and the 480 the format does not have
464.0
"""

from __future__ import annotations

import numpy as np

from ..codec import decode
from ..codec import next_step_above_max, overflow_inclusive, overflow_threshold, overflow_words
from ..formats import Format, get_format

__all__ = ["MAX_LISTED_BITS", "all_codes", "finite_values", "value_classes", "overflow_threshold",
           "overflow_inclusive", "overflow_words", "next_step_above_max", "smallest_subnormal"]

#: The widest format whose values are listed one by one (2**16 codes).
MAX_LISTED_BITS = 16


def _listable(fmt: str | Format) -> Format:
    """The format, or a ValueError when it has too many codes to list."""
    fmt = get_format(fmt)
    if fmt.bits > MAX_LISTED_BITS:
        raise ValueError(
            f"{fmt.name} has {fmt.bits} bits ({fmt.num_codes:,} codes): listing every value is for "
            f"formats of at most {MAX_LISTED_BITS} bits"
        )
    return fmt


def all_codes(fmt: str | Format) -> np.ndarray:
    """Every code of a format of at most 16 bits, in code order (as stored: left-aligned in a
    container where the format has one).

    >>> all_codes("e2m1")[:4].tolist(), all_codes("e2m1").dtype.name
    ([0, 1, 2, 3], 'uint8')
    """
    fmt = _listable(fmt)
    codes = np.arange(fmt.num_codes, dtype=np.uint64) << np.uint64(fmt.code_shift)
    return codes.astype(fmt.code_dtype)


def finite_values(fmt: str | Format) -> np.ndarray:
    """The distinct finite values of a format of at most 16 bits, ascending (float64, exact).

    -0 and +0 are one value (0.0). Every value comes from :func:`fpemu.decode` of every code.

    >>> finite_values("e8m0")[[0, 1, -1]].tolist() == [2.0**-127, 2.0**-126, 2.0**127]
    True
    >>> finite_values("fp32")
    Traceback (most recent call last):
    ...
    ValueError: fp32 has 32 bits (4,294,967,296 codes): listing every value is for formats of at most 16 bits
    """
    fmt = _listable(fmt)
    values = decode(all_codes(fmt), fmt)
    values = np.unique(values[np.isfinite(values)])  # sorted; -0 == +0 keeps one zero
    values[values == 0] = 0.0  # +0, whichever zero np.unique kept
    return values


def value_classes(values: np.ndarray, fmt: str | Format) -> np.ndarray:
    """For finite values of ``fmt``: "zero", "subnormal" (below the smallest normal) or "normal".

    A fixed-point format (no exponent field) has only subnormals in this sense: one step size.

    >>> value_classes(np.array([0.0, 0.5, 1.0, -6.0]), "e2m1").tolist()
    ['zero', 'subnormal', 'normal', 'normal']
    """
    fmt = get_format(fmt)
    values = np.asarray(values, dtype=np.float64)
    out = np.where(np.abs(values) < fmt.min_normal, "subnormal", "normal").astype("<U9")
    out[values == 0] = "zero"
    return out


def smallest_subnormal(fmt: str | Format) -> float | None:
    """The smallest positive subnormal value (below the smallest normal), or None where the
    format has none: no subnormals field (E8M0), or no mantissa bits to make one.

    >>> smallest_subnormal("fp16") == 2.0**-24, smallest_subnormal("e8m0")
    (True, None)
    """
    fmt = get_format(fmt)
    if not (fmt.subnormals and fmt.mantissa_bits and fmt.max_code):
        return None
    return fmt.min_subnormal
