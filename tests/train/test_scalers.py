"""Tests of fpemu.train.scalers: GradScaler against the rules of SPEC section 6 and against
torch.amp.GradScaler, and the static scaler."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

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


# Regressions (each failed on the code before its fix): non-float gradients.
# ---- GradScaler: non-float gradients -----------------------------------------------------------
BAD_GRADS = [np.array([1 + 1j], np.complex64), np.array([1 + 1j]), np.array([1, 2], np.int32),
             np.array([True]), np.array([1.0], dtype=object), np.array(["1.0"])]


@pytest.mark.parametrize("g", BAD_GRADS, ids=lambda g: str(g.dtype))
def test_scalers_refuse_non_float_gradients(g):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way to the error
        calls = [lambda: T.GradScaler().unscale([g]), lambda: T.unscale_grads([g], 2.0),
                 lambda: T.GradScaler().step(lambda gs: None, [g]),
                 lambda: T.GradScaler(enabled=False).unscale([g]),
                 lambda: T.GradScaler(enabled=False).step(lambda gs: None, [g]),
                 lambda: T.StaticLossScaler().unscale([np.ones(2, F32), g])]
        for call in calls:
            with pytest.raises(TypeError, match=str(g.dtype)):
                call()


def test_scaler_scale_refuses_non_real_losses():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in (np.complex64(1 + 1j), 1 + 2j, np.array([True]), np.array([1.0], dtype=object), "2"):
            with pytest.raises(TypeError, match="loss"):
                T.GradScaler().scale(x)
            with pytest.raises(TypeError, match="loss"):
                T.GradScaler(enabled=False).scale(x)
    assert T.GradScaler(init_scale=4.0).scale(3).tolist() == 12.0  # an integer loss is a number


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_scalers_take_float_gradients(dtype):
    g = np.array([2.0, -6.0], dtype=dtype)
    out = T.GradScaler(init_scale=2.0).unscale([g])[0]
    assert out.dtype == F32 and out.tolist() == [1.0, -3.0] and g.dtype == dtype
    assert T.GradScaler(init_scale=2.0).scale(np.float16(1.5)).tolist() == 3.0
