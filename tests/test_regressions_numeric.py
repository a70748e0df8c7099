"""Regression tests of numeric defects: the sign of zero in the exact accumulator, empty and
NaN inputs of ``scaled_cast``, ``dot`` of Dask arrays, and non-float gradients in the scalers.

Each test failed on the code before its fix."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import train as T
from fpemu.formats import get_format
from reference import ref_decode_float, ref_encode

F32 = np.float32
TINY = {"fp32": 2.0**-100, "bf16": 2.0**-100, "fp16": 2.0**-24}  # products underflow every output


def _negative_zero(v: float) -> bool:
    return v == 0 and bool(np.signbit(v))


def _ieee_sum(a: list[float], b: list[float], c: float, out: str) -> float:
    """IEEE 754's sum of the exact products and c, rounded once (RNE) to ``out``: a non-zero
    exact sum rounds with its sign (an underflow to zero keeps it); an exact zero is -0 only
    when every term is -0 (x + y of two -0 is -0), else +0 (section 6.3, RNE)."""
    terms = [x * y for x, y in zip(a, b)] + [c]
    exact = sum((Fraction(t) for t in terms), Fraction(0))
    if exact == 0:
        return -0.0 if all(_negative_zero(t) for t in terms) else 0.0
    fmt = get_format(out)
    value = ref_decode_float(ref_encode(exact, fmt), fmt)
    return value if value != 0 else (-0.0 if exact < 0 else 0.0)


def _zero_cases(inputs: str) -> list[tuple[list[float], list[float], float]]:
    t = TINY[inputs]
    return [
        ([-t], [t], -0.0),  # a negative product that underflows, c = -0: -0
        ([-t], [t], 0.0),  # ... with c = +0: still negative, -0
        ([t], [t], -0.0),  # a positive one: +0
        ([], [], -0.0),  # K = 0: c itself
        ([], [], 0.0),
        ([-0.0, 0.0], [1.0, -1.0], -0.0),  # all -0: -0
        ([0.0, -0.0], [1.0, 1.0], -0.0),  # +0 and -0 mixed: +0
        ([-0.0], [1.0], 0.0),
        ([1.0, -1.0], [1.0, 1.0], -0.0),  # an exact zero of mixed signs: +0
        ([-t, t], [t, t], -0.0),
    ]


@pytest.mark.parametrize("acc", ["exact", "fp32", "pairwise_fp32"])
@pytest.mark.parametrize("inputs", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("out", ["fp32", "fp16", "bf16"])
def test_sign_of_zero_follows_ieee(acc, inputs, out):
    for a, b, c in _zero_cases(inputs):
        want = _ieee_sum(a, b, c, out)
        shape = (1, len(a))
        got = fpemu.dot(np.reshape(a, shape), np.reshape(b, shape), [c], inputs=inputs, accumulator=acc, out=out)
        assert got.view(np.uint32).tolist() == [np.float32(want).view(np.uint32)], (a, b, c, want, got)
        got = fpemu.gemm(np.reshape(a, shape), np.reshape(b, shape[::-1]), [[c]], inputs=inputs, accumulator=acc, out=out)
        assert got.view(np.uint32).tolist() == [[np.float32(want).view(np.uint32)]], (a, b, c, want, got)


def test_exact_negative_underflow_is_negative_zero():
    got = fpemu.dot([[-(2.0**-100)]], [[2.0**-100]], [-0.0], inputs="fp32", accumulator="exact")
    assert got.view(np.uint32).tolist() == [0x80000000]
    same = fpemu.dot([[-(2.0**-100)]], [[2.0**-100]], [-0.0], inputs="fp32", accumulator="fp32")
    assert same.view(np.uint32).tolist() == [0x80000000]


def test_exact_signed_zero_rows_are_independent():
    a = np.array([[-0.0, -0.0], [-0.0, 0.0], [1.0, -1.0], [-(2.0**-100), 0.0]])
    b = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [2.0**-100, 1.0]])
    got = fpemu.dot(a, b, [-0.0, -0.0, -0.0, 0.0], inputs="fp32", accumulator="exact")
    assert got.view(np.uint32).tolist() == [0x80000000, 0, 0, 0x80000000]


def test_mx_exact_agrees_on_a_negative_underflow():
    from fpemu import mx

    a, b = np.array([[-(2.0**-100)] + [0.0] * 31]), np.array([[2.0**-100] + [0.0] * 31])
    x, y = mx.quantize(a, "mxfp8_e4m3"), mx.quantize(b.T, "mxfp8_e4m3", axis=0)
    want = fpemu.dot(mx.dequantize(x), mx.dequantize(y).T, [-0.0], inputs="fp32", accumulator="exact")
    assert want.view(np.uint32).tolist() == [0x80000000]
    # (with c = +0 they differ by design: mx's exact model adds each block's rounded sum to c)
    assert fpemu.gemm(x, y, [[-0.0]]).view(np.uint32).tolist() == [want.view(np.uint32).tolist()]


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


# ---- dot of Dask arrays --------------------------------------------------------------------------
@pytest.mark.parametrize("acc,inputs", [("exact", "fp32"), ("h100", "fp16"), ("fp32", "bf16"), ("mi300", "e4m3fnuz")])
def test_dot_of_dask_arrays_is_a_dask_array_of_the_same_bits(acc, inputs):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 5, 33)), rng.standard_normal((2, 5, 33))
    c = rng.standard_normal((2, 5))
    for cc in (None, c, da.from_array(c, chunks=(1, 2))):
        want = fpemu.dot(a, b, None if cc is None else c, inputs=inputs, accumulator=acc)
        for returns in ("input", "numpy"):
            got = fpemu.dot(da.from_array(a, chunks=(1, 2, 8)), da.from_array(b, chunks=(2, 3, 5)), cc,
                            inputs=inputs, accumulator=acc, returns=returns)
            assert isinstance(got, da.Array) and got.shape == want.shape and got.dtype == np.float32
            assert np.array_equal(got.compute().view(np.uint32), want.view(np.uint32))


def test_dot_of_dask_arrays_edge_shapes():
    da = pytest.importorskip("dask.array")
    got = fpemu.dot(da.ones(4, chunks=2), np.ones(4), 1.0, inputs="fp16", accumulator="exact")
    assert isinstance(got, da.Array) and got.shape == () and float(got.compute()) == 5.0
    got = fpemu.dot(da.zeros((3, 0)), da.zeros((3, 0)), [-0.0, 0.0, 1.0], inputs="fp16", accumulator="fp32")
    assert got.compute().view(np.uint32).tolist() == [0x80000000, 0, 0x3F800000]
    with pytest.raises(ValueError, match="same shape"):
        fpemu.dot(da.ones((2, 3)), da.ones((2, 4)), inputs="fp16", accumulator="exact")


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
