"""A small decoder-only transformer trained in emulated FP16, BF16, FP8 and FP4 recipes.

The model (token and position embeddings, pre-LN blocks of causal multi-head attention and a
GELU MLP, a final layer norm and an output layer tied to the token embedding) is written out in
NumPy with its backward pass, and trained with AdamW on a corpus generated from the seed. Every
linear layer's three GEMMs (forward, dgrad, wgrad) run through the precision policy: FP16 with
dynamic loss scaling, BF16, TransformerEngine's FP8 (delayed or current scaling), MXFP8, or
NVFP4 with the elements of NVIDIA's recipe as options; layer norm and softmax stay in FP32.

>>> t = make_gpt_task(0, n_train=3000, n_val=600, n_eval=4)
>>> h = run_gpt("nvfp4", steps=2, task=t)
>>> h.label, h.variant
('nvfp4[2d+sr+rht+last1]+none', '2d+sr+rht+last1')

The package, in the order data flows:

* ``corpus``: the generated text and its character tokens;
* ``config``: :class:`GPTConfig` and the initial weights;
* ``layers``, ``attention``: layer norm, GELU, softmax, cross-entropy; causal attention;
* ``precision``: which linear layer of :mod:`fpemu.train.linears` and
  :mod:`fpemu.train.block_linears` (shared with the MLP) each layer uses
  (:func:`make_gpt_precision`);
* ``model``: the forward and backward passes;
* ``task``, ``loop``: the task, AdamW, :func:`run_gpt` and :func:`compare_gpt`;
* ``infer``: post-training quantization of the trained model (``fpemu infer``).
"""

from __future__ import annotations

from ..block_linears import NVFP4Recipe, parse_recipe
from .config import GPTConfig, init_gpt
from .loop import DEFAULT_GPT_STEPS, GPT_RUNS, compare_gpt, run_gpt, train_gpt
from .precision import GPT_PRECISIONS, make_gpt_precision
from .task import GPTTask, make_gpt_task

__all__ = [
    "GPTConfig",
    "GPTTask",
    "NVFP4Recipe",
    "GPT_PRECISIONS",
    "GPT_RUNS",
    "DEFAULT_GPT_STEPS",
    "init_gpt",
    "make_gpt_task",
    "make_gpt_precision",
    "parse_recipe",
    "run_gpt",
    "train_gpt",
    "compare_gpt",
]
