"""The Accumulator fields and their checks (fpemu/accumulator/model.py)."""

from __future__ import annotations

import pytest

from fpemu.accumulator import Accumulator


def test_invalid_parameters_raise():
    with pytest.raises(ValueError, match="frac_bits"):
        Accumulator("bad", block=4, frac_bits=60)
    with pytest.raises(ValueError, match="block"):
        Accumulator("bad", block=0)
    with pytest.raises(ValueError, match="even_odd needs late_c"):
        Accumulator("bad", block=4, even_odd=True)


@pytest.mark.parametrize(
    "fields,message",
    [
        (dict(frac_bits=23.5), "frac_bits must be an integer"),
        (dict(block=True), "block must be a positive integer or None, got True"),
        (dict(block=2.0), "block must be a positive integer"),
        (dict(block=-3), "block must be a positive integer"),
        (dict(promote=0), "promote must be a positive integer"),
        (dict(promote=1.5), "promote must be a positive integer"),
        (dict(out_frac_bits="23"), "out_frac_bits must be an integer"),
        (dict(zero_c_exponent=10**10), r"zero_c_exponent must be in -1022\.\.1023"),
        (dict(late_c="yes"), "late_c must be True or False"),
        (dict(kind="sequential", acc_format=3), "acc_format must be a format name"),
        (dict(block=10**18, frac_bits=24), "must fit in int64"),
        (dict(kind="magic"), "kind must be"),
    ],
)
def test_accumulator_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        Accumulator("mine", **fields)
    with pytest.raises(ValueError, match="name must be a string"):
        Accumulator(None)


@pytest.mark.parametrize(
    "fields,message",
    [
        (dict(zero_exponent=1.5), "zero_exponent must be an integer or None"),
        (dict(zero_exponent=-600), r"zero_exponent must be in -500\.\.500"),
        (dict(sum_frac_bits=31), "sum_frac_bits needs late_c"),
        (dict(late_c=True, c_frac_bits=24), "c_frac_bits needs sum_frac_bits"),
        (dict(late_c=True, c_window=25), "c_window needs sum_frac_bits"),
        (dict(late_c=True, sum_frac_bits=-1), "must be in 0..48"),
        (dict(late_c=True, sum_frac_bits=31, lane_frac_bits=24), "lane_frac_bits goes with even_odd and sum_frac_bits"),
        (dict(late_c=True, even_odd=True, sum_frac_bits=31), "lane_frac_bits goes with even_odd and sum_frac_bits"),
        (dict(block=1 << 20, late_c=True, sum_frac_bits=31), r"must stay below 2\*\*52"),
        (dict(late_c=True, late_rounding="rne"), "late_rounding must be 'rz' or 'rd'"),
        (dict(product_overflow=1), "product_overflow must be True or False"),
        (dict(kind="pairwise", signed_underflow=True), "signed_underflow applies to block models only"),
        (dict(kind="sequential", late_c=True), "late_c applies to block models only"),
        (dict(round_products=True), "round_products applies to pairwise models only"),
        (dict(block=4, instruction_k=6), "instruction_k must be a multiple of block"),
        (dict(instruction_k=0), "instruction_k must be a positive integer"),
    ],
)
def test_stage_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        Accumulator("mine", **fields)


def test_every_amd_field_combination_of_the_presets_is_valid():
    from fpemu.accumulator import get_accumulator

    fp8 = get_accumulator("mi300x", "e4m3fnuz")
    assert (fp8.late_c, fp8.even_odd, fp8.lane_frac_bits, fp8.sum_frac_bits, fp8.c_frac_bits, fp8.c_window) == (
        True, True, 24, 31, 24, 25
    )  # fmt: skip
    tree = get_accumulator("mi250", "bf16")
    assert Accumulator("copy", **{f: getattr(tree, f) for f in ("kind", "block", "round_products", "flush_subnormals")})


@pytest.mark.parametrize(
    "fields, cls",
    [
        (dict(), "BlockFMA"),
        (dict(kind="block", late_c=True), "TwoStage"),
        (dict(kind="two_stage", even_odd=True, sum_frac_bits=31, lane_frac_bits=24), "TwoStage"),
        (dict(kind="exact"), "Exact"),
        (dict(kind="sequential", acc_format="bf16"), "Sequential"),
        (dict(kind="pairwise", block=None, round_products=True), "Pairwise"),
    ],
)
def test_a_record_builds_the_class_of_its_kind(fields, cls):
    """0.1's keyword spelling builds the class of the kind, with the same field values, and
    every model's asdict (kind included) reads back equal."""
    import dataclasses

    import fpemu.accumulator as acc

    model = Accumulator("mine", **fields)
    assert type(model) is getattr(acc, cls) and isinstance(model, Accumulator)
    for key, value in fields.items():
        if key not in ("kind", "late_c"):
            assert getattr(model, key) == value
    assert Accumulator(**dataclasses.asdict(model)) == model
    assert getattr(acc, cls)("mine", **{k: v for k, v in fields.items() if k not in ("kind", "late_c")}) == model


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(kind="exact", frac_bits=30), "frac_bits applies to block models only"),
        (dict(kind="sequential", block=4), "block applies to block and pairwise models only"),
        (dict(acc_format="bf16"), "acc_format applies to sequential and pairwise models only"),
        (dict(even_odd=True), "even_odd needs late_c"),
        (dict(late_c=True, lane_order="bit1"), "do not go with late_c"),
        (dict(kind="block", term_rounding="rd", typo=1), "unexpected keyword argument"),
    ],
)
def test_a_field_the_kind_does_not_read_is_refused(fields, message):
    """A field the model's class has no use for is refused (0.1 ignored some), unless it
    holds 0.1's default, as vector files written by 0.1 have every field."""
    with pytest.raises((ValueError, TypeError), match=message):
        Accumulator("mine", **fields)
    assert type(Accumulator("old", "exact", block=1, frac_bits=24, late_c=False, acc_format="fp32")).__name__ == "Exact"


def test_the_shared_bases_are_not_models():
    from fpemu.accumulator import BlockModel, RoundedModel

    for base in (BlockModel, RoundedModel):
        with pytest.raises(ValueError, match="what several kinds share"):
            base("x")
