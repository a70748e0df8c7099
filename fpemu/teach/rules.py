"""Which rule fired when a number was rounded into a format: exact, tie, rounding, subnormal,
underflow, overflow, or no code at all, each with a sentence for the learner.

The codec decides everything; this module only asks it the right questions: the two format
values around ``x`` (rounding toward zero and away from it), and where ``x`` lands on the
format's grid continued past its largest value (the same format with one more exponent bit
and no Inf or NaN), to tell an overflow from an ordinary rounding down to max.

>>> [r["rule"] for r in rounding_rules(2.5, get_format("e2m1"), "nearest_even", None, 2.0)]
['tie']
>>> rounding_rules(1e-9, get_format("fp16"), "nearest_even", None, 0.0)[-1]["rule"]
'underflow'
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ..codec import quantize
from ..codec.exact import exact_number, fraction_float
from ..formats import Format, get_format  # noqa: F401  (get_format: the doctests use it)
from .values import next_step_above_max, overflow_words

__all__ = ["number_text", "parse_exact", "parse_number", "rounding_rules"]

_MODE_WORDS = {
    "toward_zero": "truncated toward zero",
    "up": "rounded up, toward +inf",
    "down": "rounded down, toward -inf",
    "odd": "rounded to odd: to the neighbour whose code is odd",
}


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
    """A number typed on the page, exactly (:func:`fpemu.codec.exact.exact_number`): a decimal
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


@lru_cache(maxsize=64)
def _grid_beyond(fmt: Format) -> Format | None:
    """The format's grid continued upwards: one more exponent bit, no Inf, no NaN (None where
    that would leave float64's range)."""
    try:
        return Format(f"{fmt.name}+", fmt.exponent_bits + 1, fmt.mantissa_bits, fmt.bias, signed=True,
                      inf="none", nan="none", subnormals=fmt.subnormals)
    except ValueError:
        return None


