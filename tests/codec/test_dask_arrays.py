"""Dask arrays in, Dask arrays out, the same bits as in memory: encode, decode, quantize and
mx.quantize block by block, gemm tile by tile with all of K in each task (stochastic rounding included: its bits follow each element's position in the
whole array), on Dask's threads and on a local cluster of two worker processes."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx

da = pytest.importorskip("dask.array")


def data(shape=(257, 190), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, shape))
    x.flat[::101] = np.nan
    return x


OPTIONS = [
    ("e4m3", {}),
    ("bf16", {"rounding": "stochastic", "rng": 5}),
    ("e2m1", {"rounding": "stochastic_c", "sr_bits": 6, "rng": 9, "nan": "zero"}),
    ("fp16", {"rounding": "toward_zero", "overflow": "saturate"}),
]


@pytest.mark.parametrize("fmt, opts", OPTIONS)
@pytest.mark.parametrize("chunks", [(64, 50), (257, 1), (13, 190)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encode_quantize_decode_match_in_memory(fmt, opts, chunks, dtype):
    x = data().astype(dtype)
    dx = da.from_array(x, chunks=chunks)
    codes = fpemu.encode(dx, fmt, **opts)
    assert isinstance(codes, da.Array) and codes.dtype == fpemu.get_format(fmt).code_dtype
    want = fpemu.encode(x, fmt, **opts)
    assert np.array_equal(codes.compute(), want)
    values = fpemu.decode(codes, fmt)
    assert np.array_equal(values.compute(), fpemu.decode(want, fmt), equal_nan=True)
    q = fpemu.quantize(dx, fmt, **opts)
    q_mem = fpemu.quantize(x, fmt, **opts)
    assert q.dtype == q_mem.dtype and np.array_equal(q.compute().view(np.uint8), q_mem.view(np.uint8))


def test_given_random_bits_follow_the_chunks():
    x = data((100, 64))
    r = np.random.default_rng(2).integers(0, 16, x.shape)
    dx = da.from_array(x, chunks=(33, 20))
    got = fpemu.encode(dx, "e4m3", rounding="stochastic_a", sr_bits=4, random_bits=r, nan=None)
    assert np.array_equal(got.compute(), fpemu.encode(x, "e4m3", rounding="stochastic_a", sr_bits=4, random_bits=r))


def test_errors_surface_when_computed():
    dx = da.from_array(np.array([1.0, np.nan]), chunks=1)
    with pytest.raises(ValueError, match="NaN"):
        fpemu.encode(dx, "e2m1").compute()
    with pytest.raises(ValueError, match="unknown rounding"):
        fpemu.encode(dx, "e4m3", rounding="sideways")  # options are checked at once


def test_local_cluster_of_two_processes_gives_the_same_bits():
    distributed = pytest.importorskip("distributed")
    x = data((400, 300), seed=4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            dx = da.from_array(x, chunks=(100, 150))
            codes = client.compute(fpemu.encode(dx, "e5m2", rounding="stochastic", rng=17)).result()
            q = client.compute(fpemu.quantize(dx, "e4m3", overflow="saturate")).result()
            g = client.compute(fpemu.gemm(dx[:200, :64], dx[:64, :128], inputs="fp16", accumulator="a100")).result()
            m = fpemu.mx.quantize(dx[:, :288].rechunk((100, 96)), "nvfp4", rounding="stochastic", rng=2)
            mc, ms = client.compute([m.codes, m.scales], sync=True)
    want = fpemu.mx.quantize(x[:, :288], "nvfp4", rounding="stochastic", rng=2)
    assert np.array_equal(mc, want.codes) and np.array_equal(ms, want.scales)
    assert np.array_equal(g, fpemu.gemm(x[:200, :64], x[:64, :128], inputs="fp16", accumulator="a100"), equal_nan=True)
    assert np.array_equal(codes, fpemu.encode(x, "e5m2", rounding="stochastic", rng=17))
    assert np.array_equal(q, fpemu.quantize(x, "e4m3", overflow="saturate"), equal_nan=True)


@pytest.mark.parametrize("accumulator, inputs", [("a100", "fp16"), ("h100", "e4m3"), ("mi300x", "bf16")])
def test_gemm_tiles_keep_k_whole(accumulator, inputs):
    rng = np.random.default_rng(5)
    a, b, c = rng.standard_normal((130, 96)), rng.standard_normal((96, 110)), rng.standard_normal((130, 110))
    want = fpemu.gemm(a, b, c, inputs=inputs, accumulator=accumulator)
    got = fpemu.gemm(da.from_array(a, chunks=(40, 30)), da.from_array(b, chunks=(25, 50)), c,
                     inputs=inputs, accumulator=accumulator)  # K chunked on input: rechunked whole
    assert isinstance(got, da.Array) and np.array_equal(got.compute(), want)
    got = fpemu.gemm(a, da.from_array(b, chunks=(96, 37)), None, inputs=inputs, accumulator=accumulator)
    assert np.array_equal(got.compute(), fpemu.gemm(a, b, inputs=inputs, accumulator=accumulator))


MX_CASES = [
    ("mxfp8_e4m3", {}, (64, 96)),
    ("mxfp4", {"rounding": "stochastic", "rng": 5}, (100, 64)),
    ("mxfp6_e2m3", {"axis": 0, "scale_rounding": "rceil"}, (96, 45)),
    ("mxint8", {"rounding": "nearest_away"}, (257, 32)),
    ("mxfp8_e5m2", {"convention": "transformer_engine-2.12"}, (50, 64)),
    ("nvfp4", {}, (64, 48)),
    ("nvfp4", {"variant": "torchao", "rounding": "stochastic", "rng": 1, "axis": 0}, (32, 37)),
    ("nvfp4", {"block_size": (16, 16), "global_amax": 300.0}, (48, 32)),
]


@pytest.mark.parametrize("fmt, opts, chunks", MX_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mx_quantize_chunk_by_chunk(fmt, opts, chunks, dtype):
    x = data(seed=6).astype(dtype)
    want = fpemu.mx.quantize(x, fmt, **opts)
    q = fpemu.mx.quantize(da.from_array(x, chunks=chunks), fmt, **opts)
    assert isinstance(q.codes, da.Array) and isinstance(q.scales, da.Array) and q.scales.shape == want.scales.shape
    got = q.compute()
    assert np.array_equal(got.codes, want.codes) and np.array_equal(got.scales, want.scales)
    assert (got.global_amax, got.global_scale, got.variant, got.scale_rounding, got.axis, got.block_size) == \
        (want.global_amax, want.global_scale, want.variant, want.scale_rounding, want.axis, want.block_size)
    values = q.dequantize()
    assert isinstance(values, da.Array)
    assert np.array_equal(values.compute(), want.dequantize(), equal_nan=True)


def test_mx_quantize_says_how_to_rechunk():
    x = da.from_array(data(), chunks=(64, 50))
    with pytest.raises(ValueError, match=r"axis 1 \(50, 50, 50, 40\) cut blocks of 32 in two.*rechunk\(\{1: 32\}\)"):
        fpemu.mx.quantize(x, "mxfp8_e4m3")
    with pytest.raises(ValueError, match=r"blocks of 16 in two.*rechunk\(\{1: 48\}\)"):
        fpemu.mx.quantize(x, "nvfp4", block_size=(16, 16))
    with pytest.raises(ValueError, match="unknown element rounding"):  # options checked at once
        fpemu.mx.quantize(x.rechunk((64, 64)), "mxfp4", rounding="sideways")


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_rng_is_refused_for_dask_arrays_too():
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.linspace(1, 2, 64), chunks=32)
    with pytest.raises(ValueError, match="rng"):
        mx.quantize(x, "mxfp4", rng=0)
    with pytest.raises(ValueError, match="rng"):
        fpemu.encode(x, "e4m3", rng=0)
    assert mx.quantize(x, "mxfp4").compute().codes.shape == (64,)
