"""Tests of what quantize accepts (fpemu.mx.inputs): dtypes, byte orders and memory layouts,
odd inputs refused clearly, and inputs never modified (issue 9, item 8)."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx

from mx_helpers import ALL_FORMATS, block_of

ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_input_dtypes(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100).astype(dtype)
    q = mx.quantize(x, "mxfp8_e5m2")
    ref = mx.quantize(x.astype(np.float64), "mxfp8_e5m2")  # float16 -> float32 is exact
    assert np.array_equal(q.codes, ref.codes) and np.array_equal(q.scales, ref.scales)
    assert q.dequantize(dtype).dtype == dtype
    assert mx.quantize(x.tolist(), "mxfp4").codes.shape == (100,)
    assert np.array_equal(mx.quantize(np.arange(-5, 5), "mxint8").dequantize(), np.arange(-5, 5))


def test_float64_input_is_not_rounded_to_float32_first():
    # 1 + 2**-4 + 2**-40 is above the E4M3 tie 1.0625: float64 keeps the sticky bit, a float32
    # copy (rounded to 1.0625 exactly) would tie to even and round down.
    x = block_of([1 + 2**-4 + 2**-40, 200], dtype=np.float64)
    assert mx.quantize(x, "mxfp8_e4m3").codes[0] == mx.quantize(block_of([1.125, 200]), "mxfp8_e4m3").codes[0]
    x32 = x.astype(np.float32)
    assert mx.quantize(x32, "mxfp8_e4m3").codes[0] != mx.quantize(x, "mxfp8_e4m3").codes[0]


def test_input_not_modified_and_names_case_insensitive():
    x = np.array([1.0, -2.0, 3.0], np.float32)
    before = x.copy()
    q = mx.quantize(x, "MXFP8_E4M3")
    assert np.array_equal(x, before) and q.format.name == "mxfp8_e4m3"


def test_byte_order_and_non_contiguous_input():
    x = np.random.default_rng(8).standard_normal((40, 50)).astype(np.float32)
    ref = mx.quantize(x, "mxfp8_e4m3", axis=0)
    big = mx.quantize(x.astype(">f4"), "mxfp8_e4m3", axis=0)
    assert np.array_equal(big.codes, ref.codes) and np.array_equal(big.scales, ref.scales)
    t = mx.quantize(np.asfortranarray(x)[::1, ::1].T, "mxfp8_e4m3", axis=1)
    assert np.array_equal(t.codes, ref.codes.T) and np.array_equal(t.scales, ref.scales.T)


# ---- item 8: inputs are never modified ----------------------------------------------------------------
@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("rounding", ["nearest_even", "up", "stochastic"])
def test_inputs_are_not_modified(fmt, rounding):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 40)) * np.exp2(rng.integers(-150, 120, (5, 40)))).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    variants = [x, x.astype(np.float64), x.astype(">f4"), np.asfortranarray(x), x[:, ::2]]
    seed = 1 if rounding == "stochastic" else None  # rng is refused for the other roundings
    for v in variants:
        before = v.copy()
        mx.quantize(v, fmt, rounding=rounding, rng=seed)
        mx.quantize(v, fmt, axis=0, rounding=rounding, rng=seed)
        assert np.array_equal(v, before, equal_nan=True) and v.dtype == before.dtype
    a = mx.quantize(x[:, :32], fmt, axis=1)
    b = mx.quantize(x[:, :32].T, fmt, axis=0)
    v = mx.quantize(x[1], fmt)
    saved = [arr.copy() for q in (a, b, v) for arr in (q.codes, q.scales)]
    a.dequantize(), b.dequantize(np.float64), fpemu.gemm(a, b), fpemu.dot(v, v)
    after = [arr for q in (a, b, v) for arr in (q.codes, q.scales)]
    assert all(np.array_equal(s, arr) for s, arr in zip(saved, after))


def test_blockarray_from_user_arrays_leaves_them_alone():
    codes = np.array([1, 2, 3], np.int64)
    scales = np.array([127], np.int32)
    q = mx.MXArray(codes, scales, "mxfp4", 0, 32)
    q.dequantize()
    fpemu.gemm(mx.MXArray(codes[None, :], scales[None, :], "mxfp4", 1, 32),
              mx.MXArray(codes[:, None], scales[:, None], "mxfp4", 0, 32))
    assert codes.tolist() == [1, 2, 3] and codes.dtype == np.int64 and scales.tolist() == [127]


# ---- other inputs: exact or a clear error ------------------------------------------------------------
def test_odd_inputs():
    with pytest.raises(ValueError, match="at least one dimension"):
        mx.quantize(np.float32(1.0), "mxfp4")
    with pytest.raises(ValueError, match="out of range"):
        mx.quantize(np.ones((2, 3)), "mxfp4", axis=-3)
    with pytest.raises(TypeError, match="complex"):
        mx.quantize([1j], "mxfp4")
    with pytest.raises(TypeError, match="bool"):
        mx.quantize(np.array([True]), "mxfp4")
    with pytest.raises(ValueError, match="unknown element rounding"):
        mx.quantize(np.zeros(0), "mxfp4", rounding="bogus")  # checked even with no data
    with pytest.raises(ValueError, match="unknown element rounding"):
        mx.quantize(np.zeros(0), "mxint8", rounding="bogus")
    assert mx.quantize(np.zeros(0), "mxint8", rounding="up").codes.size == 0  # every mode now


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_dtypes_and_byte_orders_agree(fmt):
    x = np.array([0.75, -3.0, 1.5, 96.0, 0.0, -0.0, 2.0**-10, 5.0], np.float32)
    ref = mx.quantize(x, fmt)
    for v in (x.astype(np.float16), x.astype(">f8"), x.astype(">f4"), x.astype(ml_dtypes.bfloat16),
              x.astype(np.float64)):
        q = mx.quantize(v, fmt)
        assert np.array_equal(q.codes, ref.codes) and np.array_equal(q.scales, ref.scales), v.dtype
    ints = np.array([3, -7, 0, 100, 2**40], np.int64)
    q = mx.quantize(ints, fmt)
    r = mx.quantize(ints.astype(np.float64), fmt)
    assert np.array_equal(q.codes, r.codes) and np.array_equal(q.scales, r.scales)
