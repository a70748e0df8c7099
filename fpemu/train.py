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
  scaling; casts saturate; GEMM outputs stay FP32.
* ``"mxfp8"``, ``"nvfp4"``: block-scaled GEMM operands through :mod:`fpemu.mx`.

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
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .formats import Format, get_format

__all__ = [
    "GradScaler",
    "StaticLossScaler",
    "unscale_grads",
    "DelayedScaling",
    "CurrentScaling",
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
    "register_cli",
]

LOSS_SCALES = ("none", "static", "dynamic")
_FLT_MAX = np.float32(np.finfo(np.float32).max)


# =============================================================================================
# Argument checks: every public entry point refuses nonsense with a ValueError or TypeError
# that names the parameter, before any work starts (no traceback from deep inside training).
# =============================================================================================
def _check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``lo .. hi``; a bool or a float is refused, not truncated."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise ValueError(f"{name} must be an integer {bound}, got {value}")
    return int(value)


def _as_float32(name: str, value: object) -> np.float32:
    """A real number as FP32, the precision the training state is kept in. A value beyond
    FP32's range becomes Inf (without a warning) so that the caller's check refuses it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        wide = float(value)
    except OverflowError:  # a Python int beyond float64
        wide = math.inf if value > 0 else -math.inf
    with np.errstate(over="ignore"):
        return np.float32(wide)


def _check_float32(name: str, value: object, ok: Callable[[np.float32], bool], what: str) -> np.float32:
    """``value`` as FP32 if ``ok`` of it holds (``what`` says what that means), else ValueError."""
    v = _as_float32(name, value)
    if not ok(v):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return v


def _check_scale(name: str, value: object) -> np.float32:
    """A loss scale: FP32, finite and positive, with a finite FP32 reciprocal (unscaling
    multiplies by it), that is between about 2.9e-39 and 3.4e38."""
    return _check_float32(
        name, value, lambda v: bool(np.isfinite(v) and v > 0 and np.isfinite(_reciprocal(v))),
        "a positive number whose float32 value and reciprocal are finite (about 2.9e-39 to 3.4e38)",
    )


def _reciprocal(scale: float) -> np.float32:
    """``fp32(1/scale)``, the reciprocal computed in double and rounded once, as torch does."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.float32(np.float64(1.0) / np.float64(scale))


def _check_callable(name: str, value: object, optional: bool = False) -> None:
    if not (callable(value) or (optional and value is None)):
        raise TypeError(f"{name} must be {'None or ' if optional else ''}a function, got {value!r}")


# =============================================================================================
# Loss scaling
# =============================================================================================
def unscale_grads(
    grads: Sequence[np.ndarray], scale: float
) -> tuple[list[np.ndarray], bool]:
    """Multiply gradients by ``fp32(1/scale)`` and report whether any of them is non-finite.

    This is ``torch._amp_foreach_non_finite_check_and_unscale_``: the reciprocal is computed in
    double and rounded once to FP32, then every gradient is multiplied by it in FP32. Gradients
    are taken in FP32 (a float64 value beyond FP32's range is Inf there, and counts as one).
    The inputs are not modified.

    >>> g, bad = unscale_grads([np.array([3.0, 6.0], dtype=np.float32)], 3.0)
    >>> g[0].tolist(), bad
    ([1.0, 2.0], False)
    >>> unscale_grads([np.array([np.nan], dtype=np.float32)], 2.0)[1]
    True
    """
    # torch: scale.double().reciprocal().float(); a scale backed off to 0 gives Inf.
    _check_float32("scale", scale, lambda v: bool(np.isfinite(v) and v >= 0), "a finite float32 number >= 0")
    inv = _reciprocal(scale)
    grads32 = _fp32_grads(grads)
    found_inf = any(not bool(np.isfinite(g).all()) for g in grads32)
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN results are torch's too
        out = [g * inv for g in grads32]
    return out, found_inf


