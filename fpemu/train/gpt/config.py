"""The transformer's shape (:class:`GPTConfig`) and its initial weights (:func:`init_gpt`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int
from .corpus import ALPHABET

# Resource bound: every parameter array and every activation of a step within this many values.
GPT_LIMITS = {"max_values": 2**26}


@dataclass(frozen=True)
class GPTConfig:
    """A decoder-only transformer: token and position embeddings, ``n_layer`` pre-LN blocks of
    causal multi-head attention and a GELU MLP, a final layer norm and the output layer tied to
    the token embedding.

    >>> GPTConfig().n_params
    154752
    """

    vocab: int = len(ALPHABET)
    context: int = 32
    d_model: int = 64
    n_head: int = 4
    n_layer: int = 3
    d_ff: int = 256

    def __post_init__(self) -> None:
        for name in ("vocab", "context", "d_model", "n_head", "n_layer", "d_ff"):
            check_int(name, getattr(self, name), 1)
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_head ({self.n_head})")
        biggest = max(self.vocab, self.context, 3 * self.d_model, self.d_ff) * max(self.d_model, self.d_ff)
        if biggest > GPT_LIMITS["max_values"]:
            raise ValueError(f"a weight matrix of {biggest} values; the limit is {GPT_LIMITS['max_values']} (2**26)")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def n_params(self) -> int:
        return sum(int(np.prod(s)) for s in param_shapes(self).values())


def param_shapes(cfg: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape (weights are ``(d_in, d_out)``; ``wte`` is
    ``(vocab, d_model)`` and, transposed, the output layer).

    >>> list(param_shapes(GPTConfig(n_layer=1)))[:4]
    ['wte', 'wpe', 'h0.ln1.g', 'h0.ln1.b']
    """
    d, f = cfg.d_model, cfg.d_ff
    shapes: dict[str, tuple[int, ...]] = {"wte": (cfg.vocab, d), "wpe": (cfg.context, d)}
    for i in range(cfg.n_layer):
        p = f"h{i}."
        shapes.update({
            p + "ln1.g": (d,), p + "ln1.b": (d,),
            p + "qkv.w": (d, 3 * d), p + "qkv.b": (3 * d,),
            p + "proj.w": (d, d), p + "proj.b": (d,),
            p + "ln2.g": (d,), p + "ln2.b": (d,),
            p + "fc1.w": (d, f), p + "fc1.b": (f,),
            p + "fc2.w": (f, d), p + "fc2.b": (d,),
        })
    shapes.update({"lnf.g": (d,), "lnf.b": (d,)})
    return shapes


def init_gpt(cfg: GPTConfig, seed: int, dtype=np.float32) -> dict[str, np.ndarray]:
    """GPT-2's initialisation: weights N(0, 0.02), the residual projections (``proj``, ``fc2``)
    N(0, 0.02 / sqrt(2 n_layer)), biases 0, layer-norm gains 1.

    >>> p = init_gpt(GPTConfig(n_layer=1), 0)
    >>> p["h0.ln1.g"][:2].tolist(), p["h0.qkv.b"][:2].tolist(), p["wte"].dtype.name
    ([1.0, 1.0], [0.0, 0.0], 'float32')
    """
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng([seed, 0x697])
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith(".g"):
            params[name] = np.ones(shape, dtype)
        elif name.endswith(".b"):
            params[name] = np.zeros(shape, dtype)
        else:
            std = 0.02 / np.sqrt(2 * cfg.n_layer) if name.endswith(("proj.w", "fc2.w")) else 0.02
            params[name] = (std * rng.standard_normal(shape)).astype(dtype)
    return params
