"""Accumulator models: published hardware feature tests, special values and the exact model's
sticky bit, through ``dot`` (presets, API, gemm_error and the CLI have files of their own)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.accumulator import dot

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
