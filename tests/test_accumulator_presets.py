"""The named presets (fpemu/accumulator/presets.py) and their lookup (lookup.py)."""

from __future__ import annotations

import pytest
from test_accumulator import NVIDIA_16

from fpemu.accumulator import accumulator_names, dot, get_accumulator


# ---- presets ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,inputs,block,frac_bits,out_frac_bits",
    [
        ("v100", "fp16", 4, 23, 23),
        ("volta", "fp16", 4, 23, 23),
        ("t4", "fp16", 8, 24, 23),
        ("a100", "bf16", 8, 24, 23),
        ("a100", "tf32", 4, 24, 23),
        ("ampere", "fp16", 8, 24, 23),
        ("l40s", "e4m3", 16, 13, 13),
        ("ada", "tf32", 4, 24, 23),
        ("h100", "fp16", 16, 25, 23),
        ("h200", "tf32", 8, 25, 23),
        ("h800", "e5m2", 32, 13, 13),
        ("hopper", ("e4m3", "e5m2"), 32, 13, 13),
        ("b200", "bf16", 16, 25, 23),
        ("blackwell", "tf32", 8, 25, 23),
    ],
)
def test_gpu_presets_follow_the_spec_table(name, inputs, block, frac_bits, out_frac_bits):
    acc = get_accumulator(name, inputs)
    assert (acc.kind, acc.block, acc.frac_bits, acc.out_frac_bits, acc.out_rounding) == (
        "block", block, frac_bits, out_frac_bits, "rz"
    )
    assert acc.term_rounding == "rz" and acc.zero_c_exponent == -126 and acc.source


def test_amd_presets():
    mi250 = get_accumulator("mi250", "fp16")
    assert (mi250.kind, mi250.flush_subnormals, mi250.acc_rounding) == ("pairwise", True, "rne")
    mi300 = get_accumulator("mi300", "bf16")
    assert (mi300.late_c, mi300.frac_bits, mi300.term_rounding, mi300.out_rounding) == (True, 24, "rd", "rne")
    assert get_accumulator("cdna3", "e4m3fnuz").even_odd


def test_ieee_presets():
    assert get_accumulator("exact").kind == "exact"
    assert get_accumulator("bf16").acc_format == "bf16"
    assert get_accumulator("pairwise_fp32").block is None
    assert set(NVIDIA_16 + ["mi250", "mi300", "volta", "cdna2"]) <= set(accumulator_names())


@pytest.mark.parametrize(
    "name,inputs,message",
    [
        ("v100", "bf16", "v100 (volta) has no bf16 inputs"),
        ("t4", "e4m3", "no e4m3 inputs"),
        ("a100", "e4m3", "no e4m3 inputs"),
        ("mi300", "e4m3", "no e4m3 inputs"),
        ("h100", ("fp16", "bf16"), "does not multiply fp16 by bf16"),
        ("x9000", "fp16", "unknown accumulator 'x9000'"),
    ],
)
def test_unsupported_combinations_raise(name, inputs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        get_accumulator(name, inputs)


def test_a100_and_v100_differ_where_the_spec_says():
    args = ([[1.0]], [[1.0]], [-(1 - 2**-24)])
    assert dot(*args, inputs="fp16", accumulator="v100")[0] != dot(*args, inputs="fp16", accumulator="a100")[0]
