"""Every core, the same bits: encode, decode and quantize give identical results for every
number of workers (threads over pieces), stochastic rounding included, and FPEMU_WORKERS sets
the default."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
import fpemu.parallel
from fpemu import Format, decode, encode, quantize
from fpemu.parallel import MIN_PIECE, resolve_workers, run_pieces

PIECE = 1 << 17  # the smallest piece in these tests
N = 2 * PIECE + 12345  # big enough to be cut into pieces


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch, request):
    """By default only arrays of a million elements or more (millions for the light
    kernels: tables, bit arithmetic) are split; here every kernel splits at PIECE, so that
    every path runs in pieces on arrays of N elements without taking long."""
    if "default_pieces" not in request.keywords:
        monkeypatch.setattr(fpemu.parallel, "MIN_PIECE", PIECE)
        monkeypatch.setattr(fpemu.parallel, "LIGHT_MIN_PIECE", PIECE)


def pieces_taken(monkeypatch, call) -> list:
    """The pieces run_pieces hands out while ``call()`` runs."""
    seen = []
    real = fpemu.parallel.run_each

    def spy(fn, items, workers=None):
        items = list(items)
        seen.append([(s.start, s.stop) for s in items if isinstance(s, slice)])
        return real(fn, items, workers)

    with monkeypatch.context() as patch:
        patch.setattr(fpemu.parallel, "run_each", spy)
        call()
    return seen


@pytest.mark.default_pieces
def test_light_kernels_stay_on_one_thread_below_millions_of_elements(monkeypatch):
    x = np.random.default_rng(1).standard_normal(3 * MIN_PIECE).astype(np.float32)
    assert MIN_PIECE < fpemu.parallel.LIGHT_MIN_PIECE
    light = pieces_taken(monkeypatch, lambda: encode(x, "e4m3", workers=2))
    heavy = pieces_taken(monkeypatch, lambda: encode(x, "e4m3", rounding="stochastic", rng=1, workers=2))
    assert light == [[(0, x.size)]]  # one piece: threads would cost more than they give
    assert heavy == [[(0, x.size // 2), (x.size // 2, x.size)]]
    big = np.zeros(2 * fpemu.parallel.LIGHT_MIN_PIECE, dtype=np.float32)
    assert len(pieces_taken(monkeypatch, lambda: encode(big, "bf16", workers=2))[0]) == 2


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
        run_pieces(fail, 4 * PIECE, workers=4)


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
    products = [fpemu.gemm(qs[0], b, workers=w) for w in (1, 2, 5)]
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


# Regressions (each failed on the code before its fix): NumPy integers wherever an int is taken.
def test_workers_take_numpy_integers():
    assert resolve_workers(np.int64(2)) == 2 and type(resolve_workers(np.int64(2))) is int
    np.testing.assert_array_equal(fpemu.encode([1.0, 2.0], "e4m3", workers=np.int32(2)),
                                  fpemu.encode([1.0, 2.0], "e4m3"))
    for bad in (True, 2.0):
        with pytest.raises(ValueError, match="workers must be a whole number"):
            resolve_workers(bad)
