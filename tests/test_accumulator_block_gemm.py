"""fpemu.gemm with BlockArray operands (fpemu.accumulator.block_gemm): the block-scaled models
through the one gemm, checked against the exact oracle of tests/mma_oracle.py, and the errors
for mixing operand kinds, dense model names and dense-only options."""

from __future__ import annotations

import numpy as np
import pytest
from test_mx_mma import oracle, same

import fpemu
from fpemu import mx


@pytest.fixture
def operands():
    rng = np.random.default_rng(2)
    a = mx.quantize(rng.standard_normal((5, 96)) * np.exp2(rng.integers(-12, 12, (5, 96))), "mxfp8_e4m3")
    b = mx.quantize(rng.standard_normal((96, 3)), "mxfp8_e5m2", axis=0)
    c = rng.standard_normal((5, 3)).astype(np.float32)
    return a, b, c


@pytest.mark.parametrize("acc", ["exact", "b200", "blackwell", "mmasim-blackwell", "B200"])
def test_gemm_of_block_arrays_is_the_block_scaled_model(operands, acc):
    a, b, c = operands
    got = fpemu.gemm(a, b, c, accumulator=acc)
    assert got.dtype == np.float32 and same(got, oracle(a, b, c, acc.lower()))
    assert same(fpemu.gemm(a, b, accumulator=acc), oracle(a, b, None, acc.lower()))


def test_instruction_in_the_name():
    rng = np.random.default_rng(6)
    a = mx.quantize(rng.standard_normal((2, 64)), "mxfp4")
    b = mx.quantize(rng.standard_normal((64, 2)), "mxfp4", axis=0)
    for inst in ("mxf8f6f4", "mxf4nvf4"):
        got = fpemu.gemm(a, b, 0.5, accumulator=f"mmasim-blackwell/{inst}")
        assert same(got, oracle(a, b, 0.5, "mmasim-blackwell", inst))
    model = fpemu.get_accumulator("b200", "mxfp4", instruction="mxf8f6f4")
    assert same(fpemu.gemm(a, b, accumulator=model), oracle(a, b, None, "b200", "mxf8f6f4"))


def test_gemm_block_errors(operands):
    a, b, _ = operands
    with pytest.raises(TypeError, match="b is a BlockArray and the other a ndarray"):
        fpemu.gemm(np.ones((5, 96)), b, accumulator="b200")
    with pytest.raises(TypeError, match="a is a BlockArray"):
        fpemu.gemm(a, np.ones((96, 3)), inputs="e4m3", accumulator="h100")
    with pytest.raises(ValueError, match="h100 \\(hopper\\) has no block-scaled MMA: block arrays take exact, b200, "
                                         "blackwell or mmasim-blackwell"):
        fpemu.gemm(a, b, accumulator="h100")
    with pytest.raises(ValueError, match="BlockFMA 'h100/e4m3' has no block-scaled MMA"):
        fpemu.gemm(a, b, accumulator=fpemu.get_accumulator("h100", "e4m3"))
    with pytest.raises(ValueError, match="unknown accumulator 'nope'"):
        fpemu.gemm(a, b, accumulator="nope")
    with pytest.raises(ValueError, match="leave inputs out"):
        fpemu.gemm(a, b, inputs="e4m3", accumulator="b200")
    with pytest.raises(ValueError, match="out must be 'fp32'"):
        fpemu.gemm(a, b, accumulator="b200", out="bf16")
    with pytest.raises(TypeError, match="gemm needs inputs="):
        fpemu.gemm(np.ones((2, 2)), np.ones((2, 2)), accumulator="h100")


def test_dense_gemm_unchanged():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    B = np.array([[0.5, 0.0], [0.25, 1.0]])
    assert fpemu.gemm(A, B, inputs="fp16", accumulator="h100").tolist() == [[1.0, 2.0], [2.5, 4.0]]
