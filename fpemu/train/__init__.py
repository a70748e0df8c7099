"""Mixed-precision training, emulated: why loss scaling exists, shown on a small NumPy network.

A deep, narrow multilayer perceptron is trained with its forward and backward passes written out
in NumPy. Every matrix multiply can run in an emulated precision:

* ``"fp32"``: plain ``numpy.float32`` arithmetic, the baseline.
* ``"fp16"``, ``"bf16"``: FP32 master weights; the inputs of every forward and backward GEMM are
  rounded to the low format, products are exact and sums are FP32 (or an accumulator model from
  :mod:`fpemu.accumulator`), the GEMM output is rounded to the low format again, as a tensor core
  writes it; the loss, the unscaling and the weight update stay in FP32 (Micikevicius et al.
  2018, "Mixed Precision Training").
* ``"fp8"``: TransformerEngine's HYBRID recipe: E4M3 for the forward operands, E5M2 for the
  gradients, each tensor with its own scale from delayed scaling (an amax history) or current
  scaling, or every scale 1 (``"unscaled"``, the control); casts saturate; GEMM outputs stay
  FP32.
* ``"mxfp8"``, ``"nvfp4"``: block-scaled GEMM operands through :mod:`fpemu.mx`.

:mod:`fpemu.train.gpt` trains a small decoder-only transformer the same way, with NVIDIA's
NVFP4 recipe elements as options (:func:`run_gpt`), and quantizes it after training
(``fpemu infer``).

Loss scaling is ``"none"``, ``"static"`` (a fixed factor, steps with Inf/NaN gradients skipped)
or ``"dynamic"`` (:class:`GradScaler`, the semantics of ``torch.amp.GradScaler``).

>>> h = run("fp16", "dynamic", steps=3, seed=0)
>>> h.precision, h.loss_scale, len(h.loss), float(h.scale[0])
('fp16', 'dynamic', 3, 65536.0)

The scaler works on its own in any NumPy training loop:

>>> s = GradScaler(init_scale=1024.0, growth_interval=2)
>>> grads = s.unscale([np.array([2048.0, np.inf], dtype=np.float32)])
>>> s.found_inf, s.step(lambda g: None, grads)
(True, False)
>>> s.update(); s.get_scale()
512.0

The package, in the order data flows (each module imports only those above it):

* ``checks``: the argument checks every entry point starts with.
* ``scalers``: loss scaling (:class:`GradScaler`, :class:`StaticLossScaler`).
* ``recipes``: FP8 per-tensor scaling (TransformerEngine delayed and current scaling).
* ``rounders``, ``stats``: the casts to the low formats and what they count, per kind of
  gradient tensor.
* ``accumulate``: GEMMs through an accumulator model (with DeepSeek-V3's promotion).
* ``attention``: FP8 attention (Q, K, V and P in E4M3, both GEMMs on a matrix unit, promotion
  as an option), :func:`fpemu.train.attention.fp8_attention`.
* ``linears``, ``block_linears``: a linear layer's three GEMMs in each precision (FP32,
  FP16/BF16, FP8; MXFP8, NVFP4 with :class:`NVFP4Recipe`), the one set both networks use.
* ``gemm_precisions``: one name per forward GEMM precision (bf16, fp16, e4m3, MXFP8/6/4,
  NVFP4), formats only or through a matrix unit's model, built from those layers.
* ``policies``: the MLP's linear layer of each precision, per layer (:func:`make_policy`).
* ``task``, ``network``, ``optimizers``: the data, the MLP, SGD and Adam.
* ``history``, ``blas``: what a run records; OpenBLAS on one thread.
* ``loop``: :func:`run` and :func:`compare`.
* ``gpt``: the transformer task (its own subpackage).
* ``bert``: a pretrained sentence encoder, all-MiniLM-L6-v2, in NumPy (``fpemu infer --model
  minilm``; its own subpackage).
* ``report``, ``lesson``, ``plots``: the table (its title, the measured lesson, a verdict and a
  sentence per run, the legend), the figures.
* ``files``, ``cli``, ``infer_cli``: output files; the ``fpemu train`` and ``fpemu infer`` commands.
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the examples above use np)

from .blas import single_threaded_blas
from .block_linears import NVFP4Recipe
from .gpt import GPTConfig, GPTTask, compare_gpt, make_gpt_task, run_gpt, train_gpt
from .history import History
from .loop import COMPARE_RUNS, DEFAULT_STEPS, MAX_STEPS, compare, run
from .network import init_params
from .plots import PLOT_FILES, plot
from .policies import PRECISIONS, make_policy
from .recipes import CurrentScaling, DelayedScaling, NoScaling, TensorScale, current_scale, delayed_scale
from .report import summary_table
from .scalers import LOSS_SCALES, GradScaler, StaticLossScaler, unscale_grads
from .task import Task, make_task


__all__ = [
    "GradScaler",
    "StaticLossScaler",
    "unscale_grads",
    "DelayedScaling",
    "CurrentScaling",
    "NoScaling",
    "delayed_scale",
    "current_scale",
    "Task",
    "make_task",
    "History",
    "run",
    "compare",
    "summary_table",
    "PRECISIONS",
    "LOSS_SCALES",
    "make_policy",
    "TensorScale",
    "init_params",
    "single_threaded_blas",
    "plot",
    "PLOT_FILES",
    "COMPARE_RUNS",
    "DEFAULT_STEPS",
    "MAX_STEPS",
    "GPTConfig",
    "GPTTask",
    "NVFP4Recipe",
    "make_gpt_task",
    "run_gpt",
    "train_gpt",
    "compare_gpt",
]
