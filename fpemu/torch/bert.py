"""A BERT sentence encoder of :mod:`fpemu.train.bert` (all-MiniLM-L6-v2, or the tests' tiny
random one) as a torch module, run through :func:`~fpemu.torch.api.emulate`: the same weights,
the same packed batches and, per precision, the same :mod:`fpemu.train` layer as the NumPy
encoder, so the two paths (both fpemu) can be held to each other.

:func:`bert_module` builds the module: ``nn.Linear`` layers named as Hugging Face names them
(``encoder.layer.0.attention.self.query``, ...), attention's QK^T and PV as ``torch.matmul``,
``nn.LayerNorm``, ``nn.GELU`` (erf), mean pooling and L2 normalisation. Its forward takes the
sentences' token ids packed one after another (no padding ever enters a linear layer, so a
per-tensor scale covers the real tokens only, as in :mod:`fpemu.train.bert.model`) and their
lengths; attention pads each sentence's Q, K, V and leaves the padded keys out of its softmax.

:func:`emulate_options` names the bridge's options for a precision of
:mod:`fpemu.train.gemm_precisions` (NVFP4: its forward recipe, 1-D blocks for the weights too);
:func:`encode` is :func:`fpemu.train.bert.encode` through the bridge (the same arguments; each
linear layer writes the NumPy layer's bits given the same input, while torch's FP32 layer norm,
GELU, softmax and attention products differ from NumPy's in last bits, which a low format's
casts can carry into visible differences of the embeddings: docs/torch.md).

>>> import numpy as np
>>> from fpemu.train.bert import Bert, BertConfig, WordPiece, random_bert
>>> cfg = BertConfig(vocab_size=6, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
>>> bert = Bert(cfg, random_bert(cfg), WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]), 16, "")
>>> bert_module(bert).encoder.layer[0].attention.self.query
Linear(in_features=8, out_features=8, bias=True)
>>> emulate_options("nvfp4", "b200")["recipe"].label
'plain'
>>> e = encode(bert, ["a b", "b a a"], "mxfp8")
>>> e.shape, e.dtype, np.round(np.linalg.norm(e, axis=1), 6).tolist()
((2, 8), dtype('float32'), [1.0, 1.0])
"""

from __future__ import annotations

import dataclasses

import math
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from ..train.bert.files import Bert, BertConfig
from ..train.bert.model import BATCH_TOKENS, batches
from ..train.gemm_precisions import FOUR_OVER_SIX_PRECISIONS, NVFP4_FORWARD, forward_linear, gemm_precision
from .api import emulate

__all__ = ["BertModule", "bert_module", "emulate_options", "embed", "encode"]


class Packing:
    """Where the packed tokens of a batch sit: ``index`` (sentence, position) of each token,
    the ``keys`` mask (sentences, 1, 1, longest) of real tokens, the sentence count and the
    longest length."""

    def __init__(self, lengths: torch.Tensor) -> None:
        self.lengths = lengths
        self.count, self.longest = len(lengths), int(lengths.max())
        sentence = torch.repeat_interleave(torch.arange(self.count), lengths)
        starts = torch.cumsum(lengths, 0) - lengths
        self.sentence = sentence
        self.index = (sentence, torch.arange(len(sentence)) - starts[sentence])
        self.keys = (torch.arange(self.longest)[None, :] < lengths[:, None])[:, None, None, :]

    def padded(self, t: torch.Tensor) -> torch.Tensor:
        """Packed rows (tokens, features) as (sentences, longest, features), zeros after each
        sentence's end."""
        out = t.new_zeros(self.count, self.longest, t.shape[-1])
        out[self.index] = t
        return out


