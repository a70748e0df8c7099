"""The numbers behind the teaching figures, as plain arrays (no matplotlib here): the number
line of a format, its spacing and relative error bound, and the dynamic range of several
formats, block formats included.

The plotting functions of :mod:`fpemu.teach.plots` draw exactly these arrays and return them,
so a test can hold a figure's data to the codec.

>>> line = number_line("e2m1")
>>> line["values"].tolist(), line["overflow_threshold"]
([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], 7.0)
>>> spacing("e2m1")["spacing"].tolist()
[0.5, 0.5, 0.5, 1.0, 1.0, 2.0]
>>> [(r["name"], r["min_positive"], r["max"]) for r in ranges(["e2m1"])]
[('e2m1', 0.5, 6.0)]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..formats import Format, get_format
from ..mx import BlockFormat, get_block_format
from .values import finite_values, overflow_threshold, overflow_words, value_classes

__all__ = ["number_line", "spacing", "ranges", "range_entry", "DEFAULT_RANGE_FORMATS", "line_title",
           "spacing_title"]

#: The formats of the dynamic-range picture: the seeds' table, and FP4 with its MX scale.
DEFAULT_RANGE_FORMATS = ("fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4")


def number_line(fmt: str | Format) -> dict[str, Any]:
    """Every positive finite value of ``fmt`` (at most 16 bits) and the landmarks of its line.

    Keys: ``format``; ``values`` (positive finite values, ascending); ``log2`` (their base-2
    logarithms: the x positions drawn); ``subnormal`` (mask of the values below the smallest
    normal); ``has_zero``; ``has_negatives``; ``negatives`` (``"mirror"``: exactly the
    negated positives, ``"none"``, or ``"lowest extra"``: the negated positives and one lower
    value, ``lowest``, as in two's complement); ``min_normal``, ``max``, ``lowest`` and
    ``overflow_threshold`` (floats); ``overflow_words`` (:func:`overflow_words`).

    >>> line = number_line("e4m3")
    >>> len(line["values"]), int(line["subnormal"].sum()), line["max"], line["min_normal"]
    (126, 7, 448.0, 0.015625)
    """
    fmt = get_format(fmt)
    values = finite_values(fmt)
    positive = values[values > 0]
    return {
        "format": fmt.name,
        "values": positive,
        "log2": np.log2(positive),
        "subnormal": value_classes(positive, fmt) == "subnormal",
        "has_zero": bool((values == 0).any()),
        "has_negatives": bool((values < 0).any()),
        "negatives": _negatives(values, positive),
        "lowest": float(values[0]),
        "overflow_words": overflow_words(fmt),
        "min_normal": fmt.min_normal,
        "max": fmt.max,
        "overflow_threshold": overflow_threshold(fmt),
    }


def _negatives(values: np.ndarray, positive: np.ndarray) -> str:
    negative = -values[values < 0][::-1]  # magnitudes, ascending
    if not len(negative):
        return "none"
    if np.array_equal(negative, positive):
        return "mirror"
    if np.array_equal(negative[:-1], positive):
        return "lowest extra"
    raise ValueError("negative values that are not the positives mirrored")  # no format has them


def line_title(lines: Sequence[dict[str, Any]]) -> str:
    """The number line's title for these :func:`number_line` results: what the negative side
    holds, which each format decides (mirrored, none: unsigned, or one more: two's complement).

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


def spacing(fmt: str | Format) -> dict[str, Any]:
    """The gaps between consecutive positive values of ``fmt`` (at most 16 bits) and the
    worst relative rounding error inside each gap.

    For the gap ``[a, b]`` between two neighbouring values, round-to-nearest errs by at most
    ``(b - a) / 2``, at the midpoint, so the relative error is at most ``(b - a) / (a + b)``.
    Keys: ``format``, ``lower`` (a, every positive value but the largest), ``upper`` (b),
    ``spacing`` (b - a, the ulp), ``relative_bound`` ((b - a) / (a + b)) and ``unit_roundoff``
    (2**-(mantissa_bits + 1), the textbook bound the normal gaps approach). The gap that
    starts at zero is left out (relative error 1 there, and log(0) has no place on the axes).

    >>> s = spacing("e4m3")
    >>> s["spacing"][:3].tolist(), float(s["relative_bound"].max()), s["unit_roundoff"]
    ([0.001953125, 0.001953125, 0.001953125], 0.3333333333333333, 0.0625)
    """
    fmt = get_format(fmt)
    values = finite_values(fmt)
    positive = values[values > 0]
    lower, upper = positive[:-1], positive[1:]
    gap = upper - lower  # exact: neighbours of one format differ by a few bits
    return {
        "format": fmt.name,
        "lower": lower,
        "upper": upper,
        "spacing": gap,
        "relative_bound": gap / (lower + upper),
        "unit_roundoff": float(np.ldexp(1.0, -fmt.mantissa_bits - 1)),
    }


def range_entry(name: str | Format | BlockFormat) -> dict[str, Any]:
    """One bar of the dynamic-range picture: a format's or a block format's positive range.

    Keys: ``name``; ``min_positive`` (the smallest positive value), ``min_normal`` (where the
    subnormals end; equal to ``min_positive`` without subnormals) and ``max``; ``binades``
    (log2(max / min_positive)); for block formats also ``block_min`` and ``block_max``, the
    range one block spans with its scale at 1 (the element format's own), and ``scale``, the
    scale format. An MX format's range is its element's range times every E8M0 scale
    (2**-127 .. 2**127); NVFP4's uses its UE4M3 block scale only (its per-tensor FP32 scale
    moves the whole range).

    >>> e = range_entry("mxfp4")
    >>> e["min_positive"] == 2.0**-128, e["max"] == 6 * 2.0**127, e["block_max"] / e["block_min"]
    (True, True, 12.0)
    """
    block = _block_format_or_none(name)
    if block is None:
        fmt = get_format(name)
        lo = fmt.min_subnormal
        return {"name": fmt.name, "min_positive": lo, "min_normal": min(fmt.min_normal, fmt.max),
                "max": fmt.max, "binades": float(np.log2(fmt.max / lo))}
    elem, scale = block.element, block.scale
    lo = elem.min_subnormal * scale.min_subnormal
    hi = elem.max * scale.max
    return {"name": block.name, "min_positive": lo, "min_normal": min(elem.min_normal, elem.max) * scale.min_subnormal,
            "max": hi, "binades": float(np.log2(hi / lo)), "block_min": elem.min_subnormal,
            "block_max": elem.max, "scale": scale.name}


def ranges(names: Sequence[str | Format | BlockFormat] = DEFAULT_RANGE_FORMATS) -> list[dict[str, Any]]:
    """:func:`range_entry` of each format, in the order given.

    >>> [round(r["binades"], 1) for r in ranges(["fp16", "bf16", "e4m3"])]
    [40.0, 261.0, 17.8]
    """
    if isinstance(names, (str, Format, BlockFormat)):
        names = [names]
    if not len(names):
        raise ValueError("give at least one format")
    return [range_entry(n) for n in names]


def _block_format_or_none(name: str | Format | BlockFormat) -> BlockFormat | None:
    """The block format of that name, or None where the name is an ordinary format's."""
    if isinstance(name, BlockFormat):
        return name
    if isinstance(name, Format):
        return None
    try:
        get_format(name)
        return None
    except ValueError:
        pass
    try:
        return get_block_format(name)
    except ValueError:
        raise ValueError(f"unknown format {name!r}: neither a format (fpemu formats) nor a block "
                         "format (mxfp8_e4m3, mxfp4, nvfp4, ...)") from None