def _q(x: Fraction | float, fmt: Format, rounding: str, overflow: str | None = "saturate") -> float:
    """x rounded into fmt by the codec (exact input: rounded once from its exact value)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(quantize(np.array([x], dtype=object), fmt, rounding=rounding, overflow=overflow)[0])


def _rule(name: str, text: str) -> dict[str, str]:
    return {"rule": name, "text": text}


def rounding_rules(x: Fraction | float, fmt: Format, rounding: str, overflow: str | None, value: float,
                   shown: str | None = None) -> list[dict[str, str]]:
    """The rules that turned ``x`` (exact: a Fraction, or a float) into ``value`` (its code's
    value in ``fmt``), in order; ``shown``: how the sentences write x (default: its value).

    Each is ``{"rule": name, "text": sentence}``; names: ``nan``, ``infinity``, ``no-code``,
    ``exact``, ``tie``, ``rounded``, ``subnormal``, ``underflow``, ``overflow``.

    >>> [r["rule"] for r in rounding_rules(Fraction(1, 10), get_format("fp64"), "nearest_even", None, 0.1)]
    ['rounded']
    """
    g, gx = _text, shown if shown is not None else _text(x)
    if isinstance(x, float) and np.isnan(x):
        return [_rule("nan", "NaN in, " + ("NaN out" if np.isnan(value) else f"{g(value)} out: the format has no NaN"))]
    if isinstance(x, float) and np.isinf(x):
        out = "the same infinity" if value == x else f"{g(value)} (the overflow rule)"
        return [_rule("infinity", f"an infinity in gives {out}")]
    if not fmt.signed and x < 0:
        then = "has no code" if np.isnan(value) else f"becomes {g(value)}"
        return [_rule("no-code", f"{fmt.name} is unsigned, it has no negative values: {gx} {then}")]
    if x == 0 and not fmt.subnormals:
        return [_rule("no-code", f"{fmt.name} has no zero (every code is a power of two): 0 has no code")]
    a, top = abs(x), (-fmt.lowest if x < 0 else fmt.max)
    if value == x:
        rules = [_rule("exact", f"{gx} is a value of {fmt.name}: nothing to round")]
        if fmt.exponent_bits and 0 < a < fmt.min_normal:
            rules.append(_subnormal(fmt))
        return rules
    sign = 1.0 if x > 0 else -1.0
    if a <= top:
        near = abs(_q(x, fmt, "toward_zero"))
        far = abs(_q(x, fmt, "up" if x > 0 else "down"))
    else:
        near, far = top, top + (next_step_above_max(fmt) - fmt.max)
    rules = []
    if near < a < far:  # inside one gap of the grid (continued past max)
        lo, hi = sorted((sign * near, sign * far))
        if rounding.startswith("nearest") and Fraction(a) - Fraction(near) == Fraction(far) - Fraction(a):
            how = "the one with the even code" if rounding == "nearest_even" else "the one away from zero"
            rules.append(_rule("tie", f"{gx} is exactly halfway between {g(lo)} and {g(hi)}: "
                                      f"{rounding} takes {how}"))
        elif rounding.startswith("nearest"):
            rules.append(_rule("rounded", f"{gx} lies between {g(lo)} and {g(hi)}: rounded to the nearer"))
        else:
            rules.append(_rule("rounded", f"{gx} lies between {g(lo)} and {g(hi)}: {_MODE_WORDS[rounding]}"))
    elif a < near:  # below the smallest value of a format without zero
        rules.append(_rule("rounded", f"{gx} is below {fmt.name}'s smallest value {g(near)}"))
    below_normal = 0 < abs(value) < fmt.min_normal or (value == 0 and a < fmt.min_normal)
    if fmt.exponent_bits and fmt.has_normals and below_normal:
        rules.append(_subnormal(fmt))
    if value == 0:
        rules.append(_rule("underflow", f"{gx} is too small for {fmt.name}: it rounded to zero (underflow)"))
    over = _overflowed(x, fmt, rounding, overflow, sign * top, value, gx)
    if over:
        rules.append(_rule("overflow", over))
    return rules


def _text(v: Fraction | float) -> str:
    """A float64 exactly enough to tell neighbours apart (repr), integers without '.0' (a
    Fraction as the float64 nearest it)."""
    v = fraction_float(v) if isinstance(v, Fraction) else float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)


def _subnormal(fmt: Format) -> dict[str, str]:
    return _rule("subnormal", f"below the smallest normal {_text(fmt.min_normal)} the values are subnormal: "
                              f"evenly spaced by {_text(fmt.min_subnormal)}, so fewer significant bits")


def _overflowed(x: Fraction | float, fmt: Format, rounding: str, overflow: str | None, end: float, value: float,
                shown: str) -> str:
    """Why the result is beyond, or pinned at, the end of the finite range (``end``: the
    largest or the lowest finite value, on x's side); '' where nothing overflowed."""
    beyond = _grid_beyond(fmt)
    if beyond is not None:
        past = abs(_q(x, beyond, rounding)) > abs(end)  # rounded on the grid that goes on past it
    else:
        past = not np.isfinite(value)
    if not past:
        return ""
    head = f"{shown} rounds past {_text(end)}, the {'lowest' if end < 0 else 'largest'} finite value"
    if abs(end) == fmt.max:
        if rounding in ("nearest_even", "nearest_away"):
            head += f" (under {rounding}, every magnitude {overflow_words(fmt, rounding)} does)"
        else:
            head += f" (under {rounding}; to nearest even only magnitudes {overflow_words(fmt)} would)"
    if np.isnan(value):
        return head + ": the result is NaN" + ("" if fmt.has_inf else f" ({fmt.name} has no Inf)")
    if np.isinf(value):
        return head + ": the result is infinity"
    if overflow not in ("saturate", "saturate_propagate") and (fmt.has_inf or fmt.has_nan):
        return head + f": {rounding} rounds toward zero here, so it stays at {_text(value)} (IEEE 754 7.4)"
    if not (fmt.has_inf or fmt.has_nan):
        return head + f": {fmt.name} has neither Inf nor NaN, so it saturates to {_text(value)}"
    return head + f": the overflow rule ({overflow}) keeps it at {_text(value)}"
