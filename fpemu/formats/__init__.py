"""Floating-point formats as data.

A :class:`Format` is a frozen dataclass that says everything the codec needs to know about a
format: its field widths, its bias, whether it is signed, and which codes are special (Inf,
NaN). Every derived number (largest finite value, smallest subnormal, ...) is a property
computed from those fields, so a user-defined format is just another ``Format(...)``.

The package: ``definition`` (the dataclass and its derived numbers), ``validation`` (why a
combination of fields is refused), ``registry`` (the named formats and :func:`get_format`).

>>> fmt = get_format("e4m3")
>>> fmt.bits, fmt.bias, fmt.max, fmt.min_subnormal
(8, 7, 448.0, 0.001953125)
>>> Format("e3m3", exponent_bits=3, mantissa_bits=3, bias=3, inf="none", nan="none").max
30.0
"""

from .definition import Format
from .registry import FORMATS, format_names, get_format, p3109

__all__ = ["Format", "FORMATS", "get_format", "format_names", "p3109"]
