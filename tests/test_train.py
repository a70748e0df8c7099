"""Tests of fpemu.train: the loss scaler, the FP8 scaling rules, the low-format rounders, the
FP32 policy against a plain NumPy network, the default task's claims and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fpemu
from fpemu import train as T

F32 = np.float32


# ---- GradScaler: the rules of SPEC section 6 --------------------------------------------------
def _iteration(s: T.GradScaler, grads: list[np.ndarray]) -> bool:
    taken = s.step(lambda g: None, grads)
    s.update()
    return taken


def test_scaler_defaults_are_torchs():
    s = T.GradScaler()
    assert s.get_scale() == 65536.0
    st = s.state_dict()
    assert (st["growth_factor"], st["backoff_factor"], st["growth_interval"]) == (2.0, 0.5, 2000)


def test_scaler_skips_on_inf_and_nan_and_backs_off():
    s = T.GradScaler(init_scale=1024.0, growth_interval=3)
    ok = [np.ones(3, F32)]
    assert _iteration(s, ok) and _iteration(s, ok)
    assert s.get_growth_tracker() == 2
    for bad in (np.inf, -np.inf, np.nan):
        assert not _iteration(s, [np.array([1.0, bad], F32)] + ok)
        assert s.get_growth_tracker() == 0  # the tracker resets on every overflow
    assert s.get_scale() == 1024.0 / 8


def test_scaler_grows_exactly_at_the_interval():
    s = T.GradScaler(init_scale=4.0, growth_factor=3.0, growth_interval=4)
    scales = []
    for _ in range(9):
        _iteration(s, [np.ones(2, F32)])
        scales.append(s.get_scale())
    assert scales == [4.0, 4.0, 4.0, 12.0, 12.0, 12.0, 12.0, 36.0, 36.0]


def test_scaler_never_grows_to_inf():
    big = float(np.finfo(F32).max) / 1.5
    s = T.GradScaler(init_scale=big, growth_interval=1)
    _iteration(s, [np.ones(1, F32)])
    assert s.get_scale() == float(F32(big))  # growth would overflow: scale kept
    assert s.get_growth_tracker() == 0  # but the tracker still resets


def test_scaler_unscale_uses_fp32_reciprocal_and_keeps_inputs():
    s = T.GradScaler(init_scale=3.0)
    g = np.arange(1, 200, dtype=F32)
    before = g.copy()
    out = s.unscale([g])[0]
    inv = F32(np.float64(1.0) / np.float64(3.0))  # fp32(1/scale), as torch computes it
    assert out.dtype == F32
    assert np.array_equal(out.view(np.uint32), (g * inv).view(np.uint32))
    assert not np.array_equal(out, g / F32(3.0))  # multiplying by 1/3 is not dividing by 3
    assert np.array_equal(g, before)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale([g])


def test_scaler_step_applies_unscaled_grads():
    s = T.GradScaler(init_scale=8.0)
    seen = []
    assert s.step(seen.append, [np.array([16.0, -8.0], F32)])
    assert seen[0][0].tolist() == [2.0, -1.0]


def test_scaler_rejects_bad_parameters():
    for kw in ({"growth_factor": 1.0}, {"backoff_factor": 1.0}, {"growth_interval": 0},
               {"init_scale": float("inf")}, {"init_scale": -1.0}):
        with pytest.raises(ValueError):
            T.GradScaler(**kw)
    with pytest.raises(RuntimeError, match="no inf checks"):
        T.GradScaler().update()


def test_disabled_scaler_and_static_scaler():
    off = T.GradScaler(enabled=False)
    assert off.get_scale() == 1.0 and off.step(lambda g: None, [np.array([np.inf], F32)])
    st = T.StaticLossScaler(128.0)
    assert not _iteration(st, [np.array([np.nan], F32)])  # skipped ...
    assert st.get_scale() == 128.0  # ... but the scale stays
    assert _iteration(st, [np.ones(1, F32)]) and st.get_scale() == 128.0


def _torch_gradscaler(**kw):
    """torch and a CPU ``torch.amp.GradScaler`` (torch 2.3+), or a skip: torch not installed,
    a build that does not load here, or one too old for a CPU scaler."""
    try:
        import torch

        return torch, torch.amp.GradScaler("cpu", **kw)
    except (ImportError, AttributeError, TypeError, RuntimeError) as exc:
        pytest.skip(f"no CPU torch.amp.GradScaler here: {exc}")


def test_scaler_matches_torch_gradscaler():
    kw = dict(init_scale=1000.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=3)
    torch, ts = _torch_gradscaler(**kw)
    p = torch.nn.Parameter(torch.zeros(4))
    opt = torch.optim.SGD([p], lr=1.0)
    ours = T.GradScaler(**kw)
    mine = np.zeros(4, F32)
    rng = np.random.default_rng(5)
    inf_at = {2, 7, 8, 15}
    for i in range(20):
        g = (rng.standard_normal(4) * 1000).astype(F32)
        if i in inf_at:
            g[i % 4] = np.inf if i % 2 else np.nan
        p.grad = torch.from_numpy(g.copy())
        ts.scale(torch.tensor(1.0))
        ts.step(opt)
        ts.update()

        box = [mine]
        ours.step(lambda gs: box.__setitem__(0, box[0] - gs[0]), [g])
        ours.update()
        mine = box[0]
        assert ours.get_scale() == ts.get_scale(), i
        assert np.array_equal(mine.view(np.uint32), p.detach().numpy().view(np.uint32)), i


# ---- FP8 scaling rules ------------------------------------------------------------------------
def test_delayed_scale_rule():
    assert T.delayed_scale(3.5, 1.0, 448.0) == 128.0
    assert T.delayed_scale(3.5, 1.0, 448.0, margin=2) == 32.0
    assert T.delayed_scale(3.0, 1.0, 57344.0) == F32(F32(57344.0) / F32(3.0))
    for bad in (0.0, -1.0, np.inf, np.nan):
        assert T.delayed_scale(bad, 5.0, 448.0) == 5.0  # old scale kept
    assert T.delayed_scale(1e-44, 1.0, 448.0) == np.finfo(F32).max  # Inf scale -> FLT_MAX


def test_current_scale_rule():
    assert T.current_scale(3.0, 448.0) == F32(F32(448.0) / F32(3.0))
    assert T.current_scale(3.0, 448.0, power_2_scale=True) == 128.0
    for bad in (0.0, np.inf, np.nan):
        assert T.current_scale(bad, 448.0) == 1.0
    assert T.current_scale(1e-44, 448.0) == np.finfo(F32).max


def test_delayed_history_window_and_most_recent():
    ts = T.TensorScale(448.0, T.DelayedScaling(amax_history_len=3))
    seq = [4.0, 1.0, 2.0, 0.5, 0.25, 7.0]
    got = []
    for a in seq:
        got.append(float(ts.scale_for(np.array([a, -a / 2], F32))))
        ts.update()
    # The scale at step t comes from the max of the amaxes of steps t-3 .. t-1.
    assert got == [1.0, 112.0, 112.0, 112.0, 224.0, 448.0 / 2.0]
    rec = T.TensorScale(448.0, T.DelayedScaling(amax_compute_algo="most_recent"))
    got = []
    for a in seq:
        got.append(float(rec.scale_for(np.array([a], F32))))
        rec.update()
    assert got == [1.0, 112.0, 448.0, 224.0, 896.0, 1792.0]
    with pytest.raises(ValueError):
        T.DelayedScaling(amax_compute_algo="mean")


def test_delayed_scaling_keeps_scale_on_nan_amax():
    ts = T.TensorScale(57344.0, T.DelayedScaling(amax_history_len=4))
    ts.scale_for(np.array([2.0], F32))
    ts.update()
    assert ts.scale == 28672.0
    ts.scale_for(np.array([np.nan], F32))
    ts.update()
    assert ts.scale == 28672.0


def test_fp8_cast_saturates_and_counts():
    pol = T.make_policy("fp8", fp8_recipe=T.CurrentScaling())
    stats = T._CastStats()
    g = np.array([1.0, -3.0, 1e-30], F32)
    q, (inv, fmt) = pol.cast_grad(g, ("dy", 0), stats)
    assert fmt.name == "e5m2" and inv == F32(1.0) / T.current_scale(3.0, 57344.0)
    assert stats.underflow == 1 and stats.nonzero == 3  # 1e-30 * scale still below E5M2
    # Delayed scaling with a stale (too large) scale saturates instead of overflowing.
    pol = T.make_policy("fp8")
    st = pol._state(("dy", 0), pol.bwd)
    st.scale = F32(2.0**20)
    stats = T._CastStats()
    q, _ = pol.cast_grad(np.array([1.0, 1e-3], F32), ("dy", 0), stats)
    assert q.tolist() == [57344.0, 1024.0] and stats.overflow == 1


# ---- the low-format rounders against the codec and independent oracles ----------------------
def _random_f32(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    near = (u[: n // 2] & np.uint32(0x87FFFFFF)) | np.uint32(0x30000000)  # around the FP16 range
    x = np.concatenate([u[n // 2 :], near]).view(F32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 2**-25,
                        3 * 2**-26, 2**-24, 2**-14, 2**-149, 3.4e38], F32)
    return np.concatenate([x, special, -special])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("name", ["fp16", "bf16"])
def test_rounders_match_codec(name):
    x = _random_f32(200_000, 1)
    assert _same(T._rounder(fpemu.get_format(name))(x), fpemu.quantize(x, name).astype(F32))


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
        sig = F32(0.5) + F32(0.5) * np.tanh(F32(0.5) * z)
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


def test_single_threaded_blas_pins_every_openblas_and_restores():
    controls = T._openblas_thread_controls()
    if not controls:
        pytest.skip("no OpenBLAS loaded in this process: nothing to pin")
    before = [int(get()) for get, _ in controls]
    with T.single_threaded_blas():
        assert [int(get()) for get, _ in controls] == [1] * len(controls)
    assert [int(get()) for get, _ in controls] == before


_RUN_IN_SUBPROCESS = """
import sys, numpy as np
if sys.argv[1] == "torch":
    import torch  # noqa: F401  (its libraries are loaded next to numpy's OpenBLAS)
