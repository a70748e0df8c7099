"""Tests of block layouts (fpemu.mx.layout): any rank and axis, the short last block, empty
arrays, and block sizes whose cost follows the data, never the parameter (issue 9, item 6)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

import fpemu
from fpemu import mx

from mx_helpers import ALL_FORMATS


@pytest.mark.parametrize("shape, axis", [((70,), 0), ((3, 40), 0), ((3, 40), 1), ((2, 5, 33), 1),
                                         ((2, 3, 4, 65), -1), ((40, 2, 3, 2), 0), ((2, 3, 36, 2), 2)])
@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp6_e2m3", "mxint8", "nvfp4"])
def test_any_rank_any_axis(shape, axis, fmt):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * 3)).astype(np.float32)
    q = mx.quantize(x, fmt, axis=axis)
    bs = 16 if fmt == "nvfp4" else 32
    ax = axis % len(shape)
    want_scales = list(shape)
    want_scales[ax] = -(-shape[ax] // bs)
    assert q.codes.shape == shape and q.scales.shape == tuple(want_scales) and q.axis == ax
    # every 1-D fibre along the axis is blocked exactly like a lone 1-D array
    xm = np.moveaxis(x, ax, -1).reshape(-1, shape[ax])
    cm = np.moveaxis(q.codes, ax, -1).reshape(-1, shape[ax])
    sm = np.moveaxis(q.scales, ax, -1).reshape(xm.shape[0], -1)
    dm = np.moveaxis(q.dequantize(), ax, -1).reshape(-1, shape[ax])
    kw = {"global_amax": float(np.abs(x).max())} if fmt == "nvfp4" else {}
    for r in range(xm.shape[0]):
        one = mx.quantize(xm[r], fmt, **kw)
        assert np.array_equal(one.codes, cm[r]) and np.array_equal(one.scales, sm[r])
        assert np.array_equal(one.dequantize(), dm[r])


def test_padding_uses_zeros_inside_the_last_block():
    x = np.full(33, 3.0, np.float32)
    x[32] = 0.75
    q = mx.quantize(x, "mxfp4")
    assert q.scales.tolist() == [0x7E, 0x7C]  # floor(log2 3) - 2 = -1; floor(log2 0.75) - 2 = -3
    assert q.dequantize()[32] == 0.75


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5)])
@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp6_e2m3", "nvfp4", "mxint8"])
def test_empty_arrays(shape, fmt):
    q = mx.quantize(np.zeros(shape, np.float32), fmt)
    assert q.codes.shape == shape and q.dequantize().shape == shape
    assert mx.unpack(q.pack(), fmt, shape[-1]).shape == shape


def test_empty_and_degenerate_shapes():
    for fmt in ALL_FORMATS:
        for shape in [(0,), (0, 5), (5, 0), (2, 0, 3)]:
            q = mx.quantize(np.zeros(shape), fmt, axis=1 if len(shape) > 1 else 0)
            assert q.codes.shape == shape and q.dequantize().shape == shape
    A = mx.quantize(np.zeros((2, 0)), "mxfp4", axis=1)
    B = mx.quantize(np.zeros((0, 3)), "mxfp4", axis=0)
    assert fpemu.gemm(A, B).tolist() == [[0.0] * 3] * 2


# ---- item 6: cost follows the data --------------------------------------------------------------------
def peak_bytes(fn) -> tuple[int, float]:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - t0
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("block", [2**31, (2**31, 2**31), (3, 2**31)])
def test_huge_block_sizes_cost_what_the_data_costs(fmt, block):
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -6.0]])
    axis = -1 if isinstance(block, int) else None

    def run():
        q = mx.quantize(x, fmt, block_size=block, axis=axis)
        q.dequantize()
        q.dequantize(np.float64)
        q.pack()
        if isinstance(block, int):
            fpemu.gemm(q, mx.quantize(x.T, fmt, block_size=block, axis=0))
            fpemu.dot(mx.quantize(x[0], fmt, block_size=block), mx.quantize(x[1], fmt, block_size=block))
            mx.describe(mx.quantize(x[0], fmt, block_size=block), x[0])

    run()  # the codec builds its lookup tables on first use: not part of the cost measured
    peak, seconds = peak_bytes(run)
    assert peak < 4 << 20 and seconds < 5  # a padded block would need gigabytes
    q = mx.quantize(x, fmt, block_size=block, axis=axis)
    one = mx.quantize(x, fmt, block_size=(2, 3) if not isinstance(block, int) else 3, axis=axis)
    assert np.array_equal(q.codes, one.codes) and np.array_equal(q.scales, one.scales)


@pytest.mark.parametrize("bad", [0, -1, 2**31 + 1, 1.5, 32.0, "32", True, np.float64(32)])
def test_quantize_bad_block_size(bad):
    with pytest.raises(ValueError, match="block size"):
        mx.quantize(np.ones(4), "mxfp4", block_size=bad)
