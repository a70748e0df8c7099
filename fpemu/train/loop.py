"""The training loop: :func:`run` trains one precision policy and records its :class:`History`;
:func:`compare` runs several on the same task."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .blas import single_threaded_blas
from .checks import check_callable, check_int
from .history import History, Recorder
from .network import backward, bce_loss, evaluate, forward, init_params
from .optimizers import make_optimizer
from .policies import make_policy
from .recipes import CurrentScaling, DelayedScaling
from .scalers import LOSS_SCALES, GradScaler, make_scaler
from .task import EVAL_ROWS, Task, make_task

DEFAULT_STEPS = 300


MAX_STEPS = 10**6  # a run records 5 numbers per step; a million steps is hours of training


@dataclass
class _RunSetup:
    """Everything a run needs, checked and built before training starts."""

    policy: object
    scaler: GradScaler
    loss_scale: str
    task: Task
    steps: int
    seed: int
    accumulator: str | None
    eval_every: int
    progress: Callable[[int, int], None] | None


def make_run_setup(
    precision, loss_scale, steps, seed, accumulator, *, init_scale=None, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, fp8_recipe="delayed", task=None, eval_every=0,
    progress=None,
) -> _RunSetup:
    """Check every argument of :func:`run` and build the run's objects (no training yet)."""
    steps = check_int("steps", steps, 1, MAX_STEPS)
    seed = check_int("seed", seed, 0)
    eval_every = check_int("eval_every", eval_every, 0)
    check_callable("progress", progress, optional=True)
    if task is not None and not isinstance(task, Task):
        raise TypeError(f"task must be a Task (see make_task) or None, got {task!r}")
    if not isinstance(loss_scale, str):
        raise TypeError(f"loss_scale must be one of {', '.join(LOSS_SCALES)}, got {loss_scale!r}")
    policy = make_policy(precision, accumulator, fp8_recipe, seed)
    if policy.name == "fp32":
        loss_scale = "none"  # FP32 needs no loss scaling; the baseline never scales
    scaler = make_scaler(
        loss_scale, init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
        growth_interval=growth_interval,
    )
    label = accumulator if accumulator is None or isinstance(accumulator, str) else accumulator.name
    return _RunSetup(policy, scaler, loss_scale, task or make_task(seed), steps, seed, label, eval_every, progress)


