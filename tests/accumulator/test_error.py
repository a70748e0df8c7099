"""gemm_error (fpemu/accumulator/error.py): DeepSeek-V3's promotion experiment, and its sizes
refused before anything is allocated."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from fpemu.accumulator import _check_gemm_error_sizes, _normwise, gemm_error


# ---- promotion and the CLI ------------------------------------------------------------------------
def test_promotion_reduces_the_fp8_error():
    plain = gemm_error("e4m3", "h100", 4096, m=8, n=8)
    fixed = gemm_error("e4m3", "h100", 4096, m=8, n=8, promote=128)
    # Uniform [0, 1) inputs: the sum grows to ~1000 while the unit keeps 13 fraction bits, so
    # late products lose a large share of their bits; promotion keeps every partial short.
    assert 0.02 < plain["max"] < 0.2
    assert fixed["max"] < 2e-3
    assert plain["max"] > 50 * fixed["max"]
    assert plain["normwise"] <= plain["max"]


def test_exact_model_has_no_error():
    r = gemm_error("e4m3", "exact", 256, m=4, n=4)
    assert r["max"] < 2**-23


# ---- gemm_error ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw,error,message",
    [
        (dict(k=0), ValueError, "k must be a positive integer, got 0"),
        (dict(k=-4), ValueError, "k must be a positive integer, got -4"),
        (dict(m=0), ValueError, "m must be a positive integer"),
        (dict(n=-1), ValueError, "n must be a positive integer"),
        (dict(k=10**12), ValueError, r"A \(m x k\) would hold 4000000000000 values"),
        (dict(k=2**19, m=128, n=128), ValueError, "products is too many"),
        (dict(m=2**13 + 1, n=2**13, k=1), ValueError, r"C \(m x n\)"),
        (dict(k=4.0), TypeError, "k must be an integer, got 4.0"),
        (dict(k=True), TypeError, "k must be an integer"),
        (dict(seed=-1), ValueError, "seed must be a non-negative integer"),
        (dict(distribution="cauchy"), ValueError, "distribution must be 'uniform' or 'normal'"),
        (dict(inputs="e9m9"), ValueError, "unknown format 'e9m9'"),
        (dict(accumulator="z80"), ValueError, "unknown accumulator"),
        (dict(accumulator="v100"), ValueError, "no e4m3 inputs"),
        (dict(promote=0), ValueError, "promote must be a positive integer"),
    ],
)
def test_gemm_error_refuses_bad_sizes_before_allocating(kw, error, message):
    tracemalloc.start()
    try:
        with pytest.raises(error, match=message):
            gemm_error(**{"k": 64, "m": 4, "n": 4, **kw})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing in proportion to k, m or n was allocated


def test_gemm_error_smallest_sizes_and_normwise():
    _check_gemm_error_sizes(64, 2**20, 64)  # exactly at both limits: allowed
    r = gemm_error("e4m3", "h100", 1, m=1, n=1)
    assert r["shape"] == (1, 1) and r["max"] == 0.0 and r["normwise"] == 0.0  # one exact product
    assert _normwise(np.array([1.0]), np.array([0.0])) == np.inf  # 0 exact, got not: infinitely off
    assert _normwise(np.zeros(2), np.zeros(2)) == 0.0
