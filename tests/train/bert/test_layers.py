"""BERT's FP32 pieces: the fitted erfc against the C library's (``math.erfc``), GELU against
the correctly rounded value of ``x/2 erfc(-x/sqrt 2)`` and against torch, the masked softmax."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fpemu.train.bert.layers import erfc, gelu, masked_softmax


def test_erfc_relative_error_below_1e_11():
    z = np.concatenate([np.linspace(0.0, 26.5, 40001), [1e-300, 1e-8, 0.5, 27.0 - 1e-9]])
    ref = np.array([math.erfc(v) for v in z])
    assert np.max(np.abs(erfc(z) / ref - 1)) < 1e-11
    assert erfc(np.array([27.0, 40.0, np.inf])).tolist() == [0.0, 0.0, 0.0]


def _gelu_ref(x: np.ndarray) -> np.ndarray:
    """``x/2 erfc(-x/sqrt 2)`` with the C library's erfc, in float64, rounded once to FP32."""
    return np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)]).astype(np.float32)


def test_gelu_is_the_fp32_rounding_of_the_exact_value():
    x = np.random.default_rng(1).standard_normal(40000).astype(np.float32) * np.float32(5)
    x = np.concatenate([x, np.float32([0.0, -0.0, 1e-30, -1e-30, 10.0, -10.0, 40.0, -40.0, 3e38, -3e38])])
    got, ref = gelu(x), _gelu_ref(x)
    assert got.dtype == np.float32 and np.mean(got == ref) > 0.9999
    ulps = np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps[np.sign(got) == np.sign(ref)].max() <= 1  # the rest one FP32 step away at most
    assert np.array_equal(np.signbit(got), np.signbit(ref))


def test_gelu_as_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal(20000).astype(np.float32) * np.float32(4)
    t = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    # torch's own float32 erf is a few FP32 steps off the exact value (ours is within one)
    np.testing.assert_allclose(gelu(x), t, rtol=1e-6, atol=2e-6)


def test_masked_softmax():
    s = np.float32([[1.0, 2.0, 100.0], [0.0, 0.0, 0.0]])
    p = masked_softmax(s, np.array([True, True, False]))
    e = np.exp(np.float32(-1.0))
    assert p[:, 2].tolist() == [0.0, 0.0] and p[1, :2].tolist() == [0.5, 0.5]
    np.testing.assert_allclose(p[0, :2], [e / (1 + e), 1 / (1 + e)], rtol=1e-6)
