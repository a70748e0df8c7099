"""The 128x4 tiled scale layout of block-scaled GEMMs (fpemu.mx.scale_layout) and the GEMM
operand buffers (fpemu.mx.gemm_buffers).

The expected byte of every scale is computed here twice, independently of fpemu: from the
cuBLAS documentation's description, one scale at a time, and as PyTorch's reshape and
transpose in NumPy; where PyTorch's or torchao's own ``to_blocked`` can be loaded (torch
present) it is compared too, else that test skips."""

from __future__ import annotations

import ast
import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpemu
from fpemu import mx


def doc_offsets(rows: int, cols: int) -> dict[tuple[int, int], int]:
    """cuBLAS "1D Block Scaling Factors Layout": 128x4 tiles of 512 bytes, row-major over
    (row tile, column tile); inside a tile, row r and column c at 16 * (r % 32) + 4 * (r // 32) + c."""
    tiles_per_row = (cols + 3) // 4
    out = {}
    for r in range(rows):
        for c in range(cols):
            tile = (r // 128) * tiles_per_row + c // 4
            rr, cc = r % 128, c % 4
            out[r, c] = 512 * tile + 16 * (rr % 32) + 4 * (rr // 32) + cc
    return out


def numpy_blocked(s: np.ndarray) -> np.ndarray:
    """The layout as PyTorch's to_blocked writes it: pad, (tiles, 128, 4) -> (tiles, 32, 4*4)."""
    rows, cols = s.shape
    pr, pc = -(-rows // 128) * 128, -(-cols // 4) * 4
    padded = np.zeros((pr, pc), s.dtype)
    padded[:rows, :cols] = s
    blocks = padded.reshape(pr // 128, 128, pc // 4, 4).transpose(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(-1)


def reference_to_blocked():
    """torchao's or PyTorch's to_blocked, or None. PyTorch's test module needs expecttest to
    import; without it, its two functions are read from the installed file and run alone."""
    torch = pytest.importorskip("torch")
    try:
        from torchao.prototype.mx_formats.utils import to_blocked

        return to_blocked
    except ImportError:
        pass
    spec = importlib.util.find_spec("torch.testing._internal.common_quantized")
    if spec is None or spec.origin is None:
        return None
    tree = ast.parse(open(spec.origin).read())
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("ceil_div", "to_blocked")]
    if len(wanted) != 2:
        return None
    namespace = {"torch": torch}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), spec.origin, "exec"), namespace)
    return namespace["to_blocked"]


SHAPES = [(1, 1), (2, 4), (32, 4), (128, 4), (129, 5), (130, 9), (256, 8), (300, 3), (5, 130)]


@pytest.mark.parametrize("rows, cols", SHAPES)
def test_layout_is_the_documented_one(rows, cols):
    rng = np.random.default_rng(rows * 1000 + cols)
    s = rng.integers(1, 256, (rows, cols)).astype(np.uint8)
    buf = mx.to_blocked(s)
    assert buf.dtype == np.uint8 and buf.size == 512 * -(-rows // 128) * -(-cols // 4)
    want = np.zeros(buf.size, np.uint8)
    for (r, c), off in doc_offsets(rows, cols).items():
        want[off] = s[r, c]
    assert np.array_equal(buf, want)  # padding bytes zero
    assert np.array_equal(buf, numpy_blocked(s))
    assert np.array_equal(mx.from_blocked(buf, rows, cols), s)


@pytest.mark.parametrize("rows, cols", SHAPES)
def test_layout_equals_pytorch_to_blocked(rows, cols):
    to_blocked = reference_to_blocked()
    if to_blocked is None:
        pytest.skip("no to_blocked in torchao or PyTorch")
    import torch

    s = np.random.default_rng(cols).integers(0, 256, (rows, cols)).astype(np.uint8)
    theirs = to_blocked(torch.from_numpy(s)).numpy().reshape(-1)
    assert np.array_equal(mx.to_blocked(s), theirs)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 300), st.integers(0, 20), st.integers(0, 2**32 - 1))
