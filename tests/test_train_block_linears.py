"""The block-scaled linear layers (fpemu.train.block_linears) against fpemu.mx, the NVFP4
recipe elements one by one."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.train.block_linears import (
    LinearBlock,
    NVFP4Recipe,
    hadamard_matrix,
    hadamard_rows,
    parse_recipe,
)
from fpemu.train.stats import CastStats

F32 = np.float32
RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 32)).astype(F32)
W = (0.1 * RNG.standard_normal((32, 48))).astype(F32)
DY = (1e-3 * RNG.standard_normal((64, 48))).astype(F32)


def _deq(q) -> np.ndarray:
    return np.asarray(q.dequantize(), F32)


def test_nvfp4_linear_uses_mx_quantize_along_each_k():
    lin = LinearBlock("nvfp4", NVFP4Recipe(weights_2d=True, stochastic=False, hadamard=False, bf16_last=0))
    y, ctx = lin.fwd(X, W, None)
    xq = _deq(fpemu.mx.quantize(X, "nvfp4", axis=1))
    wq = _deq(fpemu.mx.quantize(W, "nvfp4", axis=(0, 1), block_size=(16, 16)))
    assert np.array_equal(y, xq @ wq)
    dx, dw, db = lin.bwd(DY, ctx, CastStats())
    assert np.array_equal(dx, _deq(fpemu.mx.quantize(DY, "nvfp4", axis=1)) @ wq.T)  # the same 2-D weight
    ref = _deq(fpemu.mx.quantize(X, "nvfp4", axis=0)).T @ _deq(fpemu.mx.quantize(DY, "nvfp4", axis=0))
    assert np.array_equal(dw, ref)
    one_d = LinearBlock("nvfp4", NVFP4Recipe(False, False, False, 0))
    _, ctx1 = one_d.fwd(X, W, None)
    dx1, _, _ = one_d.bwd(DY, ctx1, None)
    assert np.array_equal(dx1, _deq(fpemu.mx.quantize(DY, "nvfp4", axis=1)) @ _deq(fpemu.mx.quantize(W, "nvfp4", axis=1)).T)


def test_mxfp8_linear_uses_rceil_blocks_of_32():
    lin = LinearBlock("mxfp8")
    y, _ = lin.fwd(X, W, None)
    ref = _deq(fpemu.mx.quantize(X, "mxfp8_e4m3", axis=1, scale_rounding="rceil")) @ \
        _deq(fpemu.mx.quantize(W, "mxfp8_e4m3", axis=0, scale_rounding="rceil"))
    assert np.array_equal(y, ref)


def test_stochastic_rounding_is_unbiased_where_rne_is_not():
    g = np.full((64, 48), 1.2e-3, F32)
    g[::16] = 6e-3  # one per block of 16 tokens sets the scale: 1.2e-3 falls between E2M1's 1 and 1.5
    x = np.ones((64, 32), F32)
    exact = x.T @ g
    rne = LinearBlock("nvfp4", NVFP4Recipe(False, False, False, 0))
    sr = LinearBlock("nvfp4", NVFP4Recipe(False, True, False, 0), seed=3)
    _, dw_rne, _ = rne.bwd(g, rne.fwd(x, W, None)[1], None)
    runs = [sr.bwd(g, sr.fwd(x, W, None)[1], None)[1] for _ in range(20)]
    err_rne = abs(float(dw_rne.mean() / exact.mean()) - 1)
    err_sr = abs(float(np.mean(runs, axis=0).mean() / exact.mean()) - 1)
    assert err_rne > 0.1 and err_sr < 0.02  # measured: RNE -12.5% (1.2e-3 -> 1e-3); SR mean +0.01%


def test_hadamard_transform_keeps_wgrad_and_spreads_outliers():
    m = hadamard_matrix(7)
    assert np.allclose(m @ m.T, np.eye(16), atol=1e-6)
    x = np.zeros((32, 4), F32)
    x[3, 0] = 100.0  # one outlier in a block of 16 rows
    xt = hadamard_rows(x, m)
    assert np.allclose(np.abs(xt[:16, 0]), 25.0) and np.allclose(xt.T @ xt, x.T @ x, rtol=1e-6)
    odd = RNG.standard_normal((20, 3)).astype(F32)  # 20 rows: the last block is zero-padded
    assert np.allclose(hadamard_rows(odd, m).T @ hadamard_rows(odd, m), odd.T @ odd, atol=1e-4)


def test_recipes_parse():
    assert parse_recipe("all") == NVFP4Recipe() and parse_recipe("none") == NVFP4Recipe(False, False, False, 0)
    assert parse_recipe("sr,last2") == NVFP4Recipe(False, True, False, 2)
    with pytest.raises(ValueError, match="unknown NVFP4 recipe element 'hadamard'"):
        parse_recipe("2d,hadamard")
