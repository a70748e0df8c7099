"""The public products (fpemu/accumulator/gemm.py): one gemm and one dot for plain arrays and
block arrays, with one signature and one return type (issue 37: a 1-D fpemu.dot gave a 0-d
array, fpemu.mx.dot an np.float32)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fpemu
from fpemu import mx


def test_one_signature():
    g, d = inspect.signature(fpemu.gemm), inspect.signature(fpemu.dot)
    assert list(g.parameters) == list(d.parameters) == ["a", "b", "c", "inputs", "accumulator", "out", "instruction",
                                                        "workers", "returns"]  # fmt: skip
    assert all(g.parameters[p].default == d.parameters[p].default for p in g.parameters)
    assert fpemu.gemm is fpemu.accumulator.gemm and not hasattr(mx, "matmul") and not hasattr(mx, "dot")


def _vectors(kind):
    if kind == "plain":
        return [1.0, 2.0, 3.0], [4.0, -1.0, 0.5], dict(inputs="fp16")
    return mx.quantize([1.0, 2.0, 3.0], "mxfp4"), mx.quantize([4.0, -1.0, 0.5], "mxfp4"), {}


@pytest.mark.parametrize("kind", ["plain", "block"])
def test_one_return_type(kind):
    x, y, fmt = _vectors(kind)
    one = fpemu.dot(x, y, 1.0, **fmt)
    assert type(one) is np.float32 and one == 4.5  # as np.dot of two float32 vectors
    assert type(fpemu.dot(x, y, **fmt, returns="input")) is np.float32
    rows = np.stack([np.asarray(x, np.float64)] * 2) if kind == "plain" else mx.quantize(np.ones((2, 3)), "mxfp4")
    many = fpemu.dot(rows, rows, **fmt)
    assert type(many) is np.ndarray and many.dtype == np.float32 and many.shape == (2,)
    a = np.ones((2, 32)) if kind == "plain" else mx.quantize(np.ones((2, 32)), "mxfp8_e4m3")
    b = np.ones((32, 3)) if kind == "plain" else mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=0)
    c = fpemu.gemm(a, b, **({"inputs": "e4m3"} if kind == "plain" else {}))
    assert type(c) is np.ndarray and c.dtype == np.float32 and c.tolist() == [[32.0] * 3] * 2


@pytest.mark.parametrize("kind", ["plain", "block"])
def test_torch_returns_a_zero_d_tensor(kind):
    torch = pytest.importorskip("torch")
    x, y, fmt = _vectors(kind)
    d = fpemu.dot(x, y, **fmt, returns="torch")
    assert isinstance(d, torch.Tensor) and d.shape == () and d.dtype == torch.float32 and float(d) == 3.5


def test_block_rows_of_a_two_d_tiled_a_on_several_workers():
    """A (M, K) in NVFP4's 16x16 tiles, cut into pieces of rows for two workers: each piece
    reads its rows' tile scales (the exact model sliced the tile scales by element rows and
    refused the product before issue 37)."""
    g = np.random.default_rng(0)
    a = mx.quantize(g.standard_normal((256, 64)), "nvfp4", axis=(0, 1), block_size=(16, 16))
    b = mx.quantize(g.standard_normal((64, 8)), "nvfp4", axis=0)
    for acc in ("exact", "b200"):
        one = fpemu.gemm(a, b, accumulator=acc, workers=1)
        assert np.array_equal(one, fpemu.gemm(a, b, accumulator=acc, workers=2), equal_nan=True)
        rows = [fpemu.gemm(a.with_layout(a.codes[i : i + 16], a.scales[i // 16 : i // 16 + 1]), b, accumulator=acc)
                for i in range(0, 256, 16)]
        assert np.array_equal(one, np.concatenate(rows), equal_nan=True)