def test_round_trip(rows, cols, seed):
    s = np.random.default_rng(seed).integers(0, 256, (rows, cols)).astype(np.uint8)
    before = s.copy()
    buf = mx.to_blocked(s)
    assert np.array_equal(mx.from_blocked(buf, rows, cols), s) and np.array_equal(s, before)


def test_layout_errors():
    with pytest.raises(ValueError, match="matrix"):
        mx.to_blocked(np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="codes 0..255"):
        mx.to_blocked(np.array([[256]]))
    with pytest.raises(ValueError, match="codes 0..255"):
        mx.to_blocked(np.array([[0.5]]))
    with pytest.raises(ValueError, match="holds 512 bytes"):
        mx.from_blocked(np.zeros(1024, np.uint8), 2, 4)
    with pytest.raises(ValueError, match="1-D uint8"):
        mx.from_blocked(np.zeros(512, np.int32), 2, 4)
    with pytest.raises(ValueError, match="rows must be a non-negative integer"):
        mx.from_blocked(np.zeros(512, np.uint8), -1, 4)


# ---- gemm_buffers ------------------------------------------------------------------------------
FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8", "nvfp4"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_gemm_buffers_round_trip(fmt):
    rng = np.random.default_rng(4)
    m, k, n = 130, 96, 5
    amax = dict(global_amax=50.0) if fmt == "nvfp4" else {}
    a = mx.quantize(rng.standard_normal((m, k)) * 10, fmt, **amax)
    b = mx.quantize(rng.standard_normal((k, n)), fmt, axis=0, **amax)
    da, sa = mx.gemm_buffers(a, "a")
    db, sb = mx.gemm_buffers(b, "b")
    bs = a.block_size
    assert sa.size == 512 * 2 * -(-(k // bs) // 4) and sb.size == 512 * -(-(k // bs) // 4)
    assert np.array_equal(mx.from_blocked(sa, m, k // bs), a.scales)
    assert np.array_equal(mx.from_blocked(sb, n, k // bs), b.scales.T)  # B's scales read K-major
    if fmt in ("mxfp4", "nvfp4"):  # two codes a byte, element 2i in the low nibble
        assert np.array_equal(da, a.codes[:, 0::2] | (a.codes[:, 1::2] << 4))
    elif a.format.bits == 8:
        assert np.array_equal(da, a.codes.view(np.uint8)) and np.array_equal(db, b.codes.T.view(np.uint8))
    back_a = mx.from_gemm_buffers(da, sa, fmt, (m, k), "a", **amax)
    back_b = mx.from_gemm_buffers(db, sb, fmt, (k, n), "b", **amax)
    for x, y in ((a, back_a), (b, back_b)):
        assert np.array_equal(x.codes.view(np.uint8), y.codes.view(np.uint8))
        assert np.array_equal(x.scales, y.scales) and x.axis == y.axis
    assert np.array_equal(fpemu.gemm(a, b), fpemu.gemm(back_a, back_b))


def test_gemm_buffers_errors():
    a = mx.quantize(np.ones((2, 32)), "mxfp4")
    with pytest.raises(ValueError, match="operand must be 'a'"):
        mx.gemm_buffers(a, "c")
    with pytest.raises(TypeError, match="BlockArray"):
        mx.gemm_buffers(np.ones((2, 32)), "a")
    with pytest.raises(ValueError, match="blocked along K"):
        mx.gemm_buffers(a, "b")
    data, scales = mx.gemm_buffers(a, "a")
    with pytest.raises(ValueError, match=r"uint8 of shape \(2, 16\)"):
        mx.from_gemm_buffers(data[:, :8], scales, "mxfp4", (2, 32), "a")
    with pytest.raises(ValueError, match="holds 512 bytes"):
        mx.from_gemm_buffers(data, scales[:256], "mxfp4", (2, 32), "a")
    with pytest.raises(ValueError, match="describe NVFP4"):
        mx.from_gemm_buffers(data, scales, "mxfp4", (2, 32), "a", global_amax=1.0)
