"""Causal multi-head self-attention, forward and backward: ``softmax(Q K^T / sqrt(d_head)) V``
per head, the two batched GEMMs in the policy's attention format (``rnd``; None for the
input's dtype) and the softmax in FP32.

With a low format the scores, the probabilities and the output are rounded to it as
``torch.autocast`` rounds its ``matmul`` inputs and outputs; the backward GEMMs' outputs are
rounded too and counted as ``"attn"`` gradients.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .layers import causal_softmax, softmax_back

Rounder = Callable[[np.ndarray], np.ndarray] | None


def _r(rnd: Rounder, x: np.ndarray) -> np.ndarray:
    return x if rnd is None else rnd(x)


def _split(x: np.ndarray, batch: int, n_head: int) -> np.ndarray:
    """(B*T, d) -> (B, H, T, d/H)."""
    n, d = x.shape
    return x.reshape(batch, n // batch, n_head, d // n_head).transpose(0, 2, 1, 3)


def _merge(x: np.ndarray) -> np.ndarray:
    """(B, H, T, dh) -> (B*T, H*dh)."""
    b, h, t, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b * t, h * dh)


def attention(qkv: np.ndarray, batch: int, n_head: int, rnd: Rounder = None) -> tuple[np.ndarray, tuple]:
    """The attention output ``(B*T, d)`` of the projections ``qkv`` ``(B*T, 3d)``.

    >>> out, _ = attention(np.ones((4, 6)), 2, 1)
    >>> out.shape, out[0].tolist()
    ((4, 2), [1.0, 1.0])
    """
    d = qkv.shape[1] // 3
    q, k, v = (_r(rnd, _split(qkv[:, i * d:(i + 1) * d], batch, n_head)) for i in range(3))
    scale = qkv.dtype.type(1.0 / np.sqrt(d // n_head))
    s = _r(rnd, _r(rnd, q @ k.transpose(0, 1, 3, 2)) * scale)
    p = causal_softmax(s.astype(np.promote_types(s.dtype, np.float32)))
    pr = _r(rnd, p)
    out = _r(rnd, pr @ v)
    return _merge(out), (q, k, v, p, pr, scale)


def attention_back(dout: np.ndarray, cache: tuple, batch: int, n_head: int, rnd: Rounder = None,
                   stats=None) -> np.ndarray:
    """The gradient w.r.t. ``qkv`` of :func:`attention`, given that of its output.

    >>> qkv = np.random.default_rng(0).standard_normal((4, 6))
    >>> out, cache = attention(qkv, 2, 1)
    >>> attention_back(np.ones_like(out), cache, 2, 1).shape
    (4, 6)
    """
    q, k, v, p, pr, scale = cache

    def cast(x):
        if rnd is None:
            return x
        xq = rnd(x)
        if stats is not None:
            stats.add(x, xq, kind="attn")
        return xq

    do = _r(rnd, _split(dout, batch, n_head))
    dp = cast(do @ v.transpose(0, 1, 3, 2))
    dv = cast(pr.transpose(0, 1, 3, 2) @ do)
    ds = cast(softmax_back(p, dp)) * scale
    dq = cast(ds @ k)
    dk = cast(ds.transpose(0, 1, 3, 2) @ q)
    return np.concatenate([_merge(dq), _merge(dk), _merge(dv)], axis=1)
