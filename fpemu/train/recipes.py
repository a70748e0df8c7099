"""FP8 per-tensor scaling (TransformerEngine recipes): the delayed and current scaling rules,
their recipe objects, :class:`TensorScale`, the scaling state of one tensor slot, and
:func:`fp8_cast`, a tensor cast with its slot's scale.

The scale rule itself is :func:`fpemu.scaling.scale_from_amax` and the cast
:func:`fpemu.scaled_cast`: training uses the public per-tensor scaling, not a copy of it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codec import decode, quantize
from ..formats import Format, get_format
from ..scaling import scale_from_amax, scaled_cast
from .checks import as_float32, check_bool, check_float32, check_int

def _check_fp8_max(fp8_max: object) -> np.float32:
    return check_float32("fp8_max", fp8_max, lambda v: bool(np.isfinite(v) and v > 0), "a finite float32 number > 0")


def _check_margin(margin: object) -> int:
    # 2**margin must be a finite FP32 number, or every scale would be 0.
    return check_int("margin", margin, 0, 127)


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
    amax32 = as_float32("amax", amax)
    # >= 0: with a large margin the rule itself can underflow to 0 (as TE's would).
    old = check_float32("old_scale", old_scale, lambda v: bool(np.isfinite(v) and v >= 0), "a finite float32 number >= 0")
    fp8_max32 = _check_fp8_max(fp8_max)
    margin = _check_margin(margin)
    if not (np.isfinite(amax32) and amax32 > 0):
        return old
    return np.float32(scale_from_amax(amax32, fp8_max32, margin)[()])


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
    amax32 = as_float32("amax", amax)
    fp8_max32 = _check_fp8_max(fp8_max)
    check_bool("power_2_scale", power_2_scale)
    if amax32 < 0:
        raise ValueError(f"amax is an absolute maximum and cannot be negative, got {amax!r}")
    sf = np.float32(scale_from_amax(amax32, fp8_max32)[()])  # 1 for an amax of 0, Inf or NaN
    if power_2_scale:
        bits = np.array(sf, dtype=np.float32).view(np.uint32) & np.uint32(0xFF800000)
        sf = bits.view(np.float32)[()]
    return np.float32(sf)


def fp8_cast(x: np.ndarray, fmt: Format, scale: np.float32) -> tuple[np.ndarray, np.float32]:
    """``x`` times ``scale``, cast to ``fmt`` with saturation by :func:`fpemu.scaled_cast`: the
    float32 values of the codes (in the scaled domain, as the FP8 GEMM reads them) and the
    inverse scale that multiplies the GEMM's result back.

    A scale of 0 (the delayed rule underflowing with a huge margin, in a run that diverges) is
    outside ``scaled_cast``'s domain; the product ``x * 0`` is then rounded as it stands.

    >>> q, inv = fp8_cast(np.float32([1.0, -3.0, 100.0]), get_format("e4m3"), np.float32(4.48))
    >>> q.tolist(), float(inv)
    ([4.5, -13.0, 448.0], 0.2232142835855484)
    """
    if scale > 0:
        t = scaled_cast(x, fmt, scale=scale)
        return decode(t.codes, fmt, dtype=np.float32), np.float32(t.scale_inv[()])
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.float32(1.0) / scale
        q = quantize(np.asarray(x, dtype=np.float32) * scale, fmt, overflow="saturate")
    return np.asarray(q, dtype=np.float32), inv


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
        check_int("amax_history_len", self.amax_history_len, 1)
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
        check_bool("power_2_scale", self.power_2_scale)
        _check_fp8_formats(self)


@dataclass(frozen=True)
class NoScaling:
    """FP8 casts without per-tensor scaling: every scale is 1 (what FP8 does without a recipe).

    Not a TransformerEngine recipe: the control that shows what the recipes are for. Values
    below the format's smallest subnormal flush to zero, values beyond its largest saturate.

    >>> float(TensorScale(57344.0, NoScaling()).scale_for(np.float32([1e-9])))
    1.0
    """

    fwd_format: str = "e4m3"
    bwd_format: str = "e5m2"

    def __post_init__(self) -> None:
        _check_fp8_formats(self)


FP8Recipe = DelayedScaling | CurrentScaling | NoScaling
_RECIPE_NAMES = {"delayed": DelayedScaling, "current": CurrentScaling, "unscaled": NoScaling}


def as_fp8_recipe(recipe: object) -> FP8Recipe:
    """A recipe object from ``"delayed"``, ``"current"``, ``"unscaled"``, None (delayed) or a
    recipe object."""
    if isinstance(recipe, (DelayedScaling, CurrentScaling, NoScaling)):
        return recipe
    if recipe is None:
        return DelayedScaling()
    if isinstance(recipe, str):
        if recipe not in _RECIPE_NAMES:
            raise ValueError(f"fp8_recipe must be 'delayed', 'current' or 'unscaled', got {recipe!r}")
        return _RECIPE_NAMES[recipe]()
    raise TypeError(
        f"fp8_recipe must be 'delayed', 'current', 'unscaled', a DelayedScaling, a CurrentScaling or a "
        f"NoScaling, got {recipe!r}"
    )


def recipe_name(recipe: FP8Recipe) -> str:
    """The short name of a recipe object (``"delayed"``, ``"current"`` or ``"unscaled"``).

    >>> recipe_name(NoScaling()), recipe_name(DelayedScaling(margin=1))
    ('unscaled', 'delayed')
    """
    return next(name for name, cls in _RECIPE_NAMES.items() if isinstance(recipe, cls))


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
        if not isinstance(recipe, (DelayedScaling, CurrentScaling, NoScaling)):
            raise TypeError(f"recipe must be a DelayedScaling, a CurrentScaling or a NoScaling, got {recipe!r}")
        self.fp8_max = float(_check_fp8_max(fp8_max))
        self.recipe = recipe
        self.scale = np.float32(1.0)
        self._length = recipe.amax_history_len if isinstance(recipe, DelayedScaling) else 1
        self.history = np.zeros(min(self._length, self._FIRST_HISTORY), dtype=np.float32)
        self._pos = 0  # where the next amax is written (a ring buffer)
        self._pending = False

    def scale_for(self, x: np.ndarray, record: bool = True) -> np.float32:
        """The scale to cast ``x`` with now; with ``record`` its amax enters the history."""
        if isinstance(self.recipe, NoScaling):
            return self.scale
        x = np.asarray(x)
        amax = as_float32("amax", np.max(np.abs(x))) if x.size else np.float32(0.0)
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
        if isinstance(self.recipe, (CurrentScaling, NoScaling)) or not self._pending:
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
