"""The transformer's non-GEMM pieces, forward and backward: layer norm, GELU, the causal
softmax of attention and the cross-entropy loss.

They compute in the dtype of their input (FP32 in training, FP64 in the finite-difference
tests): layer norm and softmax run in FP32 whatever the GEMMs' precision, as mixed-precision
training does (autocast's FP32 list, TransformerEngine's LayerNorm and softmax).
"""

from __future__ import annotations

import numpy as np

LN_EPS = 1e-5
_GELU_C = float(np.sqrt(2.0 / np.pi))


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = LN_EPS) -> tuple[np.ndarray, tuple]:
    """``(x - mean) / sqrt(var + eps) * g + b`` over the last axis (biased variance, as torch;
    ``eps`` 1e-5 as torch's default, BERT's is 1e-12).

    >>> y, _ = layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2))
    >>> np.round(y, 4).tolist()
    [[-1.0, 1.0]]
    """
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + np.asarray(eps, x.dtype))
    xh = xc * rstd
    return xh * g + b, (xh, rstd)


def layer_norm_back(dy: np.ndarray, g: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`layer_norm` w.r.t. ``x``, ``g`` and ``b`` (rows of ``dy``).

    >>> dx, dg, db = layer_norm_back(np.ones((1, 2)), np.ones(2), layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2))[1])
    >>> bool(np.abs(dx).max() < 1e-12), db.tolist()
    (True, [1.0, 1.0])
    """
    xh, rstd = cache
    dxh = dy * g
    dx = rstd * (dxh - dxh.mean(axis=-1, keepdims=True) - xh * (dxh * xh).mean(axis=-1, keepdims=True))
    return dx, (dy * xh).sum(axis=0), dy.sum(axis=0)


def gelu(x: np.ndarray) -> np.ndarray:
    """GPT-2's GELU, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    >>> round(float(gelu(np.array(1.0))), 6)
    0.841192
    """
    return 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x * x * x)))


def gelu_back(dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dy * gelu'(x)``.

    >>> round(float(gelu_back(np.array(1.0), np.array(0.0))), 6)
    0.5
    """
    t = np.tanh(_GELU_C * (x + 0.044715 * x * x * x))
    dt = (1.0 - t * t) * _GELU_C * (1.0 + 3 * 0.044715 * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * dt)


def causal_softmax(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of scores ``(..., T, T)`` with the future masked out.

    >>> causal_softmax(np.zeros((2, 2))).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    t = s.shape[-1]
    future = np.triu(np.ones((t, t), dtype=bool), 1)
    s = np.where(future, -np.inf, s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_back(p: np.ndarray, dp: np.ndarray) -> np.ndarray:
    """Gradient w.r.t. the scores of a softmax with output ``p`` (masked entries: p = 0, so 0).

    >>> softmax_back(np.array([0.5, 0.5]), np.array([1.0, 0.0])).tolist()
    [0.25, -0.25]
    """
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of rows of ``logits`` against integer ``targets``, and the softmax
    probabilities (for the gradient ``(p - onehot) / rows``), as torch's ``cross_entropy``.

    >>> loss, p = cross_entropy(np.zeros((1, 4)), np.array([2]))
    >>> round(loss, 6), p.tolist()
    (1.386294, [[0.25, 0.25, 0.25, 0.25]])
    """
    z = logits - logits.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=-1, keepdims=True))
    logp = z - lse
    rows = np.arange(len(targets))
    return float(-logp[rows, targets].mean()), np.exp(logp)


def cross_entropy_back(p: np.ndarray, targets: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``scale * (p - onehot(targets)) / rows``: the (scaled) gradient of the mean loss.

    >>> cross_entropy_back(np.array([[0.25, 0.75]]), np.array([1])).tolist()
    [[0.25, -0.25]]
    """
    g = p.copy()
    g[np.arange(len(targets)), targets] -= 1.0
    return g * p.dtype.type(scale / len(targets))
