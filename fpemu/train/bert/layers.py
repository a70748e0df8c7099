"""BERT's non-GEMM pieces in FP32, forward only: the exact GELU (with the error function, which
NumPy lacks), the softmax of attention over the real tokens of each sentence; layer norm is
:func:`fpemu.train.gpt.layers.layer_norm` (with BERT's ``eps``).

The error function: ``erfc(z) = t exp(-z^2 + P(t))`` with ``t = 2 / (2 + z)`` for ``z >= 0``,
``P`` a Chebyshev series of degree 16 in ``t`` fitted once, on import, to the C library's
``erfc`` (Python's :func:`math.erfc`) at the Chebyshev points; its relative error stays below
1e-11 for every ``z`` (tests/train/bert/test_layers.py measures it), so the GELU rounded to FP32
is the correctly rounded value or next to it.

>>> [round(float(v), 7) for v in gelu(np.float32([-1.0, 0.0, 1.0, 3.0]))]
[-0.1586553, 0.0, 0.8413448, 2.9959502]
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import chebyshev

__all__ = ["erfc", "gelu", "masked_softmax"]

_Z_MAX = 27.0  # erfc(27) < 1e-318: beyond it erfc is 0 in float64
_T_MIN = 2.0 / (2.0 + _Z_MAX)


def _fit() -> tuple[np.ndarray, float, float]:
    """``P(t) = log(erfc(z) / t) + z^2`` fitted as a Chebyshev series on ``[_T_MIN, 1]``, as
    power-series coefficients in ``u = offset + scale t`` (``u`` in [-1, 1]; the largest
    coefficient is below 1, so Horner's rule loses nothing to cancellation)."""
    def target(t: np.ndarray) -> np.ndarray:
        z = 2.0 / t - 2.0
        return np.array([math.log(math.erfc(zi) / ti) + zi * zi for zi, ti in zip(z.tolist(), t.tolist())])

    series = chebyshev.Chebyshev.interpolate(target, 16, domain=[_T_MIN, 1.0])
    offset, scale = series.mapparms()
    return chebyshev.cheb2poly(series.coef), float(offset), float(scale)


_POWERS, _OFFSET, _SCALE = _fit()


def erfc(z: np.ndarray) -> np.ndarray:
    """The complementary error function of ``z >= 0`` (float64; 0 beyond 27).

    >>> bool(abs(erfc(np.float64(1.0)) / math.erfc(1.0) - 1) < 1e-11)
    True
    """
    z = np.asarray(z, dtype=np.float64)
    zc = np.minimum(z, _Z_MAX)
    t = 2.0 / (2.0 + zc)
    u = _OFFSET + _SCALE * t
    acc = np.full_like(u, _POWERS[-1])
    for c in _POWERS[-2::-1]:  # Horner, in place: the GELU of every activation runs this
        acc *= u
        acc += c
    acc -= zc * zc
    np.exp(acc, out=acc)
    acc *= t
    return np.where(z < _Z_MAX, acc, 0.0)


_CHUNK = 1 << 16  # elements per pass: the float64 temporaries stay in cache, not in memory


def gelu(x: np.ndarray) -> np.ndarray:
    """``x/2 (1 + erf(x/sqrt 2))`` (torch's ``gelu``, ``approximate="none"``), in float64 and
    rounded once to FP32: ``x/2 erfc(|x|/sqrt 2)`` for negative ``x`` (no cancellation),
    ``x/2 (2 - erfc(x/sqrt 2))`` otherwise; in chunks, so its float64 temporaries take no more
    memory than a small slice of ``x``."""
    flat = np.asarray(x).reshape(-1)
    out = np.empty(flat.shape, dtype=np.float32)
    for start in range(0, flat.size, _CHUNK):
        x64 = flat[start : start + _CHUNK].astype(np.float64)
        e = erfc(np.abs(x64) * math.sqrt(0.5))
        out[start : start + _CHUNK] = 0.5 * x64 * np.where(x64 < 0, e, 2.0 - e)
    return out.reshape(np.shape(x))


def masked_softmax(scores: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of ``scores`` (FP32) with the keys where ``keys`` is False left
    out (weight 0); every row has at least one key.

    >>> masked_softmax(np.float32([[0.0, 0.0, 5.0]]), np.array([True, True, False])).tolist()
    [[0.5, 0.5, 0.0]]
    """
    s = np.where(keys, scores, np.float32(-np.inf))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
