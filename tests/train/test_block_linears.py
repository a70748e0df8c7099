"""The block-scaled linear layers (fpemu.train.block_linears) against fpemu.mx, the NVFP4
recipe elements one by one."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.train.block_linears import (
    LinearBlock,
    NVFP4Recipe,
    block_view,
    hadamard_matrix,
    hadamard_rows,
    parse_recipe,
    transposed,
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


@pytest.mark.parametrize("kind, block, options", [
    ("mxfp6_e3m2", "mxfp6_e3m2", {}), ("mxfp4", "mxfp4", {}), ("mxfp8_e5m2", "mxfp8_e5m2", {"scale_rounding": "rceil"}),
])
def test_every_mx_format_quantizes_along_each_k(kind, block, options):
    lin = LinearBlock(kind)
    assert lin.options == options and lin.low is fpemu.mx.get_block_format(block).element
    y, ctx = lin.fwd(X, W, None)
    q = {ax: (lambda t, a=ax: _deq(fpemu.mx.quantize(t, block, axis=a, **options))) for ax in (0, 1)}
    assert np.array_equal(y, q[1](X) @ q[0](W))
    dx, dw, db = lin.bwd(DY, ctx, None)
    assert np.array_equal(dx, q[1](DY) @ q[1](W).T)
    assert np.array_equal(dw, q[0](X).T @ q[0](DY)) and np.array_equal(db, DY.sum(axis=0))


def test_options_replace_the_default_scale_rule():
    lin = LinearBlock("mxfp8", options={"convention": "torchao-0.18", "scale_rounding": "rceil"})
    x = np.float32([[2.0**-120 * 1.0000001] * 32, [448.0 * 1.5] + [1.0] * 31])  # where the two RCEILs part
    ref = _deq(fpemu.mx.quantize(x, "mxfp8_e4m3", axis=1, convention="torchao-0.18", scale_rounding="rceil"))
    y, _ = lin.fwd(x, np.eye(32, dtype=F32), None)
    assert np.array_equal(y, ref @ np.eye(32, dtype=F32))
    with pytest.raises(ValueError, match="unknown block precision 'mxfp5'"):
        LinearBlock("mxfp5")
    assert LinearBlock("mxfp6", scale_rounding="even").options == {"scale_rounding": "even"}
    assert LinearBlock("mxfp6").block == "mxfp6_e3m2"
    with pytest.raises(ValueError, match="NVFP4 has its own scale rule"):
        LinearBlock("nvfp4", scale_rounding="floor")


def test_the_matmul_gets_the_block_arrays_of_each_gemm():
    seen = []

    def mm(a, b):
        seen.append((a.axes, b.axes, a.shape, b.shape))
        return fpemu.gemm(a, b, accumulator="b200")

    lin = LinearBlock("nvfp4", NVFP4Recipe(weights_2d=True, stochastic=False, hadamard=False, bf16_last=0), matmul=mm)
    y, ctx = lin.fwd(X, W, None)
    lin.bwd(DY, ctx, None)
    # forward X (along K=32) @ W tiles; dgrad dY @ W^T (the same tiles, turned); wgrad X^T @ dY along the tokens
    assert seen == [((1,), (0, 1), (64, 32), (32, 48)), ((1,), (0, 1), (64, 48), (48, 32)), ((1,), (0,), (32, 64), (64, 48))]
    qx = fpemu.mx.quantize(X, "nvfp4", axis=1)
    qw = fpemu.mx.quantize(W, "nvfp4", axis=(0, 1), block_size=(16, 16))
    assert np.array_equal(y, fpemu.gemm(qx, qw, accumulator="b200"))


def test_transposed_and_operand_views():
    q = fpemu.mx.quantize(W, "nvfp4", axis=(0, 1), block_size=(16, 16))
    t = transposed(q)
    assert t.block_size == (16, 16) and np.array_equal(t.dequantize(), q.dequantize().T)
    x = X.copy()
    x[0, :32] = [1.0] + [0.0] * 30 + [1e-6]  # 1e-6 is below the block's smallest E2M1 step: flushed
    view = block_view(x, fpemu.mx.quantize(x, "mxfp4", axis=1))
    assert view.values[0, 31] == 0 and float(view.scale[0, 0]) == 0.25  # amax 1: 2^(0 - 2)
    # OCP's floor rule: scale 2^(floor(log2 amax) - 2), so a block whose amax reaches 7 * scale
    # (where E2M1's RNE goes past 6, odd, to 8) saturates it, and nothing else
    scale = 2.0 ** (np.floor(np.log2(np.abs(x).max(axis=1, keepdims=True))) - 2)
    assert np.array_equal(view.scale, np.broadcast_to(scale, x.shape))
    assert np.array_equal(view.saturated, np.abs(x) >= 7 * scale) and view.saturated.sum() > 0


def test_four_over_six_quantizes_weights_and_activations_not_gradients():
    """TE's nvfp4_4over6="all": X and W (every GEMM that reads them) with Four Over Six, dY with
    the plain rule and its stochastic rounding."""
    recipe = NVFP4Recipe(weights_2d=True, stochastic=False, hadamard=False, bf16_last=0, four_over_six="mse")
    lin = LinearBlock("nvfp4", recipe)
    y, ctx = lin.fwd(X, W, None)
    xq = _deq(fpemu.mx.quantize(X, "nvfp4", axis=1, four_over_six="mse"))
    wq = _deq(fpemu.mx.quantize(W, "nvfp4", axis=(0, 1), block_size=(16, 16), four_over_six="mse"))
    assert np.array_equal(y, xq @ wq)
    plain, _ = LinearBlock("nvfp4", NVFP4Recipe(True, False, False, 0)).fwd(X, W, None)
    assert not np.array_equal(y, plain)  # the option changes the bits
    dx, dw, _ = lin.bwd(DY, ctx, None)
    assert np.array_equal(dx, _deq(fpemu.mx.quantize(DY, "nvfp4", axis=1)) @ wq.T)
    ref = _deq(fpemu.mx.quantize(X, "nvfp4", axis=0, four_over_six="mse")).T @ _deq(fpemu.mx.quantize(DY, "nvfp4", axis=0))
    assert np.array_equal(dw, ref)


def test_four_over_six_recipes_parse_and_refuse_the_hadamard_transform():
    assert parse_recipe("2d,sr,4o6").four_over_six == "mae"  # TE's default metric
    assert parse_recipe("4o6MSE").four_over_six == "mse" and parse_recipe("4o6mae448").four_over_six == "mae_448"
    assert parse_recipe("2d,sr,4o6mse").label == "2d+sr+4o6mse"
    assert NVFP4Recipe(False, False, False, 0, "MAE_448").four_over_six == "mae_448"
    with pytest.raises(ValueError, match="write 4o6, 4o6mse"):
        parse_recipe("4o6l1")
    with pytest.raises(ValueError, match="Hadamard"):
        parse_recipe("2d,rht,4o6")
    with pytest.raises(ValueError, match="four_over_six must be None or one of"):
        NVFP4Recipe(hadamard=False, four_over_six="max")
