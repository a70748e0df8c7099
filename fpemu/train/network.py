"""The network: a ReLU multilayer perceptron with its forward and backward passes written out
in NumPy, every layer a linear layer of its precision policy (:mod:`.policies`); binary
cross-entropy loss."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .checks import check_int
from .policies import MLPPolicy
from .stats import CastStats
from .task import check_weight_count, check_widths


def init_params(widths: Sequence[int], seed: int) -> list[np.ndarray]:
    """``[W1, b1, W2, b2, ...]`` in FP32, with PyTorch's default ``nn.Linear`` initialisation.

    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weights and biases (Kaiming-uniform with
    ``a = sqrt(5)``): a weight variance of ``1/(3 fan_in)``, so each ReLU layer multiplies the
    size of the backward signal by about ``sqrt(1/6)``.

    >>> [p.shape for p in init_params((4, 3, 2), 0)]
    [(4, 3), (3,), (3, 2), (2,)]
    """
    widths = check_widths(widths)
    seed = check_int("seed", seed, 0)
    check_weight_count(widths)
    rng = np.random.default_rng([seed, 0x1417])
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def forward(params: list[np.ndarray], x: np.ndarray, policy: MLPPolicy,
            record: bool = True) -> tuple[np.ndarray, list[tuple]]:
    """Logits and the per-layer cache (each linear layer's context, and the ReLU masks);
    ``record=False`` (evaluation) leaves FP8's amax histories alone."""
    n_layers = len(params) // 2
    cache = []
    a = x
    for l in range(n_layers):
        z, ctx = policy.linear(l).fwd(a, params[2 * l], params[2 * l + 1], record)
        if l < n_layers - 1:
            mask = z > 0
            a = np.where(mask, z, np.float32(0.0))
        else:
            mask = None
        cache.append((ctx, mask))
    return z, cache


def bce_loss(logits: np.ndarray, y: np.ndarray) -> tuple[np.float32, np.ndarray]:
    """Mean binary cross-entropy with logits over every element (FP32), and ``sigmoid(logits)``.

    This is ``torch.nn.BCEWithLogitsLoss()`` with its default ``reduction="mean"``: the average
    over batch *and* labels. The sigmoid is torch's, ``1 / (1 + exp(-z))`` in FP32: for a very
    negative logit it is a tiny non-zero number (0 only below -88.72, where ``exp`` overflows),
    where ``0.5 + 0.5 tanh(z/2)`` is exactly 0 from -20 on. Which loss gradients are exactly 0
    before the cast to FP16, and so which ones can underflow, follows from this.

    >>> loss, sig = bce_loss(np.float32([[-30.0, 0.0]]), np.float32([[0.0, 1.0]]))
    >>> sig.tolist()[0][1], bool(0 < sig[0, 0] < 1e-12)
    (0.5, True)
    """
    per = np.maximum(logits, np.float32(0.0)) - logits * y + np.log1p(np.exp(-np.abs(logits)))
    with np.errstate(over="ignore"):  # exp(-z) = Inf for z < -88.7 gives sigmoid 0, as in torch
        sig = np.float32(1.0) / (np.float32(1.0) + np.exp(-logits))
    return np.float32(per.mean(dtype=np.float32)), sig


def backward(params: list[np.ndarray], cache: list[tuple], sig: np.ndarray, y: np.ndarray, loss_scale: float,
             policy: MLPPolicy, stats: CastStats) -> list[np.ndarray]:
    """Gradients of ``loss * loss_scale`` w.r.t. ``[W1, b1, ...]``, as the low format holds them."""
    n_layers = len(params) // 2
    # d(mean BCE)/dlogits = (sigmoid - y) / (batch * labels), times the loss scale (FP32).
    dz = (sig - y) * np.float32(loss_scale / y.size)
    grads: list[np.ndarray] = [None] * len(params)  # type: ignore[list-item]
    for l in range(n_layers - 1, -1, -1):
        ctx, mask = cache[l]
        if mask is not None:
            dz = np.where(mask, dz, np.float32(0.0))
        # The loss gradient (w.r.t. the logits) and the activation gradients are cast to the low
        # format as they enter the backward GEMMs, and counted there; the first layer's input
        # is the data, which needs no gradient.
        kind = "loss" if l == n_layers - 1 else "act"
        dz, grads[2 * l], grads[2 * l + 1] = policy.linear(l).bwd(dz, ctx, stats, kind, need_dx=l > 0)
    return grads


def evaluate(params: list[np.ndarray], x: np.ndarray, y: np.ndarray, policy: MLPPolicy) -> tuple[float, float]:
    """Loss and label accuracy of the master weights on ``(x, y)``, forward in the policy's
    precision."""
    logits, _ = forward(params, x, policy, record=False)
    loss, _ = bce_loss(logits, y)
    return float(loss), float(np.mean((logits > 0) == (y > 0.5)))
