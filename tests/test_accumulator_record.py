"""0.1's one-record spelling of a model (fpemu/accumulator/record.py): every preset, written
as 0.1 wrote it into vector files (all 28 fields, ``kind="block"`` with ``late_c`` for CDNA3),
reads back as the same model of its own class."""

from __future__ import annotations

import dataclasses

import pytest

from fpemu.accumulator import Accumulator, accumulator_names, get_accumulator
from fpemu.accumulator.record import RECORD_DEFAULTS


def _as_v01(model: Accumulator) -> dict:
    """The record 0.1's flat dataclass would have written for this model."""
    fields = dict(RECORD_DEFAULTS, name=model.name)
    own = dataclasses.asdict(model)
    kind = own.pop("kind")
    fields.update(own, kind="block" if kind == "two_stage" else kind, late_c=kind == "two_stage")
    if fields["fp16_output"] is not None:
        fields["fp16_output"] = _as_v01(model.fp16_output)
    return fields


def _takes(name: str, inputs: str) -> bool:
    try:
        get_accumulator(name, inputs)
    except ValueError:  # this unit takes no such inputs
        return False
    return True


MODELS = [(n, i) for n in accumulator_names() for i in ("fp16", "bf16", "e4m3", "e4m3fnuz", "fp32") if _takes(n, i)]


@pytest.mark.parametrize("name, inputs", MODELS)
def test_every_preset_reads_back_from_a_v01_record(name, inputs):
    model = get_accumulator(name, inputs)
    record = _as_v01(model)
    assert len(record) == 28  # 0.1's 28 fields, name included
    back = Accumulator(**record)
    assert back == model and type(back) is type(model)
    assert Accumulator(**dataclasses.asdict(model)) == model


def test_the_presets_cover_every_kind():
    kinds = {type(get_accumulator(n, i)).__name__ for n, i in [("exact", "fp32"), ("fp32", "fp32"), ("pairwise_fp32", "fp32"),
                                                               ("h100", "fp16"), ("mi300x", "bf16"), ("mi250", "bf16")]}
    assert kinds == {"Exact", "Sequential", "Pairwise", "BlockFMA", "TwoStage"}


def test_positional_and_duplicate_arguments():
    assert Accumulator("p", "block", 8, 25) == Accumulator("p", kind="block", block=8, frac_bits=25)
    with pytest.raises(TypeError, match="multiple values for argument 'block'"):
        Accumulator("p", "block", 8, block=4)
    with pytest.raises(TypeError, match="at most 28 positional"):
        Accumulator("p", *range(28))
