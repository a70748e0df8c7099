"""fpemu.gemm with BlockArray operands (fpemu/accumulator/gemm.py): the block-scaled models
through the one gemm, checked against the exact oracle of tests/mma_oracle.py; the errors for
mixing operand kinds, dense model names, dense-only options and bad operands; operands never
written, the same bits on any number of workers, torch results."""

from __future__ import annotations

import numpy as np
import pytest
from mma_oracle import oracle, same

import fpemu
from fpemu import mx
from fpemu.accumulator import get_accumulator

PRESETS = ["exact", "b200", "blackwell", "mmasim-blackwell"]


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
                                         "rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell"):
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


def test_operand_errors():
    a = mx.quantize(np.ones((2, 32)), "mxfp8_e4m3")
    b = mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=0)
    for acc in PRESETS:
        with pytest.raises(TypeError, match="BlockArray"):
            fpemu.gemm(np.ones((2, 32)), b, accumulator=acc)
        with pytest.raises(ValueError, match="does not broadcast to the result shape"):
            fpemu.gemm(a, b, np.ones((3, 2)), accumulator=acc)
        with pytest.raises(ValueError, match="block"):
            fpemu.gemm(a, mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=0, block_size=16), accumulator=acc)
        with pytest.raises(ValueError, match="blocked along K|axis"):
            fpemu.gemm(a, mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=1), accumulator=acc)
    with pytest.raises(TypeError, match="real numbers"):
        fpemu.gemm(a, b, np.array([["x"]]))
    with pytest.raises(ValueError, match=r"does not broadcast to the result shape \(\)"):
        fpemu.dot(mx.quantize(np.ones(32), "mxfp4"), mx.quantize(np.ones(32), "mxfp4"), [1.0, 2.0])
    with pytest.raises(ValueError, match="exact model only"):
        fpemu.gemm(mx.quantize(np.ones((1, 32)), "mxint8"), mx.quantize(np.ones((32, 1)), "mxint8", axis=0),
                  accumulator=fpemu.accumulator.BlockScaledFMA("m", instruction_k=32, frac_bits=30))
    with pytest.raises(ValueError, match="instruction= picks a preset"):
        fpemu.gemm(a, b, accumulator=get_accumulator("b200", "mxfp8_e4m3"), instruction="mxf8f6f4")


def test_inputs_are_not_modified_and_workers_do_not_matter():
    rng = np.random.default_rng(3)
    a = mx.quantize(rng.standard_normal((70, 96)), "mxfp8_e4m3")
    b = mx.quantize(rng.standard_normal((96, 9)), "mxfp8_e5m2", axis=0)
    c = rng.standard_normal((70, 9)).astype(np.float32)
    before = [x.copy() for x in (a.codes, a.scales, b.codes, b.scales, c)]
    for acc in PRESETS:
        r1 = fpemu.gemm(a, b, c, accumulator=acc, workers=1)
        assert same(r1, fpemu.gemm(a, b, c, accumulator=acc, workers=3))
    for x, y in zip(before, (a.codes, a.scales, b.codes, b.scales, c)):
        assert np.array_equal(x, y)


def test_matmul_and_dot_return_torch_tensors_when_asked():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    A = mx.quantize(rng.normal(size=(3, 64)), "mxfp8_e4m3")
    B = mx.quantize(rng.normal(size=(64, 2)), "mxfp8_e4m3", axis=0)
    want = fpemu.gemm(A, B, accumulator="b200")
    got = fpemu.gemm(A, B, accumulator="b200", returns="torch")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))
    assert np.array_equal(fpemu.gemm(A, B, accumulator="b200", returns="torch").numpy(), want)
    x, y = mx.quantize([1.0, 2.0, 3.0], "mxfp4"), mx.quantize([4.0, -1.0, 0.5], "mxfp4")
    d = fpemu.dot(x, y, returns="torch")
    assert isinstance(d, torch.Tensor) and d.shape == () and float(d) == 3.5
    assert isinstance(fpemu.dot(x, y), np.float32)
