"""``Accumulator(name, kind, **fields)``: 0.1's one-record spelling of a model, read as the
class of its kind.

0.1 kept every model in one record of 28 fields, most of them for one kind only; vector files
hold such records (``dataclasses.asdict``). Here a record becomes the class its ``kind`` (and
``late_c``) names; a field the class does not have is dropped where it holds 0.1's default
(it said nothing), and refused where it holds anything else, since that class would ignore it.

>>> from fpemu.accumulator import Accumulator
>>> type(Accumulator("cdna3-like", "block", block=4, late_c=True, sum_frac_bits=31)).__name__
'TwoStage'
>>> Accumulator("loop", "sequential", round_products=True)
Traceback (most recent call last):
...
ValueError: invalid accumulator 'loop': round_products applies to pairwise models only

A model's ``dataclasses.asdict`` holds its ``kind``, so it reads back the same way:

>>> import dataclasses
>>> from fpemu.accumulator import get_accumulator
>>> m = get_accumulator("mi300x", "e4m3fnuz")
>>> Accumulator(**dataclasses.asdict(m)) == m, dataclasses.asdict(m)["kind"]
(True, 'two_stage')
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..arguments import record_fields, split_record

#: 0.1's record: its fields in order (positional arguments) and their defaults.
RECORD_DEFAULTS: dict[str, Any] = dict(
    kind="block", block=1, frac_bits=24, term_rounding="rz", out_rounding="rz", out_frac_bits=23,
    zero_c_exponent=-126, zero_exponent=None, late_c=False, even_odd=False, lane_frac_bits=None,
    sum_frac_bits=None, c_frac_bits=None, c_window=None, late_rounding="rd", product_overflow=False,
    signed_underflow=False, round_products=False, flush_subnormals=False, instruction_k=None,
    acc_format="fp32", acc_rounding="rne", promote=None, lane_order=None, c_after=False, fp16_output=None,
    source="",
)  # fmt: skip


def from_record(kinds: dict[str, type], name: Any, *args: Any, **fields: Any) -> Any:
    """The model a 0.1 record describes (``Accumulator(name, kind, block, ...)``), built from
    the class of its kind in ``kinds`` (the model module's table of kind names)."""
    fields = record_fields("Accumulator", RECORD_DEFAULTS, args, fields)
    kind, late_c = fields.pop("kind", "block"), fields.pop("late_c", False)
    if kind not in kinds:
        return _refuse(name, [f"kind must be {', '.join(kinds)}, got {kind!r}"])
    if not isinstance(late_c, (bool, np.bool_)):
        return _refuse(name, [f"late_c must be True or False, got {late_c!r}"])
    if late_c and kind not in ("block", "two_stage"):
        return _refuse(name, ["late_c applies to block models only"])
    kind = "two_stage" if late_c else kind
    own, foreign = split_record(_fields(kinds[kind]), RECORD_DEFAULTS, fields)
    if foreign:
        return _refuse(name, [_why_not(kinds, kind, k) for k in foreign])
    return kinds[kind](name, **own)


def _why_not(kinds: dict[str, type], kind: str, key: str) -> str:
    """Why a field cannot go with a kind, in 0.1's words."""
    fma, two = _fields(kinds["block"]), _fields(kinds["two_stage"])
    if kind == "block" and key in two:
        return f"{key} needs late_c"
    if kind == "two_stage" and key in fma:
        return f"{key}: lane_order, c_after and fp16_output do not go with late_c"
    if key == "block":
        return "block applies to block and pairwise models only"
    if key in fma | two:
        return f"{key} applies to block models only"
    if key in _fields(kinds["pairwise"]) - _fields(kinds["sequential"]):
        return f"{key} applies to pairwise models only"
    return f"{key} applies to sequential and pairwise models only"


def _fields(cls: type) -> set[str]:
    """The fields a class is built with (its ``kind`` is not one: the class says it)."""
    return {f.name for f in dataclasses.fields(cls) if f.init}


def _refuse(name: Any, problems: list[str]) -> Any:
    raise ValueError(f"invalid accumulator {name!r}: " + "; ".join(problems))
