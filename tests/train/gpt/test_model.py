"""The transformer's hand-written backward pass against finite differences (float64), and its
pieces against their definitions."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu.train.gpt import layers as L
from fpemu.train.gpt.attention import attention, attention_back
from fpemu.train.gpt.config import GPTConfig, init_gpt, param_shapes
from fpemu.train.gpt.corpus import ALPHABET, decode_ids, generate_text, make_corpus
from fpemu.train.gpt.model import loss_and_grads
from fpemu.train.gpt.precision import make_gpt_precision

CFG = GPTConfig(vocab=11, context=6, d_model=8, n_head=2, n_layer=2, d_ff=12)


def _problem(seed: int = 1):
    rng = np.random.default_rng(seed)
    params = init_gpt(CFG, 0, np.float64)
    for k in params:  # away from the symmetric start, so every gradient is informative
        params[k] = params[k] + 0.3 * rng.standard_normal(params[k].shape)
    tok, tgt = rng.integers(0, CFG.vocab, (3, 6)), rng.integers(0, CFG.vocab, (3, 6))
    return params, tok, tgt, make_gpt_precision("fp32", CFG.n_layer)


def test_backward_matches_finite_differences_for_every_parameter():
    params, tok, tgt, prec = _problem()
    loss, grads = loss_and_grads(params, tok, tgt, CFG, prec)
    assert set(grads) == set(param_shapes(CFG)) and all(grads[k].shape == params[k].shape for k in params)
    rng = np.random.default_rng(2)
    eps = 1e-6
    for name in params:  # central differences at 3 entries of every parameter
        for _ in range(3):
            idx = tuple(int(rng.integers(0, s)) for s in params[name].shape)
            old = params[name][idx]
            params[name][idx] = old + eps
            up, _ = loss_and_grads(params, tok, tgt, CFG, prec)
            params[name][idx] = old - eps
            down, _ = loss_and_grads(params, tok, tgt, CFG, prec)
            params[name][idx] = old
            num = (up - down) / (2 * eps)
            assert abs(num - grads[name][idx]) <= 1e-6 * max(abs(num), 1e-3), (name, idx)  # measured <= 1.3e-7


def test_backward_matches_a_directional_derivative():
    params, tok, tgt, prec = _problem(5)
    _, grads = loss_and_grads(params, tok, tgt, CFG, prec)
    rng = np.random.default_rng(3)
    direction = {k: rng.standard_normal(v.shape) for k, v in params.items()}
    eps = 1e-6
    f = lambda s: loss_and_grads({k: v + s * direction[k] for k, v in params.items()}, tok, tgt, CFG, prec)[0]  # noqa: E731
    num = (f(eps) - f(-eps)) / (2 * eps)
    ana = sum(float(np.sum(grads[k] * direction[k])) for k in params)
    assert abs(num - ana) < 1e-6 * abs(ana)


def test_attention_is_causal_and_its_backward_is_exact():
    rng = np.random.default_rng(0)
    qkv = rng.standard_normal((8, 12))  # batch 2 x 4 positions, d = 4, 2 heads
    out, cache = attention(qkv, 2, 2)
    changed = qkv.copy()
    changed[3] += 1.0  # the last position of the first sequence
    out2, _ = attention(changed, 2, 2)
    assert np.array_equal(out[:3], out2[:3]) and np.array_equal(out[4:], out2[4:])
    w = rng.standard_normal(out.shape)
    g = attention_back(w, cache, 2, 2)
    e = np.zeros_like(qkv)
    e[5, 7] = 1e-6
    num = (np.sum(attention(qkv + e, 2, 2)[0] * w) - np.sum(attention(qkv - e, 2, 2)[0] * w)) / 2e-6
    assert abs(num - g[5, 7]) < 1e-7


def test_layers_against_their_definitions():
    x = np.array([[1.0, 2.0, 4.0]])
    y, _ = L.layer_norm(x, np.ones(3), np.zeros(3))
    ref = (x - x.mean()) / np.sqrt(x.var() + L.LN_EPS)
    assert np.allclose(y, ref, atol=1e-12)
    assert np.isclose(float(L.gelu(np.array(-3.0))), -0.0036373920817729943)  # GPT-2's tanh GELU
    loss, p = L.cross_entropy(np.log(np.array([[1.0, 3.0]])), np.array([1]))
    assert np.isclose(loss, -np.log(0.75)) and np.allclose(p, [[0.25, 0.75]])
    assert np.allclose(L.cross_entropy_back(p, np.array([1]), 4.0), [[1.0, -1.0]])


def test_corpus_is_generated_and_decodes():
    tr, va = make_corpus(0, 5000, 1000)
    assert tr.dtype == np.uint8 and int(tr.max()) < len(ALPHABET)
    text = decode_ids(tr[:2000])
    lines = text.split("\n")[:-1]
    sums = [ln for ln in lines if "+" in ln]
    assert sums and all(int(a) + int(b) == int(c) for a, b, c in
                        (ln.rstrip(".").replace("=", "+").split("+") for ln in sums))
    revs = [ln for ln in lines if ln.startswith("rev ")]
    assert revs and all(w[::-1] == r for w, r in (ln[4:].rstrip(".").split("=") for ln in revs))
    assert generate_text(500, 3) == generate_text(500, 3) != generate_text(500, 4)
    assert not np.array_equal(tr[:1000], va[:1000])


def test_config_checks():
    with pytest.raises(ValueError, match="multiple of n_head"):
        GPTConfig(d_model=10, n_head=4)
    with pytest.raises(ValueError, match="2\\*\\*26"):
        GPTConfig(vocab=2**20, d_model=2**8, n_head=1)
    with pytest.raises(TypeError, match="n_layer"):
        GPTConfig(n_layer=1.5)
    assert GPTConfig().n_params == 154752
