"""The words of the teaching figures: the numbers their labels show and the titles that say
what each panel holds, for the very formats drawn (mirrored negatives or none, floating or
fixed point, subnormals or not). Titles take the dicts of :mod:`fpemu.teach.plot_data`.

>>> label_number(65520.0), overflow_label(get_format("fp16")), overflow_label(get_format("e4m3"))
('65520', 'overflow from 65520 on', 'overflow beyond 464')
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..codec import exact_decimal
from ..formats import Format, get_format
from .values import overflow_inclusive, overflow_threshold

__all__ = ["label_number", "short_exact", "overflow_label", "line_title", "spacing_title", "relative_title"]


def overflow_label(fmt: Format) -> str:
    """``"overflow from 65520 on"``, ``"saturates from 7 on"``, ``"overflow beyond 464"``."""
    verb = "overflow" if fmt.has_inf or fmt.has_nan else "saturates"
    where = "from {} on" if overflow_inclusive(fmt) else "beyond {}"
    return f"{verb} {where.format(label_number(overflow_threshold(fmt)))}"


def label_number(value: float) -> str:
    """A value as a figure's label shows it: exact where that is short (448, 65520, 1.9921875,
    2^127), else to 4 digits, marked ≈.

    >>> [label_number(v) for v in (448.0, 1.9921875, 2.0**127, 1.5 * 2.0**127)]
    ['448', '1.9921875', '2^127', '≈2.552e+38']
    """
    if value.is_integer() and abs(value) < 1e7:
        return str(int(value))
    mantissa, exponent = np.frexp(value)
    if mantissa == 0.5:
        return f"2^{exponent - 1}"
    return repr(value) if len(repr(value)) <= 10 else f"≈{value:.4g}"


def short_exact(value: float, width: int = 11) -> str:
    """A value exactly in few characters, for a label or a table cell: its whole decimal where
    that takes at most ``width`` characters, else ``2^k`` or ``m×2^k`` (m an odd integer),
    else ``≈`` and 4 digits (marked: the one text that is not exact).

    >>> [short_exact(v) for v in (0.5, -448.0, 0.001953125, 2.0**-16, 3 * 2.0**-16, -0.0, float("inf"))]
    ['0.5', '-448', '0.001953125', '2^-16', '3×2^-16', '-0', 'inf']
    >>> short_exact(0.1)
    '≈0.1'
    """
    value = float(value)
    if value == 0 or not np.isfinite(value):
        return ("-0" if np.signbit(value) else "0") if value == 0 else ("nan" if np.isnan(value) else f"{value:g}")
    whole = exact_decimal(value)
    whole = whole[:-2] if whole.endswith(".0") else whole
    if len(whole) <= width:
        return whole
    m, k = value.as_integer_ratio()
    power = k.bit_length() - 1 if k > 1 else 0
    while m % 2 == 0:
        m, power = m // 2, power - 1
    text = (("-" if m < 0 else "") + f"2^{-power}") if abs(m) == 1 else f"{m}×2^{-power}"
    return text if len(text) <= width + 4 else f"≈{value:.4g}"


def line_title(lines: Sequence[dict[str, Any]]) -> str:
    """The number line's title for these :func:`number_line` results: what the negative side
    holds, which each format decides (mirrored, none: unsigned, or one more: two's complement).

    >>> from fpemu.teach.plot_data import number_line, spacing
    >>> print(line_title([number_line("e4m3"), number_line("e8m0")]))
    Every finite value on a log scale (one tick per positive value; the negatives of e4m3 mirror them; e8m0 is unsigned: no negatives)
    """
    mirror = [line["format"] for line in lines if line["negatives"] == "mirror"]
    parts = [f"the negatives of {', '.join(mirror)} mirror them"] if mirror else []
    if mirror and len(mirror) == len(lines):
        parts = ["negatives mirror them"]
    parts += [f"{line['format']} is unsigned: no negatives" for line in lines if line["negatives"] == "none"]
    parts += [f"{line['format']} is two's complement: its negatives mirror them and go one step lower, "
              f"to {line['lowest']:g}" for line in lines if line["negatives"] == "lowest extra"]
    return f"Every finite value on a log scale (one tick per positive value; {'; '.join(parts)})"


def spacing_title(data: Sequence[dict[str, Any]]) -> str:
    """The spacing plot's title for these :func:`spacing` results: floating point spacing
    doubles at each power of 2 above the smallest normal (the subnormals share the first
    normal binade's spacing); fixed point (no exponent field) has one spacing throughout.

    >>> from fpemu.teach.plot_data import spacing
    >>> print(spacing_title([spacing("int8")]))
    Spacing: int8 (fixed point): uniform, 0.015625 everywhere
    """
    floats = [d for d in data if get_format(d["format"]).exponent_bits]
    parts = []
    if floats:
        subs = any(get_format(d["format"]).subnormals and get_format(d["format"]).mantissa_bits for d in floats)
        parts.append("Spacing grows with magnitude: constant in each binade, doubling at each power of 2 "
                     "above the smallest normal" + (" (the subnormals share the first binade's spacing)" * subs))
    parts += [f"{d['format']} (fixed point): uniform, {d['spacing'][0]:g} everywhere"
              for d in data if not get_format(d["format"]).exponent_bits]
    return "; ".join(parts) if floats else "Spacing: " + "; ".join(parts)


def _fraction_text(value: float) -> str:
    """``1/n`` where ``value`` is 1/n for a whole n (to the float's precision), else the
    value as :func:`label_number` has it."""
    n = round(1 / value)
    return f"1/{n}" if n and abs(value * n - 1) < 1e-12 else label_number(value)


def relative_title(data: Sequence[dict[str, Any]]) -> str:
    """The relative-error panel's title for these :func:`spacing` results, saying what each
    kind of format drawn really shows: floats with mantissa bits a sawtooth under their flat
    bound 2^-(m+1), rising in the subnormals where some have them; floats without mantissa bits
    (E8M0) every value a power of 2, so every gap a whole binade and the error flat at 1/3
    (the midpoint 1.5 * 2^k misses by 2^k / 2), under the bound 2^-1; fixed point (INT8) one
    absolute step throughout, so the error falls as 1/|x|, with no relative bound of its own.

    >>> from fpemu.teach.plot_data import spacing
    >>> print(relative_title([spacing("fp16")]))
    Largest relative error in each gap: a sawtooth under the flat bound 2^-(m+1) (dotted) for normals, rising in the subnormals
    >>> print(relative_title([spacing("e8m0"), spacing("int8")]))
    Largest relative error in each gap: e8m0 (no mantissa bits): every value a power of 2, so flat at 1/3 under its bound 2^-1 (dotted); int8 (fixed point): one step throughout, so it falls as 1/|x|, from 1/3 to 1/253
    """
    fmts = [get_format(d["format"]) for d in data]
    saw = [f for f in fmts if f.exponent_bits and f.mantissa_bits]
    parts = []
    if saw:
        subs = any(f.subnormals for f in saw)
        parts.append("a sawtooth under the flat bound 2^-(m+1) (dotted) for normals"
                     + ", rising in the subnormals" * subs)
    for d, f in zip(data, fmts):
        rel = d["relative_bound"]
        if f.exponent_bits and not f.mantissa_bits:
            level = (f"flat at {_fraction_text(float(rel[0]))}" if np.all(rel == rel[0])
                     else f"{_fraction_text(float(rel.min()))} to {_fraction_text(float(rel.max()))}")
            parts.append(f"{d['format']} (no mantissa bits): every value a power of 2, so {level} under "
                         f"its bound 2^-{f.mantissa_bits + 1} (dotted)")
        elif not f.exponent_bits:
            parts.append(f"{d['format']} (fixed point): one step throughout, so it falls as 1/|x|, from "
                         f"{_fraction_text(float(rel[0]))} to {_fraction_text(float(rel[-1]))}")
    return "Largest relative error in each gap: " + "; ".join(parts)
