"""The BERT sentence encoder in NumPy, forward only, with every linear layer in an emulated
precision (:func:`fpemu.train.gemm_precisions.forward_linear`, the training layers):

embeddings (word + position + token type 0, layer norm) -> per layer: Q, K, V (three linear
layers), softmax(Q K^T / sqrt(d)) V per head over the sentence's own tokens, the output linear
layer, residual and layer norm, the intermediate linear layer, GELU (erf), the output linear
layer, residual and layer norm -> the mean of the token vectors -> L2 normalisation.

Sentences are batched with their tokens packed one after another (no padding ever enters a
GEMM): a linear layer sees a (tokens, features) matrix, so a per-tensor scale (``e4m3``, NVFP4's
tensor scale) covers the batch's real tokens. Layer norm, softmax, GELU, the attention products
and the pooling run in FP32, as mixed-precision inference keeps them.

>>> from .files import BertConfig, random_bert
>>> from .tokenizer import WordPiece
>>> from . import files
>>> cfg = BertConfig(vocab_size=6, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
>>> bert = files.Bert(cfg, random_bert(cfg), WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]), 16, "")
>>> e = encode(bert, ["a b", "b a a"], "mxfp8")
>>> e.shape, e.dtype, np.round(np.linalg.norm(e, axis=1), 6).tolist()
((2, 8), dtype('float32'), [1.0, 1.0])
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..gemm_precisions import forward_linear
from ..gpt.layers import layer_norm
from ..linears import Linear
from .files import Bert
from .layers import gelu, masked_softmax

__all__ = ["LINEARS", "make_linears", "encode", "encode_ids", "batches", "mean_pool"]

# The linear layers of one BERT layer, by their Hugging Face names.
LINEARS = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
           "attention": "attention.output.dense", "intermediate": "intermediate.dense", "output": "output.dense"}
BATCH_TOKENS = 4096  # tokens per batch: about 25 MB of activations for MiniLM's widest layer


def make_linears(n_layers: int, precision: str = "fp32", accumulator: object = None) -> list[dict[str, Linear]]:
    """One linear layer of ``precision`` per GEMM of each of ``n_layers`` BERT layers."""
    return [{name: forward_linear(precision, accumulator, seed=n * len(LINEARS) + i) for i, name in enumerate(LINEARS)}
            for n in range(n_layers)]


def batches(lengths: Sequence[int], batch_tokens: int = BATCH_TOKENS) -> list[range]:
    """Consecutive sentences in batches of at most ``batch_tokens`` tokens (a longer sentence
    alone).

    >>> batches([3, 4, 5, 2], 8)
    [range(0, 2), range(2, 4)]
    """
    out, start, used = [], 0, 0
    for i, n in enumerate(lengths):
        if used and used + n > batch_tokens:
            out.append(range(start, i))
            start, used = i, 0
        used += n
    if len(lengths):
        out.append(range(start, len(lengths)))
    return out


def _ln(bert: Bert, x: np.ndarray, name: str) -> np.ndarray:
    p = bert.params
    return layer_norm(x, p[name + ".weight"], p[name + ".bias"], eps=bert.config.layer_norm_eps)[0]


def _attention(bert: Bert, q, k, v, where: tuple[np.ndarray, np.ndarray], lengths: np.ndarray) -> np.ndarray:
    """Each sentence's tokens attend to its own tokens: the packed (tokens, hidden) Q, K, V laid
    out as (sentences, heads, longest, head size), padded keys left out of the softmax."""
    cfg = bert.config
    n, longest, heads, d = len(lengths), int(lengths.max()), cfg.num_attention_heads, cfg.head_size

    def padded(t: np.ndarray) -> np.ndarray:
        out = np.zeros((n, longest, cfg.hidden_size), np.float32)
        out[where] = t
        return out.reshape(n, longest, heads, d).transpose(0, 2, 1, 3)

    scores = (padded(q) @ padded(k).transpose(0, 1, 3, 2)) / np.float32(np.sqrt(d))
    keys = (np.arange(longest)[None, :] < lengths[:, None])[:, None, None, :]
    context = masked_softmax(scores, keys) @ padded(v)
    return context.transpose(0, 2, 1, 3).reshape(n, longest, cfg.hidden_size)[where]


def encode_ids(bert: Bert, ids: Sequence[Sequence[int]], linears: list[dict[str, Linear]],
               step: Callable[[], None] | None = None) -> np.ndarray:
    """The normalized embeddings (float32, one row per sentence) of one batch of token-id
    sequences; ``step()`` is called after each layer."""
    p, cfg = bert.params, bert.config
    lengths = np.array([len(s) for s in ids])
    if len(ids) == 0 or lengths.min() < 1 or lengths.max() > cfg.max_position_embeddings:
        raise ValueError(f"every sentence needs 1..{cfg.max_position_embeddings} tokens, got lengths {lengths.tolist()}")
    tokens = np.concatenate([np.asarray(s, dtype=np.int64) for s in ids])
    if tokens.min() < 0 or tokens.max() >= cfg.vocab_size:
        raise ValueError(f"token ids must be in 0..{cfg.vocab_size - 1}")
    positions = np.concatenate([np.arange(m) for m in lengths])
    where = (np.repeat(np.arange(len(lengths)), lengths), positions)
    x = (p["embeddings.word_embeddings.weight"][tokens] + p["embeddings.position_embeddings.weight"][positions]
         + p["embeddings.token_type_embeddings.weight"][0])
    x = _ln(bert, x, "embeddings.LayerNorm")
    for n, layer in enumerate(linears):
        def linear(name: str, t: np.ndarray) -> np.ndarray:
            w = f"encoder.layer.{n}.{LINEARS[name]}."
            return layer[name].fwd(t, p[w + "weight"].T, p[w + "bias"], record=False)[0]

        context = _attention(bert, linear("query", x), linear("key", x), linear("value", x), where, lengths)
        x = _ln(bert, linear("attention", context) + x, f"encoder.layer.{n}.attention.output.LayerNorm")
        h = linear("output", gelu(linear("intermediate", x)))
        x = _ln(bert, h + x, f"encoder.layer.{n}.output.LayerNorm")
        if step is not None:
            step()
    return mean_pool(x, lengths)


def mean_pool(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each sentence's mean token vector, L2-normalised: ``x`` holds the sentences' tokens
    packed, ``lengths`` their counts.

    >>> mean_pool(np.float32([[3, 0], [1, 0], [0, 2]]), np.array([2, 1])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    mean = np.add.reduceat(x, starts, axis=0) / np.asarray(lengths)[:, None].astype(np.float32)
    return mean / np.maximum(np.sqrt((mean * mean).sum(axis=1, keepdims=True)), np.float32(1e-12))


def encode(bert: Bert, texts: Sequence[str], precision: str = "fp32", accumulator: object = None, *,
           batch_tokens: int = BATCH_TOKENS, step: Callable[[], None] | None = None) -> np.ndarray:
    """The sentence embeddings of ``texts`` (float32, unit length) with every linear layer in
    ``precision`` (formats only, or through ``accumulator``: :mod:`fpemu.train.gemm_precisions`),
    in batches of at most ``batch_tokens`` tokens."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a sequence of strings")
    linears = make_linears(bert.config.num_hidden_layers, precision, accumulator)
    ids = [bert.tokenizer.encode(t, bert.max_seq_length) for t in texts]
    out = np.empty((len(ids), bert.config.hidden_size), np.float32)
    for part in batches([len(s) for s in ids], batch_tokens):
        out[part.start : part.stop] = encode_ids(bert, ids[part.start : part.stop], linears, step)
    return out
