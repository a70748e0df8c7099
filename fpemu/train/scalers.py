"""Loss scaling: :class:`GradScaler` (the semantics of ``torch.amp.GradScaler``), the fixed
:class:`StaticLossScaler`, and the scaler a loss-scaling name stands for."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .checks import check_callable, check_float32, check_int, check_scale, float_array, reciprocal

LOSS_SCALES = ("none", "static", "dynamic")


def unscale_grads(
    grads: Sequence[np.ndarray], scale: float
) -> tuple[list[np.ndarray], bool]:
    """Multiply gradients by ``fp32(1/scale)`` and report whether any of them is non-finite.

    This is ``torch._amp_foreach_non_finite_check_and_unscale_``: the reciprocal is computed in
    double and rounded once to FP32, then every gradient is multiplied by it in FP32. Gradients
    are taken in FP32 (a float64 value beyond FP32's range is Inf there, and counts as one);
    they must be floating-point arrays: complex, integer, boolean and object ones are a
    TypeError naming the dtype, not cast. The inputs are not modified.

    >>> g, bad = unscale_grads([np.array([3.0, 6.0], dtype=np.float32)], 3.0)
    >>> g[0].tolist(), bad
    ([1.0, 2.0], False)
    >>> unscale_grads([np.array([np.nan], dtype=np.float32)], 2.0)[1]
    True
    """
    # torch: scale.double().reciprocal().float(); a scale backed off to 0 gives Inf.
    check_float32("scale", scale, lambda v: bool(np.isfinite(v) and v >= 0), "a finite float32 number >= 0")
    inv = reciprocal(scale)
    grads32 = _fp32_grads(grads)
    found_inf = any(not bool(np.isfinite(g).all()) for g in grads32)
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN results are torch's too
        out = [g * inv for g in grads32]
    return out, found_inf


def _fp32_grads(grads: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Gradients as FP32 arrays (no copy of FP32 ones); a value beyond FP32's range is Inf
    there, without a warning: the scaler's check is what finds it. Non-float gradients are
    refused (:func:`float_array`)."""
    if not isinstance(grads, (list, tuple)):
        raise TypeError(f"grads must be a list or tuple of arrays, got {type(grads).__name__}")
    arrays = [float_array(f"grads[{i}]", g) for i, g in enumerate(grads)]  # all checked first
    with np.errstate(over="ignore"):
        return [np.asarray(g, dtype=np.float32) for g in arrays]


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
    FP32 reciprocal is finite (:func:`check_scale`): anything else is a ValueError.

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
        self._scale = check_scale("init_scale", init_scale)
        self._growth_factor = check_float32(
            "growth_factor", growth_factor, lambda v: bool(np.isfinite(v) and v > 1), "a finite float32 number > 1.0"
        )
        self._backoff_factor = check_float32(
            "backoff_factor", backoff_factor, lambda v: bool(0 < v < 1), "a float32 number in (0, 1)"
        )
        self._growth_interval = check_int("growth_interval", growth_interval, 1)
        self._growth_tracker = 0
        self._found_inf: bool | None = None  # None: not unscaled yet in this iteration
        self._unscaled: list[np.ndarray] | None = None

    # ---- the per-iteration protocol ------------------------------------------------------
    def scale(self, x: np.ndarray | float) -> np.ndarray:
        """Return ``x * scale`` in FP32 (``x`` itself when disabled); an overflow is Inf. The
        loss is a real number or array (float or integer; complex, boolean or text refused)."""
        x = float_array("the loss to scale", x, integers=True)
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
        check_callable("apply", apply)
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
            self._scale = check_scale("new_scale", new_scale)
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
        tracker = check_int("_growth_tracker", state["_growth_tracker"], 0, checked._growth_interval - 1)
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
        super().__init__(init_scale=check_scale("scale", scale))

    def update(self, new_scale: float | None = None) -> None:
        if new_scale is not None:
            self._scale = check_scale("new_scale", new_scale)
        self._found_inf = None
        self._unscaled = None


def make_scaler(loss_scale: str, init_scale: float | None, **kw) -> GradScaler:
    """The scaler of a loss-scaling name. Every scaler argument is checked, used or not: a
    nonsense value is an error even where it would be ignored."""
    if init_scale is not None:
        check_scale("init_scale", init_scale)
    GradScaler(**kw)  # checks growth_factor, backoff_factor and growth_interval
    if loss_scale == "none":
        return GradScaler(enabled=False)
    if loss_scale == "static":
        return StaticLossScaler(1024.0 if init_scale is None else init_scale)
    if loss_scale == "dynamic":
        return GradScaler(init_scale=2.0**16 if init_scale is None else init_scale, **kw)
    raise ValueError(f"unknown loss scaling {loss_scale!r}; choose from {', '.join(LOSS_SCALES)}")
