"""The transformer's forward and backward passes, written out: embeddings, pre-LN blocks
(attention and GELU MLP, each added to the residual stream), final layer norm, tied output
layer; every linear layer's GEMMs through the run's :class:`~.precision.GPTPrecision`."""

from __future__ import annotations

import numpy as np

from .attention import attention, attention_back
from .config import GPTConfig
from .layers import (
    cross_entropy,
    cross_entropy_back,
    gelu,
    gelu_back,
    layer_norm,
    layer_norm_back,
)
from .precision import GPTPrecision


def _r(fn, x):
    return x if fn is None else fn(x)


def forward(params: dict, tokens: np.ndarray, cfg: GPTConfig, prec: GPTPrecision) -> tuple[np.ndarray, dict]:
    """Logits ``(B*T, vocab)`` of token windows ``(B, T)``, and the cache the backward needs.

    >>> from .config import init_gpt
    >>> from .precision import make_gpt_precision
    >>> cfg = GPTConfig(n_layer=1, d_model=8, n_head=2, d_ff=16, context=4)
    >>> logits, _ = forward(init_gpt(cfg, 0), np.zeros((2, 4), int), cfg, make_gpt_precision("fp32", 1))
    >>> logits.shape
    (8, 41)
    """
    b, t = tokens.shape
    x = (params["wte"][tokens] + params["wpe"][:t]).reshape(b * t, cfg.d_model)
    cache: dict = {"tokens": tokens, "blocks": []}
    for i, lins in enumerate(prec.blocks):
        p = f"h{i}."
        c: dict = {}
        h, c["ln1"] = layer_norm(x, params[p + "ln1.g"], params[p + "ln1.b"])
        qkv, c["qkv"] = lins["qkv"].fwd(h, params[p + "qkv.w"], params[p + "qkv.b"])
        a, c["attn"] = attention(qkv, b, cfg.n_head, prec.attn)
        y, c["proj"] = lins["proj"].fwd(a, params[p + "proj.w"], params[p + "proj.b"])
        x = x + y
        h, c["ln2"] = layer_norm(x, params[p + "ln2.g"], params[p + "ln2.b"])
        u, c["fc1"] = lins["fc1"].fwd(h, params[p + "fc1.w"], params[p + "fc1.b"])
        c["u"] = u
        y, c["fc2"] = lins["fc2"].fwd(_r(prec.act, gelu(u)), params[p + "fc2.w"], params[p + "fc2.b"])
        x = x + y
        cache["blocks"].append(c)
    h, cache["lnf"] = layer_norm(x, params["lnf.g"], params["lnf.b"])
    logits, cache["head"] = prec.head.fwd(h, params["wte"].T, None)
    return logits, cache


def backward(params: dict, cache: dict, dlogits: np.ndarray, cfg: GPTConfig, prec: GPTPrecision,
             stats=None) -> dict:
    """Gradients of every parameter given the (scaled) gradient of the loss w.r.t. the logits;
    the GEMMs' low-format gradients are counted in ``stats``."""
    grads: dict = {}
    tokens = cache["tokens"]
    b, t = tokens.shape
    dh, dwte_head, _ = prec.head.bwd(dlogits, cache["head"], stats, "loss")
    dx, grads["lnf.g"], grads["lnf.b"] = layer_norm_back(dh, params["lnf.g"], cache["lnf"])
    for i in range(len(prec.blocks) - 1, -1, -1):
        p, lins, c = f"h{i}.", prec.blocks[i], cache["blocks"][i]
        dg, grads[p + "fc2.w"], grads[p + "fc2.b"] = lins["fc2"].bwd(dx, c["fc2"], stats)
        du = gelu_back(dg, c["u"])
        dh, grads[p + "fc1.w"], grads[p + "fc1.b"] = lins["fc1"].bwd(du, c["fc1"], stats)
        d2, grads[p + "ln2.g"], grads[p + "ln2.b"] = layer_norm_back(dh, params[p + "ln2.g"], c["ln2"])
        dx = dx + d2
        da, grads[p + "proj.w"], grads[p + "proj.b"] = lins["proj"].bwd(dx, c["proj"], stats)
        dqkv = attention_back(da, c["attn"], b, cfg.n_head, prec.attn, stats)
        dh, grads[p + "qkv.w"], grads[p + "qkv.b"] = lins["qkv"].bwd(dqkv, c["qkv"], stats)
        d1, grads[p + "ln1.g"], grads[p + "ln1.b"] = layer_norm_back(dh, params[p + "ln1.g"], c["ln1"])
        dx = dx + d1
    # The token embedding gets the output layer's gradient (tied) and the lookup's.
    onehot = np.zeros((b * t, cfg.vocab), dx.dtype)
    onehot[np.arange(b * t), tokens.ravel()] = 1.0
    grads["wte"] = dwte_head.T + onehot.T @ dx
    grads["wpe"] = np.zeros_like(params["wpe"])
    grads["wpe"][:t] = dx.reshape(b, t, cfg.d_model).sum(axis=0)
    return grads


def loss_and_grads(params: dict, tokens: np.ndarray, targets: np.ndarray, cfg: GPTConfig,
                   prec: GPTPrecision, scale: float = 1.0, stats=None) -> tuple[float, dict]:
    """The mean cross-entropy of next-token prediction and the gradients of ``scale`` times it.

    >>> from .config import init_gpt
    >>> from .precision import make_gpt_precision
    >>> cfg = GPTConfig(n_layer=1, d_model=8, n_head=2, d_ff=16, context=4)
    >>> loss, g = loss_and_grads(init_gpt(cfg, 0), np.zeros((2, 4), int), np.ones((2, 4), int), cfg,
    ...                          make_gpt_precision("fp32", 1))
    >>> round(loss, 2), sorted(g) == sorted(init_gpt(cfg, 0))
    (3.75, True)
    """
    logits, cache = forward(params, tokens, cfg, prec)
    loss, probs = cross_entropy(logits.astype(np.promote_types(logits.dtype, np.float32)), targets.ravel())
    return loss, backward(params, cache, cross_entropy_back(probs, targets.ravel(), scale), cfg, prec, stats)
