"""How the explorer reads and writes numbers: exactly from text (``0.1`` is one tenth), as
text for JSON; and the rules that fired when a number was rounded, which live in the codec
(:mod:`fpemu.codec.rules`: ``fpemu show`` prints the same sentences).

>>> [r["rule"] for r in rounding_rules(2.5, get_format("e2m1"), "nearest_even", None, 2.0)]
['tie']
>>> number_text(float("nan")), parse_exact("1/3")
('nan', Fraction(1, 3))
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..codec import exact_number, fraction_float, rounding_rules
from ..formats import get_format  # noqa: F401  (get_format: the doctests use it)

__all__ = ["number_text", "parse_exact", "parse_number", "rounding_rules"]


def number_text(value: float) -> str:
    """A float64 as the page shows it: ``repr`` of finite values, else inf, -inf or nan.

    >>> number_text(0.1), number_text(float("-inf")), number_text(-0.0)
    ('0.1', '-inf', '-0.0')
    """
    value = float(value)
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def parse_exact(text: Any) -> Fraction | float:
    """A number typed on the page, exactly (:func:`fpemu.codec.exact_numbers.exact_number`): a decimal
    (``0.1`` is one tenth, not the float64 nearest it), ``inf``, ``nan``, a hex float
    (``0x1.8p3``) or a fraction ``p/q``; a Fraction, or a float for zeros, Inf and NaN. JSON
    numbers are taken as the float64 they are.

    >>> parse_exact("1/4"), parse_exact("−0x1.8p1"), parse_exact(" 1e-3 "), parse_exact("-0")
    (Fraction(1, 4), Fraction(-3, 1), Fraction(1, 1000), -0.0)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return exact_number(text)
    if not isinstance(text, str):
        raise TypeError("a number is text such as 0.1, -3e-5, inf, 0x1.8p3 or 1/3")
    return exact_number(text.replace("−", "-"))


def parse_number(text: Any) -> float:
    """A number typed on the page as the float64 nearest it (for the block view, whose MX
    quantize takes float64), +-inf beyond float64's range.

    >>> parse_number("1/4"), parse_number("-0x1.8p1"), parse_number(" 1e-3 "), parse_number("1e400")
    (0.25, -3.0, 0.001, inf)
    """
    return fraction_float(parse_exact(text))
