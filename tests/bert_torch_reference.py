"""A BERT encoder in plain torch ops (float32, a padded batch with an attention mask, as
Hugging Face's BertModel and sentence-transformers' mean pooling compute it), for the tests that
hold the NumPy encoder to torch. Importing it needs torch (tests importorskip it)."""

from __future__ import annotations

import math

import numpy as np
import torch


def torch_bert(params: dict, cfg, ids_list: list[list[int]]) -> np.ndarray:
    """The normalized mean-pooled embeddings of the token-id lists, in float32."""
    P = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in params.items()}
    B, L = len(ids_list), max(len(s) for s in ids_list)
    ids, mask = torch.zeros((B, L), dtype=torch.long), torch.zeros((B, L))
    for i, s in enumerate(ids_list):
        ids[i, : len(s)], mask[i, : len(s)] = torch.tensor(s), 1

    def ln(x, n):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), P[n + ".weight"], P[n + ".bias"], cfg.layer_norm_eps)

    def lin(x, n):
        return torch.nn.functional.linear(x, P[n + ".weight"], P[n + ".bias"])

    x = (P["embeddings.word_embeddings.weight"][ids] + P["embeddings.position_embeddings.weight"][:L][None]
         + P["embeddings.token_type_embeddings.weight"][0])
    x = ln(x, "embeddings.LayerNorm")
    H, d = cfg.num_attention_heads, cfg.head_size
    masked = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float32).min
    for n in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{n}."
        q, k, v = (lin(x, p + "attention.self." + m).view(B, L, H, d).transpose(1, 2) for m in ("query", "key", "value"))
        s = q @ k.transpose(-1, -2) / math.sqrt(d) + masked
        c = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, L, H * d)
        x = ln(lin(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        x = ln(lin(torch.nn.functional.gelu(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
    e = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
    return torch.nn.functional.normalize(e, p=2, dim=1).numpy()
