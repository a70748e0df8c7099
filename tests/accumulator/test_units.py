"""The table of matrix units (fpemu/accumulator/units.py): every preset's parameters as the
table and SPEC section 5 give them, AMD's instruction families and instructions, and the
published hardware feature tests, special values and the exact model's sticky bit through
``dot`` (the hardware dumps and MMA-Sim have files of their own: test_units_hwdata.py,
test_units_mmasim*.py)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.accumulator import accumulator_names, dot, get_accumulator

NVIDIA_16 = ["v100", "t4", "a100", "a30", "a2", "ada", "l40s", "h100", "h200", "h800", "b200"]
F24 = ["t4", "a100", "a30", "a2", "ada", "l40s"]


def d(a, b, c=0.0, *, acc, inputs="fp16", out="fp32") -> float:
    """One dot product; a and b zero-padded to 16 (padding never changes a block's result)."""
    a = list(a) + [0.0] * (16 - len(a))
    b = list(b) + [0.0] * (16 - len(b))
    return float(dot(np.array([a]), np.array([b]), [c], inputs=inputs, accumulator=acc, out=out)[0])


# ---- published feature tests (SPEC section 5) ----------------------------------------------------
def test_v100_fp16_output_keeps_subnormal_inputs():
    assert d([2**-24], [4.0], acc="v100", out="fp16") == 2**-22
    assert d([2**-24], [4.0], acc="v100") == 2**-22


@pytest.mark.parametrize("gpu", NVIDIA_16)
def test_subnormal_accumulator_survives(gpu):
    assert d([0.0], [0.0], 2**-149, acc=gpu) == 2**-149


@pytest.mark.parametrize("gpu", NVIDIA_16)
def test_products_are_exact(gpu):
    x = 1 - 2**-11
    assert d([x], [x], acc=gpu) == 1 - 2**-10 + 2**-22


def test_v100_truncates_small_terms():
    assert d([1.0] * 4, [2**-24] * 4, 1.0, acc="v100") == 1.0


@pytest.mark.parametrize("gpu", F24)
def test_f24_units_keep_the_2_pow_minus_24_terms(gpu):
    # Consequence of F = 24 (the A30 result below): the four 2**-24 products survive.
    assert d([1.0] * 4, [2**-24] * 4, 1.0, acc=gpu) == 1 + 2**-22


def test_alignment_width_v100_vs_t4_a100():
    c = -(1 - 2**-24)
    assert d([1.0], [1.0], c, acc="v100") == 2**-23
    for gpu in ("t4", "a100"):
        assert d([1.0], [1.0], c, acc=gpu) == 2**-24


def test_truncation_is_toward_zero_term_by_term():
    c = -1 + 2**-24
    assert d([1.0, 1.0], [1.0, -(2**-24)], c, acc="v100") == 2**-23
    for gpu in ("t4", "a100"):
        r = dot([[1.0, 1.0]], [[1.0, -(2**-24)]], [c], inputs="fp16", accumulator=gpu)
        assert r.view(np.uint32).tolist() == [0]  # +0, never -0


@pytest.mark.parametrize("gpu", NVIDIA_16)
def test_one_rounding_toward_zero_at_the_end(gpu):
    c = 1 + 2**-22 + 2**-23
    assert d([1.0] * 4, [1.0] * 4, c, acc=gpu) == 5.0
    assert d([-1.0] * 4, [1.0] * 4, -c, acc=gpu) == -5.0


def test_a30_keeps_2_pow_minus_24():
    assert d([2**-24, 2**-24], [1.0, 1.0], 1.0, acc="a30") == 1 + 2**-23


@pytest.mark.parametrize("k", range(2, 17))
def test_a30_block_size_probe(k):
    a = [1.0] + [0.0] * (k - 2) + [2**-23]
    b = [1.0] + [0.0] * (k - 2) + [1.0]
    got = float(dot([a], [b], [1 + 2**-23], inputs="fp16", accumulator="a30")[0])
    # Within one block of 8 everything is added at once; across two blocks the first RZ
    # rounding to fp32 loses 2**-23.
    assert got == (2 + 2**-22 if k <= 8 else 2.0)


def test_worked_example_in_docs():
    """docs/accumulator.md: same inputs, different bits on V100 and A100."""
    args = ([[1.0, 1.0]], [[1.0, -(2**-24)]], [-1 + 2**-24])
    v100 = dot(*args, inputs="fp16", accumulator="v100")
    a100 = dot(*args, inputs="fp16", accumulator="a100")
    assert (hex(v100.view(np.uint32)[0]), hex(a100.view(np.uint32)[0])) == ("0x34000000", "0x0")


def test_fp8_keeps_13_fraction_bits_on_hopper_and_ada():
    # 1 + 2**-13 survives, 2**-14 below it is cut by the 13-bit fp32 result (RZ).
    for gpu in ("ada", "h100"):
        got = d([1.0, 2**-7, 2**-7], [1.0, 2**-6, 2**-7], 0.0, acc=gpu, inputs="e4m3")
        assert got == 1 + 2**-13
    assert d([1.0, 2**-7, 2**-7], [1.0, 2**-6, 2**-7], 0.0, acc="h100", inputs="fp16") == 1 + 2**-13 + 2**-14


# ---- special values ------------------------------------------------------------------------------
SPECIAL_MODELS = ["v100", "a100", "h100", "exact", "fp32", "fp16", "pairwise_fp32", "mi250", "mi300"]


@pytest.mark.parametrize("acc", SPECIAL_MODELS)
@pytest.mark.parametrize(
    "a,b,c,want",
    [
        ([np.nan, 1.0], [1.0, 1.0], 0.0, "nan"),
        ([np.inf, 1.0], [0.0, 1.0], 0.0, "nan"),
        ([np.inf, -np.inf], [1.0, 1.0], 0.0, "nan"),
        ([np.inf, 1.0], [1.0, 1.0], -np.inf, "nan"),
        ([np.inf, 1.0], [1.0, -1.0], 0.0, np.inf),
        ([1.0, 2.0], [-np.inf, 1.0], 5.0, -np.inf),
        ([1.0, 2.0], [1.0, 1.0], np.inf, np.inf),
        ([1.0, 2.0], [1.0, 1.0], np.nan, "nan"),
    ],
)
def test_inf_and_nan(acc, a, b, c, want):
    # The pair is repeated 5 times so that Inf/NaN also travel across block boundaries.
    got = dot([a * 5], [b * 5], [c], inputs="fp16", accumulator=acc)[0]
    if want == "nan":
        assert np.isnan(got)
    else:
        assert got == want


def test_block_overflow_is_ieee_rz_and_rne():
    big = float(fpemu.get_format("bf16").max)
    # RZ (tensor core, fp32 output): overflow gives the largest finite fp32 (IEEE RZ).
    assert d([big, big], [big, big], acc="h100", inputs="bf16") == np.finfo(np.float32).max
    # RNE (the IEEE loop): Inf.
    assert d([big, big], [big, big], acc="fp32", inputs="bf16") == np.inf
    # fp16 output of a tensor core rounds RNE: Inf.
    assert d([255.0, 255.0], [255.0, 255.0], acc="a100", inputs="fp16", out="fp16") == np.inf


def test_negative_zero_results_become_positive_in_block_models():
    got = dot([[-1.0]], [[1.0]], [1.0], inputs="fp16", accumulator="h100")
    assert got.view(np.uint32).tolist() == [0]
    got = dot([[-0.0]], [[1.0]], [-0.0], inputs="fp16", accumulator="h100")
    assert got.view(np.uint32).tolist() == [0]
    # The IEEE loop keeps -0 + -0 = -0.
    got = dot([[-0.0]], [[1.0]], [-0.0], inputs="fp16", accumulator="fp32")
    assert got.view(np.uint32).tolist() == [0x80000000]


# ---- the exact model needs its sticky bit ---------------------------------------------------------
@pytest.mark.parametrize(
    "a,c",
    [
        ([1.0, 2**-24, 2**-100], 0.0),  # a tie broken by a far smaller term: rounds up
        ([1.0, 2**-24, -(2**-100)], 0.0),  # ... or down
        ([2.0**100, 1.0, -(2.0**100), 2**-24, 2**-80], 0.0),  # cancellation across many limbs
        ([-(2.0**-120), 2.0**-149 * 3], 2.0**-126),
        ([3.0e38, 3.0e38, -3.0e38], -1.0),
        ([2.0**-140] * 7, 2**-149),
    ],
)
def test_exact_model_rounds_the_exact_sum(a, c):
    a = [float(np.float32(x)) for x in a]
    exact = sum((Fraction(x) for x in a), Fraction(c))
    got = float(dot([a], [[1.0] * len(a)], [c], inputs="fp32", accumulator="exact")[0])
    assert Fraction(got) == _rne_fp32(exact)


def _rne_fp32(x: Fraction) -> Fraction:
    if x == 0:
        return Fraction(0)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > abs(x):
        e -= 1
    q = Fraction(2) ** (max(e, -126) - 23)
    return round(x / q) * q


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
