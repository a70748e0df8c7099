"""Each precision's forward linear layer, bit for bit: the output equals the public casts of its
operands (``fpemu.quantize``, ``fpemu.mx.quantize``) then their FP32 product plus the bias
(formats only), or ``fpemu.gemm`` of the same operands with the unit's preset (accumulator
mode); the weight is given as the transposed view a model passes ([out, in] stored)."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.train.gemm_precisions import GEMM_PRECISIONS, forward_linear, gemm_precision, precision_label
from fpemu.train.accumulate import accumulator_matmul
from fpemu.train.linears import LinearFP8, LinearLow

RNG = np.random.default_rng(38)
X = (RNG.standard_normal((40, 96)) * np.exp(RNG.standard_normal((40, 96)))).astype(np.float32)
X[3, 5] = 300.0  # an outlier: saturation and big block scales
X[7, :] *= np.float32(1e-6)  # a row near the bottom of the low formats
W_STORED = (RNG.standard_normal((48, 96)) * 0.1).astype(np.float32)  # [out, in], as in a checkpoint
W = W_STORED.T
B = RNG.standard_normal(48).astype(np.float32)
BLOCKS = {"mxfp8": ("mxfp8_e4m3", {"scale_rounding": "rceil"}), "mxfp6": ("mxfp6_e3m2", {}), "mxfp4": ("mxfp4", {}),
          "nvfp4": ("nvfp4", {}), "nvfp4_4o6mae": ("nvfp4", {"four_over_six": "mae"}),
          "nvfp4_4o6mse": ("nvfp4", {"four_over_six": "mse"})}


def _fp8_operands(t: np.ndarray):
    """TransformerEngine's current scaling from first principles: scale = 448 / amax in FP32,
    the scaled tensor cast to E4M3 with saturation, the inverse scale 1 / scale in FP32."""
    scale = np.float32(448.0) / np.float32(np.abs(t).max())
    q = np.asarray(fpemu.quantize(t * scale, "e4m3", overflow="saturate"), np.float32)
    return q, np.float32(1.0) / scale


def _reference(precision: str, unit: str | None) -> np.ndarray:
    if precision == "fp32":
        return X @ W + B
    if precision in ("bf16", "fp16"):
        xq, wq = (np.asarray(fpemu.quantize(t, precision), np.float32) for t in (X, W))
        y = xq @ wq if unit is None else fpemu.gemm(xq, wq, inputs=precision, accumulator=unit)
        return y + B
    if precision == "e4m3":
        (xq, ix), (wq, iw) = _fp8_operands(X), _fp8_operands(W)
        y = xq @ wq if unit is None else fpemu.gemm(xq, wq, inputs="e4m3", accumulator=unit)
        return y * ix * iw + B
    if precision == "fp8_block":  # the casts of fpemu.train.blockwise_fp8, each 128 of K by the unit
        from fpemu.train.blockwise_fp8 import blockwise_cast, blockwise_matmul

        mm = None if unit is None else accumulator_matmul(unit, fpemu.get_format("e4m3"), promote=128)
        return blockwise_matmul(blockwise_cast(X, (1, 128)), blockwise_cast(W, (128, 128)), mm) + B
    block, kw = BLOCKS[precision]
    xb, wb = mx.quantize(X, block, axis=1, **kw), mx.quantize(W, block, axis=0, **kw)
    if unit is None:
        return np.asarray(xb.dequantize(), np.float32) @ np.asarray(wb.dequantize(), np.float32) + B
    return fpemu.gemm(xb, wb, accumulator=unit) + B


@pytest.mark.parametrize("precision", GEMM_PRECISIONS)
def test_formats_only_is_the_casts_then_the_fp32_product(precision):
    y = forward_linear(precision).fwd(X, W, B, record=False)[0]
    ref = _reference(precision, None)
    assert y.dtype == np.float32 and np.array_equal(y.view(np.uint32), ref.view(np.uint32))


ROWS = [(p, "h100") for p in ("bf16", "fp16", "e4m3", "fp8_block")] + [(p, "b200") for p in GEMM_PRECISIONS[1:]]


@pytest.mark.parametrize("precision,unit", ROWS)
def test_through_a_unit_is_fpemu_gemm_of_the_same_operands(precision, unit):
    y = forward_linear(precision, unit).fwd(X, W, B, record=False)[0]
    ref = _reference(precision, unit)
    assert np.array_equal(y.view(np.uint32), ref.view(np.uint32))


def test_the_unit_changes_the_sums():
    # The test above can fail: a unit's truncating sums are not the FP32 product's.
    for precision, unit in (("bf16", "h100"), ("e4m3", "h100"), ("mxfp8", "b200")):
        assert not np.array_equal(_reference(precision, unit), _reference(precision, None)), (precision, unit)


def test_the_layers_are_the_training_layers():
    low, fp8 = forward_linear("fp16"), forward_linear("e4m3")
    assert isinstance(low, LinearLow) and low.round_output is False and isinstance(fp8, LinearFP8)
    assert type(forward_linear("mxfp6")).__name__ == "LinearBlock" and forward_linear("nvfp4").recipe.label == "plain"


def test_names_and_refusals():
    assert gemm_precision("MXFP8_E4M3") == "mxfp8" and precision_label("nvfp4", "B200") == "nvfp4@b200"
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        forward_linear("fp8")
    with pytest.raises(TypeError, match="a precision is a name"):
        forward_linear(None)
    with pytest.raises(ValueError, match="fp32 is the reference"):
        forward_linear("fp32", "h100")
    with pytest.raises(ValueError, match="h100 \\(hopper\\) has no block-scaled MMA"):
        forward_linear("nvfp4", "h100")  # Hopper has no block-scaled MMA
    with pytest.raises(ValueError, match="has no e4m3 inputs"):
        forward_linear("e4m3", "mi300x")  # CDNA3 takes the FNUZ formats


def test_inputs_are_not_modified():
    x, w = X.copy(), W_STORED.copy()
    for p in GEMM_PRECISIONS:
        forward_linear(p).fwd(x, w.T, B)
    assert np.array_equal(x, X) and np.array_equal(w, W_STORED)



def test_four_over_six_precisions_are_nvfp4_with_the_rule():
    from fpemu.train.gemm_precisions import block_format

    for name, rule in (("nvfp4_4o6mae", "mae"), ("nvfp4_4o6mse", "mse")):
        assert forward_linear(name).recipe.four_over_six == rule and block_format(name) == "nvfp4"
    # the rule changes the bits (so the two rows of the tests above check something nvfp4's do not)
    assert not np.array_equal(_reference("nvfp4_4o6mae", None), _reference("nvfp4", None))
