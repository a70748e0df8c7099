"""fpemu.train refuses nonsense with an error naming it, before any training, and lets no
floating-point warning escape (issue 9: no silent wrong answer)."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

from fpemu import train as T
from fpemu.train.cli import finite_or_null

F32 = np.float32
TINY = dict(n_train=64, n_test=16, batch_size=16, hidden=4, depth=1, n_labels=4, n_features=4, n_clusters=4)


@pytest.fixture(scope="module")
def tiny():
    return T.make_task(0, **TINY)


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a training loop starts: every refusal must come before it."""

    def trained(setup):
        raise AssertionError("training started before the arguments were checked")

    monkeypatch.setattr("fpemu.train.loop._train_loop", trained)  # where train_setup looks it up


# ---- run ----------------------------------------------------------------------------------------
RUN_CASES = [
    (dict(precision=None), TypeError, "precision must be one of fp32, fp16"),
    (dict(precision=3), TypeError, "precision must be one of"),
    (dict(precision="fp17"), ValueError, "unknown precision 'fp17'"),
    (dict(loss_scale=None), TypeError, "loss_scale must be one of none, static, dynamic"),
    (dict(loss_scale="sometimes"), ValueError, "unknown loss scaling 'sometimes'"),
    (dict(steps=0), ValueError, "steps must be an integer in 1..1000000, got 0"),
    (dict(steps=-5), ValueError, "steps must be"),
    (dict(steps=10**12), ValueError, r"steps must be an integer in 1\.\.1000000, got 1000000000000"),
    (dict(steps=2.0), TypeError, "steps must be an integer, got 2.0"),
    (dict(steps=True), TypeError, "steps must be an integer, got True"),
    (dict(seed=-1), ValueError, "seed must be an integer >= 0, got -1"),
    (dict(seed="0"), TypeError, "seed must be an integer"),
    (dict(accumulator=3), TypeError, "an accumulator is a name or a model"),
    (dict(accumulator="z80"), ValueError, "unknown accumulator 'z80'"),
    (dict(accumulator=""), ValueError, "unknown accumulator ''"),
    (dict(precision="fp32", accumulator="h100"), ValueError, "applies to fp16, bf16 and fp8, not fp32"),
    (dict(precision="mxfp8", accumulator="h100"), ValueError, "not mxfp8"),
    (dict(precision="fp16", accumulator="h100", loss_scale="none", fp8_recipe="x"), ValueError, "fp8_recipe must be"),
    (dict(fp8_recipe=123), TypeError, "fp8_recipe must be 'delayed', 'current', 'unscaled', a DelayedScaling, a CurrentScaling or a NoScaling, got 123"),
    (dict(precision="fp8", fp8_recipe="later"), ValueError, "fp8_recipe must be 'delayed', 'current' or 'unscaled'"),
    (dict(init_scale=1e39), ValueError, "init_scale must be a positive number whose float32 value and reciprocal are finite"),
    (dict(init_scale=float("nan")), ValueError, "init_scale must be a positive number"),
    (dict(init_scale=float("inf")), ValueError, "init_scale must be"),
    (dict(init_scale=0.0), ValueError, "init_scale must be"),
    (dict(init_scale=-1024.0), ValueError, "init_scale must be"),
    (dict(init_scale=1e-45), ValueError, "init_scale must be"),  # its reciprocal overflows FP32
    (dict(init_scale=10**400), ValueError, "init_scale must be"),
    (dict(init_scale="big"), TypeError, "init_scale must be a number, got 'big'"),
    (dict(loss_scale="static", init_scale=1e39), ValueError, "init_scale must be"),
    (dict(loss_scale="none", init_scale=-1.0), ValueError, "init_scale must be"),  # unused, still checked
    (dict(growth_factor=1.0), ValueError, "growth_factor must be a finite float32 number > 1.0"),
    (dict(growth_factor=1 + 1e-12), ValueError, "growth_factor must be"),  # 1.0 in FP32
    (dict(growth_factor=float("inf")), ValueError, "growth_factor must be"),
    (dict(growth_factor=1e39), ValueError, "growth_factor must be"),
    (dict(backoff_factor=0.0), ValueError, r"backoff_factor must be a float32 number in \(0, 1\)"),
    (dict(backoff_factor=-0.5), ValueError, "backoff_factor must be"),
    (dict(backoff_factor=1.0), ValueError, "backoff_factor must be"),
    (dict(backoff_factor=float("nan")), ValueError, "backoff_factor must be"),
    (dict(growth_interval=0), ValueError, "growth_interval must be an integer >= 1"),
    (dict(growth_interval=1.5), TypeError, "growth_interval must be an integer"),
    (dict(task="x"), TypeError, "task must be a Task"),
    (dict(eval_every=-1), ValueError, "eval_every must be an integer >= 0"),
    (dict(progress=3), TypeError, "progress must be None or a function"),
]


