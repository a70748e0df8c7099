"""The number-line strip of the explorer's number view: where one number sits, to scale.

Two strips, every mark an exact value and its place computed from exact values:

* ``gap``: a linear strip over one gap of the format's grid: the two values around the number
  (its neighbours below and above), the point halfway between them (where round-to-nearest
  changes its mind: a number there is a tie), and the number (the input typed, and the value
  it became). A code on its own shows its two neighbours and the two halfway points around it:
  every number between those rounds to it (to nearest). Past the largest value the grid goes
  on one step (the code after max, which the format spends on Inf or NaN or does not have).
* ``range``: a log2 strip of magnitudes from the smallest positive value to past where
  overflow begins: the smallest subnormal, the smallest normal (below it the subnormals),
  the largest value, the overflow threshold, and the number.

Each mark is ``{"kind", "label", "value", "pos", "in_format"}``: ``value`` exact (a whole
decimal), ``label`` short (exact, or marked ``≈``), ``pos`` its place on the strip, 0 to 1
(``None`` where it lies off the strip, with ``side``).

>>> s = strips("e4m3", 0.3125, Fraction(3, 10))
>>> [(m["kind"], m["value"]) for m in s["gap"]["marks"]]
[('below', '0.28125'), ('tie', '0.296875'), ('input', '0.3'), ('above', '0.3125')]
>>> [round(m["pos"], 3) for m in s["gap"]["marks"]]
[0.056, 0.5, 0.589, 0.944]
>>> [(m["kind"], m["label"]) for m in s["range"]["marks"]]
[('smallest subnormal', '0.001953125'), ('smallest normal', '0.015625'), ('input', '0.3'), ('largest', '448'), ('overflow', '464')]
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..codec import (decimal_text, exact_decimal, fraction_text, next_step_above_max, overflow_inclusive,
                     quantize)
from ..formats import Format, get_format
from .plot_text import short_exact
from .values import smallest_subnormal

__all__ = ["strips", "gap_strip", "range_strip", "short_label", "overflow_from"]

#: Room left of the first and right of the last mark of the gap strip, as a share of it (a
#: power of two: the strip's ends stay binary fractions, whose decimals end).
_PAD = Fraction(1, 16)


def strips(fmt: str | Format, value: float, x: Fraction | float | None = None) -> dict[str, Any]:
    """Both strips for ``value`` (a value of ``fmt``) and, when a number was rounded, the exact
    input ``x``; ``gap`` is None where there is no gap to show (NaN, an infinity, an input
    without a code)."""
    fmt = get_format(fmt)
    return {"gap": gap_strip(fmt, value, x), "range": range_strip(fmt, value if x is None else x)}


def _text(v: Fraction) -> str:
    """An exact value as the page writes it (a whole decimal; every value here ends)."""
    return decimal_text(v, max_digits=2000).lstrip("+")


def short_label(v: Fraction | float) -> str:
    """A number in a few characters for a label: exact where that is short (0.3, 1/3, 448,
    2^-149), else ``≈`` and 9 significant digits, enough to tell neighbours of FP32 apart
    (1e-100000 too).

    >>> [short_label(Fraction(x)) for x in ("0.3", "1/3", "448", "0.1000000014901161193847656250")]
    ['0.3', '1/3', '448', '≈0.100000001']
    >>> short_label(2.0**-149), short_label(Fraction(1, 10**100000)), short_label(3 * 2.0**-16)
    ('2^-149', '1e-100000', '3×2^-16')
    """
    v = Fraction(v)
    text = decimal_text(v, max_digits=9).lstrip("+")
    if not text.startswith("≈") and "/" not in text and len(text) <= 12:
        return text
    f = float(v) if abs(v) < 2**1000 else math.inf
    if f != 0 and np.isfinite(f) and Fraction(f) == v:
        short = short_exact(f)
        if not short.startswith("≈") and len(short) <= 9:  # (2^-149, 3×2^-16: short and exact)
            return short
    if "/" in text and len(text) <= 7:  # (1/3, not 13421773/134217728)
        return text
    return "≈" + fraction_text(v, 9).lstrip("+")


_label = short_label


def _mark(kind: str, v: Fraction, left: Fraction, right: Fraction, in_format: bool = True) -> dict[str, Any]:
    pos = (v - left) / (right - left)
    return {"kind": kind, "value": _text(v), "label": _label(v), "pos": float(pos), "in_format": in_format}


def _round(x: Fraction, fmt: Format, rounding: str) -> float:
    """x rounded into fmt by the codec, from its exact value (saturating at max)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(quantize(np.array([x], dtype=object), fmt, rounding=rounding, overflow="saturate")[0])


