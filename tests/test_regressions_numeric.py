"""Regression tests of numeric defects: empty and NaN inputs of ``scaled_cast`` and non-float
gradients in the scalers (the sign of zero in the exact accumulator and ``dot`` of Dask
arrays live with their modules now: tests/accumulator/test_kernels_exact.py and
test_dask_gemm.py).

Each test failed on the code before its fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fpemu
from fpemu import train as T

F32 = np.float32


# ---- scaled_cast: empty arrays -----------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,granularity,scale_shape",
    [((0,), "tensor", ()), ((2, 0), "tensor", ()), ((3, 0), "row", (3, 1)), ((0, 3), "column", (1, 3)),
     ((0, 3), "row", (0, 1)), ((3, 0), "column", (1, 0)), ((0, 4), (1, 2), (0, 2)), ((2, 0), (2, 2), (1, 0))],
)
def test_scaled_cast_of_an_empty_array(shape, granularity, scale_shape):
    t = fpemu.scaled_cast(np.zeros(shape), "e4m3", granularity=granularity)
    assert t.codes.shape == shape and t.codes.dtype == np.uint8
    assert t.scale.shape == scale_shape and t.scale.dtype == np.float32
    assert t.scale_inv.shape == (() if granularity == "tensor" else shape)  # as for a non-empty array
    assert np.all(t.scale == 1.0)
    assert t.dequantize().shape == shape


def test_scaled_cast_empty_matches_a_non_empty_call_in_shape():
    for granularity, empty, full in [("row", (3, 0), (3, 5)), ("column", (0, 3), (5, 3))]:
        a = fpemu.scaled_cast(np.zeros(empty), "e5m2", granularity=granularity)
        b = fpemu.scaled_cast(np.ones(full), "e5m2", granularity=granularity)
        assert a.scale.shape == b.scale.shape
        assert (a.scale_inv.shape, b.scale_inv.shape) == (empty, full)  # per element, as codes


# ---- scaled_cast: NaN ------------------------------------------------------------------------------
def test_scaled_cast_nan_in_a_format_without_nan_raises_as_encode_does():
    with pytest.raises(ValueError) as encoded:
        fpemu.encode([np.nan, 1.0], "e2m1")
    with pytest.raises(ValueError) as cast:
        fpemu.scaled_cast([np.nan, 1.0], "e2m1")
    assert type(cast.value) is type(encoded.value) and str(cast.value) == str(encoded.value)
    with pytest.raises(ValueError, match="no NaN"):
        fpemu.scaled_cast([[1.0, 2.0], [np.nan, 3.0]], "e3m2", granularity="row")
    with pytest.raises(ValueError, match="no NaN"):
        fpemu.scaled_cast([np.nan, 1.0], "e2m1", scale=1.0)


def test_scaled_cast_nan_policy_passes_through():
    t = fpemu.scaled_cast([np.nan, 1.0], "e2m1", nan="zero")
    assert t.codes.tolist() == [0, 7] and float(t.scale) == 6.0  # amax 1 (NaN not in it)
    assert fpemu.scaled_cast([np.nan, -1.0], "e2m1", nan="ml_dtypes").codes.tolist() == [8, 15]
    e4m3 = fpemu.scaled_cast([np.nan, 1.0], "e4m3")  # a format with NaN keeps it
    assert e4m3.codes[0] & 0x7F == 0x7F and np.isnan(e4m3.dequantize()[0])
    with pytest.raises(ValueError, match="nan="):
        fpemu.scaled_cast([1.0], "e2m1", nan="payload")


# ---- GradScaler: non-float gradients -----------------------------------------------------------
BAD_GRADS = [np.array([1 + 1j], np.complex64), np.array([1 + 1j]), np.array([1, 2], np.int32),
             np.array([True]), np.array([1.0], dtype=object), np.array(["1.0"])]


@pytest.mark.parametrize("g", BAD_GRADS, ids=lambda g: str(g.dtype))
def test_scalers_refuse_non_float_gradients(g):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way to the error
        calls = [lambda: T.GradScaler().unscale([g]), lambda: T.unscale_grads([g], 2.0),
                 lambda: T.GradScaler().step(lambda gs: None, [g]),
                 lambda: T.GradScaler(enabled=False).unscale([g]),
                 lambda: T.GradScaler(enabled=False).step(lambda gs: None, [g]),
                 lambda: T.StaticLossScaler().unscale([np.ones(2, F32), g])]
        for call in calls:
            with pytest.raises(TypeError, match=str(g.dtype)):
                call()


def test_scaler_scale_refuses_non_real_losses():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in (np.complex64(1 + 1j), 1 + 2j, np.array([True]), np.array([1.0], dtype=object), "2"):
            with pytest.raises(TypeError, match="loss"):
                T.GradScaler().scale(x)
            with pytest.raises(TypeError, match="loss"):
                T.GradScaler(enabled=False).scale(x)
    assert T.GradScaler(init_scale=4.0).scale(3).tolist() == 12.0  # an integer loss is a number


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_scalers_take_float_gradients(dtype):
    g = np.array([2.0, -6.0], dtype=dtype)
    out = T.GradScaler(init_scale=2.0).unscale([g])[0]
    assert out.dtype == F32 and out.tolist() == [1.0, -3.0] and g.dtype == dtype
    assert T.GradScaler(init_scale=2.0).scale(np.float16(1.5)).tolist() == 3.0
