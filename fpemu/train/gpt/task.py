"""The transformer task: the corpus, the model's shape and the training hyper-parameters
(:class:`GPTTask`, :func:`make_gpt_task`), the batches, the AdamW update and the evaluation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_float32, check_int
from .config import GPTConfig
from .corpus import make_corpus


@dataclass(frozen=True)
class GPTTask:
    """What a transformer run trains on and how (checked by :func:`make_gpt_task`)."""

    config: GPTConfig
    train: np.ndarray  # token ids
    val: np.ndarray
    batch_size: int = 8
    lr: float = 1e-2
    warmup: int = 20
    weight_decay: float = 0.1
    clip: float = 1.0
    n_eval: int = 128  # validation windows of `context` tokens

    @property
    def description(self) -> str:
        """The task in words, for the comparison table's title.

        >>> make_gpt_task(0, n_train=2000, n_val=500).description
        'a 3-block transformer of width 64 predicts the next character of a generated corpus (AdamW, lr 0.01, batch 8 x 32 tokens)'
        """
        c = self.config
        return (f"a {c.n_layer}-block transformer of width {c.d_model} predicts the next character of a generated "
                f"corpus (AdamW, lr {self.lr:g}, batch {self.batch_size} x {c.context} tokens)")


def make_gpt_task(
    seed: int = 0, *, batch_size: int = 8, lr: float = 1e-2, warmup: int = 20, weight_decay: float = 0.1,
    clip: float = 1.0, n_train: int = 200_000, n_val: int = 20_000, n_eval: int = 128, **config,
) -> GPTTask:
    """The default transformer task: a generated corpus (:mod:`.corpus`) and a 3-block model
    of width 64 (``config`` overrides :class:`GPTConfig`'s fields), AdamW with a warm-up and a
    cosine decay, gradients clipped to norm 1.

    >>> t = make_gpt_task(0, n_train=2000, n_val=500)
    >>> t.config.n_layer, t.batch_size * t.config.context, len(t.val) >= 500
    (3, 256, True)
    """
    seed = check_int("seed", seed, 0)
    cfg = GPTConfig(**config)
    batch_size = check_int("batch_size", batch_size, 1, 4096)
    n_train = check_int("n_train", n_train, cfg.context + 2, 2**26)
    n_val = check_int("n_val", n_val, cfg.context + 2, 2**26)
    n_eval = check_int("n_eval", n_eval, 1, 4096)
    warmup = check_int("warmup", warmup, 0)
    ok = lambda v: bool(np.isfinite(v) and v >= 0)  # noqa: E731
    for name, value in (("lr", lr), ("weight_decay", weight_decay), ("clip", clip)):
        check_float32(name, value, ok, "a finite float32 number >= 0")
    if batch_size * cfg.context * max(cfg.vocab, cfg.d_ff, 3 * cfg.d_model) > 2**26:
        raise ValueError("a batch's activations would exceed 2**26 values: use a smaller batch or model")
    train, val = make_corpus(seed, n_train, n_val)
    return GPTTask(cfg, train, val, batch_size, float(lr), warmup, float(weight_decay), float(clip), n_eval)


def batch(tokens: np.ndarray, rng: np.random.Generator, b: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """``b`` random windows of ``t`` tokens and the tokens that follow each position.

    >>> x, y = batch(np.arange(100), np.random.default_rng(0), 2, 4)
    >>> bool(np.all(y == x + 1)), x.shape
    (True, (2, 4))
    """
    starts = rng.integers(0, len(tokens) - t - 1, b)
    idx = starts[:, None] + np.arange(t)
    return tokens[idx].astype(np.int64), tokens[idx + 1].astype(np.int64)


def eval_windows(tokens: np.ndarray, n: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` fixed, evenly spaced windows of the validation stream (the same for every run)."""
    starts = np.linspace(0, len(tokens) - t - 2, n).astype(np.int64)
    idx = starts[:, None] + np.arange(t)
    return tokens[idx].astype(np.int64), tokens[idx + 1].astype(np.int64)


def lr_at(task: GPTTask, step: int, steps: int) -> float:
    """Linear warm-up over ``task.warmup`` steps, then a cosine decay to a tenth of ``task.lr``.

    >>> t = make_gpt_task(0, n_train=2000, n_val=500, warmup=10)
    >>> [round(lr_at(t, s, 110) / t.lr, 3) for s in (0, 9, 10, 109)]
    [0.1, 1.0, 1.0, 0.1]
    """
    if step < task.warmup:
        return task.lr * (step + 1) / task.warmup
    frac = (step - task.warmup) / max(1, steps - task.warmup - 1)
    return float(task.lr * (0.1 + 0.45 * (1.0 + np.cos(np.pi * min(frac, 1.0)))))


class AdamW:
    """``torch.optim.AdamW`` (betas 0.9, 0.95; eps 1e-8) in FP32 with gradient clipping to a
    global norm; weight decay on the matrices only (embeddings and linear weights).

    >>> p = {"w": np.ones((2, 2), np.float32)}
    >>> AdamW(p, weight_decay=0.0)(p, {"w": np.ones((2, 2), np.float32)}, 0.1, clip=0.0)
    >>> p["w"][0].tolist()
    [0.8999999761581421, 0.8999999761581421]
    """

    def __init__(self, params: dict, weight_decay: float = 0.1) -> None:
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0
        self.wd = np.float32(weight_decay)

    def __call__(self, params: dict, grads: dict, lr: float, clip: float = 1.0) -> None:
        if clip > 0:
            norm = np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads.values()))
            if norm > clip:
                grads = {k: g * np.float32(clip / norm) for k, g in grads.items()}
        self.t += 1
        b1, b2, eps, lr32 = np.float32(0.9), np.float32(0.95), np.float32(1e-8), np.float32(lr)
        c1, c2 = np.float32(1.0 - 0.9**self.t), np.float32(np.sqrt(1.0 - 0.95**self.t))
        for k, g in grads.items():
            self.m[k] = b1 * self.m[k] + (np.float32(1) - b1) * g
            self.v[k] = b2 * self.v[k] + (np.float32(1) - b2) * (g * g)
            p = params[k] * (np.float32(1) - lr32 * self.wd) if params[k].ndim == 2 else params[k]
            params[k] = p - (lr32 / c1) * self.m[k] / (np.sqrt(self.v[k]) / c2 + eps)