def _beyond(fmt: Format, negative: bool) -> Fraction:
    """The step after the largest value (or before the lowest): the grid continued one code
    (FP64's is 2**1024, beyond float64: one gap past max, exactly)."""
    after = next_step_above_max(fmt)
    if np.isfinite(after):
        step = Fraction(after)
    else:
        top = Fraction(fmt.max)
        step = 2 * top - Fraction(_round(top - Fraction(1, 2**1100), fmt, "down"))
    return -step if negative else step


def _around(fmt: Format, x: Fraction) -> tuple[Fraction, Fraction, bool, bool] | None:
    """The two grid values around x (low, high) and whether each is a value of fmt; None where
    x has no gap (beyond the step after max, or outside a format without zero or sign)."""
    top, bottom = Fraction(fmt.max), Fraction(fmt.lowest)
    if x > top:
        high = _beyond(fmt, False)
        return (top, high, True, False) if x <= high else None
    if x < bottom:
        if not fmt.signed or fmt.twos_complement:  # (no mirrored step below the lowest)
            return None
        low = _beyond(fmt, True)
        return (low, bottom, False, True) if x >= low else None
    low, high = _round(x, fmt, "down"), _round(x, fmt, "up")
    if not (np.isfinite(low) and np.isfinite(high)) or not Fraction(low) <= x <= Fraction(high):
        return None
    return Fraction(low), Fraction(high), True, True


def _neighbours(fmt: Format, v: Fraction) -> tuple[Fraction | None, Fraction | None, bool, bool]:
    """The values below and above the value v of fmt (the step past max where v is max);
    None where there is none (the smallest value of a format without zero or sign)."""
    below = above = None
    in_below = in_above = True
    if v == Fraction(fmt.max):
        above, in_above = _beyond(fmt, False), False
    else:
        up = _round(v + Fraction(1, 2**1100), fmt, "up")
        above = Fraction(up) if np.isfinite(up) and up > v else None
    if v == Fraction(fmt.lowest) and fmt.signed and not fmt.twos_complement:
        below, in_below = _beyond(fmt, True), False
    else:
        down = _round(v - Fraction(1, 2**1100), fmt, "down")
        below = Fraction(down) if np.isfinite(down) and down < v else None
    return below, above, in_below, in_above


def gap_strip(fmt: str | Format, value: float, x: Fraction | float | None = None) -> dict[str, Any] | None:
    """The linear strip over one gap (see the module docstring), or None."""
    fmt = get_format(fmt)
    if x is not None and not isinstance(x, Fraction) and not np.isfinite(x):
        return None  # (an infinity or a NaN typed: no gap around it)
    if x is None and not np.isfinite(value):
        return None
    if x is not None and (not np.isfinite(value) or Fraction(x) != Fraction(value)):  # (65520 in FP16: inf, still a gap)
        x = Fraction(x)
        found = _around(fmt, x)
        if found is None:
            return None
        low, high, in_low, in_high = found
        width = high - low
        left, right = low - _PAD * width, high + _PAD * width
        marks = [_mark("below", low, left, right, in_low), _mark("tie", (low + high) / 2, left, right, False),
                 _mark("input", x, left, right, False), _mark("above", high, left, right, in_high)]
        marks.sort(key=lambda m: m["pos"])
        for m in marks:
            m["result"] = m["kind"] in ("below", "above") and bool(np.isfinite(value)) and Fraction(m["value"]) == Fraction(value)
        return {"scale": "linear", "marks": marks, "left": _text(left), "right": _text(right),
                "caption": _gap_caption(fmt, low, high, in_high, in_low)}
    v = Fraction(value)
    below, above, in_below, in_above = _neighbours(fmt, v)
    if below is None and above is None:
        return None
    low = below if below is not None else v - (above - v)
    high = above if above is not None else v + (v - below)
    width = high - low
    left, right = low - _PAD * width, high + _PAD * width
    marks = []
    if below is not None:
        marks += [_mark("below", below, left, right, in_below), _mark("halfway below", (below + v) / 2, left, right, False)]
    marks.append(_mark("value", v, left, right))
    if above is not None:
        marks += [_mark("halfway above", (v + above) / 2, left, right, False), _mark("above", above, left, right, in_above)]
    for m in marks:
        m["result"] = m["kind"] == "value"
    caption = ("every number between the two halfway points rounds to this value (to nearest; "
               "a halfway point itself is a tie)")
    if not in_above or not in_below:
        caption += f"; past {_label(Fraction(fmt.max))} the grid goes on one step, which {fmt.name} " + \
                   ("spends on Inf or NaN" if fmt.has_inf or fmt.has_nan else "does not have")
    return {"scale": "linear", "marks": marks, "left": _text(left), "right": _text(right), "caption": caption}