@pytest.mark.parametrize("kw,error,message", RUN_CASES)
def test_run_refuses_nonsense_before_training(kw, error, message, no_training, tiny):
    args = {"task": tiny, **kw}
    with pytest.raises(error, match=message):
        T.run(**args)


def test_compare_checks_every_run_before_training_any(no_training, tiny):
    with pytest.raises(ValueError, match="unknown precision 'fp99'"):
        T.compare(steps=1, runs=[("fp32", "none"), ("fp99", "none")], task=tiny)
    with pytest.raises(ValueError, match="fp8_recipe must be 'delayed', 'current' or 'unscaled'"):
        T.compare(steps=1, runs=[("fp32", "none"), ("fp8", "none", "later")], task=tiny)
    for runs in ([], "fp16", [("fp16",)], [("fp16", None)], [("fp8", "none", "delayed", "x")]):
        with pytest.raises(TypeError, match="runs must be a non-empty list"):
            T.compare(steps=1, runs=runs, task=tiny)
    with pytest.raises(TypeError, match="progress"):
        T.compare(steps=1, task=tiny, progress="bar")
    with pytest.raises(TypeError, match="unexpected keyword"):
        T.compare(steps=1, task=tiny, init_sclae=2.0)


def test_absurd_steps_allocate_nothing(tiny):
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="steps"):
            T.run("fp16", steps=10**12, task=tiny)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


# ---- make_task and Task -------------------------------------------------------------------------
TASK_CASES = [
    (dict(batch_size=0), ValueError, "batch_size must be an integer >= 1, got 0"),
    (dict(batch_size=-8), ValueError, "batch_size must be"),
    (dict(n_train=100, batch_size=200), ValueError, r"batch_size \(200\) cannot exceed the 100 training examples"),
    (dict(n_train=0), ValueError, "n_train must be an integer >= 1"),
    (dict(n_test=0), ValueError, "n_test must be an integer >= 1"),
    (dict(n_features=0), ValueError, "n_features must be"),
    (dict(n_clusters=-1), ValueError, "n_clusters must be"),
    (dict(n_labels=0), ValueError, "n_labels must be"),
    (dict(hidden=0), ValueError, "hidden must be an integer >= 1"),
    (dict(hidden=2.5), TypeError, "hidden must be an integer"),
    (dict(depth=-1), ValueError, r"depth must be an integer in 0\.\.1024"),
    (dict(depth=10**9), ValueError, "depth must be"),
    (dict(noise=-0.5), ValueError, "noise must be"),
    (dict(noise=float("inf")), ValueError, "noise must be"),
    (dict(lr=float("nan")), ValueError, "lr must be a finite float32 number >= 0"),
    (dict(lr=float("inf")), ValueError, "lr must be"),
    (dict(lr=1e39), ValueError, "lr must be"),
    (dict(lr=-0.1), ValueError, "lr must be"),
    (dict(momentum=float("nan")), ValueError, "momentum must be"),
    (dict(momentum=-0.9), ValueError, "momentum must be"),
    (dict(optimizer="lbfgs"), ValueError, "optimizer must be 'sgd' or 'adam'"),
    (dict(seed=-3), ValueError, "seed must be an integer >= 0"),
    (dict(n_features=10**12), ValueError, r"\(n_train \+ n_test\) x \(n_features \+ n_labels\) = "),
    (dict(n_clusters=10**9), ValueError, r"n_clusters x \(n_features \+ n_labels\)"),
    (dict(hidden=10**5), ValueError, "the network would have"),
    (dict(hidden=2**14, depth=1, n_train=4096, batch_size=4096), ValueError, "activations"),
]


@pytest.mark.parametrize("kw,error,message", TASK_CASES)
def test_make_task_refuses_nonsense_before_drawing(kw, error, message):
    tracemalloc.start()
    try:
        with pytest.raises(error, match=message):
            T.make_task(**kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # refused before any data was drawn


def test_make_task_accepts_the_edges():
    t = T.make_task(0, depth=0, n_train=8, n_test=1, batch_size=8, lr=0.0, momentum=0.0, noise=0.0,
                    n_features=1, n_clusters=1, n_labels=1)
    assert t.widths == (1, 1) and t.x_train.shape == (8, 1) and t.batch_size == 8
    h = T.run("fp32", steps=2, task=t)
    assert h.loss[0] == h.loss[1]  # lr = 0: nothing moves


def test_huge_noise_is_refused_not_overflowed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="noise = 1e[+]38 puts examples beyond float32's range"):
            T.make_task(0, noise=1e38, **TINY)


