"""NVFP4's per-tensor scales on a block-scaled product's fp32 result, as the model says
(:attr:`~fpemu.accumulator.BlockScaledAccumulator.alpha`): decoded exactly (fpemu's exact
model) or as cuBLASLt's float32 alpha, computed as TransformerEngine computes it. MX formats
and ``nvfp4_ue5m3`` have none.

>>> from fpemu.mx import quantize
>>> x = quantize(np.ones((1, 16)), "nvfp4", global_amax=2688.0)
>>> float(cublaslt_alpha(x, x))
1.0
"""

from __future__ import annotations

import numpy as np

from ..mx.array import BlockArray
from ..mx.mx_scales import rn32_product
from .model import BlockScaledAccumulator

def _te_factor_inv(a: BlockArray, b: BlockArray) -> np.float32:
    """TransformerEngine's ``factor_inv``: fp32(1 / (6 * 6 * fp8_max_A * fp8_max_B)), each
    operand's ``nvfp4_e4m3_max`` (448; 256 for Four Over Six) (recipe/nvfp4.cu)."""
    return np.float32(1.0 / (36.0 * a.e4m3_max * b.e4m3_max))


def cublaslt_alpha(a: BlockArray, b: BlockArray) -> np.float32:
    """NVFP4's per-tensor scales as one float32 alpha, as TransformerEngine hands it to
    cuBLASLt: ``((1 * amax_A) * amax_B) * fp32(1/(6*6*448*448))`` in float32 (256 in place of
    448 for an operand quantized with Four Over Six's bound) (recipe/nvfp4.cu
    ``compute_nvfp4_per_tensor_scale_kernel``, alpha_in = 1); operands of torchao's variant:
    ``fp32(per_tensor_scale_A * per_tensor_scale_B)`` (its ``_addmm_nvfp4_dispatch``)."""
    f32 = np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        if a.variant == b.variant == "te":
            return f32(f32(f32(1.0) * a.global_amax) * f32(b.global_amax)) * _te_factor_inv(a, b)
        return f32(a.global_scale) * f32(b.global_scale)


def _global_scales(acc: np.ndarray, ga: np.float32, gb: np.float32) -> np.ndarray:
    """acc * fp32(ga * gb), as a GEMM's float32 alpha does; where that alpha overflows or is
    subnormal (it would turn finite results into Inf or lose bits), acc * ga * gb rounded once."""
    alpha = np.float32(ga) * np.float32(gb)
    if np.isfinite(alpha) and alpha >= np.finfo(np.float32).tiny:
        return acc * alpha
    p = acc.astype(np.float64) * float(ga)  # 24 x 24 bits: exact
    finite = np.isfinite(p)
    out = rn32_product(np.where(finite, p, 0.0), float(gb))
    out[~finite] = (p[~finite] * float(gb)).astype(np.float32)
    return np.where(out == 0, np.copysign(out, acc), out)  # alpha > 0: a zero keeps acc's sign


def apply_tensor_scales(acc: np.ndarray, a: BlockArray, b: BlockArray, model: BlockScaledAccumulator) -> np.ndarray:
    """The fp32 accumulator times NVFP4's per-tensor scales, as the model says (MX and
    nvfp4_ue5m3, which have none: unchanged)."""
    if not a.format.tensor_scale:
        return acc
    with np.errstate(over="ignore", invalid="ignore"):
        if model.alpha == "decode":
            return _global_scales(acc, a.global_scale, b.global_scale)
        return acc * cublaslt_alpha(a, b)  # D = fp32(alpha * acc): Inf and NaN as IEEE
