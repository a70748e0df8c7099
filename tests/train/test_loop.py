"""Tests of fpemu.train.loop: the FP32 policy against a plain NumPy network, run()'s
arguments, and the scalers and policies inside training."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import train as T

F32 = np.float32


# ---- the FP32 policy is plain NumPy -----------------------------------------------------------
def _plain_numpy_training(task: T.Task, seed: int, steps: int) -> list[float]:
    """The same network and SGD written directly, without any policy object."""
    params = T.init_params(task.widths, seed)
    vel = [np.zeros_like(p) for p in params]
    rng = np.random.default_rng([seed, 0xBA7C])
    order, cursor, losses = rng.permutation(len(task.x_train)), 0, []
    lr, mom = F32(task.lr), F32(task.momentum)
    n_layers = len(params) // 2
    for _ in range(steps):
        if cursor + task.batch_size > len(task.x_train):
            order, cursor = rng.permutation(len(task.x_train)), 0
        idx = order[cursor : cursor + task.batch_size]
        cursor += task.batch_size
        x, y = task.x_train[idx], task.y_train[idx]
        acts, masks = [x], []
        for l in range(n_layers):
            z = acts[-1] @ params[2 * l] + params[2 * l + 1]
            if l < n_layers - 1:
                masks.append(z > 0)
                acts.append(np.where(z > 0, z, F32(0)))
        per = np.maximum(z, F32(0)) - z * y + np.log1p(np.exp(-np.abs(z)))
        losses.append(float(per.mean(dtype=F32)))
        with np.errstate(over="ignore"):
            sig = F32(1.0) / (F32(1.0) + np.exp(-z))
        dz = (sig - y) * F32(1.0 / y.size)
        grads = [None] * len(params)
        for l in range(n_layers - 1, -1, -1):
            if l < n_layers - 1:
                dz = np.where(masks[l], dz, F32(0))
            grads[2 * l] = acts[l].T @ dz
            grads[2 * l + 1] = dz.sum(axis=0)
            if l > 0:
                dz = dz @ params[2 * l].T
        for i, g in enumerate(grads):
            g = g * F32(1.0)  # the disabled scaler's unscale is a copy
            vel[i] = mom * vel[i] + g
            params[i] = params[i] - lr * vel[i]
    return losses


def test_fp32_policy_equals_plain_numpy():
    task = T.make_task(3, n_train=4096, batch_size=256)
    h = T.run("fp32", steps=20, seed=3, task=task)
    # run() computes on one BLAS thread, and OpenBLAS's thread count picks its kernel (on
    # AVX-512 its "direct" sgemm, which sums in another order, is skipped for mid-sized
    # products when more than one thread may run), so the last bit of the sums: the reference is computed under the same setting, or it differs by an ulp on
    # machines where OPENBLAS_NUM_THREADS is not 1.
    with T.single_threaded_blas():
        ref = _plain_numpy_training(task, 3, 20)
    assert np.array_equal(np.asarray(h.loss, F32).view(np.uint32), np.asarray(ref, F32).view(np.uint32))
    assert h.loss[-1] < h.loss[0]


# ---- API -------------------------------------------------------------------------------------
def test_run_rejects_bad_input():
    with pytest.raises(ValueError, match="precision"):
        T.run("fp17", steps=1)
    with pytest.raises(ValueError, match="loss scaling"):
        T.run("fp16", "sometimes", steps=1)
    with pytest.raises(ValueError, match="steps"):
        T.run("fp16", steps=0)


def test_static_scaling_and_bf16_and_fp8_run():
    task = T.make_task(0, n_train=2048, batch_size=256)
    h = T.run("fp16", "static", 5, 0, task=task, init_scale=512.0)
    assert h.scale.tolist() == [512.0] * 5
    for p, rec in (("bf16", "delayed"), ("fp8", "delayed"), ("fp8", "current")):
        h = T.run(p, "none", 5, 0, task=task, fp8_recipe=rec)
        assert np.all(np.isfinite(h.loss)) and h.low_format in ("bf16", "e5m2")


def test_dynamic_backoff_in_training():
    # An absurd initial scale overflows FP16: steps are skipped and the scale halves until it fits.
    task = T.make_task(0, n_train=2048, batch_size=256)
    h = T.run("fp16", "dynamic", 12, 0, task=task, init_scale=2.0**30)
    assert h.skipped[0] and h.overflow[0] > 0
    k = int(np.argmin(h.skipped))  # the first step taken (measured: 6)
    assert 1 <= k <= 10 and h.skipped[:k].all() and not h.skipped[k:].any()
    assert h.scale.tolist() == [2.0 ** (30 - i) for i in range(k)] + [2.0 ** (30 - k)] * (12 - k)


def test_compare_runs_may_name_their_fp8_recipe():
    task = T.make_task(0, n_clusters=4, n_labels=8, hidden=8, depth=1, n_train=64, n_test=32, batch_size=16)
    hs = T.compare(steps=3, task=task, runs=[("fp32", "none"), ("fp8", "none"), ("fp8", "none", "unscaled"),
                                              ("fp8", "none", "current")])
    assert [h.label for h in hs] == ["fp32", "fp8[delayed]+none", "fp8[unscaled]+none", "fp8[current]+none"]
    # Without a scale every E5M2 gradient of this task (about 2^-8 and smaller) keeps its value
    # or flushes; with one, the scales differ from 1 after the first step.
    assert hs[2].final_loss != hs[1].final_loss
    assert [r[:2] for r in T.COMPARE_RUNS] == [("fp32", "none"), ("fp16", "none"), ("fp16", "dynamic"),
                                              ("bf16", "none"), ("fp8", "none"), ("fp8", "none")]