def test_task_checks_its_arrays(tiny):
    good = dict(x_train=tiny.x_train, y_train=tiny.y_train, x_test=tiny.x_test, y_test=tiny.y_test,
                widths=tiny.widths, batch_size=8, lr=0.5)
    cases = [
        (dict(x_train=tiny.x_train[:, :3]), ValueError, r"widths\[0\] = 4"),
        (dict(y_test=tiny.y_test[:3]), ValueError, "x_test has 16 rows but y_test has 3"),
        (dict(x_train=tiny.x_train[0]), ValueError, "x_train must be a 2-D array"),
        (dict(x_test=tiny.x_test[:0]), ValueError, "at least one row"),
        (dict(x_train=np.where(tiny.x_train > 1, np.nan, tiny.x_train)), ValueError, "x_train has .* NaN"),
        (dict(y_train=tiny.y_train * 2), ValueError, r"labels .* must lie in \[0, 1\]"),
        (dict(x_train=tiny.x_train.astype(str)), TypeError, "x_train must be a 2-D array of real numbers"),
        (dict(widths=(4, 0, 4)), ValueError, "every width must be an integer >= 1"),
        (dict(widths=5), TypeError, "widths must be a tuple"),
        (dict(batch_size=65), ValueError, "cannot exceed the 64 training examples"),
        (dict(optimizer="rmsprop"), ValueError, "optimizer"),
    ]
    for change, error, message in cases:
        with pytest.raises(error, match=message):
            T.Task(**{**good, **change})
    t = T.Task(**{**good, "x_train": tiny.x_train.astype(np.float64)})
    assert t.x_train.dtype == np.float32  # the network is FP32: data is stored as FP32


