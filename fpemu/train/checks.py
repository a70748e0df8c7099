"""Argument checks: every public entry point refuses nonsense with a ValueError or TypeError
that names the parameter, before any work starts (no traceback from deep inside training)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..arguments import is_whole


def check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``lo .. hi``; a bool or a float is refused, not truncated."""
    if not is_whole(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise ValueError(f"{name} must be an integer {bound}, got {value}")
    return int(value)


def as_float32(name: str, value: object) -> np.float32:
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


def check_float32(name: str, value: object, ok: Callable[[np.float32], bool], what: str) -> np.float32:
    """``value`` as FP32 if ``ok`` of it holds (``what`` says what that means), else ValueError."""
    v = as_float32(name, value)
    if not ok(v):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return v


def check_scale(name: str, value: object) -> np.float32:
    """A loss scale: FP32, finite and positive, with a finite FP32 reciprocal (unscaling
    multiplies by it), that is between about 2.9e-39 and 3.4e38."""
    return check_float32(
        name, value, lambda v: bool(np.isfinite(v) and v > 0 and np.isfinite(reciprocal(v))),
        "a positive number whose float32 value and reciprocal are finite (about 2.9e-39 to 3.4e38)",
    )


def reciprocal(scale: float) -> np.float32:
    """``fp32(1/scale)``, the reciprocal computed in double and rounded once, as torch does."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.float32(np.float64(1.0) / np.float64(scale))


def float_array(name: str, value: object, integers: bool = False) -> np.ndarray:
    """``value`` as an ndarray of floating-point numbers (float16/32/64, ml_dtypes' floats;
    integers too if ``integers``), not copied. Complex, boolean, object and string arrays are
    refused, not cast: a cast would drop an imaginary part or turn text into numbers.

    >>> float_array("grad", [1.0, 2.0]).dtype.name
    'float64'
    >>> float_array("grad", np.array([1j], np.complex64))
    Traceback (most recent call last):
    ...
    TypeError: grad must be an array of floating-point numbers, got dtype complex64
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ValueError(f"{name} is not a rectangular array of numbers ({exc})") from None
    dtype = arr.dtype
    narrow = dtype.kind == "V" and dtype.type.__module__.split(".")[0] == "ml_dtypes" and "float" in dtype.name
    if dtype.kind == "f" or narrow or (integers and dtype.kind in "iu"):
        return arr
    what = "real numbers (floating-point or integer)" if integers else "floating-point numbers"
    raise TypeError(f"{name} must be an array of {what}, got dtype {dtype}")


def check_callable(name: str, value: object, optional: bool = False) -> None:
    if not (callable(value) or (optional and value is None)):
        raise TypeError(f"{name} must be {'None or ' if optional else ''}a function, got {value!r}")


def check_bool(name: str, value: object) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
