"""Why an accumulation model's fields are refused, in words: each field's type and range from
ONE table for every field of every class (dense and block-scaled models alike: a field has
one range wherever it is), then the few rules that tie fields of one class together.

A model only has the fields its kind reads (:mod:`.model`), so no rule here says "applies to
block models only": such a field is not there to be ignored.

>>> from fpemu.accumulator.model import BlockFMA, BlockScaledFMA
>>> BlockFMA("bad", block=4, frac_bits=60)
Traceback (most recent call last):
...
ValueError: invalid accumulator 'bad': frac_bits must be in 0..48 (float64 keeps every cut exact), got 60
>>> BlockScaledFMA("bad", instruction_k=32, frac_bits=60)
Traceback (most recent call last):
...
ValueError: invalid accumulator 'bad': frac_bits must be in 0..48 (float64 keeps every cut exact), got 60

The ranges are the ones every kernel stays exact in: ``frac_bits`` at most 48 (a cut term and
its partners keep float64's and int64's bounds); ``zero_exponent`` at most 127 and
``zero_c_exponent`` at most 500, so that a term aligned below a zero's exponent is still a
normal float64 when scaled by ``2**(F - E)`` (its floor, ``"rd"``, would otherwise read a
flushed -0 as 0), and ``zero_c_exponent`` at least -1022 (float64's exponents; ``fpemu.fit``
lets a zero take no part with -900).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from ..arguments import is_whole
from ..formats import Format, get_format

_LATE_BITS = ("lane_frac_bits", "sum_frac_bits", "c_frac_bits", "c_window")


def _whole(low: int | None, high: int | None, what: str, none: bool, rng: str = "") -> Callable[[Any], list]:
    """A check of an integer field: its type (never a bool), then its range."""

    def check(name: str, value: Any) -> list[str]:
        if value is None and none:
            return []
        if not is_whole(value):
            return [f"{name} must be {what}{' or None' if none else ''}, got {value!r}"]
        if (low is not None and value < low) or (high is not None and value > high):
            shown = rng or f"in {low}..{high}"
            return [f"{name} must be {shown}, got {value!r}"]
        return []

    return check


def _flag(name: str, value: Any) -> list[str]:
    return [] if isinstance(value, (bool, np.bool_)) else [f"{name} must be True or False, got {value!r}"]


def _choice(*allowed: str) -> Callable[[str, Any], list]:
    shown = " or ".join(repr(a) for a in allowed)
    return lambda name, value: [] if value in allowed else [f"{name} must be {shown}, got {value!r}"]


def _name(name: str, value: Any) -> list[str]:
    return [] if isinstance(value, str) else [f"{name} must be a string, got {value!r}"]


def _acc_format(name: str, value: Any) -> list[str]:
    if not isinstance(value, (str, Format)):
        return [f"acc_format must be a format name, got {value!r}"]
    if get_format(value).name not in ("fp32", "fp16", "bf16"):
        return [f"acc_format must be fp32, fp16 or bf16, got {value!r}"]
    return []


def _fp16_output(name: str, value: Any) -> list[str]:
    if value is None or getattr(value, "kind", None) == "block":
        return []
    return [f"fp16_output must be a BlockFMA or None, got {type(value).__name__}"]


def _lane_order(name: str, value: Any) -> list[str]:
    if value is None or (isinstance(value, str) and value.startswith("bit") and value[3:].isdigit()):
        return []
    return [f"lane_order must be 'bit<j>' or None, got {value!r}"]


_POSITIVE = _whole(1, None, "a positive integer", True, "a positive integer")
_LATE = _whole(0, 48, "a non-negative integer", True, "in 0..48")

#: Each field's check: its type, then its range (a field is checked where its class has it).
FIELD_CHECKS: dict[str, Callable[[str, Any], list]] = {
    "name": _name,
    "source": _name,
    "instruction_k": _whole(1, 1 << 16, "a positive integer", True, "in 1..65536"),
    "promote": _POSITIVE,
    "flush_subnormals": _flag,
    "acc_format": _acc_format,
    "acc_rounding": _choice("rz", "rne"),
    "block": _POSITIVE,
    "round_products": _flag,
    "frac_bits": _whole(0, 48, "an integer", False, "in 0..48 (float64 keeps every cut exact)"),
    "term_rounding": _choice("rz", "rd"),
    "out_rounding": _choice("rz", "rne"),
    "out_frac_bits": _whole(1, 23, "an integer", False),
    "zero_c_exponent": _whole(-1022, 500, "an integer", False),
    "zero_exponent": _whole(-500, 127, "an integer", True),
    "product_overflow": _flag,
    "signed_underflow": _flag,
    "lane_order": _lane_order,
    "c_after": _flag,
    "fp16_output": _fp16_output,
    "even_odd": _flag,
    "lane_frac_bits": _LATE,
    "sum_frac_bits": _LATE,
    "c_frac_bits": _LATE,
    "c_window": _LATE,
    "late_rounding": _choice("rz", "rd"),
    "alpha": _choice("decode", "cublaslt"),
    "sub_block": _POSITIVE,
    "term_exponent": _choice("product", "scale"),
    "overflow": _choice("ieee", "inf"),
}


def problems_of(model: Any) -> list[str]:
    """Every problem of one model: the fields one by one, then (if they are all right) the
    rules between them."""
    if not model.kind:
        return [f"{type(model).__name__} is what several kinds share: build one of them"]
    problems = []
    for f in dataclasses.fields(model):
        if f.init:
            problems += FIELD_CHECKS[f.name](f.name, getattr(model, f.name))
    return problems or _between(model)


def _between(m: Any) -> list[str]:
    """The rules that tie one model's fields together."""
    problems = []
    block = getattr(m, "block", None)
    if m.kind in ("block", "two_stage") and block is None:
        return ["a block model needs a block size"]
    if m.kind in ("block", "two_stage") and (block + 3) << (m.frac_bits + 2) >= 1 << 63:
        problems.append("block << (frac_bits + 2) must fit in int64: fewer products or fewer bits")
    instruction_k = getattr(m, "instruction_k", None)
    if instruction_k is not None and block is not None and instruction_k % block:
        problems.append(f"instruction_k must be a multiple of block ({block}), got {instruction_k}")
    if m.kind == "two_stage":
        problems += _two_stage(m)
    if m.kind == "block":
        problems += _instruction(m)
    if m.kind == "fused":
        problems += _block_scaled(m)
    return problems


