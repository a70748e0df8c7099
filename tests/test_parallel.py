"""Every core, the same bits: encode, decode and quantize give identical results for every
number of workers (threads over pieces), stochastic rounding included, and FPEMU_WORKERS sets
the default."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import Format, decode, encode, quantize
from fpemu.parallel import MIN_PIECE, resolve_workers, run_pieces

N = 2 * MIN_PIECE + 12345  # big enough to be cut into pieces


def inputs(dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N) * np.exp2(rng.integers(-20, 20, N))
    x[::997] = np.nan
    x[::1009] = np.inf
    return x.astype(dtype)


CASES = [
    ("e4m3", {}),                                          # the 17-bit table
    ("fp16", {}),                                          # numpy's own cast / magic numbers
    ("bf16", {}),                                          # the bit-pattern RNE
    ("e2m1", {"nan": "zero"}),                             # a sub-byte table
    (Format("u", 5, 9, 13, signed=False, inf="below_nan", nan="top"), {}),  # the generic kernel
    ("e5m2", {"rounding": "stochastic", "rng": 7}),        # 64 random bits per element
    ("e4m3", {"rounding": "stochastic_a", "sr_bits": 8, "rng": 3}),  # drawn N-bit R
    ("int8", {"rounding": "nearest_away", "nan": "zero"}),
]


@pytest.mark.parametrize("fmt, opts", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encode_quantize_decode_are_the_same_for_every_worker_count(fmt, opts, dtype):
    x = inputs(dtype)
    codes = [encode(x, fmt, workers=w, **opts) for w in (1, 2, 3, 7)]
    for c in codes[1:]:
        assert c.dtype == codes[0].dtype and np.array_equal(c, codes[0])
    values = [decode(codes[0], fmt, workers=w) for w in (1, 2, 5)]
    for v in values[1:]:
        assert np.array_equal(v, values[0], equal_nan=True)
    q = [quantize(x, fmt, workers=w, **opts) for w in (1, 2, 4)]
    for v in q[1:]:
        assert np.array_equal(v.view(np.uint8), q[0].view(np.uint8))  # bit for bit, NaNs too


def test_stochastic_bits_depend_on_position_not_on_pieces():
    # The same seed and element positions: a slice of the input gets the codes of the whole
    # input's slice only when it sits at the same position; the whole input is split freely.
    x = np.full(N, 1.0 + 2.0**-5)  # a quarter of an e4m3 unit above 1: rounds up 1 time in 4
    whole = encode(x, "e4m3", rounding="stochastic", rng=11, workers=1)
    split = encode(x, "e4m3", rounding="stochastic", rng=11, workers=4)
    assert np.array_equal(whole, split)
    assert abs(np.mean(whole == 0x39) - 0.25) < 0.01


def test_nan_errors_count_the_whole_input():
    x = np.zeros(N, np.float32)
    x[[5, N - 5]] = np.nan
    with pytest.raises(ValueError, match="^2 NaN values"):
        encode(x, "e2m1", workers=4)


def test_resolve_workers(monkeypatch):
    monkeypatch.setenv("FPEMU_WORKERS", "3")
    assert resolve_workers(None) == 3
    monkeypatch.setenv("FPEMU_WORKERS", "zero")
    with pytest.raises(ValueError, match="FPEMU_WORKERS"):
        resolve_workers(None)
    monkeypatch.delenv("FPEMU_WORKERS")
    assert resolve_workers(None) >= 1
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="workers must be"):
            resolve_workers(bad)
    with pytest.raises(ValueError, match="workers must be"):
        encode([1.0], "e4m3", workers=0)


def test_small_inputs_stay_on_one_thread():
    seen = []
    run_pieces(lambda s: seen.append(s), 1000, workers=8)
    assert seen == [slice(0, 1000)]


def test_errors_in_a_piece_reach_the_caller():
    def fail(part):
        if part.start:
            raise RuntimeError("piece failed")

    with pytest.raises(RuntimeError, match="piece failed"):
        run_pieces(fail, 4 * MIN_PIECE, workers=4)


def test_public_functions_take_workers():
    x = np.linspace(-3, 3, 11)
    assert fpemu.quantize(x, "e2m1", workers=2).tolist() == fpemu.quantize(x, "e2m1").tolist()


@pytest.mark.parametrize("fmt, opts", [("mxfp8_e4m3", {}), ("mxfp4", {"rounding": "stochastic", "rng": 4}),
                                       ("nvfp4", {}), ("mxint8", {"rounding": "nearest_away"})])
def test_mx_quantize_dequantize_matmul_are_the_same_for_every_worker_count(fmt, opts):
    from fpemu import mx

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((640, 1024)) * np.exp2(rng.integers(-6, 6, (640, 1024)))).astype(np.float32)
    qs = [mx.quantize(x, fmt, workers=w, **opts) for w in (1, 2, 3)]
    for q in qs[1:]:
        assert np.array_equal(q.codes, qs[0].codes) and np.array_equal(q.scales, qs[0].scales)
    values = [qs[0].dequantize(workers=w) for w in (1, 2)]
    assert np.array_equal(values[0], values[1], equal_nan=True)
    b = mx.quantize(x[:128].T.copy(), fmt, axis=0, **{k: v for k, v in opts.items()})
    products = [mx.matmul(qs[0], b, workers=w) for w in (1, 2, 5)]
    for p in products[1:]:
        assert np.array_equal(p, products[0], equal_nan=True)


@pytest.mark.parametrize("accumulator, inputs", [("a100", "fp16"), ("h100", "e4m3"), ("mi300x", "fp16"), ("fp32", "bf16")])
def test_gemm_and_dot_are_the_same_for_every_worker_count(accumulator, inputs):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 96)) * np.exp2(rng.integers(-8, 8, (300, 96)))
    b = rng.standard_normal((96, 700))
    c = rng.standard_normal((300, 700))
    results = [fpemu.gemm(a, b, c, inputs=inputs, accumulator=accumulator, workers=w) for w in (1, 2, 3)]
    for r in results[1:]:
        assert np.array_equal(r, results[0], equal_nan=True)
    x = rng.standard_normal((5000, 64))
    dots = [fpemu.dot(x, x[::-1], inputs=inputs, accumulator=accumulator, workers=w) for w in (1, 4)]
    assert np.array_equal(dots[0], dots[1], equal_nan=True)
