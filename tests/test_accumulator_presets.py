"""The named presets (fpemu/accumulator/presets.py) and their lookup (lookup.py)."""

from __future__ import annotations

import dataclasses

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
    assert (mi250.kind, mi250.block, mi250.flush_subnormals, mi250.round_products) == ("pairwise", 4, True, True)
    mi300 = get_accumulator("mi300", "bf16")
    assert (mi300.late_c, mi300.block, mi300.frac_bits, mi300.term_rounding, mi300.sum_frac_bits, mi300.c_frac_bits) == (
        True, 8, 24, "rz", 31, 24
    )
    fp8 = get_accumulator("cdna3", ("e4m3fnuz", "e5m2fnuz"))
    assert (fp8.block, fp8.even_odd, fp8.lane_frac_bits, fp8.c_window) == (16, True, 24, 25)
    assert get_accumulator("mi100", "fp32").kind == get_accumulator("mi250", "fp32").kind == "sequential"
    assert not get_accumulator("mi250", "fp32").flush_subnormals  # the fp32 FMA chain does not flush
    assert not get_accumulator("mi100", "fp16").flush_subnormals


@pytest.mark.parametrize(
    "name,inputs,instruction,block",
    [
        ("mi250", "bf16", None, 4),  # bf16_1k is CDNA2's default for bf16
        ("mi250", "bf16", "bf16_1k", 4),
        ("mi250", "bf16", "bf16", 2),  # the CDNA1 instructions
        ("mi250/bf16", "bf16", None, 2),
        ("MI210/BF16", "bf16", "bf16", 2),
        ("mi100", "bf16", None, 2),
        ("mi300", "fp16", None, 8),
        ("mi300x", "fp16", "f16_k4", 4),
        ("cdna3/bf16_k4", "bf16", None, 4),
        ("mi300", "tf32", "xf32", 4),
        ("b200", ("e2m1", "e4m3"), "f8f6f4", 32),
    ],
)
def test_instruction_families(name, inputs, instruction, block):
    assert get_accumulator(name, inputs, instruction=instruction).block == block


def test_instruction_family_names_and_errors():
    assert get_accumulator("mi250", "bf16").name == "mi250/bf16"
    assert get_accumulator("mi250/bf16", "bf16").name == "mi250/bf16/bf16"
    with pytest.raises(ValueError, match="has no instruction family 'bf16_2k'; it has: f32, f16, bf16_1k, bf16"):
        get_accumulator("mi250", "bf16", instruction="bf16_2k")
    with pytest.raises(ValueError, match="f16_k4 instructions do not multiply bf16 by bf16"):
        get_accumulator("mi300", "bf16", instruction="f16_k4")
    with pytest.raises(ValueError, match="names the instruction 'bf16' but instruction='bf16_1k'"):
        get_accumulator("mi250/bf16", "bf16", instruction="bf16_1k")
    assert get_accumulator("h100/fp8", "e4m3") == get_accumulator("h100", "e4m3")
    with pytest.raises(ValueError, match="hopper\\) has no instruction family 'f8f6f4'"):
        get_accumulator("h100/f8f6f4", "e4m3")


@pytest.mark.parametrize("gpu,arch", [("mi100", "cdna1"), ("mi210", "cdna2"), ("mi250x", "cdna2"), ("mi300", "cdna3"),
                                      ("mi300x", "cdna3"), ("mi325x", "cdna3")])  # fmt: skip
def test_amd_gpu_names(gpu, arch):
    for inputs in ("fp32", "fp16", "bf16"):
        acc, want = get_accumulator(gpu, inputs), get_accumulator(arch, inputs)
        assert dataclasses.replace(acc, name="x") == dataclasses.replace(want, name="x")


@pytest.mark.parametrize("fa", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1"])
@pytest.mark.parametrize("fb", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1"])
def test_blackwell_takes_fp6_and_fp4_mixed(fa, fb):
    """kind::f8f6f4: any mix of FP8, FP6 and FP4 operands, one model (the B200 FP8 one)."""
    acc, want = get_accumulator("b200", (fa, fb)), get_accumulator("b200", "e4m3")
    unnamed = lambda m: dataclasses.replace(m, name="x", fp16_output=dataclasses.replace(m.fp16_output, name="y"))  # noqa: E731
    assert unnamed(acc) == unnamed(want)
    narrow = fa if fa not in ("e4m3", "e5m2") else "e2m1"
    with pytest.raises(ValueError, match=f"no {narrow} inputs"):  # Hopper and Ada: FP8 only
        get_accumulator("h100", (narrow, fb))


def test_ieee_presets():
    assert get_accumulator("exact").kind == "exact"
    assert get_accumulator("bf16").acc_format == "bf16"
    assert get_accumulator("pairwise_fp32").block is None
    assert set(NVIDIA_16 + ["mi250", "mi300", "volta", "cdna2", "mi100", "mi325x", "cdna1", "cdna2/bf16"]) <= set(accumulator_names())


@pytest.mark.parametrize(
    "name,inputs,message",
    [
        ("v100", "bf16", "v100 (volta) has no bf16 inputs"),
        ("t4", "e4m3", "no e4m3 inputs"),
        ("a100", "e4m3", "no e4m3 inputs"),
        ("mi300", "e4m3", "no e4m3 inputs"),
        ("mi250", "tf32", "no tf32 inputs"),
        ("mi100", ("fp16", "bf16"), "does not multiply fp16 by bf16"),
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


def test_an_amd_instruction_by_name_gives_its_family_and_k():
    # MMA-Sim's 16x16x8bf16 on CDNA2 is the CDNA1 instruction (pairs), not bf16_1k (fours).
    acc = get_accumulator("mi250", "bf16", instruction="v_mfma_f32_16x16x8bf16")
    assert (acc.kind, acc.block, acc.instruction_k, acc.flush_subnormals) == ("pairwise", 2, 8, True)
    assert get_accumulator("mi250", "bf16", instruction="f32_32x32x8bf16_1k").block == 4
    assert get_accumulator("mi300x", "fp16", instruction="f32_16x16x4_4b_f16").instruction_k == 4
    assert get_accumulator("mi300x", ("e4m3fnuz", "e5m2fnuz"), instruction="f32_32x32x16_fp8_bf8").instruction_k == 16


def test_an_instruction_of_other_inputs_is_refused_by_name():
    with pytest.raises(ValueError, match="f32 instructions do not multiply bf16 by bf16"):
        get_accumulator("mi250", "bf16", instruction="f32_16x16x4f32")
    with pytest.raises(ValueError, match="has no instruction family 'f32_16x16x9bf16'"):
        get_accumulator("mi250", "bf16", instruction="f32_16x16x9bf16")


def test_block_scaled_kinds_are_not_dense_models():
    assert not any(n.startswith("mmasim") for n in accumulator_names(block_scaled=False))
    with pytest.raises(ValueError, match="mmasim-blackwell has no dense MMA: plain arrays take a dense model"):
        get_accumulator("mmasim-blackwell", "e4m3")
    with pytest.raises(ValueError, match="no instruction family 'mxf8f6f4'"):
        get_accumulator("b200", "e4m3", instruction="mxf8f6f4")
