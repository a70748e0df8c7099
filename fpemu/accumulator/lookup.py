"""From a name and the input formats to an :class:`Accumulator`: :func:`get_accumulator`,
:func:`accumulator_names`, and the reading of an ``inputs`` argument (one format or a pair)."""

from __future__ import annotations

from typing import Sequence

from ..formats import Format, get_format
from .model import Accumulator
from .presets import _ARCH, _FAMILY, _GPUS, _IEEE, _SUPPORTS


def accumulator_names() -> list[str]:
    """Every name :func:`get_accumulator` knows.

    >>> "h100" in accumulator_names() and "hopper" in accumulator_names()
    True
    """
    return list(_IEEE) + list(_GPUS) + [a for a in _ARCH if a not in _GPUS]


def _input_formats(inputs: str | Format | Sequence[str | Format]) -> tuple[Format, Format]:
    if isinstance(inputs, (str, Format)):
        fmt = get_format(inputs)
        return fmt, fmt
    try:
        first, second = inputs
    except (TypeError, ValueError):
        raise TypeError(f"inputs must be a format name or a pair of them, got {inputs!r}") from None
    return get_format(first), get_format(second)


def get_accumulator(name: str | Accumulator, inputs: str | Format | Sequence[str | Format] = "fp32") -> Accumulator:
    """The named accumulation model for these input formats.

    ``name`` is an IEEE model ("exact", "fp32", "fp16", "bf16", "pairwise_fp32"), a GPU
    ("v100", "t4", "a100", "a30", "a2", "ada", "l40s", "h100", "h200", "h800", "b200",
    "mi250", "mi300", ...) or an architecture ("volta", "turing", "ampere", "ada", "hopper",
    "blackwell", "cdna2", "cdna3"). GPU parameters depend on the inputs (H100 fp16 fuses 16
    products with F = 25, H100 e4m3 32 products with F = 13). An Accumulator passes through.

    >>> get_accumulator("h100", "e4m3").block, get_accumulator("h100", "fp16").block
    (32, 16)
    >>> get_accumulator("v100", "bf16")
    Traceback (most recent call last):
    ...
    ValueError: v100 (volta) has no bf16 inputs in its matrix unit; it takes: fp16
    """
    if isinstance(name, Accumulator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"an accumulator is a name or an Accumulator, got {type(name).__name__}")
    key = name.strip().lower()
    if key in _IEEE:
        return Accumulator(key, **_IEEE[key])
    arch = _GPUS.get(key, key)
    if arch not in _ARCH:
        raise ValueError(f"unknown accumulator {name!r}; known: {', '.join(accumulator_names())}")
    fa, fb = _input_formats(inputs)
    takes = _SUPPORTS[arch]
    label = key if key == arch else f"{key} ({arch})"
    for fmt in (fa, fb):
        if fmt.name not in takes:
            raise ValueError(f"{label} has no {fmt.name} inputs in its matrix unit; it takes: {', '.join(takes)}")
    if fa != fb and not (_FAMILY[fa.name].startswith("fp8") and _FAMILY[fa.name] == _FAMILY[fb.name]):
        raise ValueError(f"{label} does not multiply {fa.name} by {fb.name}")
    fam_a = _FAMILY[fa.name]
    return Accumulator(f"{key}/{fa.name}" if fa == fb else f"{key}/{fa.name}x{fb.name}", **_ARCH[arch][fam_a])