def _fp32_grads(grads: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Gradients as FP32 arrays (no copy of FP32 ones); a value beyond FP32's range is Inf
    there, without a warning: the scaler's check is what finds it."""
    if not isinstance(grads, (list, tuple)):
        raise TypeError(f"grads must be a list or tuple of arrays, got {type(grads).__name__}")
    with np.errstate(over="ignore"):
        return [np.asarray(g, dtype=np.float32) for g in grads]


class GradScaler:
    """Dynamic loss scaling with the semantics of ``torch.amp.GradScaler``.

    One iteration is ``scale(loss)`` -> backward -> ``unscale(grads)`` (optional, ``step`` does
    it) -> ``step(apply, grads)`` -> ``update()``.

    * ``scale(x)``: ``x * scale`` in FP32.
    * ``unscale(grads)``: gradients times ``fp32(1/scale)``; any non-finite gradient sets
      ``found_inf``. At most once per iteration.
    * ``step(apply, grads)``: calls ``apply(unscaled_grads)`` unless ``found_inf``; returns
      whether it did.
    * ``update()``: on ``found_inf`` ``scale *= backoff_factor`` and the growth tracker resets;
      otherwise the tracker counts one more good step and, on reaching ``growth_interval``,
      ``scale *= growth_factor`` (kept only if finite) and the tracker resets. The scale is an
      FP32 number, as in torch.

    torch asserts ``growth_factor > 1`` and ``backoff_factor < 1``; here, in addition, every
    number must be a finite FP32 value, ``backoff_factor`` positive and ``init_scale`` one whose
    FP32 reciprocal is finite (:func:`_check_scale`): anything else is a ValueError.

    >>> s = GradScaler(init_scale=4.0, growth_interval=1)
    >>> _ = s.unscale([np.ones(2, np.float32)]); s.update(); s.get_scale()
    8.0
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if not isinstance(enabled, (bool, np.bool_)):
            raise TypeError(f"enabled must be True or False, got {enabled!r}")
        self.enabled = bool(enabled)
        self._scale = _check_scale("init_scale", init_scale)
        self._growth_factor = _check_float32(
            "growth_factor", growth_factor, lambda v: bool(np.isfinite(v) and v > 1), "a finite float32 number > 1.0"
        )
        self._backoff_factor = _check_float32(
            "backoff_factor", backoff_factor, lambda v: bool(0 < v < 1), "a float32 number in (0, 1)"
        )
        self._growth_interval = _check_int("growth_interval", growth_interval, 1)
        self._growth_tracker = 0
        self._found_inf: bool | None = None  # None: not unscaled yet in this iteration
        self._unscaled: list[np.ndarray] | None = None

    # ---- the per-iteration protocol ------------------------------------------------------
    def scale(self, x: np.ndarray | float) -> np.ndarray:
        """Return ``x * scale`` in FP32 (``x`` itself when disabled); an overflow is Inf."""
        with np.errstate(over="ignore"):  # Inf is what the scaler's check is there to catch
            x = np.asarray(x, dtype=np.float32)
            return x * self._scale if self.enabled else x

    def unscale(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Unscale gradients (new arrays) and record whether any is non-finite."""
        if not self.enabled:
            return _fp32_grads(grads)
        if self._found_inf is not None:
            raise RuntimeError("unscale() has already been called since the last update()")
        self._unscaled, self._found_inf = unscale_grads(grads, float(self._scale))
        return self._unscaled

    def step(self, apply: Callable[[list[np.ndarray]], object], grads: Sequence[np.ndarray]) -> bool:
        """Apply the update with unscaled gradients unless a gradient was Inf/NaN.

        ``grads`` are the scaled gradients; if :meth:`unscale` was already called in this
        iteration its result is used instead. Returns True when the step was taken.
        """
        _check_callable("apply", apply)
        if not self.enabled:
            apply(_fp32_grads(grads))
            return True
        if self._found_inf is None:
            self.unscale(grads)
        if self._found_inf:
            return False
        apply(self._unscaled)
        return True

    def update(self, new_scale: float | None = None) -> None:
        """Update the scale from this iteration's ``found_inf`` (or set ``new_scale``)."""
        if not self.enabled:
            return
        if new_scale is not None:
            self._scale = _check_scale("new_scale", new_scale)
        else:
            if self._found_inf is None:
                raise RuntimeError("no inf checks were recorded prior to update()")
            self._scale, self._growth_tracker = _update_scale(
                self._scale,
                self._growth_tracker,
                self._found_inf,
                self._growth_factor,
                self._backoff_factor,
                self._growth_interval,
            )
        self._found_inf = None
        self._unscaled = None

    # ---- state ---------------------------------------------------------------------------
    @property
    def found_inf(self) -> bool | None:
        """Whether this iteration's gradients had an Inf/NaN (None before unscaling)."""
        return self._found_inf

    def get_scale(self) -> float:
        return float(self._scale) if self.enabled else 1.0

    def get_growth_tracker(self) -> int:
        return self._growth_tracker

    def state_dict(self) -> dict:
        return {
            "scale": float(self._scale),
            "growth_factor": float(self._growth_factor),
            "backoff_factor": float(self._backoff_factor),
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s numbers, checked as the constructor checks them."""
        keys = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
        if not isinstance(state, dict) or any(k not in state for k in keys):
            raise ValueError(f"state must be a dict with the keys {', '.join(keys)}")
        checked = GradScaler(state["scale"], state["growth_factor"], state["backoff_factor"], state["growth_interval"])
        tracker = _check_int("_growth_tracker", state["_growth_tracker"], 0, checked._growth_interval - 1)
        self._scale, self._growth_factor = checked._scale, checked._growth_factor
        self._backoff_factor, self._growth_interval = checked._backoff_factor, checked._growth_interval
        self._growth_tracker = tracker


def _update_scale(
    scale: np.float32,
    tracker: int,
    found_inf: bool,
    growth: np.float32,
    backoff: np.float32,
    interval: int,
) -> tuple[np.float32, int]:
    """The rule of ``torch._amp_update_scale_`` (FP32 scale, integer growth tracker)."""
    if found_inf:
        return np.float32(scale * backoff), 0
    tracker += 1
    if tracker == interval:
        with np.errstate(over="ignore"):
            grown = np.float32(scale * growth)
        return (grown if np.isfinite(grown) else scale), 0
    return scale, tracker


class StaticLossScaler(GradScaler):
    """A fixed loss scale (Micikevicius et al. 2018): steps with Inf/NaN gradients are skipped,
    the scale never changes.

    >>> s = StaticLossScaler(128.0)
    >>> _ = s.unscale([np.array([np.inf], np.float32)]); s.update(); s.get_scale()
    128.0
    """

    def __init__(self, scale: float = 1024.0) -> None:
        super().__init__(init_scale=_check_scale("scale", scale))

    def update(self, new_scale: float | None = None) -> None:
        if new_scale is not None:
            self._scale = _check_scale("new_scale", new_scale)
        self._found_inf = None
        self._unscaled = None


# =============================================================================================
# FP8 per-tensor scaling (TransformerEngine recipes)
# =============================================================================================
def _check_fp8_max(fp8_max: object) -> np.float32:
    return _check_float32("fp8_max", fp8_max, lambda v: bool(np.isfinite(v) and v > 0), "a finite float32 number > 0")


def _check_margin(margin: object) -> int:
    # 2**margin must be a finite FP32 number, or every scale would be 0.
    return _check_int("margin", margin, 0, 127)


def delayed_scale(amax: float, old_scale: float, fp8_max: float, margin: int = 0) -> np.float32:
    """TransformerEngine's delayed-scaling rule for one tensor, in FP32.

    ``scale = (fp8_max / amax) / 2**margin``; the old scale is kept when ``amax`` is non-finite
    or ``<= 0`` (an amax beyond FP32's range is Inf in FP32); an infinite scale becomes FLT_MAX.
    ``old_scale`` must be a finite FP32 number >= 0, ``fp8_max`` a positive one, ``margin`` in
    0..127.

    >>> float(delayed_scale(3.5, 1.0, 448.0)), float(delayed_scale(3.5, 1.0, 448.0, margin=1))
    (128.0, 64.0)
    >>> float(delayed_scale(0.0, 7.0, 448.0)), float(delayed_scale(np.nan, 7.0, 448.0))
    (7.0, 7.0)
    >>> bool(delayed_scale(1e-45, 1.0, 448.0) == np.finfo(np.float32).max)
    True
    """
    amax32 = _as_float32("amax", amax)
    # >= 0: with a large margin the rule itself can underflow to 0 (as TE's would).
    old = _check_float32("old_scale", old_scale, lambda v: bool(np.isfinite(v) and v >= 0), "a finite float32 number >= 0")
    fp8_max32 = _check_fp8_max(fp8_max)
    margin = _check_margin(margin)
    if not (np.isfinite(amax32) and amax32 > 0):
        return old
    with np.errstate(over="ignore", divide="ignore"):
        sf = (fp8_max32 / amax32) / np.float32(2.0**margin)
    if np.isinf(sf):
        return _FLT_MAX
    return np.float32(sf)


def current_scale(amax: float, fp8_max: float, power_2_scale: bool = False) -> np.float32:
    """TransformerEngine's current-scaling rule: ``fp8_max / amax`` of this very tensor.

    An amax of 0, Inf or NaN gives 1 (an amax beyond FP32's range is Inf in FP32); an infinite
    scale becomes FLT_MAX; with ``power_2_scale`` the scale is rounded down to a power of two
    (its FP32 mantissa bits cleared). ``amax`` is an absolute maximum: a negative one is refused.

    >>> float(current_scale(3.5, 448.0)), float(current_scale(3.0, 448.0, power_2_scale=True))
    (128.0, 128.0)
    >>> float(current_scale(0.0, 448.0)), float(current_scale(np.inf, 448.0))
    (1.0, 1.0)
    """
    amax32 = _as_float32("amax", amax)
    fp8_max32 = _check_fp8_max(fp8_max)
    _check_bool("power_2_scale", power_2_scale)
    if amax32 < 0:
        raise ValueError(f"amax is an absolute maximum and cannot be negative, got {amax!r}")
    if not np.isfinite(amax32) or amax32 == 0:
        return np.float32(1.0)
    with np.errstate(over="ignore"):
        sf = fp8_max32 / amax32
    if np.isinf(sf):
        sf = _FLT_MAX
    if power_2_scale:
        bits = np.array(sf, dtype=np.float32).view(np.uint32) & np.uint32(0xFF800000)
        sf = bits.view(np.float32)[()]
    return np.float32(sf)


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def _check_fp8_formats(recipe: DelayedScaling | CurrentScaling) -> None:
    """The recipe's formats must be known names (a cast to an unknown one cannot start)."""
    for field in ("fwd_format", "bwd_format"):
        get_format(getattr(recipe, field))


@dataclass(frozen=True)
class DelayedScaling:
    """TransformerEngine ``DelayedScaling`` (HYBRID format: E4M3 forward, E5M2 backward).

    The scale used at step ``t`` comes from the amaxes of steps ``t-L .. t-1``
    (``L = amax_history_len``): the maximum of that window (``"max"``) or only step ``t-1``
    (``"most_recent"``). Before any history exists the scale is 1. ``margin`` is in 0..127
    (``2**margin`` must be a finite FP32 number).
    """

    margin: int = 0
    amax_history_len: int = 1024
    amax_compute_algo: str = "max"
    fwd_format: str = "e4m3"
    bwd_format: str = "e5m2"

    def __post_init__(self) -> None:
        _check_margin(self.margin)
        # No upper bound: the history grows with the steps actually taken, not with L.
        _check_int("amax_history_len", self.amax_history_len, 1)
        if self.amax_compute_algo not in ("max", "most_recent"):
            raise ValueError(
                f"amax_compute_algo must be 'max' or 'most_recent', got {self.amax_compute_algo!r}"
            )
        _check_fp8_formats(self)


@dataclass(frozen=True)
class CurrentScaling:
    """TransformerEngine ``Float8CurrentScaling``: each tensor scaled by its own amax."""

    power_2_scale: bool = False
    fwd_format: str = "e4m3"
    bwd_format: str = "e5m2"

    def __post_init__(self) -> None:
        _check_bool("power_2_scale", self.power_2_scale)
        _check_fp8_formats(self)


def _fp8_recipe(recipe: object) -> DelayedScaling | CurrentScaling:
    """A recipe object from ``"delayed"``, ``"current"``, None (delayed) or a recipe object."""
    if isinstance(recipe, (DelayedScaling, CurrentScaling)):
        return recipe
    if recipe is None or recipe == "delayed":
        return DelayedScaling()
    if recipe == "current":
        return CurrentScaling()
    if isinstance(recipe, str):
        raise ValueError(f"fp8_recipe must be 'delayed' or 'current', got {recipe!r}")
    raise TypeError(
        f"fp8_recipe must be 'delayed', 'current', a DelayedScaling or a CurrentScaling, got {recipe!r}"
    )


class TensorScale:
    """The FP8 scaling state of one tensor slot (one GEMM operand of one layer).

    The amax history is a ring buffer of ``amax_history_len`` entries that starts small and
    grows with the steps taken, so a long window costs memory only once it fills.

    >>> ts = TensorScale(448.0, DelayedScaling(amax_history_len=2))
    >>> float(ts.scale_for(np.array([2.0, -7.0], np.float32)))   # no history yet
    1.0
    >>> ts.update(); float(ts.scale)
    64.0
    >>> _ = ts.scale_for(np.array([1.0], np.float32)); ts.update(); float(ts.scale)  # max(7, 1)
    64.0
    >>> _ = ts.scale_for(np.array([1.0], np.float32)); ts.update(); float(ts.scale)  # 7 left
    448.0
    """

    _FIRST_HISTORY = 16  # entries allocated at first; doubled as the steps fill them

    def __init__(self, fp8_max: float, recipe: DelayedScaling | CurrentScaling) -> None:
        if not isinstance(recipe, (DelayedScaling, CurrentScaling)):
            raise TypeError(f"recipe must be a DelayedScaling or a CurrentScaling, got {recipe!r}")
        self.fp8_max = float(_check_fp8_max(fp8_max))
        self.recipe = recipe
        self.scale = np.float32(1.0)
        self._length = recipe.amax_history_len if isinstance(recipe, DelayedScaling) else 1
        self.history = np.zeros(min(self._length, self._FIRST_HISTORY), dtype=np.float32)
        self._pos = 0  # where the next amax is written (a ring buffer)
        self._pending = False

    def scale_for(self, x: np.ndarray, record: bool = True) -> np.float32:
        """The scale to cast ``x`` with now; with ``record`` its amax enters the history."""
        x = np.asarray(x)
        amax = _as_float32("amax", np.max(np.abs(x))) if x.size else np.float32(0.0)
        if isinstance(self.recipe, CurrentScaling):
            return current_scale(amax, self.fp8_max, self.recipe.power_2_scale)
        if record:
            # One amax per step and slot: a second cast in the same step keeps the larger.
            if self._pending:
                prev = self.history[self._pos]
                self.history[self._pos] = amax if not (amax <= prev) else prev
            else:
                self.history[self._pos] = amax
            self._pending = True
        return self.scale

    def update(self) -> None:
        """End of step: derive the next scale from the history and advance the window."""
        if isinstance(self.recipe, CurrentScaling) or not self._pending:
            return
        if self.recipe.amax_compute_algo == "max":
            amax = np.max(self.history)  # NaN propagates, so a NaN keeps the old scale
        else:
            amax = self.history[self._pos]
        self.scale = delayed_scale(amax, self.scale, self.fp8_max, self.recipe.margin)
        self._advance()
        self._pending = False

    def _advance(self) -> None:
        """Move to the next slot, growing the buffer (with empty slots) until it has L of them."""
        n = len(self.history)
        if self._pos + 1 == n and n < self._length:
            grown = np.zeros(min(2 * n, self._length), dtype=np.float32)
            grown[:n] = self.history
            self.history = grown
        self._pos = (self._pos + 1) % len(self.history)
        self.history[self._pos] = 0.0  # the slot of the oldest amax is reused


# =============================================================================================
# Rounding to the low formats
# =============================================================================================
def _rounder(fmt: Format, overflow: str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """A function rounding an FP32 array to ``fmt`` (RNE; values returned as FP32).

    This is the policies' hot path; :func:`fpemu.quantize` has float32 fast paths for it (the
    bf16 bit trick, float32 "magic number" addition for fp16, tables for FP8).
    """
    from .codec import quantize

    def round_to_format(x: np.ndarray) -> np.ndarray:
        return np.asarray(quantize(np.asarray(x, dtype=np.float32), fmt, overflow=overflow), dtype=np.float32)

    return round_to_format


# =============================================================================================
# Cast statistics
# =============================================================================================
_HIST_LO, _HIST_HI = -80, 24  # exponent bins floor(log2|g|) of the gradient histogram


@dataclass
class _CastStats:
    """Counters of the gradient values rounded to the low format during one step."""

    nonzero: int = 0
    underflow: int = 0
    overflow: int = 0
    hist: np.ndarray | None = None  # exponent histogram, when this step samples it

    def add(self, before: np.ndarray, after: np.ndarray, overflowed: np.ndarray | None = None) -> None:
        nz = before != 0
        self.nonzero += int(np.count_nonzero(nz))
        self.underflow += int(np.count_nonzero(nz & (after == 0)))
        if overflowed is None:
            overflowed = np.isinf(after) & np.isfinite(before)
        self.overflow += int(np.count_nonzero(overflowed))
        if self.hist is not None:
            self.hist += _exponent_histogram(before)


def _exponent_histogram(g: np.ndarray) -> np.ndarray:
    """Counts of ``floor(log2|g|)`` over the bins ``_HIST_LO .. _HIST_HI`` (ends clipped)."""
    g = g[(g != 0) & np.isfinite(g)]
    _, e = np.frexp(g)  # |g| = m * 2**e with m in [0.5, 1): floor(log2|g|) = e - 1
    e = np.clip(e.astype(np.int64) - 1, _HIST_LO, _HIST_HI) - _HIST_LO
    return np.bincount(e, minlength=_HIST_HI - _HIST_LO + 1)


# =============================================================================================
# Precision policies
# =============================================================================================
def _default_matmul(a: np.ndarray, b: np.ndarray, fa: Format | None = None, fb: Format | None = None) -> np.ndarray:
    """FP32 matmul of operands already rounded to the low formats: exact products (they fit in
    FP32) and FP32 sums."""
    return a @ b


def _accumulator_matmul(name: str, *formats: Format) -> Callable[..., np.ndarray]:
    """A GEMM through an accumulator model of :mod:`fpemu.accumulator`."""
    from .accumulator import gemm, get_accumulator

    for fmt in formats:  # a bad name or input format fails here, before training starts
        get_accumulator(name, fmt)

    def matmul(a: np.ndarray, b: np.ndarray, fa: Format | None = None, fb: Format | None = None) -> np.ndarray:
        return gemm(a, b, inputs=(fa, fb), accumulator=name)

    return matmul


class _FP32Policy:
    """Plain FP32: every cast is the identity, every GEMM a float32 matmul."""

    name = "fp32"
    low: Format | None = None

    def __init__(self) -> None:
        self.matmul = _default_matmul

    def cast_fwd(self, x: np.ndarray, slot: tuple, record: bool = True) -> tuple[np.ndarray, None]:
        return x, None

    def cast_grad(self, g: np.ndarray, slot: tuple, stats: _CastStats) -> tuple[np.ndarray, None]:
        return g, None

    def gemm(self, a: np.ndarray, sa, b: np.ndarray, sb) -> np.ndarray:
        return self.matmul(a, b)

    def bias_grad(self, qd: np.ndarray, sd) -> np.ndarray:
        return qd.sum(axis=0)

    def out_fwd(self, y: np.ndarray) -> np.ndarray:
        return y

    def out_grad(self, y: np.ndarray, stats: _CastStats) -> np.ndarray:
        return y

    def end_step(self) -> None:
        pass


class _LowPolicy(_FP32Policy):
    """FP16/BF16 mixed precision: GEMM inputs and outputs in the low format, FP32 elsewhere."""

    def __init__(self, fmt: str, accumulator: str | None = None) -> None:
        self.low = get_format(fmt)
        self.name = self.low.name
        self.round = _rounder(self.low)
        self.matmul = _accumulator_matmul(accumulator, self.low) if accumulator is not None else _default_matmul

    def gemm(self, a, sa, b, sb):
        return self.matmul(a, b, self.low, self.low)

    def cast_fwd(self, x, slot, record=True):
        if slot[0] == "x" and slot[1] > 0:
            return x, None  # a hidden activation: out_fwd already rounded it (ReLU keeps that)
        return self.round(x), None

    def cast_grad(self, g, slot, stats):
        q = self.round(g)
        stats.add(g, q)
        return q, None

    def out_fwd(self, y):
        return self.round(y)

    def out_grad(self, y, stats):
        q = self.round(y)
        stats.add(y, q)
        return q


class _FP8Policy(_FP32Policy):
    """TransformerEngine-style FP8: scaled, saturating casts of GEMM inputs; FP32 outputs."""

    def __init__(self, recipe: DelayedScaling | CurrentScaling, accumulator: str | None = None) -> None:
        self.name = "fp8"
        self.recipe = recipe
        self.fwd = get_format(recipe.fwd_format)
        self.bwd = get_format(recipe.bwd_format)
        self.low = self.bwd  # the format gradients are cast to
        self.round_fwd = _rounder(self.fwd, overflow="saturate")
        self.round_bwd = _rounder(self.bwd, overflow="saturate")
        self.states: dict[tuple, TensorScale] = {}
        # FP8 GEMMs accumulate in FP32 (an accumulator model may replace that).
        self.matmul = (
            _accumulator_matmul(accumulator, self.fwd, self.bwd) if accumulator is not None else _default_matmul
        )

    def _state(self, slot: tuple, fmt: Format) -> TensorScale:
        if slot not in self.states:
            self.states[slot] = TensorScale(fmt.max, self.recipe)
        return self.states[slot]

    def cast_fwd(self, x, slot, record=True):
        s = self._state(slot, self.fwd).scale_for(x, record)
        return self.round_fwd(x * s), (np.float32(1.0) / s, self.fwd)

    def cast_grad(self, g, slot, stats):
        s = self._state(slot, self.bwd).scale_for(g)
        scaled = g * s
        q = self.round_bwd(scaled)
        stats.add(g, q, overflowed=np.abs(scaled) > np.float32(self.bwd.max))
        return q, (np.float32(1.0) / s, self.bwd)

    def gemm(self, a, sa, b, sb):
        # Dequantize the FP32 accumulator with both inverse scales, as the cuBLASLt FP8 GEMM does.
        return self.matmul(a, b, sa[1], sb[1]) * sa[0] * sb[0]

    def bias_grad(self, qd, sd):
        return qd.sum(axis=0) * sd[0]

    def end_step(self) -> None:
        for state in self.states.values():
            state.update()


class _BlockPolicy(_FP32Policy):
    """Block-scaled GEMM operands (:mod:`fpemu.mx`), each quantized along the GEMM's K axis.

    * ``"mxfp8"``: TransformerEngine's ``MXFP8BlockScaling``: every operand MXFP8 E4M3, blocks of
      32 along K, E8M0 scales with NVIDIA's ``rceil`` rule.
    * ``"nvfp4"``: NVFP4 (E2M1, blocks of 16, UE4M3 block scale and FP32 tensor scale, TE
      arithmetic); gradients stochastically rounded as in TE's recipe. Simplified: 1-D blocks
      for weights too and no random Hadamard transform.

    A tensor used by two GEMMs is quantized twice, once along each K axis (as TE keeps rowwise
    and columnwise copies). The dequantized operands are multiplied in FP32 (products exact).
    """

    def __init__(self, name: str, seed: int = 0) -> None:
        from . import mx

        self.mx = mx
        self.name = name
        self.block = "mxfp8_e4m3" if name == "mxfp8" else "nvfp4"
        self.low = get_format("e4m3" if name == "mxfp8" else "e2m1")
        self.rng = np.random.default_rng([seed, 0x4F4])
        self.matmul = _default_matmul

    def _fq(self, x: np.ndarray, axis: int, grad: bool) -> np.ndarray:
        kw: dict = {"scale_rounding": "rceil"} if self.name == "mxfp8" else {}
        if grad and self.name == "nvfp4":
            kw.update(rounding="stochastic", rng=self.rng)
        q = self.mx.quantize(x, self.block, axis=axis, **kw)
        return np.asarray(q.dequantize(), dtype=np.float32)

    def cast_fwd(self, x, slot, record=True):
        return x, False  # quantized inside gemm, along the K axis of each use

    def cast_grad(self, g, slot, stats):
        stats.add(g, self._fq(g, 1, True))  # the dgrad copy: where underflow is counted
        return g, True

    def gemm(self, a, sa, b, sb):
        return self._fq(a, 1, sa) @ self._fq(b, 0, sb)


def _mx_available() -> bool:
    try:
        from . import mx  # noqa: F401
    except ImportError:
        return False
    return True


PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4")


def make_policy(
    precision: str,
    accumulator: str | None = None,
    fp8_recipe: DelayedScaling | CurrentScaling | str | None = None,
    seed: int = 0,
):
    """The policy object of a precision name (``accumulator``: None for the default FP32 sums,
    or a model of :mod:`fpemu.accumulator`; ``fp8_recipe`` as in :func:`run`)."""
    if not isinstance(precision, str):
        raise TypeError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    recipe = _fp8_recipe(fp8_recipe)
    seed = _check_int("seed", seed, 0)
    p = precision.strip().lower()
    if p not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    if accumulator is not None and p in ("fp32", "mxfp8", "nvfp4"):
        raise ValueError(f"--accumulator applies to fp16, bf16 and fp8, not {p}"
                         + (" (block-scaled GEMMs)" if p != "fp32" else ""))
    if p == "fp32":
        return _FP32Policy()
    if p in ("fp16", "bf16"):
        return _LowPolicy(p, accumulator)
    if p == "fp8":
        return _FP8Policy(recipe, accumulator)
    if not _mx_available():
        raise ValueError(f"{p} needs fpemu.mx, which is not available")
    return _BlockPolicy(p, seed)


# =============================================================================================
# The default task and the network
# =============================================================================================
# What training allocates follows from the task's sizes: arrays of at most this many values
# (256 MiB of FP32 each) and at most this many hidden layers. Larger tasks are refused before
# anything is allocated.
TASK_LIMITS = {"max_values": 2**26, "max_depth": 1024}
_EVAL_ROWS = 4096  # training examples the final training loss is measured on


@dataclass(frozen=True)
class Task:
    """A generated multi-label classification problem and the network trained on it.

    Checked on construction: 2-D data with matching rows and columns (``widths[0]`` features,
    ``widths[-1]`` labels), finite FP32 values (the arrays are stored as FP32), labels in
    [0, 1], ``1 <= batch_size <= len(x_train)``, a finite FP32 ``lr >= 0`` and ``momentum >= 0``
    (torch's rules), and sizes within :data:`TASK_LIMITS`.
    """

    x_train: np.ndarray
    y_train: np.ndarray  # 0/1 labels, float32, one column per label
    x_test: np.ndarray
    y_test: np.ndarray
    widths: tuple[int, ...]  # layer widths, input first, labels last
    batch_size: int
    lr: float
    optimizer: str = "sgd"
    momentum: float = 0.9

    def __post_init__(self) -> None:
        for name in ("x_train", "y_train", "x_test", "y_test"):
            object.__setattr__(self, name, _data_array(name, getattr(self, name)))
        object.__setattr__(self, "widths", _check_widths(self.widths))
        self._check_shapes()
        batch, lr, momentum = _check_training(len(self.x_train), self.batch_size, self.lr, self.optimizer, self.momentum)
        object.__setattr__(self, "batch_size", batch)
        object.__setattr__(self, "lr", lr)
        object.__setattr__(self, "momentum", momentum)
        _check_network_size(self.widths, batch, len(self.x_train), len(self.x_test))

    def _check_shapes(self) -> None:
        n_in, n_out = self.widths[0], self.widths[-1]
        for x, y, part in ((self.x_train, self.y_train, "train"), (self.x_test, self.y_test, "test")):
            if x.shape[0] != y.shape[0]:
                raise ValueError(f"x_{part} has {x.shape[0]} rows but y_{part} has {y.shape[0]}")
            if x.shape[1] != n_in or y.shape[1] != n_out:
                raise ValueError(
                    f"x_{part} and y_{part} must have widths[0] = {n_in} and widths[-1] = {n_out} "
                    f"columns, got {x.shape[1]} and {y.shape[1]}"
                )
        if np.any((self.y_train < 0) | (self.y_train > 1)) or np.any((self.y_test < 0) | (self.y_test > 1)):
            raise ValueError("labels (y_train, y_test) must lie in [0, 1]")


def _data_array(name: str, value: object) -> np.ndarray:
    """A 2-D array of finite FP32 values with at least one row."""
    try:
        arr = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} must be a 2-D array of numbers") from None
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a 2-D array of real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must be a 2-D array with at least one row, got shape {arr.shape}")
    with np.errstate(over="ignore"):  # beyond FP32's range: Inf, refused just below
        arr = np.asarray(arr, dtype=np.float32)
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"{name} has {bad} values that are NaN, Inf or beyond float32's range")
    return arr


def _check_widths(widths: object) -> tuple[int, ...]:
    if not isinstance(widths, (tuple, list)) or len(widths) < 2:
        raise TypeError(f"widths must be a tuple of at least two layer widths, got {widths!r}")
    out = tuple(_check_int("every width", w, 1) for w in widths)
    if len(out) - 2 > TASK_LIMITS["max_depth"]:
        raise ValueError(f"at most {TASK_LIMITS['max_depth']} hidden layers, got {len(out) - 2}")
    return out


def _check_training(n_train: int, batch_size: object, lr: object, optimizer: object, momentum: object) -> tuple[int, float, float]:
    """batch_size, lr and momentum checked (torch.optim's rules, in FP32), the optimizer name."""
    batch = _check_int("batch_size", batch_size, 1)
    if batch > n_train:
        raise ValueError(f"batch_size ({batch}) cannot exceed the {n_train} training examples")
    finite_nonneg = lambda v: bool(np.isfinite(v) and v >= 0)  # noqa: E731
    _check_float32("lr", lr, finite_nonneg, "a finite float32 number >= 0")
    _check_float32("momentum", momentum, finite_nonneg, "a finite float32 number >= 0")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    return batch, float(lr), float(momentum)  # as given; the optimizer rounds them to FP32


def _check_network_size(widths: tuple[int, ...], batch_size: int, n_train: int, n_test: int) -> None:
    """Weights, and the activations of a batch or an evaluation, within TASK_LIMITS."""
    limit = TASK_LIMITS["max_values"]
    _check_weight_count(widths)
    rows = max(batch_size, min(n_train, _EVAL_ROWS), n_test)
    if rows * sum(widths) > limit:
        raise ValueError(
            f"{rows} examples through layers of widths {sum(widths)} in all would need "
            f"{rows * sum(widths)} activations; the limit is {limit} (2**26)"
        )


def _check_weight_count(widths: tuple[int, ...]) -> None:
    limit = TASK_LIMITS["max_values"]
    weights = sum(a * b for a, b in zip(widths[:-1], widths[1:]))
    if weights > limit:
        raise ValueError(f"the network would have {weights} weights; the limit is {limit} (2**26)")


def make_task(
    seed: int = 0,
    *,
    n_features: int = 32,
    n_clusters: int = 64,
    n_labels: int = 128,
    noise: float = 0.5,
    hidden: int = 64,
    depth: int = 4,
    n_train: int = 16384,
    n_test: int = 4096,
    batch_size: int = 1024,
    lr: float = 2.0,
    optimizer: str = "sgd",
    momentum: float = 0.9,
) -> Task:
    """The default task: multi-label classification of Gaussian clusters.

    ``n_clusters`` centres are drawn from N(0, I) in ``n_features`` dimensions, each with its
    own random code of ``n_labels`` bits; an example is a centre plus ``noise * N(0, I)`` and its
    labels are its centre's code. The task can be fitted almost perfectly, so the loss keeps
    falling and the gradients keep shrinking: the regime in which FP16 runs out of range.
    Every size is a positive integer (``depth``, the number of hidden layers, may be 0) and the
    arrays they imply are bounded by :data:`TASK_LIMITS`: nonsense is refused before any data
    is drawn.

    >>> t = make_task(0)
    >>> t.x_train.shape, t.y_train.shape, t.widths
    ((16384, 32), (16384, 128), (32, 64, 64, 64, 64, 128))
    """
    seed = _check_int("seed", seed, 0)
    sizes = {k: _check_int(k, v, 1) for k, v in dict(
        n_features=n_features, n_clusters=n_clusters, n_labels=n_labels, hidden=hidden, n_train=n_train, n_test=n_test
    ).items()}
    depth = _check_int("depth", depth, 0, TASK_LIMITS["max_depth"])
    _check_float32("noise", noise, lambda v: bool(np.isfinite(v) and v >= 0), "a finite float32 number >= 0")
    batch_size, _, _ = _check_training(n_train, batch_size, lr, optimizer, momentum)
    _check_data_size(**sizes)
    widths = (n_features,) + (hidden,) * depth + (n_labels,)
    _check_network_size(widths, batch_size, n_train, n_test)
    rng = np.random.default_rng([seed, 0x7A5C])
    n = n_train + n_test
    centres = rng.standard_normal((n_clusters, n_features))
    codes = rng.integers(0, 2, (n_clusters, n_labels)).astype(np.float32)
    cluster = rng.integers(0, n_clusters, n)
    with np.errstate(over="ignore"):  # a huge noise overflows FP32: refused just below
        x = (centres[cluster] + float(noise) * rng.standard_normal((n, n_features))).astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError(f"noise = {noise!r} puts examples beyond float32's range (about 3.4e38)")
    y = codes[cluster]
    return Task(
        x_train=x[:n_train],
        y_train=y[:n_train],
        x_test=x[n_train:],
        y_test=y[n_train:],
        widths=widths,
        batch_size=batch_size,
        lr=lr,
        optimizer=optimizer,
        momentum=momentum,
    )


def _check_data_size(*, n_features: int, n_clusters: int, n_labels: int, n_train: int, n_test: int, **_) -> None:
    """The generated arrays (examples and cluster tables) within TASK_LIMITS."""
    limit = TASK_LIMITS["max_values"]
    for rows, what in ((n_train + n_test, "(n_train + n_test)"), (n_clusters, "n_clusters")):
        values = rows * (n_features + n_labels)
        if values > limit:
            raise ValueError(
                f"the task would hold {what} x (n_features + n_labels) = {values} values; "
                f"the limit is {limit} (2**26)"
            )


def init_params(widths: Sequence[int], seed: int) -> list[np.ndarray]:
    """``[W1, b1, W2, b2, ...]`` in FP32, with PyTorch's default ``nn.Linear`` initialisation.

    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weights and biases (Kaiming-uniform with
    ``a = sqrt(5)``): a weight variance of ``1/(3 fan_in)``, so each ReLU layer multiplies the
    size of the backward signal by about ``sqrt(1/6)``.

    >>> [p.shape for p in init_params((4, 3, 2), 0)]
    [(4, 3), (3,), (3, 2), (2,)]
    """
    widths = _check_widths(widths)
    seed = _check_int("seed", seed, 0)
    _check_weight_count(widths)
    rng = np.random.default_rng([seed, 0x1417])
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def _forward(params, x, policy, record=True):
    """Logits and the per-layer cache (GEMM operands as cast, and ReLU masks)."""
    n_layers = len(params) // 2
    cache = []
    a = x
    for l in range(n_layers):
        w, b = params[2 * l], params[2 * l + 1]
        qa, sa = policy.cast_fwd(a, ("x", l), record)
        qw, sw = policy.cast_fwd(w, ("w", l), record)
        z = policy.out_fwd(policy.gemm(qa, sa, qw, sw) + b)
        if l < n_layers - 1:
            mask = z > 0
            a = np.where(mask, z, np.float32(0.0))
        else:
            mask = None
        cache.append((qa, sa, qw, sw, mask))
    return z, cache


def _bce_loss(logits: np.ndarray, y: np.ndarray) -> tuple[np.float32, np.ndarray]:
    """Mean binary cross-entropy with logits over every element (FP32), and ``sigmoid(logits)``.

    This is ``torch.nn.BCEWithLogitsLoss()`` with its default ``reduction="mean"``: the average
    over batch *and* labels.
    """
    per = np.maximum(logits, np.float32(0.0)) - logits * y + np.log1p(np.exp(-np.abs(logits)))
    # sigmoid through tanh: no exp overflow and no subnormal intermediates.
    sig = np.float32(0.5) + np.float32(0.5) * np.tanh(np.float32(0.5) * logits)
    return np.float32(per.mean(dtype=np.float32)), sig


def _backward(params, cache, sig, y, loss_scale, policy, stats):
    """Gradients of ``loss * loss_scale`` w.r.t. ``[W1, b1, ...]``, as the low format holds them."""
    n_layers = len(params) // 2
    # d(mean BCE)/dlogits = (sigmoid - y) / (batch * labels), times the loss scale (FP32).
    dz = (sig - y) * np.float32(loss_scale / y.size)
    grads: list[np.ndarray] = [None] * len(params)  # type: ignore[list-item]
    for l in range(n_layers - 1, -1, -1):
        qa, sa, qw, sw, mask = cache[l]
        if mask is not None:
            dz = np.where(mask, dz, np.float32(0.0))
        qd, sd = policy.cast_grad(dz, ("dy", l), stats)
        grads[2 * l] = policy.out_grad(policy.gemm(qa.T, sa, qd, sd), stats)
        grads[2 * l + 1] = policy.out_grad(policy.bias_grad(qd, sd), stats)
        if l > 0:
            dz = policy.gemm(qd, sd, qw.T, sw)
    return grads


def _evaluate(params, x: np.ndarray, y: np.ndarray, policy) -> tuple[float, float]:
    """Loss and label accuracy of the master weights on ``(x, y)``, forward in the policy's
    precision."""
    logits, _ = _forward(params, x, policy, record=False)
    loss, _ = _bce_loss(logits, y)
    return float(loss), float(np.mean((logits > 0) == (y > 0.5)))


# =============================================================================================
# Training
# =============================================================================================
@dataclass
class History:
    """What one training run recorded, step by step, and its summary."""

    precision: str
    loss_scale: str
    accumulator: str | None
    seed: int
    steps: int
    low_format: str | None
    loss: np.ndarray  # training loss of each step's batch (unscaled, FP32)
    scale: np.ndarray  # loss scale used in each step
    skipped: np.ndarray  # whether the step was skipped (Inf/NaN gradients)
    underflow: np.ndarray  # fraction of non-zero gradient values rounded to zero
    overflow: np.ndarray  # fraction of non-zero gradient values that became Inf / saturated
    grad_exponent_hist: np.ndarray  # counts of floor(log2|g|) of the gradients as cast
    final_loss: float = float("nan")  # training loss at the end (4096 training examples)
    final_accuracy: float = float("nan")
    time_s: float = 0.0
    underflow_count: int = 0
    overflow_count: int = 0
    nonzero_count: int = 0
    test_curve: list = field(default_factory=list)  # (step, test loss, accuracy)

    @property
    def label(self) -> str:
        if self.precision == "fp32":
            return "fp32"
        return f"{self.precision}+{self.loss_scale}" + (f"+{self.accumulator}" if self.accumulator else "")

    @property
    def grad_exponents(self) -> np.ndarray:
        """The exponent of each bin of :attr:`grad_exponent_hist` (the lowest/highest are clipped)."""
        return np.arange(_HIST_LO, _HIST_HI + 1)

    def summary(self) -> dict:
        """The per-run numbers of the comparison table."""
        n = self.nonzero_count
        return {
            "run": self.label,
            "precision": self.precision,
            "loss_scale": self.loss_scale,
            "accumulator": self.accumulator,
            "final_loss": self.final_loss,
            "final_accuracy": self.final_accuracy,
            "skipped_steps": int(self.skipped.sum()),
            "underflow_fraction": self.underflow_count / n if n else 0.0,
            "overflow_fraction": self.overflow_count / n if n else 0.0,
            "final_scale": float(self.scale[-1]) if len(self.scale) else 1.0,
            "time_s": self.time_s,
        }

    def to_dict(self) -> dict:
        """JSON-ready summary plus the per-step history."""
        return {
            "summary": self.summary(),
            "seed": self.seed,
            "steps": self.steps,
            "low_format": self.low_format,
            "history": {
                "loss": [float(v) for v in self.loss],
                "scale": [float(v) for v in self.scale],
                "skipped": [bool(v) for v in self.skipped],
                "underflow": [float(v) for v in self.underflow],
                "overflow": [float(v) for v in self.overflow],
            },
            "test_curve": [list(t) for t in self.test_curve],
            "grad_exponent_hist": {
                "exponents": self.grad_exponents.tolist(),
                "counts": self.grad_exponent_hist.tolist(),
            },
        }


def _optimizer(task: Task, params: list[np.ndarray]) -> Callable[[list[np.ndarray]], None]:
    """An FP32 update ``apply(grads)`` replacing ``params[i]`` by new arrays (torch semantics)."""
    lr = np.float32(task.lr)
    m = [np.zeros_like(p) for p in params]
    if task.optimizer == "sgd":
        mom = np.float32(task.momentum)

        def sgd(grads: list[np.ndarray]) -> None:
            # torch.optim.SGD with momentum: v = m v + g; p -= lr v.
            for i, g in enumerate(grads):
                m[i] = mom * m[i] + g
                params[i] = params[i] - lr * m[i]

        return sgd
    if task.optimizer != "adam":
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {task.optimizer!r}")
    v = [np.zeros_like(p) for p in params]
    b1, b2, eps = np.float32(0.9), np.float32(0.999), np.float32(1e-8)
    t = [0]

    def adam(grads: list[np.ndarray]) -> None:
        # torch.optim.Adam: bias-corrected moments; a skipped step does not advance t.
        t[0] += 1
        c1 = np.float32(1.0 - 0.9 ** t[0])
        c2 = np.float32(np.sqrt(1.0 - 0.999 ** t[0]))
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (np.float32(1.0) - b1) * g
            v[i] = b2 * v[i] + (np.float32(1.0) - b2) * (g * g)
            params[i] = params[i] - (lr / c1) * m[i] / (np.sqrt(v[i]) / c2 + eps)

    return adam


DEFAULT_STEPS = 600
_HIST_EVERY = 10  # steps between samples of the gradient exponent histogram


MAX_STEPS = 10**6  # a run records 5 numbers per step; a million steps is hours of training


def _make_scaler(loss_scale: str, init_scale: float | None, **kw) -> GradScaler:
    """The scaler of a loss-scaling name. Every scaler argument is checked, used or not: a
    nonsense value is an error even where it would be ignored."""
    if init_scale is not None:
        _check_scale("init_scale", init_scale)
    GradScaler(**kw)  # checks growth_factor, backoff_factor and growth_interval
    if loss_scale == "none":
        return GradScaler(enabled=False)
    if loss_scale == "static":
        return StaticLossScaler(1024.0 if init_scale is None else init_scale)
    if loss_scale == "dynamic":
        return GradScaler(init_scale=2.0**16 if init_scale is None else init_scale, **kw)
    raise ValueError(f"unknown loss scaling {loss_scale!r}; choose from {', '.join(LOSS_SCALES)}")


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


def _setup(
    precision, loss_scale, steps, seed, accumulator, *, init_scale=None, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, fp8_recipe="delayed", task=None, eval_every=0,
    progress=None,
) -> _RunSetup:
    """Check every argument of :func:`run` and build the run's objects (no training yet)."""
    steps = _check_int("steps", steps, 1, MAX_STEPS)
    seed = _check_int("seed", seed, 0)
    eval_every = _check_int("eval_every", eval_every, 0)
    _check_callable("progress", progress, optional=True)
    if task is not None and not isinstance(task, Task):
        raise TypeError(f"task must be a Task (see make_task) or None, got {task!r}")
    if not isinstance(loss_scale, str):
        raise TypeError(f"loss_scale must be one of {', '.join(LOSS_SCALES)}, got {loss_scale!r}")
    policy = make_policy(precision, accumulator, fp8_recipe, seed)
    if policy.name == "fp32":
        loss_scale = "none"  # FP32 needs no loss scaling; the baseline never scales
    scaler = _make_scaler(
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
    setup = _setup(**locals())
    with single_threaded_blas():
        return _train(setup)


def _train(setup: _RunSetup) -> History:
    # Overflow to Inf (and Inf - Inf = NaN after it) is what the scaler detects, and a run that
    # diverges records Inf/NaN losses: IEEE results, not errors, so no warnings.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _train_loop(setup)


def _train_loop(setup: _RunSetup) -> History:
    policy, scaler, task, steps, seed = setup.policy, setup.scaler, setup.task, setup.steps, setup.seed
    eval_every, progress = setup.eval_every, setup.progress
    params = init_params(task.widths, seed)
    rng = np.random.default_rng([seed, 0xBA7C])
    sgd = _optimizer(task, params)

    n_train, bs = len(task.x_train), task.batch_size
    losses = np.zeros(steps)
    scales = np.zeros(steps)
    skipped = np.zeros(steps, dtype=bool)
    under = np.zeros(steps)
    over = np.zeros(steps)
    hist = np.zeros(_HIST_HI - _HIST_LO + 1, dtype=np.int64)
    totals = [0, 0, 0]
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

        stats = _CastStats(hist=np.zeros_like(hist) if step % _HIST_EVERY == 0 else None)
        logits, cache = _forward(params, x, policy)
        loss, sig = _bce_loss(logits, y)
        scales[step] = scaler.get_scale()
        grads = _backward(params, cache, sig, y, scaler.get_scale(), policy, stats)
        # Weight gradients arrive in the low format; unscaling and the update are FP32.
        skipped[step] = not scaler.step(sgd, grads)
        scaler.update()
        policy.end_step()

        losses[step] = loss
        under[step] = stats.underflow / stats.nonzero if stats.nonzero else 0.0
        over[step] = stats.overflow / stats.nonzero if stats.nonzero else 0.0
        totals[0] += stats.nonzero
        totals[1] += stats.underflow
        totals[2] += stats.overflow
        if stats.hist is not None:
            hist += stats.hist
        if eval_every and (step + 1) % eval_every == 0:
            test_curve.append((step + 1, *_evaluate(params, task.x_test, task.y_test, policy)))
        if progress is not None:
            progress(step + 1, steps)
    elapsed = time.perf_counter() - t0
    # The loss being minimised, on a fixed part of the training set; accuracy on held-out data.
    n_eval = min(len(task.x_train), _EVAL_ROWS)
    final_loss, _ = _evaluate(params, task.x_train[:n_eval], task.y_train[:n_eval], policy)
    test_loss, final_acc = _evaluate(params, task.x_test, task.y_test, policy)
    return History(
        precision=policy.name,
        loss_scale=setup.loss_scale,
        accumulator=setup.accumulator,
        seed=seed,
        steps=steps,
        low_format=policy.low.name if policy.low is not None else None,
        loss=losses,
        scale=scales,
        skipped=skipped,
        underflow=under,
        overflow=over,
        grad_exponent_hist=hist,
        final_loss=final_loss,
        final_accuracy=final_acc,
        time_s=elapsed,
        underflow_count=totals[1],
        overflow_count=totals[2],
        nonzero_count=totals[0],
        test_curve=test_curve,
    )


@contextlib.contextmanager
def single_threaded_blas():
    """Run every OpenBLAS loaded in this process on one thread inside the block (a no-op where
    none can be found).

    The network's matrices are small (1024 x 64): splitting them over threads gains nothing and,
    on a busy machine, OpenBLAS's spinning threads made a step up to 100x slower. The thread
    count also decides which kernel OpenBLAS picks (on AVX-512 machines its "direct" sgemm,
    which sums in another order, is skipped for mid-sized products when more than one thread
    may run), and so the last bit of the sums: code that must match a
    run bit for bit computes under this same context. Every OpenBLAS is pinned, not just the
    first found, in case another library (torch on some platforms) brings its own.
    """
    controls = _openblas_thread_controls()
    before = [int(get()) for get, _ in controls]
    for _, put in controls:
        put(1)
    try:
        yield
    finally:
        for (_, put), n in zip(controls, before):
            put(n)


def _openblas_thread_controls() -> list[tuple[Callable[[], int], Callable[[int], None]]]:
    """(get_num_threads, set_num_threads) of every OpenBLAS mapped into this process."""
    try:
        import ctypes

        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
        controls = []
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            names = [(f"{prefix}get_num_threads{suffix}", f"{prefix}set_num_threads{suffix}")
                     for prefix in ("scipy_openblas_", "openblas_") for suffix in ("64_", "")]
            for get_name, put_name in names:
                get, put = getattr(lib, get_name, None), getattr(lib, put_name, None)
                if get is not None and put is not None:
                    controls.append((get, put))
                    break
        return controls
    except (OSError, AttributeError):  # no /proc (not Linux), or a library that will not load
        return []


# =============================================================================================
# The comparison, its table and plots
# =============================================================================================
COMPARE_RUNS: tuple[tuple[str, str], ...] = (
    ("fp32", "none"),
    ("fp16", "none"),
    ("fp16", "dynamic"),
    ("bf16", "none"),
    ("fp8", "none"),
)


def compare(
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    accumulator: str | None = None,
    runs: Sequence[tuple[str, str]] = COMPARE_RUNS,
    progress: Callable[[str, int, int], None] | None = None,
    **kw,
) -> list[History]:
    """Run several (precision, loss scaling) pairs on the same task, same seed.

    ``kw`` goes to :func:`run` (``task=`` replaces the default task). Every run is checked
    before the first one trains, so a bad pair fails at once, not after the others' training.
    """
    setups = _compare_setups(steps, seed, accumulator, runs, progress, **kw)
    with single_threaded_blas():
        return [_train(setup) for setup in setups]


def _compare_setups(steps, seed, accumulator, runs, progress, **kw) -> list[_RunSetup]:
    """The checked setups of :func:`compare`'s runs (the fp32 baseline takes no accumulator)."""
    _check_callable("progress", progress, optional=True)
    runs = _check_runs(runs)
    task = kw.pop("task", None)
    if task is None:
        task = make_task(seed)
    setups = []
    for precision, ls in runs:
        cb = None if progress is None else (lambda i, n, _l=f"{precision}+{ls}": progress(_l, i, n))
        acc = accumulator if precision.strip().lower() != "fp32" else None
        setups.append(_setup(precision, ls, steps, seed, acc, task=task, progress=cb, **kw))
    return setups


def _check_runs(runs: object) -> list[tuple[str, str]]:
    """A non-empty list of (precision, loss scaling) pairs of names."""
    pairs = list(runs) if isinstance(runs, (list, tuple)) else None
    if not pairs or not all(
        isinstance(r, (list, tuple)) and len(r) == 2 and all(isinstance(v, str) for v in r) for r in pairs
    ):
        raise TypeError(f"runs must be a non-empty list of (precision, loss scaling) pairs, got {runs!r}")
    return [tuple(r) for r in pairs]


def summary_table(histories: Sequence[History]) -> str:
    """The comparison as a fixed-width text table.

    >>> print(summary_table([run("fp32", steps=1)]).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
    run  final loss  accuracy  skipped  underflow  overflow  final scale  time (s)
    """
    histories = _check_histories(histories)
    head = ("run", "final loss", "accuracy", "skipped", "underflow", "overflow", "final scale", "time (s)")
    rows = []
    for h in histories:
        s = h.summary()
        rows.append(
            (
                s["run"],
                f"{s['final_loss']:.3e}",
                f"{100 * s['final_accuracy']:.1f}%",
                str(s["skipped_steps"]),
                f"{100 * s['underflow_fraction']:.2f}%" if h.low_format else "-",
                f"{100 * s['overflow_fraction']:.3f}%" if h.low_format else "-",
                f"{s['final_scale']:g}",
                f"{s['time_s']:.1f}",
            )
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [head, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def _pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or a clear error when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError(
            "--plot needs matplotlib: pip install 'fpemu[plot]' (or pip install matplotlib)"
        ) from None
    return plt


def _check_histories(histories: object, allow_empty: bool = True) -> list[History]:
    if not isinstance(histories, (list, tuple)) or not all(isinstance(h, History) for h in histories):
        raise TypeError(f"histories must be a list of History objects (from run or compare), got {histories!r}")
    if not histories and not allow_empty:
        raise ValueError("no histories to plot")
    return list(histories)


PLOT_FILES = ("loss.png", "loss_scale.png", "grad_hist.png")


def _plot_directory(directory: str | Path) -> Path:
    """Create ``directory`` (and its parents) and make sure the PNGs of :func:`plot` can be
    written there, without writing them: an OSError naming the path otherwise. The ``train``
    command calls it before training, so a bad path fails in a second, not after the runs."""
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(out))
    out.mkdir(parents=True, exist_ok=True)
    for name in PLOT_FILES:
        if (out / name).is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(out / name))
    with tempfile.TemporaryFile(dir=out):  # PermissionError (naming out) if it is not writable
        pass
    return out


def plot(histories: Sequence[History], directory: str | Path) -> list[Path]:
    """Write ``loss.png``, ``loss_scale.png`` and ``grad_hist.png`` into ``directory``."""
    histories = _check_histories(histories, allow_empty=False)
    plt = _pyplot()
    out = _plot_directory(directory)
    # A diverged run's Inf/NaN losses are drawn as gaps, without floating-point warnings.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _draw(plt, histories, out)


def _draw(plt, histories: list[History], out: Path) -> list[Path]:
    """The three figures of :func:`plot`, written into ``out``."""
    written = []

    fig, ax = plt.subplots(figsize=(7, 4))
    for h in histories:
        ax.plot(np.arange(1, h.steps + 1), _smooth(h.loss), label=h.label, lw=1.3)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (moving average of 20 steps)")
    ax.set_yscale("log")
    ax.set_title("Training loss by precision policy")
    ax.legend()
    ax.grid(alpha=0.3)
    written.append(_save(fig, out / "loss.png"))

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for h in histories:
        if h.loss_scale != "none":
            ax.step(np.arange(1, h.steps + 1), h.scale, where="post", label=h.label)
            sk = np.flatnonzero(h.skipped)
            if sk.size:
                ax.plot(sk + 1, h.scale[sk], "rx", ms=5, label=f"{h.label}: skipped step")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    ax.set_title("Dynamic loss scale (GradScaler)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.grid(alpha=0.3)
    written.append(_save(fig, out / "loss_scale.png"))

    written.append(_plot_histogram(plt, histories, out / "grad_hist.png"))
    plt.close("all")
    return written


def _smooth(v: np.ndarray, k: int = 20) -> np.ndarray:
    c = np.cumsum(np.insert(np.asarray(v, dtype=np.float64), 0, 0.0))
    n = np.arange(1, len(v) + 1)
    lo = np.maximum(n - k, 0)
    return (c[n] - c[lo]) / (n - lo)


def _plot_histogram(plt, histories: Sequence[History], path: Path) -> Path:
    """Gradient exponents against the low format's range (Micikevicius et al. 2018, fig. 3)."""
    base = next((h for h in histories if h.precision == "fp16" and h.loss_scale == "none"), None)
    base = base or next((h for h in histories if h.low_format), histories[0])
    fmt = get_format(base.low_format or "fp16")
    exps = base.grad_exponents
    frac = base.grad_exponent_hist / max(base.grad_exponent_hist.sum(), 1)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(exps, frac, width=1.0, color="tab:blue", alpha=0.8, label=f"gradients of the {base.label} run")
    scaled = next((h for h in histories if h.precision == base.precision and h.loss_scale == "dynamic"), None)
    if scaled is not None and scaled.grad_exponent_hist.sum():
        sfrac = scaled.grad_exponent_hist / scaled.grad_exponent_hist.sum()
        ax.step(exps, sfrac, where="mid", color="black", lw=1.2,
                label=f"{scaled.label} run: the same values times its loss scale")
    lo_sub, lo_norm, hi = np.log2(fmt.min_subnormal), np.log2(fmt.min_normal), np.log2(fmt.max)
    ax.axvspan(lo_sub - 0.5, lo_norm, color="tab:orange", alpha=0.15, label=f"{fmt.name} subnormal")
    ax.axvspan(lo_norm, hi, color="tab:green", alpha=0.12, label=f"{fmt.name} normal range")
    ax.axvline(lo_sub - 1, color="red", ls="--", lw=1, label=f"below 2^{int(lo_sub) - 1}: flushed to 0")
    used = np.flatnonzero(base.grad_exponent_hist)
    if used.size:
        ax.set_xlim(exps[used[0]] - 2, max(exps[used[-1]], int(hi)) + 2)
    ax.set_xlabel("log2 |gradient value|")
    ax.set_ylabel("fraction of non-zero values")
    ax.set_title(f"Gradient values cast to {fmt.name} vs its representable range")
    ax.legend(fontsize=8, loc="upper right")
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


# =============================================================================================
# Command line
# =============================================================================================
def _progress_bar(stream) -> Callable[[str, int, int], None]:
    def show(label: str, i: int, n: int) -> None:
        if i % 10 and i != n:
            return
        width = 30
        filled = int(width * i / n)
        stream.write(f"\r{label:<14} [{'#' * filled}{'.' * (width - filled)}] {i}/{n}")
        if i == n:
            stream.write("\r" + " " * (width + 30) + "\r")
        stream.flush()

    return show


def cmd_train(args: argparse.Namespace) -> int:
    """``fpemu train``: one run, or the comparison (the default with no arguments).

    Everything that can fail is checked before training (it takes ~30 s): the arguments, and
    that the ``--json`` file and the ``--plot`` directory can be written.
    """
    setups = _cli_setups(args)
    _check_outputs(args)
    with single_threaded_blas():
        histories = [_train(setup) for setup in setups]
    print(summary_table(histories))
    if args.json:
        payload = {"steps": args.steps, "seed": args.seed, "runs": [h.to_dict() for h in histories]}
        # Strict JSON has no NaN or Infinity: a diverged run's values are written as null.
        Path(args.json).write_text(json.dumps(_finite_or_null(payload), indent=1, allow_nan=False))
    if args.plot:
        for path in plot(histories, args.plot):
            print(f"wrote {path}")
    return 0


def _cli_setups(args: argparse.Namespace) -> list[_RunSetup]:
    """The checked runs the command line asks for (ValueError/TypeError: a usage error)."""
    if args.precision is None and args.loss_scale is not None:
        raise ValueError("--loss-scale sets the loss scaling of a single run: give --precision too")
    if args.compare and args.precision is not None:
        raise ValueError("--compare runs the default comparison: leave out --precision")
    progress = _progress_bar(sys.stdout) if sys.stdout.isatty() else None
    kw = dict(init_scale=args.init_scale, growth_interval=args.growth_interval, fp8_recipe=args.fp8_recipe)
    if args.precision is None:
        return _compare_setups(args.steps, args.seed, args.accumulator, COMPARE_RUNS, progress, **kw)
    ls = args.loss_scale or ("dynamic" if args.precision == "fp16" else "none")
    cb = None if progress is None else (lambda i, n: progress(args.precision, i, n))
    return [_setup(args.precision, ls, args.steps, args.seed, args.accumulator, progress=cb, **kw)]


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail now, naming the path, if --json or --plot could not be written after training."""
    from .cli import RunError

    if args.plot:
        try:
            _pyplot()
        except ValueError as exc:  # matplotlib missing: the user can install it
            raise RunError(str(exc)) from None
    for option, path, check in (("--json", args.json, _check_json_file), ("--plot", args.plot, _plot_directory)):
        if not path:
            continue
        try:
            check(path)
        except OSError as exc:
            where = exc.filename if exc.filename is not None else path
            raise RunError(f"cannot write {option} {where}: {exc.strerror or exc}") from None


def _check_json_file(path: str) -> None:
    """Open ``path`` for appending (creating nothing that was not there): an OSError naming
    it if it is a directory, its directory is missing, or it is not writable."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(p))
    existed = p.exists()
    with open(p, "a"):
        pass
    if not existed:
        p.unlink()


def _finite_or_null(value: object) -> object:
    """``value`` with every non-finite float replaced by None (JSON null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(v) for v in value]
    return value


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` subcommand."""
    p = subparsers.add_parser(
        "train",
        help="train a small network in emulated mixed precision (default: compare policies)",
        description="Train a deep narrow MLP on a generated task with emulated precision. "
        "Without --precision it compares fp32, fp16 without and with dynamic loss scaling, "
        "bf16 and fp8.",
    )
    p.add_argument("--precision", "-p", choices=PRECISIONS, default=None, help="one run in this precision")
    p.add_argument("--loss-scale", choices=LOSS_SCALES, default=None,
                   help="loss scaling of a single run (default: dynamic for fp16, else none)")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"training steps (default {DEFAULT_STEPS})")
    p.add_argument("--seed", type=int, default=0, help="seed of the data, initialisation and batches")
    p.add_argument("--accumulator", default=None, help="GEMM accumulator model of fpemu.accumulator")
    p.add_argument("--init-scale", type=float, default=None,
                   help="static loss scale (default 1024) or initial dynamic scale (default 65536)")
    p.add_argument("--growth-interval", type=int, default=2000, help="GradScaler growth interval")
    p.add_argument("--fp8-recipe", choices=("delayed", "current"), default="delayed",
                   help="fp8 per-tensor scaling recipe (default delayed)")
    p.add_argument("--compare", action="store_true", help="compare the policies (the default)")
    p.add_argument("--json", metavar="FILE", help="write the summaries and per-step histories")
    p.add_argument("--plot", metavar="DIR", help="write loss, loss-scale and gradient-histogram PNGs")
    p.set_defaults(func=cmd_train)
