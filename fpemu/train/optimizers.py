"""The FP32 optimizers of the training loop: SGD with momentum and Adam, torch semantics."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .task import Task


def make_optimizer(task: Task, params: list[np.ndarray]) -> Callable[[list[np.ndarray]], None]:
    """An FP32 update ``apply(grads)`` replacing ``params[i]`` by new arrays (torch semantics)."""
    lr = np.float32(task.lr)
    m = [np.zeros_like(p) for p in params]
    if task.optimizer == "sgd":
        mom = np.float32(task.momentum)

        def sgd(grads: list[np.ndarray]) -> None:
            # torch.optim.SGD with momentum: v = m v + g; p -= lr v.
            for i, g in enumerate(grads):
                m[i] = mom * m[i] + g
                params[i] = params[i] - lr * m[i]

        return sgd
    if task.optimizer != "adam":
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {task.optimizer!r}")
    v = [np.zeros_like(p) for p in params]
    b1, b2, eps = np.float32(0.9), np.float32(0.999), np.float32(1e-8)
    t = [0]

    def adam(grads: list[np.ndarray]) -> None:
        # torch.optim.Adam: bias-corrected moments; a skipped step does not advance t.
        t[0] += 1
        c1 = np.float32(1.0 - 0.9 ** t[0])
        c2 = np.float32(np.sqrt(1.0 - 0.999 ** t[0]))
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (np.float32(1.0) - b1) * g
            v[i] = b2 * v[i] + (np.float32(1.0) - b2) * (g * g)
            params[i] = params[i] - (lr / c1) * m[i] / (np.sqrt(v[i]) / c2 + eps)

    return adam