# ---- policies, recipes, scalers -----------------------------------------------------------------
@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: T.make_policy(None), TypeError, "precision must be"),
        (lambda: T.make_policy("fp8", fp8_recipe=1.5), TypeError, "fp8_recipe must be"),
        (lambda: T.make_policy("nvfp4", seed=-1), ValueError, "seed must be"),
        (lambda: T.DelayedScaling(margin=-1), ValueError, r"margin must be an integer in 0\.\.127"),
        (lambda: T.DelayedScaling(margin=128), ValueError, "margin must be"),
        (lambda: T.DelayedScaling(margin=0.5), TypeError, "margin must be an integer"),
        (lambda: T.DelayedScaling(amax_history_len=0), ValueError, "amax_history_len must be an integer >= 1"),
        (lambda: T.DelayedScaling(amax_history_len=2.5), TypeError, "amax_history_len must be an integer"),
        (lambda: T.DelayedScaling(amax_compute_algo="mean"), ValueError, "amax_compute_algo"),
        (lambda: T.DelayedScaling(fwd_format="e9m9"), ValueError, "unknown format 'e9m9'"),
        (lambda: T.CurrentScaling(power_2_scale="no"), TypeError, "power_2_scale must be True or False"),
        (lambda: T.CurrentScaling(bwd_format=None), TypeError, "format"),
        (lambda: T.TensorScale(448.0, "delayed"), TypeError, "recipe must be"),
        (lambda: T.TensorScale(-448.0, T.DelayedScaling()), ValueError, "fp8_max must be"),
        (lambda: T.delayed_scale(1.0, 1.0, 1e39), ValueError, "fp8_max must be a finite float32 number > 0"),
        (lambda: T.delayed_scale(1.0, -1.0, 448.0), ValueError, "old_scale must be"),
        (lambda: T.delayed_scale(1.0, 1.0, 448.0, margin=200), ValueError, "margin must be"),
        (lambda: T.current_scale(-2.0, 448.0), ValueError, "amax is an absolute maximum"),
        (lambda: T.current_scale(2.0, 0.0), ValueError, "fp8_max must be"),
        (lambda: T.current_scale("2", 448.0), TypeError, "amax must be a number"),
        (lambda: T.GradScaler(init_scale=1e39), ValueError, "init_scale must be"),
        (lambda: T.GradScaler(enabled="yes"), TypeError, "enabled must be True or False"),
        (lambda: T.GradScaler().update(new_scale=1e39), ValueError, "new_scale must be"),
        (lambda: T.StaticLossScaler(0.0), ValueError, "scale must be"),
        (lambda: T.StaticLossScaler().update(new_scale=float("nan")), ValueError, "new_scale must be"),
        (lambda: T.GradScaler().step(None, [np.ones(1, F32)]), TypeError, "apply must be a function"),
        (lambda: T.GradScaler().load_state_dict({"scale": 2.0}), ValueError, "state must be a dict with the keys"),
        (lambda: T.GradScaler().load_state_dict({**T.GradScaler().state_dict(), "scale": -1.0}), ValueError, "init_scale"),
        (lambda: T.GradScaler().load_state_dict({**T.GradScaler().state_dict(), "_growth_tracker": 2000}), ValueError,
         "_growth_tracker"),
        (lambda: T.unscale_grads([np.ones(2, F32)], -1.0), ValueError, "scale must be a finite float32 number >= 0"),
        (lambda: T.unscale_grads([np.ones(2, F32)], float("nan")), ValueError, "scale must be"),
        (lambda: T.unscale_grads(np.ones(2, F32), 1.0), TypeError, "grads must be a list or tuple"),
        (lambda: T.init_params((4, 0), 0), ValueError, "every width must be"),
        (lambda: T.init_params((4, 3), -1), ValueError, "seed must be"),
        (lambda: T.init_params((10**6, 10**6), 0), ValueError, "the network would have 1000000000000 weights"),
        (lambda: T.summary_table([1]), TypeError, "histories must be a list of History objects"),
        (lambda: T.summary_table(None), TypeError, "histories"),
        (lambda: T.plot([], "unused"), ValueError, "no histories to plot"),
    ],
)
def test_the_other_public_functions_refuse_nonsense(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_state_dict_round_trip():
    s = T.GradScaler(init_scale=8.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=5)
    s.unscale([np.ones(1, F32)])
    s.update()
    t = T.GradScaler()
    t.load_state_dict(s.state_dict())
    assert t.state_dict() == s.state_dict() == {
        "scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 5, "_growth_tracker": 1
    }


def test_long_amax_history_grows_with_the_steps():
    """amax_history_len = 10**12 is legal (the window is that long) and costs memory only as
    the steps fill it; the scales equal those of a window that never fills."""
    long = T.TensorScale(448.0, T.DelayedScaling(amax_history_len=10**12))
    ref = T.TensorScale(448.0, T.DelayedScaling(amax_history_len=100))
    amaxes = [4.0, 1.0, 2.0, 0.5, 7.0, 0.25] * 6
    for a in amaxes:
        x = np.array([a], F32)
        assert long.scale_for(x) == ref.scale_for(x)
        long.update()
        ref.update()
    assert long.history.size < 100


# ---- no floating-point warning escapes ----------------------------------------------------------
def test_no_warning_escapes_the_scaling_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g, found = T.unscale_grads([np.array([1e39, 1.0])], 2.0)  # float64 beyond FP32: Inf there
        assert found and g[0][0] == np.inf and g[0][1] == 0.5
        g, found = T.unscale_grads([np.array([3e38], F32)], 2.0**-120)  # the product overflows
        assert not found and g[0][0] == np.inf  # torch checks the scaled gradients, as here
        assert T.GradScaler().scale(1e35) == np.inf
        assert T.GradScaler().scale(np.array([1e39]))[0] == np.inf
        assert T.delayed_scale(1e39, 7.0, 448.0) == 7.0  # an amax beyond FP32 is Inf: scale kept
        assert T.delayed_scale(3e38, 7.0, 448.0, margin=127) == 0.0  # underflow, as TE's FP32 rule
        assert T.current_scale(1e39, 448.0) == 1.0
        assert T.GradScaler(enabled=False).unscale([np.array([1e39])])[0][0] == np.inf
        ts = T.TensorScale(448.0, T.DelayedScaling())
        ts.scale_for(np.array([1e39, 2.0]))  # float64 beyond FP32: amax Inf, the scale is kept
        ts.update()
        assert ts.scale == 1.0
        s = T.GradScaler(init_scale=3e38, growth_interval=1)
        s.unscale([np.ones(1, F32)])
        s.update()
        assert s.get_scale() == float(F32(3e38))  # growth to Inf is not taken


def test_a_diverging_run_records_inf_and_nan_without_warnings(tiny, tmp_path):
    pytest.importorskip("matplotlib")
    task = T.make_task(0, **{**TINY, "lr": 1e30})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = [T.run("fp32", steps=6, task=task), T.run("fp16", "dynamic", steps=6, task=task)]
        table = T.summary_table(runs)
        T.plot(runs, tmp_path / "img")
    assert not np.isfinite(runs[0].loss).all() and "nan" in table.lower()
    assert {p.name for p in (tmp_path / "img").iterdir()} == set(T.PLOT_FILES)


def test_json_of_a_diverged_run_is_strict_json():
    """`fpemu train --json` (and --json-file) give strict JSON: non-finite values of a diverged run are null."""
    import json

    h = T.run("fp32", steps=6, task=T.make_task(0, **{**TINY, "lr": 1e30}))
    data = json.loads(json.dumps(finite_or_null(h.to_dict()), allow_nan=False))
    losses = data["history"]["loss"]
    assert losses[0] == float(h.loss[0]) and None in losses
    assert [v is None for v in losses] == [not np.isfinite(v) for v in h.loss]
