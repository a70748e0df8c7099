"""The public products dot and gemm (fpemu/accumulator/matmul.py): batching, operand
rounding, output formats and refused input (more edge cases: test_accumulator_edge_cases.py)."""

from __future__ import annotations

import numpy as np
import pytest
from test_accumulator import d

import fpemu
from fpemu.accumulator import dot, gemm


# ---- API ----------------------------------------------------------------------------------------
def test_dot_batches_over_leading_axes():
    rng = np.random.default_rng(0)
    a = fpemu.quantize(rng.standard_normal((2, 3, 20)), "fp16")
    b = fpemu.quantize(rng.standard_normal((2, 3, 20)), "fp16")
    c = rng.standard_normal((2, 3)).astype(np.float32)
    got = dot(a, b, c, inputs="fp16", accumulator="a100")
    assert got.shape == (2, 3) and got.dtype == np.float32
    flat = dot(a.reshape(6, 20), b.reshape(6, 20), c.reshape(6), inputs="fp16", accumulator="a100")
    np.testing.assert_array_equal(got.reshape(6), flat)


@pytest.mark.parametrize("acc", ["a100", "h100", "exact", "fp16", "pairwise_fp32", "mi250", "mi300"])
def test_gemm_matches_dot_elementwise(acc):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 37))
    B = rng.standard_normal((37, 4))
    C = rng.standard_normal((5, 4))
    got = gemm(A, B, C, inputs="bf16", accumulator=acc)
    Aq, Bq = fpemu.quantize(A, "bf16"), fpemu.quantize(B, "bf16")
    rows = dot(np.repeat(Aq, 4, axis=0), np.tile(Bq.T, (5, 1)), C.reshape(-1), inputs="bf16", accumulator=acc)
    np.testing.assert_array_equal(got, rows.reshape(5, 4))


def test_gemm_quantizes_inputs_with_rne():
    x = 1 + 2**-11 + 2**-20  # just above the fp16 tie: RNE goes up
    got = gemm([[x]], [[1.0]], inputs="fp16", accumulator="exact")
    assert got[0, 0] == 1 + 2**-10


def test_gemm_mixed_fp8_inputs_and_outputs():
    A = np.array([[1.5, 2.0]])
    B = np.array([[3.0], [0.25]])
    assert gemm(A, B, inputs=("e4m3", "e5m2"), accumulator="h100")[0, 0] == 5.0
    # c = 1/3 -> fp16 0x3555; aligned to E = 2 with 13 bits it is cut to 682 * 2**-11; the sum
    # 5 + 682/2048 is rounded RNE to fp16: 5 + 85/256.
    assert gemm(A, B, [[1 / 3]], inputs="e4m3", accumulator="h100", out="fp16")[0, 0] == 5 + 85 / 256
    assert gemm(A, B, [[2**-9]], inputs="e4m3", accumulator="exact", out="bf16")[0, 0] == 5.0


def test_gemm_output_bf16_rounds_the_fp32_result():
    got = gemm([[1.0, 1.0]], [[1.0], [2**-8 + 2**-12]], inputs="bf16", accumulator="a100", out="bf16")
    assert got[0, 0] == 1 + 2**-7  # fp32 1+2**-8+2**-12 rounded to bf16 (RNE: above the tie)


def test_fp16_output_rounds_c_to_fp16_first():
    c = 1 + 2**-11  # a tie in fp16: RNE -> 1.0
    assert d([0.0], [0.0], c, acc="a100", out="fp16") == 1.0
    assert d([0.0], [0.0], c, acc="a100") == c


def test_inputs_are_not_modified():
    A = np.array([[1.1, 2.2]])
    B = np.array([[3.3], [4.4]])
    C = np.array([[0.1]])
    copies = [A.copy(), B.copy(), C.copy()]
    gemm(A, B, C, inputs="e4m3", accumulator="h100")
    for x, y in zip((A, B, C), copies):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: gemm(np.ones((2, 3)), np.ones((2, 3)), inputs="fp16", accumulator="a100"), ValueError, "gemm needs"),
        (lambda: dot(np.ones(3), np.ones(4), inputs="fp16", accumulator="a100"), ValueError, "same shape"),
        (lambda: gemm(np.ones((2, 3)), np.ones((3, 2)), inputs="fp16", accumulator="a100", out="e4m3"), ValueError, "out must be"),
        (lambda: gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones(5), inputs="fp16", accumulator="a100"), ValueError, "broadcast"),
        (lambda: gemm([["x"]], [[1.0]], inputs="fp16", accumulator="a100"), TypeError, "real numbers"),
        (lambda: gemm([[1.0]], [[1.0]], inputs=3, accumulator="a100"), TypeError, "inputs"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp16", accumulator=3), TypeError, "accumulator"),
    ],
)
def test_bad_input_raises_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()