class Attend(nn.Module):
    """softmax(Q K^T / sqrt(d)) V of each head, each sentence over its own tokens: packed Q, K,
    V (tokens, hidden) in, the packed context out; its two products are ``torch.matmul`` in
    FP32 (what ``fpemu.torch.emulating`` would catch)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.heads, self.head_size = config.num_attention_heads, config.head_size

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packing: Packing) -> torch.Tensor:
        n, longest = packing.count, packing.longest

        def heads(t: torch.Tensor) -> torch.Tensor:
            return packing.padded(t).reshape(n, longest, self.heads, self.head_size).transpose(1, 2)

        scores = torch.matmul(heads(q), heads(k).transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = torch.softmax(scores.masked_fill(~packing.keys, float("-inf")), dim=-1)
        context = torch.matmul(probs, heads(v)).transpose(1, 2).reshape(n, longest, self.heads * self.head_size)
        return context[packing.index]


class SelfAttention(nn.Module):
    """Q, K, V (three ``nn.Linear``) and :class:`Attend`."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        h = config.hidden_size
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attend = Attend(config)

    def forward(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        return self.attend(self.query(x), self.key(x), self.value(x), packing)


class DenseNorm(nn.Module):
    """``LayerNorm(dense(h) + residual)``: the attention's and the layer's output."""

    def __init__(self, d_in: int, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(d_in, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(h) + residual)


class Attention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = SelfAttention(config)  # Hugging Face's name: attention.self.query, ...
        self.output = DenseNorm(config.hidden_size, config)

    def forward(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        return self.output(self.self(x, packing), x)


class Intermediate(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = nn.GELU()  # the exact (erf) GELU, as BERT's "gelu"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(x))


class Layer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = Attention(config)
        self.intermediate = Intermediate(config)
        self.output = DenseNorm(config.intermediate_size, config)

    def forward(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        x = self.attention(x, packing)
        return self.output(self.intermediate(x), x)


class Embeddings(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        h = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, h)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, h)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, h)
        self.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = self.word_embeddings(ids) + self.position_embeddings(positions) + self.token_type_embeddings.weight[0]
        return self.LayerNorm(x)


class Encoder(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))


class MeanPooling(nn.Module):
    """Each sentence's mean token vector, L2-normalised (sentence-transformers' pooling and
    normalisation)."""

    def forward(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        total = x.new_zeros(packing.count, x.shape[-1]).index_add_(0, packing.sentence, x)
        return nn.functional.normalize(total / packing.lengths[:, None].to(x.dtype), p=2.0, dim=1, eps=1e-12)


class BertModule(nn.Module):
    """The encoder (parameter names as Hugging Face's ``BertModel``) with mean pooling and L2
    normalisation: ``forward(ids, lengths)`` takes one batch's token ids packed (a 1-D long
    tensor) and each sentence's length, and returns the unit-length sentence embeddings."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.pooling = MeanPooling()

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        self._check(ids, lengths)
        packing = Packing(lengths)
        x = self.embeddings(ids, packing.index[1])
        for layer in self.encoder.layer:
            x = layer(x, packing)
        return self.pooling(x, packing)


    def _check(self, ids: torch.Tensor, lengths: torch.Tensor) -> None:
        cfg = self.config
        for name, t in (("ids", ids), ("lengths", lengths)):
            if not isinstance(t, torch.Tensor) or t.dim() != 1 or t.dtype != torch.long:
                raise TypeError(f"{name} is a 1-D tensor of torch.long (the packed token ids, each sentence's length)")
        if len(lengths) == 0 or int(lengths.min()) < 1 or int(lengths.max()) > cfg.max_position_embeddings:
            raise ValueError(f"every sentence needs 1..{cfg.max_position_embeddings} tokens, got lengths {lengths.tolist()}")
        if int(lengths.sum()) != len(ids):
            raise ValueError(f"the lengths add up to {int(lengths.sum())} tokens, ids holds {len(ids)}")
        if int(ids.min()) < 0 or int(ids.max()) >= cfg.vocab_size:
            raise ValueError(f"token ids must be in 0..{cfg.vocab_size - 1}")


def bert_module(bert: Bert) -> BertModule:
    """A new :class:`BertModule` holding (copies of) ``bert``'s weights, in evaluation mode."""
    if not isinstance(bert, Bert):
        raise TypeError(f"bert_module takes a fpemu.train.bert.Bert (load_bert's result), got {type(bert).__name__}")
    with torch.device("meta"):  # no memory for an initialisation the weights replace
        module = BertModule(bert.config)
    # One copy of each weight (the NumPy model's may be a read-only memory map), the module's own.
    weights = {k: torch.tensor(np.asarray(v, np.float32)) for k, v in bert.params.items()}
    module.load_state_dict(weights, strict=True, assign=True)
    return module.eval()


def emulate_options(precision: str, accumulator: object = None) -> dict[str, Any] | None:
    """The keywords of :func:`~fpemu.torch.api.emulate` that give each linear layer the forward
    GEMM of ``precision`` in :mod:`fpemu.train.gemm_precisions` (None for ``fp32``: no
    emulation): BF16/FP16 operands rounded, E4M3 with current scaling, the MX formats with their
    default scale rules, NVFP4 with :data:`~fpemu.train.gemm_precisions.NVFP4_FORWARD` (1-D
    blocks along K for the weights, not the training recipe's 16x16 tiles; Four Over Six's
    precisions add its rule). A bad name or a unit without the format is the NumPy path's own
    error.

    >>> emulate_options("e4m3", "h100"), emulate_options("fp32")
    ({'inputs': 'e4m3', 'recipe': 'current', 'accumulator': 'h100'}, None)
    >>> emulate_options("nvfp4_4o6mse", "b200")["recipe"].label
    '4o6mse'
    """
    p = gemm_precision(precision)
    forward_linear(p, accumulator)  # the same checks (fp32 with a unit, a unit without the format)
    if p == "fp32":
        return None
    if p in FOUR_OVER_SIX_PRECISIONS:
        recipe = dataclasses.replace(NVFP4_FORWARD, four_over_six=FOUR_OVER_SIX_PRECISIONS[p])
        return {"inputs": "nvfp4", "recipe": recipe, "accumulator": accumulator}
    if p == "fp8_block":
        return {"inputs": "e4m3", "recipe": "blockwise", "accumulator": accumulator}
    recipe = {"e4m3": "current", "nvfp4": NVFP4_FORWARD}.get(p)
    return {"inputs": p, "recipe": recipe, "accumulator": accumulator}


def _packed(bert: Bert, ids: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.tensor([i for s in ids for i in s], dtype=torch.long),
            torch.tensor([len(s) for s in ids], dtype=torch.long))


def embed(module: BertModule, bert: Bert, texts: Sequence[str], *, batch_tokens: int = BATCH_TOKENS,
          step: Callable[[], None] | None = None) -> np.ndarray:
    """The embeddings of ``texts`` by ``module`` (emulated or not), tokenized by ``bert``'s
    tokenizer and batched as :func:`fpemu.train.bert.encode` batches them; ``step()`` after
    each layer of each batch."""
    if not isinstance(module, BertModule):
        raise TypeError(f"embed runs a BertModule (bert_module's result), got {type(module).__name__}")
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a sequence of strings")
    ids = [bert.tokenizer.encode(t, bert.max_seq_length) for t in texts]
    out = np.empty((len(ids), bert.config.hidden_size), np.float32)
    hooks = [] if step is None else [m.register_forward_hook(lambda *_: step()) for m in module.encoder.layer]
    try:
        with torch.no_grad():
            for part in batches([len(s) for s in ids], batch_tokens):
                out[part.start : part.stop] = module(*_packed(bert, ids[part.start : part.stop])).numpy()
    finally:
        for h in hooks:
            h.remove()
    return out


def encode(bert: Bert, texts: Sequence[str], precision: str = "fp32", accumulator: object = None, *,
           batch_tokens: int = BATCH_TOKENS, step: Callable[[], None] | None = None) -> np.ndarray:
    """:func:`fpemu.train.bert.encode` through the bridge: a new :func:`bert_module` with every
    ``nn.Linear`` emulated as :func:`emulate_options` says (attention's products, layer norm,
    GELU, softmax and pooling in torch's FP32), then :func:`embed`."""
    options = emulate_options(precision, accumulator)
    module = bert_module(bert)
    if options is not None:
        module = emulate(module, **options)
    return embed(module, bert, texts, batch_tokens=batch_tokens, step=step)
