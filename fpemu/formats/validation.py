"""Why a ``Format(...)`` makes no sense: each check returns the problems it finds, in words,
and :class:`~fpemu.formats.Format` refuses itself with all of them.

>>> from fpemu.formats import Format
>>> Format("bad", 4, 3, 7.5)
Traceback (most recent call last):
...
ValueError: invalid format 'bad': bias must be an integer, got 7.5
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..arguments import is_whole

if TYPE_CHECKING:
    from .definition import Format

_INF_ENCODINGS = ("none", "ieee", "top", "below_nan")
_NAN_ENCODINGS = ("none", "ieee", "top", "neg_zero")


def type_problems(fmt: Format) -> list[str]:
    """Fields of the wrong type (checked first: the other checks compute with them)."""
    problems = []
    if not isinstance(fmt.name, str) or not fmt.name:
        problems.append(f"name must be a non-empty string, got {fmt.name!r}")
    for field in ("exponent_bits", "mantissa_bits", "bias"):
        value = getattr(fmt, field)
        if not is_whole(value):
            problems.append(f"{field} must be an integer, got {value!r}")
        else:
            object.__setattr__(fmt, field, int(value))  # numpy integers: hash and compare as int
    for field in ("signed", "subnormals", "twos_complement"):
        if not isinstance(getattr(fmt, field), (bool, np.bool_)):
            problems.append(f"{field} must be True or False, got {getattr(fmt, field)!r}")
    if fmt.inf not in _INF_ENCODINGS:
        problems.append(f"inf must be one of {_INF_ENCODINGS}, got {fmt.inf!r}")
    if fmt.nan not in _NAN_ENCODINGS:
        problems.append(f"nan must be one of {_NAN_ENCODINGS}, got {fmt.nan!r}")
    if fmt.container_bits is not None and fmt.container_bits not in (8, 16, 32, 64):
        problems.append(f"container_bits must be 8, 16, 32 or 64, got {fmt.container_bits!r}")
    return problems


def layout_problems(fmt: Format) -> list[str]:
    """Field widths and special-code placements that cannot work together."""
    problems = []
    if fmt.exponent_bits < 0:
        problems.append("exponent_bits must be >= 0")
    if fmt.mantissa_bits < 0:
        problems.append("mantissa_bits must be >= 0")
    if fmt.exponent_bits + fmt.mantissa_bits < 1:
        problems.append("a format needs at least one exponent or mantissa bit")
    if fmt.exponent_bits == 0 and not fmt.subnormals:
        problems.append("without an exponent field every code is a subnormal: subnormals=True")
    if fmt.exponent_bits == 0 and fmt.inf == "ieee":
        problems.append("IEEE-style Inf and NaN need an exponent field")
    if fmt.bits > 64:
        problems.append(f"at most 64 bits are supported, got {fmt.bits}")
    if fmt.inf == "below_nan" and fmt.nan != "top":
        problems.append("inf='below_nan' puts Inf just below a NaN on the top code: nan='top'")
    if fmt.twos_complement and not (fmt.signed and fmt.exponent_bits == 0 and fmt.inf == fmt.nan == "none"):
        problems.append("two's complement is for signed fixed-point formats (exponent_bits=0) "
                        "without Inf or NaN")
    if (fmt.inf == "ieee") != (fmt.nan == "ieee"):
        problems.append("IEEE-style Inf and NaN come together (inf='ieee', nan='ieee')")
    if fmt.nan == "ieee" and fmt.mantissa_bits == 0:
        problems.append("IEEE-style NaNs need at least one mantissa bit")
    if fmt.inf == "top" and fmt.nan == "top":
        problems.append("Inf and NaN cannot both be the top code")
    if fmt.nan == "neg_zero" and not fmt.signed:
        problems.append("an unsigned format has no -0 code to use as NaN")
    if fmt.nan == "neg_zero" and not fmt.subnormals:
        problems.append("nan='neg_zero' needs a zero (subnormals=True): without it the code "
                        "of -0 is the negative smallest value")
    if fmt.container_bits is not None and fmt.container_bits < fmt.bits:
        problems.append(f"container_bits ({fmt.container_bits}) is narrower than the format ({fmt.bits} bits)")
    return problems


def range_problems(fmt: Format) -> list[str]:
    """Formats with no finite value to round to, or values float64 cannot hold exactly."""
    if fmt.max_code < 0:
        return ["it has no finite value (every code is Inf or NaN)"]
    if fmt.mantissa_bits > 52:
        return [f"{fmt.mantissa_bits} mantissa bits are more than float64 holds exactly (52)"]
    # Every value must be a float64 (decode is exact, encode rounds float64 input once).
    top_exponent = (fmt.max_code >> fmt.mantissa_bits) - fmt.bias
    low_exponent = fmt.emin - fmt.mantissa_bits
    problems = []
    if top_exponent > 1023:
        problems.append(f"its largest value (about 2^{top_exponent}) is beyond float64; use a larger bias")
    if low_exponent < -1074:
        problems.append(f"its smallest value (2^{low_exponent}) is below float64's 2^-1074; use a smaller bias")
    return problems
