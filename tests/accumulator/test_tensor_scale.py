"""NVFP4's per-tensor scales (fpemu/accumulator/tensor_scale.py): cuBLASLt's alpha computed as
TransformerEngine computes it, and applied to the fp32 accumulator, against the Fraction
oracle of tests/mma_oracle.py."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from mx_helpers import block_array
import pytest
from mma_oracle import f32_mul, oracle, same, to_f32

import fpemu
from fpemu import mx
from fpemu.accumulator import cublaslt_alpha


def arrays(fa, fb, A, B, sa, sb, block, amax=2688.0):
    """BlockArrays of A (M, K) and B (K, N) from codes and per-(row, K-block) scale codes."""
    kw = dict(global_amax=amax) if fa == "nvfp4" else {}
    return (block_array(np.asarray(A, np.uint8), np.asarray(sa, np.uint8), fa, 1, block, **kw),
            block_array(np.asarray(B, np.uint8), np.asarray(sb, np.uint8), fb, 0, block, **kw))


@pytest.mark.parametrize("amax_a, amax_b", [(1.0, 1.0), (3.0, 1000.0), (2688.0, 2688.0), (1e-30, 7.0), (3e38, 3e38)])
def test_cublaslt_alpha_is_te_arithmetic(amax_a, amax_b):
    qa = mx.quantize(np.ones((1, 16)), "nvfp4", global_amax=amax_a)
    qb = mx.quantize(np.ones((16, 1)), "nvfp4", axis=0, global_amax=amax_b)
    fa, fb = float(np.float32(amax_a)), float(np.float32(amax_b))
    factor = to_f32(Fraction(1, 6 * 6 * 448 * 448))
    want = f32_mul(f32_mul(f32_mul(1.0, fa), fb), factor)
    assert same(cublaslt_alpha(qa, qb), want)


def test_nvfp4_alpha_applied_to_the_accumulator():
    rng = np.random.default_rng(8)
    a = mx.quantize(rng.standard_normal((3, 64)), "nvfp4", global_amax=5.0)
    b = mx.quantize(rng.standard_normal((64, 2)), "nvfp4", axis=0, global_amax=7.0)
    one_a, one_b = arrays("nvfp4", "nvfp4", a.codes, b.codes, a.scales, b.scales, 16)  # alpha 1
    alpha = float(cublaslt_alpha(a, b))
    for acc in ("b200", "mmasim-blackwell"):
        base = oracle(one_a, one_b, None, acc)
        want = np.array([[f32_mul(float(x), alpha) for x in row] for row in base], np.float32)
        assert same(fpemu.gemm(a, b, accumulator=acc), want), acc