def run(
    precision: str = "fp16",
    loss_scale: str = "dynamic",
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    accumulator: str | None = None,
    *,
    init_scale: float | None = None,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
    fp8_recipe: DelayedScaling | CurrentScaling | str = "delayed",
    task: Task | None = None,
    eval_every: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> History:
    """Train the default task's network in one precision policy and record every step.

    ``init_scale`` is the static factor (default 1024) or the dynamic initial scale (default
    2**16). ``fp8_recipe`` is ``"delayed"``, ``"current"`` or a recipe object.
    ``eval_every`` > 0 also records the test loss every that many steps. The ``"fp32"``
    baseline never scales its loss (``loss_scale`` is ignored there). ``steps`` is at most
    :data:`MAX_STEPS`, ``seed`` a non-negative integer; every argument is checked before
    training starts (a ValueError or TypeError naming it).

    A diverging run is not an error: its Inf/NaN losses are recorded as they are (IEEE
    arithmetic, no warnings).

    >>> h = run("fp32", steps=2); h.loss_scale, h.skipped.tolist()
    ('none', [False, False])
    """
    setup = make_run_setup(**locals())
    with single_threaded_blas():
        return train_setup(setup)


def train_setup(setup: _RunSetup) -> History:
    # Overflow to Inf (and Inf - Inf = NaN after it) is what the scaler detects, and a run that
    # diverges records Inf/NaN losses: IEEE results, not errors, so no warnings.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _train_loop(setup)


def _train_loop(setup: _RunSetup) -> History:
    policy, scaler, task, steps, seed = setup.policy, setup.scaler, setup.task, setup.steps, setup.seed
    eval_every, progress = setup.eval_every, setup.progress
    params = init_params(task.widths, seed)
    rng = np.random.default_rng([seed, 0xBA7C])
    sgd = make_optimizer(task, params)

    n_train, bs = len(task.x_train), task.batch_size
    rec = Recorder(steps)
    test_curve = []
    order = rng.permutation(n_train)
    cursor = 0
    t0 = time.perf_counter()
    for step in range(steps):
        if cursor + bs > n_train:
            order, cursor = rng.permutation(n_train), 0
        idx = order[cursor : cursor + bs]
        cursor += bs
        x, y = task.x_train[idx], task.y_train[idx]

        stats = rec.stats_for(step)
        logits, cache = forward(params, x, policy)
        loss, sig = bce_loss(logits, y)
        scale = scaler.get_scale()
        grads = backward(params, cache, sig, y, scale, policy, stats)
        # Weight gradients arrive in the low format; unscaling and the update are FP32.
        taken = scaler.step(sgd, grads)
        scaler.update()
        policy.end_step()
        rec.record(step, loss, scale, not taken, stats)
        if eval_every and (step + 1) % eval_every == 0:
            test_curve.append((step + 1, *evaluate(params, task.x_test, task.y_test, policy)))
        if progress is not None:
            progress(step + 1, steps)
    elapsed = time.perf_counter() - t0
    # The loss being minimised, on a fixed part of the training set; accuracy on held-out data.
    n_eval = min(len(task.x_train), EVAL_ROWS)
    final_loss, _ = evaluate(params, task.x_train[:n_eval], task.y_train[:n_eval], policy)
    test_loss, final_acc = evaluate(params, task.x_test, task.y_test, policy)
    return rec.history(
        precision=policy.name,
        variant=getattr(policy, "variant", None),
        loss_scale=setup.loss_scale,
        accumulator=setup.accumulator,
        seed=seed,
        low_format=policy.low.name if policy.low is not None else None,
        final_loss=final_loss,
        final_accuracy=final_acc,
        time_s=elapsed,
        test_curve=test_curve,
    )


# The default comparison: (precision, loss scaling) or (precision, loss scaling, fp8 recipe).
# Each row tests one claim of the lesson: fp16 needs loss scaling, bf16 does not, fp8 needs its
# per-tensor scales.
COMPARE_RUNS: tuple[tuple[str, ...], ...] = (
    ("fp32", "none"),
    ("fp16", "none"),
    ("fp16", "dynamic"),
    ("bf16", "none"),
    ("fp8", "none", "delayed"),
    ("fp8", "none", "unscaled"),
)


def compare(
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    accumulator: str | None = None,
    runs: Sequence[tuple[str, ...]] = COMPARE_RUNS,
    progress: Callable[[str, int, int], None] | None = None,
    **kw,
) -> list[History]:
    """Run several (precision, loss scaling) pairs on the same task, same seed.

    A run may name its FP8 recipe third (``("fp8", "none", "unscaled")``); it then takes the
    place of ``fp8_recipe``. ``kw`` goes to :func:`run` (``task=`` replaces the default task). Every run is checked
    before the first one trains, so a bad pair fails at once, not after the others' training.
    """
    setups = compare_setups(steps, seed, accumulator, runs, progress, **kw)
    with single_threaded_blas():
        return [train_setup(setup) for setup in setups]


def compare_setups(steps, seed, accumulator, runs, progress, **kw) -> list[_RunSetup]:
    """The checked setups of :func:`compare`'s runs (the fp32 baseline takes no accumulator)."""
    check_callable("progress", progress, optional=True)
    runs = _check_runs(runs)
    task = kw.pop("task", None)
    if task is None:
        task = make_task(seed)
    setups = []
    for precision, ls, *recipe in runs:
        name = precision + (f"[{recipe[0]}]" if recipe and recipe[0] != "delayed" else "")
        cb = None if progress is None else (lambda i, n, _l=f"{name}+{ls}": progress(_l, i, n))
        acc = accumulator if precision.strip().lower() != "fp32" else None
        run_kw = {**kw, "fp8_recipe": recipe[0]} if recipe else kw
        setups.append(make_run_setup(precision, ls, steps, seed, acc, task=task, progress=cb, **run_kw))
    return setups


def _check_runs(runs: object) -> list[tuple[str, ...]]:
    """A non-empty list of (precision, loss scaling[, fp8 recipe]) tuples of names."""
    pairs = list(runs) if isinstance(runs, (list, tuple)) else None
    if not pairs or not all(
        isinstance(r, (list, tuple)) and len(r) in (2, 3) and all(isinstance(v, str) for v in r) for r in pairs
    ):
        raise TypeError(f"runs must be a non-empty list of (precision, loss scaling) pairs (with an fp8 recipe "
                        f"third where wanted), got {runs!r}")
    return [tuple(r) for r in pairs]
