"""Why a model's fields are refused (fpemu/accumulator/checks.py): one table gives every field
its type and ONE range, whichever class has it, dense or block-scaled; the rules between the
fields of one class follow; the ends of the ranges keep the kernels exact."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.accumulator import BlockFMA, BlockScaledFMA, Blockwise, Pairwise, Sequential, TwoStage
from fpemu.accumulator.checks import FIELD_CHECKS

FP32_MAX = float(np.finfo(np.float32).max)


@pytest.mark.parametrize("fields, message", [
    (dict(frac_bits=23.5), "frac_bits must be an integer, got 23.5"),
    (dict(frac_bits=60), r"frac_bits must be in 0\.\.48 \(float64 keeps every cut exact\), got 60"),
    (dict(block=True), "block must be a positive integer or None, got True"),
    (dict(block=2.0), "block must be a positive integer"),
    (dict(block=-3), "block must be a positive integer"),
    (dict(block=None), "a block model needs a block size"),
    (dict(promote=0), "promote must be a positive integer"),
    (dict(promote=1.5), "promote must be a positive integer"),
    (dict(out_frac_bits="23"), "out_frac_bits must be an integer"),
    (dict(zero_c_exponent=10**10), r"zero_c_exponent must be in -1022\.\.500"),
    (dict(zero_exponent=1.5), "zero_exponent must be an integer or None"),
    (dict(zero_exponent=-600), r"zero_exponent must be in -500\.\.127"),
    (dict(block=10**18, frac_bits=24), "must fit in int64"),
    (dict(product_overflow=1), "product_overflow must be True or False"),
    (dict(block=4, instruction_k=6), "instruction_k must be a multiple of block"),
    (dict(instruction_k=0), r"instruction_k must be in 1\.\.65536"),
    (dict(source=3), "source must be a string"),
])  # fmt: skip
def test_block_fma_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        BlockFMA("mine", **fields)
    with pytest.raises(ValueError, match="name must be a string"):
        BlockFMA(None)


@pytest.mark.parametrize("cls, fields, message", [
    (TwoStage, dict(c_frac_bits=24), "c_frac_bits needs sum_frac_bits"),
    (TwoStage, dict(c_window=25), "c_window needs sum_frac_bits"),
    (TwoStage, dict(sum_frac_bits=-1), r"must be in 0\.\.48"),
    (TwoStage, dict(sum_frac_bits=31, lane_frac_bits=24), "lane_frac_bits goes with even_odd and sum_frac_bits"),
    (TwoStage, dict(even_odd=True, sum_frac_bits=31), "lane_frac_bits goes with even_odd and sum_frac_bits"),
    (TwoStage, dict(block=1 << 20, sum_frac_bits=31), r"must stay below 2\*\*52"),
    (TwoStage, dict(late_rounding="rne"), "late_rounding must be 'rz' or 'rd'"),
    (Sequential, dict(acc_format=3), "acc_format must be a format name"),
    (Sequential, dict(acc_format="e4m3"), "acc_format must be fp32, fp16 or bf16"),
    (Pairwise, dict(round_products="yes"), "round_products must be True or False"),
    (BlockScaledFMA, dict(), "a block-scaled FMA needs instruction_k"),
    (BlockScaledFMA, dict(instruction_k=32, sub_block=5, term_exponent="scale"), "sub_block must divide"),
    (BlockScaledFMA, dict(instruction_k=64, sub_block=16), "term_exponent 'product' needs sub_block 1"),
    (BlockScaledFMA, dict(instruction_k=32, out_rounding="rtz"), "out_rounding must be 'rz' or 'rne'"),
    (BlockScaledFMA, dict(instruction_k=True), "instruction_k must be a positive integer or None, got True"),
    (BlockScaledFMA, dict(instruction_k=32, overflow="wrap"), "overflow must be 'ieee' or 'inf'"),
    (Blockwise, dict(alpha="te"), "alpha must be 'decode' or 'cublaslt'"),
])  # fmt: skip
def test_other_fields_and_rules_are_checked(cls, fields, message):
    with pytest.raises(ValueError, match=message):
        cls("mine", **fields)


# The fields a dense and a block-scaled FMA both have, with values on each side of each range.
SHARED = {
    "frac_bits": [0, 48, 49, 55, -1, None, 24.0],
    "zero_c_exponent": [-1022, -600, 500, 501, -1023, None],
    "zero_exponent": [None, -500, -126, 127, 128, -501, 1.5],
    "term_rounding": ["rz", "rd", "rne"],
    "out_rounding": ["rz", "rne", "rd"],
    "instruction_k": [32, 64, 65536, 0, 1 << 17, 8.0],
    "name": ["m", 3],
    "source": ["paper", None],
}


def _outcome(cls, field, value):
    fields = {"instruction_k": 64, field: value}
    if cls is BlockFMA:
        fields["block"] = 32
    try:
        cls(fields.pop("name", "m"), **fields)
    except ValueError as exc:
        return str(exc).split(": ", 1)[1]
    return "accepted"


@pytest.mark.parametrize("field, value", [(f, v) for f, vs in SHARED.items() for v in vs])
def test_one_range_per_field(field, value):
    """BlockFMA and BlockScaledFMA accept or refuse each value of a field they share alike, in
    the same words (issue 37: frac_bits=55 was a block-scaled model's, zero_c_exponent=-600 a
    dense one's only)."""
    assert field in FIELD_CHECKS
    dense, scaled = _outcome(BlockFMA, field, value), _outcome(BlockScaledFMA, field, value)
    assert dense == scaled, (field, value)


def test_the_named_disagreements_are_gone():
    for cls in (BlockFMA, BlockScaledFMA):
        with pytest.raises(ValueError, match=r"frac_bits must be in 0\.\.48"):
            cls("m", instruction_k=32, frac_bits=55)
        assert cls("m", instruction_k=32, zero_c_exponent=-600).zero_c_exponent == -600


def test_the_ends_of_the_ranges_keep_the_kernels_exact():
    """At zero_c_exponent = 500 a zero c aligns every product far below the grid: the smallest
    fp32 product, -2**-298, scaled by 2**(F - 500) is still a normal float64, so its floor
    ("rd") is -1 unit of 2**(500 - F), not the 0 a flushed -0 would give (what 1023, once
    allowed, gave): the sum -2**476 rounds toward zero to -max fp32 (RZ) or to -Inf (RNE)."""
    for rounding, want in (("rz", -FP32_MAX), ("rne", -np.inf)):
        model = BlockFMA("edge", block=2, frac_bits=24, term_rounding="rd", zero_c_exponent=500, out_rounding=rounding)
        got = fpemu.gemm([[-(2.0**-149)]], [[2.0**-149]], inputs="fp32", accumulator=model)
        assert got[0, 0] == want
    # zero_exponent = 127 on both sides of an NVFP4 product (a zero element under a zero scale):
    # the terms' exponent is 4 * 127 and a negative product is still floored to one unit.
    a = mx.quantize(np.array([[-1.0] + [0.0] * 15 + [0.0] * 16]), "nvfp4", global_amax=6 * 448.0)
    b = mx.quantize(np.ones((32, 1)), "nvfp4", global_amax=6 * 448.0, axis=0)
    model = BlockScaledFMA("edge", instruction_k=32, frac_bits=24, term_rounding="rd", zero_exponent=127,
                           alpha="decode")
    assert fpemu.gemm(a, b, accumulator=model)[0, 0] == -FP32_MAX
