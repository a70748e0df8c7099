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
from .plot_text import overflow_label
from .values import finite_values, overflow_threshold, overflow_words, value_classes

__all__ = ["number_line", "spacing", "ranges", "range_entry", "DEFAULT_RANGE_FORMATS", "log2_ticks",
           "shared_line_span"]

#: The formats of the dynamic-range picture: the seeds' table, and FP4 with its MX scale.
DEFAULT_RANGE_FORMATS = ("fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4")


def _subnormal_mask(values: np.ndarray, fmt: Format) -> np.ndarray:
    """Which of ``values`` a figure draws as subnormal: those below the smallest normal of a
    floating-point format. A fixed-point format (no exponent field, INT8) has none: the codec
    encodes its values like subnormals, but they are its ordinary values, one even grid.

    >>> _subnormal_mask(np.array([0.5, 1.0]), get_format("e2m1")).tolist()
    [True, False]
    >>> bool(_subnormal_mask(finite_values("int8"), get_format("int8")).any())
    False
    """
    if not fmt.exponent_bits:
        return np.zeros(np.shape(values), dtype=bool)
    return value_classes(values, fmt) == "subnormal"


def number_line(fmt: str | Format) -> dict[str, Any]:
    """Every positive finite value of ``fmt`` (at most 16 bits) and the landmarks of its line.

    Keys: ``format``; ``values`` (positive finite values, ascending); ``log2`` (their base-2
    logarithms: the x positions drawn); ``subnormal`` (mask of the values below the smallest
    normal; none in a fixed-point format such as INT8); ``has_zero``; ``has_negatives``; ``negatives`` (``"mirror"``: exactly the
    negated positives, ``"none"``, or ``"lowest extra"``: the negated positives and one lower
    value, ``lowest``, as in two's complement); ``min_normal``, ``max``, ``lowest`` and
    ``overflow_threshold`` (floats); ``overflow_words`` (:func:`overflow_words`) and
    ``overflow_label``, what a figure says there: "overflow" (to Inf or NaN, the format's own
    rule) or "saturates", and those words with the threshold as :func:`label_number` has it.

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
        "subnormal": _subnormal_mask(positive, fmt),
        "has_zero": bool((values == 0).any()),
        "has_negatives": bool((values < 0).any()),
        "negatives": _negatives(values, positive),
        "lowest": float(values[0]),
        "overflow_words": overflow_words(fmt),
        "overflow_label": overflow_label(fmt),
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


def spacing(fmt: str | Format) -> dict[str, Any]:
    """The gaps between consecutive positive values of ``fmt`` (at most 16 bits) and the
    worst relative rounding error inside each gap.

    For the gap ``[a, b]`` between two neighbouring values, round-to-nearest errs by at most
    ``(b - a) / 2``, at the midpoint, so the relative error is at most ``(b - a) / (a + b)``.
    Keys: ``format``, ``lower`` (a, every positive value but the largest), ``upper`` (b),
    ``spacing`` (b - a, the ulp), ``relative_bound`` ((b - a) / (a + b)) and ``unit_roundoff``
    (2**-(mantissa_bits + 1), the textbook bound the normal gaps approach). The gap that
    starts at zero is left out (relative error 1 there, and log(0) has no place on the axes).
    For a step plot that draws every gap as wide as it is, the last one included: ``edges``
    (every positive value: the gaps' ends), ``step_spacing`` and ``step_relative`` (one
    height per edge, the last gap's repeated at the top edge); ``subnormal`` marks the gaps
    that start below the smallest normal (none in a fixed-point format).

    >>> s = spacing("e4m3")
    >>> s["spacing"][:3].tolist(), float(s["relative_bound"].max()), s["unit_roundoff"]
    ([0.001953125, 0.001953125, 0.001953125], 0.3333333333333333, 0.0625)
    >>> s["edges"][-2:].tolist(), s["step_spacing"][-2:].tolist()  # the last gap: 416 to 448
    ([416.0, 448.0], [32.0, 32.0])
    """
    fmt = get_format(fmt)
    values = finite_values(fmt)
    positive = values[values > 0]
    lower, upper = positive[:-1], positive[1:]
    gap = upper - lower  # exact: neighbours of one format differ by a few bits
    relative = gap / (lower + upper)
    return {
        "format": fmt.name,
        "lower": lower,
        "upper": upper,
        "spacing": gap,
        "relative_bound": relative,
        "unit_roundoff": float(np.ldexp(1.0, -fmt.mantissa_bits - 1)),
        "edges": positive,
        "step_spacing": np.append(gap, gap[-1:]),  # a "post" step's last height spans no width
        "step_relative": np.append(relative, relative[-1:]),
        "subnormal": _subnormal_mask(lower, fmt),
    }


def log2_ticks(lo: float, hi: float, most: int = 8) -> list[int]:
    """Exponents k for ticks at 2**k on a log2 axis from ``lo`` to ``hi`` (positive): every
    multiple of one round step (1, 2, 5, 10, 20, 25, 50, 100 ...) inside the range, the
    smallest step that gives at most ``most`` ticks, and always at least two (the range is
    widened to the powers of 2 around it where it holds fewer).

    >>> log2_ticks(2.0**-133, 2.0**128), log2_ticks(2.0**-24, 65504)
    ([-100, -50, 0, 50, 100], [-20, -15, -10, -5, 0, 5, 10, 15])
    >>> log2_ticks(1/3, 1/3), log2_ticks(0.5, 6)
    ([-2, -1], [-1, 0, 1, 2])
    """
    if not (0 < lo <= hi < np.inf):
        raise ValueError(f"a log2 axis needs 0 < lo <= hi < inf, not {lo!r} .. {hi!r}")
    a, b = np.log2(lo), np.log2(hi)
    for step in _round_steps():
        first, last = int(np.ceil(a / step)), int(np.floor(b / step))
        if last - first + 1 <= most:
            break
    ticks = [k * step for k in range(first, last + 1)]
    if len(ticks) < 2:  # a narrow range: the powers of 2 just below and above it
        low = int(np.floor(a))
        ticks = [low, max(low + 1, int(np.ceil(b)))]
    return ticks


def _round_steps():
    """1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, ... (exponent steps that read as round)."""
    yield from (1, 2, 5)
    scale = 10
    while True:
        yield from (scale, 2 * scale, 25 * scale // 10, 5 * scale)
        scale *= 10


def shared_line_span(lines: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """The log2 span that every row of a number line shares, so that rows compare: from the
    smallest positive value of any of the formats to the highest overflow threshold (or max,
    where that is not finite).

    >>> shared_line_span([number_line("e4m3"), number_line("e2m1")]) == (-9.0, np.log2(464))
    True
    """
    left = min(float(line["log2"][0]) for line in lines)
    tops = [line["overflow_threshold"] if np.isfinite(line["overflow_threshold"]) else line["max"]
            for line in lines]
    return left, float(np.log2(max(tops)))


def range_entry(name: str | Format | BlockFormat) -> dict[str, Any]:
    """One bar of the dynamic-range picture: a format's or a block format's positive range.

    Keys: ``name``; ``min_positive`` (the smallest positive value), ``min_normal`` (where the
    subnormals end; equal to ``min_positive`` without subnormals, as in fixed point: INT8,
    MXINT8's element) and ``max``; ``binades``
    (log2(max / min_positive)); for block formats also ``block_min`` and ``block_max``, the
    range one block spans with its scale at 1 (the element format's own), and ``scale``, the
    scale format; ``tensor_scale``, the format of a per-tensor scale on top (``"fp32"`` for
    NVFP4, else None). An MX format's range is its element's range times every E8M0 scale
    (2**-127 .. 2**127); NVFP4's uses its UE4M3 block scale only, with the tensor scale at 1:
    its per-tensor FP32 scale moves the whole range, which the figure marks.

    >>> e = range_entry("mxfp4")
    >>> e["min_positive"] == 2.0**-128, e["max"] == 6 * 2.0**127, e["block_max"] / e["block_min"]
    (True, True, 12.0)
    """
    block = block_format_or_none(name)
    if block is None:
        fmt = get_format(name)
        lo = fmt.min_subnormal
        return {"name": fmt.name, "min_positive": lo, "min_normal": _normal_start(fmt),
                "max": fmt.max, "binades": float(np.log2(fmt.max / lo))}
    elem, scale = block.element, block.scale
    lo = elem.min_subnormal * scale.min_subnormal
    hi = elem.max * scale.max
    return {"name": block.name, "min_positive": lo, "min_normal": _normal_start(elem) * scale.min_subnormal,
            "max": hi, "binades": float(np.log2(hi / lo)), "block_min": elem.min_subnormal,
            "block_max": elem.max, "scale": scale.name, "tensor_scale": "fp32" if block.tensor_scale else None}


def _normal_start(fmt: Format) -> float:
    """Where a range bar's subnormal part ends: the smallest normal, or the smallest positive
    value of a fixed-point format (no subnormal part).

    >>> _normal_start(get_format("e2m1")), _normal_start(get_format("int8"))
    (1.0, 0.015625)
    """
    if not fmt.exponent_bits:
        return fmt.min_subnormal
    return min(fmt.min_normal, fmt.max)


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


def block_format_or_none(name: str | Format | BlockFormat) -> BlockFormat | None:
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