def _gap_caption(fmt: Format, low: Fraction, high: Fraction, in_high: bool, in_low: bool) -> str:
    words = f"one gap of {fmt.name}: {short_exact(float(high - low))} wide; round to nearest takes the value " \
            "on the input's side of the halfway point"
    if not in_high or not in_low:
        words += f"; the step past {_label(Fraction(fmt.max))} is not a value of {fmt.name} " \
                 f"(overflow {_overflow_words(fmt, (Fraction(fmt.max) + _beyond(fmt, False)) / 2)})"
    return words


def _overflow_words(fmt: Format, threshold: Fraction) -> str:
    """"from 65520 on" where the tie at the threshold overflows (to nearest even), else
    "beyond 464" (the codec's words, for FP64's threshold too, which float64 cannot hold)."""
    return f"{'from' if overflow_inclusive(fmt) else 'beyond'} {_label(threshold)}" + (" on" if overflow_inclusive(fmt) else "")


def overflow_from(fmt: str | Format) -> str:
    """Where magnitudes round past max, in short words (to nearest even).

    >>> overflow_from("fp16"), overflow_from("e4m3"), overflow_from("fp64")
    ('from 65520 on', 'beyond 464', 'from ≈1.79769313e+308 on')
    """
    fmt = get_format(fmt)
    return _overflow_words(fmt, (Fraction(fmt.max) + _beyond(fmt, False)) / 2)


def _log2(v: Fraction) -> float:
    """log2 |v| for any size (v not zero)."""
    v = abs(v)
    shift = v.numerator.bit_length() - v.denominator.bit_length()
    return shift + math.log2(float(v / Fraction(2) ** shift))


def range_strip(fmt: str | Format, x: Fraction | float) -> dict[str, Any]:
    """The log2 strip of magnitudes (see the module docstring). ``x``: the number (exact);
    its mark has ``pos`` None and a ``side`` where it lies off the strip (0, or beyond it)."""
    fmt = get_format(fmt)
    sub = smallest_subnormal(fmt)
    smallest = Fraction(sub if sub is not None else fmt.min_normal)
    threshold = (Fraction(fmt.max) + _beyond(fmt, False)) / 2  # (overflow_threshold's, exactly, FP64's too)
    lo, hi = _log2(smallest) - 1, _log2(threshold) + 1

    def mark(kind: str, v: Fraction, in_format: bool = True) -> dict[str, Any]:
        return {"kind": kind, "value": _text(v), "label": _label(v),
                "pos": (_log2(v) - lo) / (hi - lo), "in_format": in_format}

    marks = []
    if sub is not None and fmt.has_normals and fmt.exponent_bits:
        marks.append(mark("smallest subnormal", Fraction(sub)))
    if fmt.has_normals and fmt.exponent_bits:
        marks.append(mark("smallest normal", Fraction(fmt.min_normal)))
    elif sub is None:
        marks.append(mark("smallest", smallest))
    else:
        marks.append(mark("smallest step", smallest))
    marks += [mark("largest", Fraction(fmt.max)), mark("overflow", threshold, in_format=False)]
    number = {"kind": "input", "in_format": False}
    if isinstance(x, float) and not np.isfinite(x):
        number.update(value=f"{x}", label=f"{x}", pos=None, side="right" if not np.isnan(x) else "none")
    elif x == 0:
        number.update(value="0", label="0", pos=None, side="left")
    else:
        q = abs(Fraction(x))
        where = (_log2(q) - lo) / (hi - lo)
        number.update(value=_text(q), label=_label(q),
                      pos=where if 0 <= where <= 1 else None, side="left" if where < 0 else "right" if where > 1 else None)
    marks.append(number)
    marks.sort(key=lambda m: -1 if m["pos"] is None and m.get("side") == "left" else 2 if m["pos"] is None else m["pos"])
    caption = (f"magnitudes on a log2 scale, {round(hi - lo)} binades: "
               + (f"subnormals below {short_exact(fmt.min_normal)}, " if sub is not None and fmt.has_normals
                  and fmt.exponent_bits else "")
               + f"overflow {_overflow_words(fmt, threshold)}")
    return {"scale": "log2", "marks": marks, "left": exact_decimal(2.0**lo) if abs(lo) < 1000 else f"2^{lo}",
            "right": f"2^{hi:g}", "caption": caption}
