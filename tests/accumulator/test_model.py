"""The model hierarchy (fpemu/accumulator/model.py): one plain frozen dataclass per kind,
built by its class; the shared bases are no models; dense and block-scaled FMAs share their
fused-sum fields; a vector file's dict reads back through the one reader."""

from __future__ import annotations

import dataclasses

import pytest

import fpemu.accumulator as acc
from fpemu.accumulator import (Accumulator, BlockFMA, BlockModel, BlockScaledAccumulator, BlockScaledFMA,
                               Blockwise, DenseModel, Exact, FusedModel, Pairwise, RoundedModel, Sequential,
                               TwoStage, accumulator_names, get_accumulator, model_from_dict)  # fmt: skip

CLASSES = {"exact": Exact, "sequential": Sequential, "pairwise": Pairwise, "block": BlockFMA, "two_stage": TwoStage,
           "blockwise": Blockwise, "fused": BlockScaledFMA}  # fmt: skip


def _takes(name: str, inputs) -> bool:
    try:
        get_accumulator(name, inputs)
    except ValueError:  # this unit takes no such inputs
        return False
    return True


DENSE = [(n, i) for n in accumulator_names() for i in ("fp16", "bf16", "e4m3", "e4m3fnuz", "fp32") if _takes(n, i)]


@pytest.mark.parametrize("kind, cls", CLASSES.items())
def test_each_kind_is_one_class_built_by_itself(kind, cls):
    fields = dict(instruction_k=32) if cls is BlockScaledFMA else {}
    model = cls("mine", **fields)
    assert model.kind == kind and type(model) is cls and isinstance(model, Accumulator)
    assert acc.model.KINDS[kind] is cls


@pytest.mark.parametrize("base", [Accumulator, FusedModel, DenseModel, RoundedModel, BlockModel, BlockScaledAccumulator])
def test_the_shared_bases_are_not_models(base):
    with pytest.raises(ValueError, match="what several kinds share: build one of them"):
        base("x")


def test_no_record_spelling():
    # 0.1's Accumulator(name, kind, **fields) is gone: the second argument is the source, and
    # the base builds nothing; a field the class lacks is the dataclass's own TypeError.
    with pytest.raises(ValueError, match="Accumulator is what several kinds share"):
        Accumulator("old", "block")
    with pytest.raises(TypeError, match="unexpected keyword argument 'acc_format'"):
        BlockFMA("mine", acc_format="bf16")
    with pytest.raises(TypeError, match="unexpected keyword argument 'frac_bits'"):
        Blockwise("e", frac_bits=30)
    assert not hasattr(Exact("e"), "frac_bits") and not hasattr(Blockwise("e"), "instruction_k")


def test_dense_and_block_scaled_fmas_share_the_fused_fields():
    fused = {f.name for f in dataclasses.fields(FusedModel)} - {f.name for f in dataclasses.fields(Accumulator)}
    assert fused == {"frac_bits", "term_rounding", "out_rounding", "zero_exponent", "zero_c_exponent"}
    for cls in (BlockFMA, TwoStage, BlockScaledFMA):
        assert issubclass(cls, FusedModel) and fused <= {f.name for f in dataclasses.fields(cls)}
    defaults = lambda cls: {f.name: f.default for f in dataclasses.fields(cls) if f.name in fused}  # noqa: E731
    assert defaults(BlockFMA) == defaults(BlockScaledFMA)
    assert not issubclass(BlockScaledFMA, DenseModel) and not issubclass(BlockFMA, BlockScaledAccumulator)


def test_models_are_values():
    a, b = BlockFMA("m", block=8, frac_bits=25), BlockFMA("m", block=8, frac_bits=25)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != BlockFMA("m", block=8, frac_bits=26) and a != TwoStage("m", block=8, frac_bits=25)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.block = 4  # type: ignore[misc]


@pytest.mark.parametrize("name, inputs", DENSE + [(n, f) for n in ("exact", "b200", "mmasim-blackwell")
                                                  for f in ("mxfp8_e4m3", "mxfp4", "nvfp4")])
def test_every_preset_reads_back_from_its_dict(name, inputs):
    """dataclasses.asdict writes a model (kind included, fp16_output nested), as vector files
    hold it; model_from_dict reads the same model of the same class back."""
    model = get_accumulator(name, inputs)
    back = model_from_dict(dataclasses.asdict(model))
    assert back == model and type(back) is type(model)
    if isinstance(model, BlockFMA) and model.fp16_output is not None:
        assert type(back.fp16_output) is BlockFMA and back.fp16_output == model.fp16_output


def test_the_reader_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="a model's kind is one of block, two_stage"):
        model_from_dict({"name": "m"})
    with pytest.raises(TypeError, match="read from a dict"):
        model_from_dict(["block"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'late_c'"):
        model_from_dict({"kind": "block", "name": "m", "late_c": True})  # 0.1's flat record is not read
    with pytest.raises(ValueError, match="frac_bits must be in 0..48"):
        model_from_dict({"kind": "fused", "name": "m", "instruction_k": 32, "frac_bits": 60})
