"""Training the transformer in one precision policy (:func:`run_gpt`) and the default
comparison (:func:`compare_gpt`); every run records a :class:`~fpemu.train.history.History`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..blas import single_threaded_blas
from ..checks import check_callable, check_int
from ..history import History, Recorder
from ..loop import MAX_STEPS
from ..scalers import LOSS_SCALES, make_scaler
from .config import GPTConfig, init_gpt
from .layers import cross_entropy
from .model import forward, loss_and_grads
from .precision import GPTPrecision, make_gpt_precision
from .task import AdamW, GPTTask, batch, eval_windows, lr_at, make_gpt_task

DEFAULT_GPT_STEPS = 300  # run_gpt's and fpemu infer's; the runs docs/training.md reports
# `fpemu train --task gpt`'s default: the comparison's 8 runs in under 2 minutes on 2 cores
# (benchmarks/bench_train.py --cli); --steps 300 is the longer, documented run.
CLI_GPT_STEPS = 150
# The default comparison: (precision, fp8 recipe, NVFP4 recipe).
GPT_RUNS: tuple[tuple[str, str, str], ...] = (
    ("fp32", "delayed", "all"),
    ("fp16", "delayed", "all"),
    ("bf16", "delayed", "all"),
    ("fp8", "delayed", "all"),
    ("fp8", "current", "all"),
    ("mxfp8", "delayed", "all"),
    ("nvfp4", "delayed", "all"),
    ("nvfp4", "delayed", "none"),
)


def evaluate(params: dict, task: GPTTask, prec: GPTPrecision | None = None) -> tuple[float, float, np.ndarray]:
    """Validation loss, next-token accuracy and logits of ``params`` on the fixed windows,
    forward in ``prec`` (FP32 by default)."""
    cfg = task.config
    prec = prec or make_gpt_precision("fp32", cfg.n_layer)
    x, y = eval_windows(task.val, task.n_eval, cfg.context)
    logits, _ = forward(params, x, cfg, prec)
    loss, _ = cross_entropy(logits.astype(np.float32), y.ravel())
    return loss, float(np.mean(np.argmax(logits, axis=1) == y.ravel())), logits


@dataclass
class GPTSetup:
    """A checked transformer run, ready to train."""

    task: GPTTask
    prec: GPTPrecision
    scaler: object
    loss_scale: str
    steps: int
    seed: int
    progress: Callable[[int, int], None] | None


def gpt_setup(
    precision: str = "fp32", loss_scale: str | None = None, steps: int = DEFAULT_GPT_STEPS, seed: int = 0, *,
    task: GPTTask | None = None, fp8_recipe="delayed", nvfp4_recipe="all", fp8_block_recipe=None,
    accumulator: str | None = None,
    promote: int | None = None, init_scale: float | None = None, growth_interval: int = 2000,
    progress: Callable[[int, int], None] | None = None,
) -> GPTSetup:
    """Check every argument of :func:`run_gpt` and build the run (no training yet)."""
    steps = check_int("steps", steps, 1, MAX_STEPS)
    seed = check_int("seed", seed, 0)
    check_callable("progress", progress, optional=True)
    if task is not None and not isinstance(task, GPTTask):
        raise TypeError(f"task must be a GPTTask (see make_gpt_task) or None, got {task!r}")
    if loss_scale is not None and loss_scale not in LOSS_SCALES:
        raise ValueError(f"unknown loss scaling {loss_scale!r}; choose from {', '.join(LOSS_SCALES)}")
    n_layer = task.config.n_layer if task is not None else GPTConfig().n_layer
    prec = make_gpt_precision(precision, n_layer, fp8_recipe=fp8_recipe, nvfp4_recipe=nvfp4_recipe,
                              fp8_block_recipe=fp8_block_recipe, accumulator=accumulator, promote=promote, seed=seed)
    if loss_scale is None:
        loss_scale = "dynamic" if prec.name == "fp16" else "none"
    if prec.name == "fp32":
        loss_scale = "none"
    scaler = make_scaler(loss_scale, init_scale, growth_interval=growth_interval)
    return GPTSetup(task or make_gpt_task(seed), prec, scaler, loss_scale, steps, seed, progress)


def train_gpt(precision: str = "fp32", loss_scale: str | None = None, steps: int = DEFAULT_GPT_STEPS,
              seed: int = 0, **kw) -> tuple[History, dict]:
    """:func:`run_gpt`, also returning the trained FP32 master weights."""
    return train_gpt_setup(gpt_setup(precision, loss_scale, steps, seed, **kw))


def train_gpt_setup(setup: GPTSetup) -> tuple[History, dict]:
    with single_threaded_blas(), np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return _loop(setup)


def _loop(setup: GPTSetup) -> tuple[History, dict]:
    task, prec, scaler, steps, seed = setup.task, setup.prec, setup.scaler, setup.steps, setup.seed
    cfg = task.config
    params = init_gpt(cfg, seed)
    names = list(params)
    opt = AdamW(params, task.weight_decay)
    rng = np.random.default_rng([seed, 0xB47C])
    rec = Recorder(steps)
    t0 = time.perf_counter()
    for step in range(steps):
        x, y = batch(task.train, rng, task.batch_size, cfg.context)
        stats = rec.stats_for(step)
        scale = scaler.get_scale()
        loss, grads = loss_and_grads(params, x, y, cfg, prec, scale, stats)
        lr = lr_at(task, step, steps)
        taken = scaler.step(lambda g: opt(params, dict(zip(names, g)), lr, task.clip), [grads[k] for k in names])
        scaler.update()
        prec.end_step()
        rec.record(step, loss, scale, not taken, stats)
        if setup.progress is not None:
            setup.progress(step + 1, steps)
    elapsed = time.perf_counter() - t0
    val_loss, acc, _ = evaluate(params, task)
    h = rec.history(
        precision=prec.name, loss_scale=setup.loss_scale, accumulator=None, seed=seed,
        low_format=prec.low.name if prec.low is not None else None, final_loss=val_loss,
        final_accuracy=acc, time_s=elapsed, variant=prec.variant, task_name="gpt",
    )
    return h, params


def run_gpt(precision: str = "fp32", loss_scale: str | None = None, steps: int = DEFAULT_GPT_STEPS,
            seed: int = 0, **kw) -> History:
    """Train the transformer in one precision policy and record every step.

    ``loss_scale`` defaults to dynamic for fp16 and none otherwise; ``fp8_recipe`` is
    ``"delayed"`` or ``"current"``; ``nvfp4_recipe`` an :class:`~fpemu.train.block_linears.NVFP4Recipe` or a
    string (``"all"``, ``"none"``, ``"2d,sr,rht,last"``); ``accumulator`` and ``promote`` send
    the fp16/bf16/fp8 GEMMs through an accumulator model. ``final_loss`` and
    ``final_accuracy`` are the validation loss and next-character accuracy of the trained
    FP32 weights (forward in FP32: the training's effect alone; ``fpemu infer`` measures
    low-precision inference).

    >>> t = make_gpt_task(0, n_train=3000, n_val=600, n_eval=4)
    >>> h = run_gpt("fp16", steps=2, task=t)
    >>> h.label, h.task_name, len(h.loss)
    ('fp16+dynamic', 'gpt', 2)
    """
    return train_gpt(precision, loss_scale, steps, seed, **kw)[0]


def compare_gpt(steps: int = DEFAULT_GPT_STEPS, seed: int = 0,
                runs: Sequence[tuple[str, str, str]] = GPT_RUNS,
                progress: Callable[[str, int, int], None] | None = None, **kw) -> list[History]:
    """Train every run of ``runs`` ((precision, fp8 recipe, NVFP4 recipe) triples) on the same
    task and seed."""
    return [train_gpt_setup(setup)[0] for setup in compare_setups(steps, seed, runs, progress, **kw)]


def compare_setups(steps: int, seed: int, runs: Sequence[tuple[str, str, str]],
                   progress: Callable[[str, int, int], None] | None = None, **kw) -> list[GPTSetup]:
    """The checked setups of :func:`compare_gpt` (every run checked before the first trains)."""
    check_callable("progress", progress, optional=True)
    if not isinstance(runs, (list, tuple)) or not runs or not all(
            isinstance(r, (list, tuple)) and len(r) == 3 and all(isinstance(v, str) for v in r) for r in runs):
        raise TypeError(f"runs must be a non-empty list of (precision, fp8 recipe, nvfp4 recipe), got {runs!r}")
    task = kw.pop("task", None) or make_gpt_task(check_int("seed", seed, 0))
    setups = []
    for p, fp8, nv in runs:
        tag = p + (f"[{fp8}]" if p == "fp8" else f"[{nv}]" if p == "nvfp4" else "")
        cb = None if progress is None else (lambda i, n, _l=tag: progress(_l, i, n))
        setups.append(gpt_setup(p, None, steps, seed, task=task, fp8_recipe=fp8, nvfp4_recipe=nv, progress=cb, **kw))
    return setups