def _block_scaled(m: Any) -> list[str]:
    """The instruction of a block-scaled FMA and its sub-blocks."""
    if m.instruction_k is None:
        return ["a block-scaled FMA needs instruction_k"]
    problems = []
    if m.instruction_k % m.sub_block:
        problems.append(f"sub_block must divide instruction_k ({m.instruction_k}), got {m.sub_block}")
    if m.term_exponent == "product" and m.sub_block != 1:
        problems.append("term_exponent 'product' needs sub_block 1")
    return problems


def _two_stage(m: Any) -> list[str]:
    problems = []
    bits = [getattr(m, f) for f in _LATE_BITS if getattr(m, f) is not None]
    if bits and m.block << (max(bits + [m.frac_bits]) + 2) >= 1 << 52:
        problems.append("block << (kept bits + 2) must stay below 2**52: fewer products or fewer bits")
    for f in ("c_frac_bits", "c_window"):
        if getattr(m, f) is not None and m.sum_frac_bits is None:
            problems.append(f"{f} needs sum_frac_bits")
    if (m.lane_frac_bits is not None) != (m.even_odd and m.sum_frac_bits is not None):
        problems.append("lane_frac_bits goes with even_odd and sum_frac_bits: all three or not all")
    return problems


def _instruction(m: Any) -> list[str]:
    """The lane order and the fp16-output model of a block FMA."""
    problems = []
    if m.lane_order is not None and (m.instruction_k is None or 1 << int(m.lane_order[3:]) >= m.instruction_k):
        problems.append("lane_order needs a block model with instruction_k above 2**j")
    if m.fp16_output is not None and m.fp16_output.for_output("fp16") is not m.fp16_output:
        problems.append("fp16_output's own fp16_output must be None")
    return problems
