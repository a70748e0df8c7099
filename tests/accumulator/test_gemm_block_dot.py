"""fpemu.dot of block arrays batched over the last axis (issue 24; fpemu/accumulator/gemm.py):
every row of a batched call has the bits of the 1-D dot of that row, for each block-scaled
model and format, with c a scalar or an array; the refusals name the problem."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx

from mx_helpers import block_array

PRESETS = ["exact", "b200", "blackwell", "mmasim-blackwell"]
FORMATS = ["mxfp8_e4m3", "mxfp4", "nvfp4"]
SHAPES = [(3, 64), (2, 3, 32)]


def same(got, want) -> bool:
    """Same fp32 bits, any NaN equal to any NaN."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return got.shape == want.shape and bool(
        np.all((got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))))


def row(q: mx.BlockArray, index: tuple[int, ...]) -> mx.BlockArray:
    """One row of a (..., K) block array blocked along its last axis, as a 1-D block array."""
    return q.with_layout(q.codes[index], q.scales[index], axis=0)


def operands(fmt: str, shape: tuple[int, ...], seed: int) -> tuple[mx.BlockArray, mx.BlockArray]:
    """Two (..., K) block arrays: quantized normal data with a wide range, exact cancellation
    (row 0 of b is -a's: every sum is 0), a zero row and, for E4M3, a NaN element."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-20, 20, shape)
    y = rng.standard_normal(shape) * 2.0 ** rng.integers(-20, 20, shape)
    flat_x, flat_y = x.reshape(-1, shape[-1]), y.reshape(-1, shape[-1])
    flat_x[0, 1::2] = flat_x[0, ::2]  # row 0: products that cancel in pairs
    flat_y[0, 1::2] = -flat_y[0, ::2]
    flat_x[1] = np.abs(flat_x[1])  # row 1: every product -0
    flat_y[1] = -0.0
    if fmt == "mxfp8_e4m3":
        x.reshape(-1, shape[-1])[-1, 3] = np.nan
    kw = {"global_amax": float(np.nanmax(np.abs(x)))} if fmt == "nvfp4" else {}
    kw_y = {"global_amax": float(np.nanmax(np.abs(y)))} if fmt == "nvfp4" else {}
    return mx.quantize(x, fmt, **kw), mx.quantize(y, fmt, **kw_y)


def random_codes(fmt: str, shape: tuple[int, ...], seed: int) -> mx.BlockArray:
    """Random element codes (NaN and Inf included where the format has them) and scales."""
    rng = np.random.default_rng(seed)
    probe = mx.quantize(np.ones(shape), fmt, **({"global_amax": 2688.0} if fmt == "nvfp4" else {}))
    codes = rng.integers(0, 1 << probe.format.bits, shape).astype(np.uint8)
    special = ~np.isfinite(probe.with_layout(codes, probe.scales).dequantize(np.float64))
    codes[special] = 0  # a few NaN and Inf only, not most rows
    flat = codes.reshape(-1, shape[-1])
    if fmt == "mxfp8_e4m3":
        flat[0, 5], flat[3, 7] = 0x7F, 0xFF
    elif fmt == "mxfp8_e5m2":
        flat[0, 5], flat[3, 7], flat[3, 9], flat[5, 1] = 0x7C, 0x7C, 0xFC, 0x7F  # +Inf, Inf-Inf, NaN
    if fmt == "nvfp4":
        scales = rng.integers(1, 127, probe.scales.shape)
        scales.reshape(-1, scales.shape[-1])[6, 0] = 127  # a NaN scale
    else:
        scales = rng.integers(110, 145, probe.scales.shape)
        scales.reshape(-1, scales.shape[-1])[6, 0] = 255
    kw = {"global_amax": 3000.0} if fmt == "nvfp4" else {}
    return block_array(codes, scales.astype(np.uint8), fmt, len(shape) - 1, probe.block_size, **kw)


def check_rows(a, b, c, accumulator, instruction=None):
    got = fpemu.dot(a, b, c, accumulator=accumulator, instruction=instruction)
    batch = a.shape[:-1]
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == batch
    cb = np.broadcast_to(np.float32(0.0) if c is None else np.asarray(c, np.float32), batch)
    for index in np.ndindex(*batch):
        want = fpemu.dot(row(a, index), row(b, index), float(cb[index]), accumulator=accumulator,
                      instruction=instruction)
        assert same(got[index], want), (index, got[index], want)
    return got


@pytest.mark.parametrize("accumulator", PRESETS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_batched_rows_are_the_1d_dots(fmt, shape, accumulator):
    a, b = operands(fmt, shape, seed=len(shape))
    batch = shape[:-1]
    rng = np.random.default_rng(7)
    c_array = (rng.standard_normal(batch) * 2.0**-10).astype(np.float32)
    c_array.reshape(-1)[-1] = -0.0
    for c in (None, 0.75, -0.0, c_array, c_array[..., :1]):
        check_rows(a, b, c, accumulator)


@pytest.mark.parametrize("accumulator", PRESETS)
@pytest.mark.parametrize("fmt", FORMATS + ["mxfp8_e5m2"])
def test_batched_random_codes_with_specials(fmt, accumulator):
    shape = (4, 5, 64)
    a, b = random_codes(fmt, shape, 1), random_codes(fmt, shape, 2)
    c = np.random.default_rng(3).standard_normal(shape[:-1]).astype(np.float32)
    c[0, 0], c[1, 1], c[2, 2] = np.inf, np.nan, -0.0
    check_rows(a, b, c, accumulator)
    check_rows(a, b, None, accumulator)


def test_batched_instruction_and_mixed_formats():
    a, _ = operands("mxfp4", (3, 64), 5)
    b, _ = operands("mxfp4", (3, 64), 6)
    check_rows(a, b, 1.0, "b200", instruction="mxf8f6f4")
    x = mx.quantize(np.random.default_rng(8).standard_normal((2, 3, 96)), "mxfp8_e4m3")
    y = mx.quantize(np.random.default_rng(9).standard_normal((2, 3, 96)), "mxfp8_e5m2")
    for acc in PRESETS:
        check_rows(x, y, -2.0, acc)


def test_batched_workers_and_returns():
    a, b = operands("mxfp8_e4m3", (70, 64), 4)  # more than one piece of rows on two threads
    for acc in ("exact", "b200"):
        one = fpemu.dot(a, b, accumulator=acc, workers=1)
        assert same(fpemu.dot(a, b, accumulator=acc, workers=2), one)
    x, y = mx.quantize([1.0, 2.0, 3.0], "mxfp4"), mx.quantize([4.0, -1.0, 0.5], "mxfp4")
    d = fpemu.dot(x, y)
    assert isinstance(d, np.float32) and d == 3.5  # 1-D: the float32 scalar, as before
    empty = mx.quantize(np.ones((0, 32)), "mxfp4")
    assert fpemu.dot(empty, empty).shape == (0,)


def test_batched_refusals():
    a = mx.quantize(np.ones((2, 3, 32)), "mxfp8_e4m3")
    with pytest.raises(ValueError, match=r"same shape \(\.\.\., K\).*\(2, 3, 32\) and \(3, 32\)"):
        fpemu.dot(a, mx.quantize(np.ones((3, 32)), "mxfp8_e4m3"))
    with pytest.raises(ValueError, match="equal lengths"):
        fpemu.dot(mx.quantize(np.ones(3), "mxfp4"), mx.quantize(np.ones(4), "mxfp4"))
    wrong = mx.quantize(np.ones((2, 3, 32)), "mxfp8_e4m3", axis=1)
    with pytest.raises(ValueError, match="blocked along it \\(axis 2\\).*axis=-1"):
        fpemu.dot(a, wrong)
    with pytest.raises(ValueError, match="blocked along it \\(axis 2\\)"):
        fpemu.dot(wrong, a)
    tiles = mx.quantize(np.ones((2, 32, 32)), "mxfp8_e4m3", axis=(1, 2), block_size=(32, 32))
    with pytest.raises(ValueError, match="blocked along it"):
        fpemu.dot(tiles, tiles)
    with pytest.raises(ValueError, match=r"does not broadcast to the result shape \(2, 3\)"):
        fpemu.dot(a, a, np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"does not broadcast to the result shape \(\)"):
        fpemu.dot(mx.quantize(np.ones(32), "mxfp4"), mx.quantize(np.ones(32), "mxfp4"), [1.0, 2.0])
    with pytest.raises(ValueError, match="K block sizes differ"):
        fpemu.dot(a, mx.quantize(np.ones((2, 3, 32)), "mxfp8_e4m3", block_size=16))
    with pytest.raises(ValueError, match="mix MX and NVFP4"):
        fpemu.dot(mx.quantize(np.ones((2, 32)), "mxfp4"), mx.quantize(np.ones((2, 32)), "nvfp4"))
    with pytest.raises(TypeError, match="BlockArray"):
        fpemu.dot(np.ones((2, 32)), a)