from fpemu import train as T
task = T.make_task(3, n_train=2048, batch_size=256, hidden=32, depth=2)
h = T.run("fp32", steps=8, seed=3, task=task)
print(" ".join(str(int(v)) for v in np.asarray(h.loss, np.float32).view(np.uint32)))
"""


def test_runs_do_not_depend_on_the_blas_thread_setting():
    """run() pins BLAS itself: the same bits whatever OPENBLAS_NUM_THREADS says, with torch
    imported or not."""
    import os
    import subprocess
    import sys

    variants = [("1", "plain"), ("2", "plain"), (None, "plain")]
    try:
        import torch  # noqa: F401

        variants.append(("2", "torch"))
    except ImportError:
        pass
    outputs = set()
    for threads, extra in variants:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
        if threads is not None:
            env["OPENBLAS_NUM_THREADS"] = threads
        done = subprocess.run([sys.executable, "-c", _RUN_IN_SUBPROCESS, extra], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1 and len(outputs.pop().split()) == 8


# ---- the default task's claims (fixed seed 0, 600 steps) --------------------------------------
@pytest.fixture(scope="module")
def default_runs():
    task = T.make_task(0)
    runs = [("fp32", "none"), ("fp16", "none"), ("fp16", "dynamic")]
    return [T.run(p, ls, 600, 0, task=task) for p, ls in runs]


def test_fp16_without_scaling_underflows_and_ends_worse(default_runs):
    fp32, none, _ = default_runs
    s = none.summary()
    assert s["underflow_fraction"] > 0.30  # measured 35.1%: a third of all gradient values -> 0
    assert none.underflow[-100:].mean() > 0.55  # measured 62%: late in training most of them
    assert none.underflow[:100].mean() < 0.05  # measured 1.2%: early on the gradients fit
    assert none.final_loss > 1.15 * fp32.final_loss  # measured +24.6%
    assert s["skipped_steps"] == 0 and s["overflow_fraction"] == 0.0


def test_dynamic_scaling_recovers_fp32(default_runs):
    fp32, _, dyn = default_runs
    s = dyn.summary()
    assert abs(dyn.final_loss - fp32.final_loss) < 0.05 * fp32.final_loss  # measured +2.2%
    assert s["underflow_fraction"] < 0.05  # measured 2.9%
    assert s["final_scale"] == 65536.0 and s["skipped_steps"] == 0
    assert abs(dyn.final_accuracy - fp32.final_accuracy) < 0.002


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_default_task_claims_other_seeds(seed):
    task = T.make_task(seed)
    fp32, none, dyn = (T.run(p, ls, 600, seed, task=task)
                       for p, ls in [("fp32", "none"), ("fp16", "none"), ("fp16", "dynamic")])
    assert none.summary()["underflow_fraction"] > 0.30  # measured 34.2-35.3%
    assert none.final_loss > 1.15 * fp32.final_loss  # measured +24.9% .. +28.0%
    assert abs(dyn.final_loss - fp32.final_loss) < 0.05 * fp32.final_loss  # measured -0.5% .. +2.4%


# ---- API, CLI -------------------------------------------------------------------------------
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


def test_block_format_policies():
    pytest.importorskip("fpemu.mx")
    task = T.make_task(0, n_train=512, batch_size=64, hidden=32, depth=1, n_labels=32)
    for p, low in (("mxfp8", "e4m3"), ("nvfp4", "e2m1")):
        h = T.run(p, "none", 3, 0, task=task)
        assert np.all(np.isfinite(h.loss)) and h.low_format == low
        assert h.nonzero_count > 0
    pol = T.make_policy("mxfp8")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 64)).astype(F32), rng.standard_normal((64, 4)).astype(F32)
    # Each operand is quantized in blocks of 32 along K: compare with fpemu.mx directly.
    qa = fpemu.mx.quantize(a, "mxfp8_e4m3", axis=1, scale_rounding="rceil").dequantize()
    qb = fpemu.mx.quantize(b, "mxfp8_e4m3", axis=0, scale_rounding="rceil").dequantize()
    assert np.array_equal(pol.gemm(a, False, b, False), np.asarray(qa, F32) @ np.asarray(qb, F32))
    with pytest.raises(ValueError, match="accumulator"):
        T.run("mxfp8", steps=1, task=task, accumulator="h100")


def test_dynamic_backoff_in_training():
    # An absurd initial scale overflows FP16: steps are skipped and the scale halves until it fits.
    task = T.make_task(0, n_train=2048, batch_size=256)
    h = T.run("fp16", "dynamic", 12, 0, task=task, init_scale=2.0**30)
    assert h.skipped[0] and h.overflow[0] > 0
    k = int(np.argmin(h.skipped))  # the first step taken (measured: 6)
    assert 1 <= k <= 10 and h.skipped[:k].all() and not h.skipped[k:].any()
    assert h.scale.tolist() == [2.0 ** (30 - i) for i in range(k)] + [2.0 ** (30 - k)] * (12 - k)


def test_accumulator_path():
    pytest.importorskip("fpemu.accumulator")
    task = T.make_task(0, n_train=512, batch_size=64, hidden=16, depth=2)
    a = T.run("fp16", "dynamic", 3, 0, task=task, accumulator="fp32")
    b = T.run("fp16", "dynamic", 3, 0, task=task)
    assert np.all(np.isfinite(a.loss)) and a.accumulator == "fp32"
    # Sequential FP32 accumulation differs from BLAS's sums by rounding only.
    assert np.allclose(a.loss, b.loss, rtol=1e-4)
    with pytest.raises(ValueError):
        T.run("fp16", steps=1, task=task, accumulator="no-such-unit")


def test_cli_compare_json_and_plot(tmp_path, capsys):
    from fpemu.cli import main

    out = tmp_path / "h.json"
    assert main(["train", "--steps", "4", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    for label in ("fp32", "fp16+none", "fp16+dynamic", "bf16+none", "fp8+none"):
        assert label in table
    data = json.loads(out.read_text())
    assert [r["summary"]["run"] for r in data["runs"]][2] == "fp16+dynamic"
    assert len(data["runs"][1]["history"]["loss"]) == 4
    pytest.importorskip("matplotlib")
    assert main(["train", "-p", "fp16", "--steps", "3", "--plot", str(tmp_path / "img")]) == 0
    assert {p.name for p in (tmp_path / "img").iterdir()} == {"loss.png", "loss_scale.png", "grad_hist.png"}
    assert main(["train", "--precision", "fp16", "--loss-scale", "none", "--steps", "2", "--accumulator", "nope"]) == 2
