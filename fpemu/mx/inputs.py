"""What quantize accepts: input arrays as float32 or float64, element rounding names, the RNG."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import as_array, option_name
from ..codec import ROUNDING_MODES, STOCHASTIC_WITH_BITS, integers_to_float64, is_stochastic, sr_key

#: The element roundings block quantization offers: the codec's, but those that take given
#: random bits (P3109 stochastic A/B/C, gfloat's odd one) and the E8M0-only one.
ELEMENT_ROUNDINGS = tuple(sorted(set(ROUNDING_MODES.values()) - set(STOCHASTIC_WITH_BITS) - {"ml_dtypes_e8m0"}))


def canonical_rounding(rounding: Any) -> str:
    """The codec's canonical name of an element rounding mode (checked even for empty input)."""
    canonical = ROUNDING_MODES.get(option_name(rounding)) if isinstance(rounding, str) else None
    if canonical not in ELEMENT_ROUNDINGS:
        raise ValueError(f"unknown element rounding {rounding!r}; choose one of {', '.join(ELEMENT_ROUNDINGS)}")
    return canonical


def stochastic_positions(rounding: str, rng: Any, arr: np.ndarray) -> tuple[Any, np.ndarray | None]:
    """(key, positions) of stochastic rounding: one key for the whole call, and each element's
    position in the input (moved and cut into rows like the data), which with the key fixes its
    random bits, as ``fpemu.encode`` of the same values in input order would draw them. For
    other roundings: (None, None)."""
    if not is_stochastic(rounding):
        return None, None
    given = getattr(rng, "positions", None)  # a Dask chunk's (dask_blocks.ChunkRandomness)
    if given is not None:
        return rng.key, given
    return sr_key(rng), np.arange(arr.size, dtype=np.uint64).reshape(arr.shape)


# ---- input --------------------------------------------------------------------------------
def as_float_array(x: Any) -> np.ndarray:
    """x as float32 (float16/float32 and ml_dtypes' narrow floats, all widened exactly) or
    float64 (float64, integers, Python numbers), in native byte order.

    Integers beyond 2**53 become float64 rounded *to odd*, so the single later rounding into
    an element format (at most 24 bits) equals the rounding of the integer itself.
    """
    arr = as_array(x, "x")
    if not arr.dtype.isnative:  # the scale arithmetic reads the bit patterns in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    kind = arr.dtype.kind
    if kind == "f":
        if arr.dtype.itemsize > 8:
            raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
        return arr if arr.dtype.itemsize >= 4 else arr.astype(np.float32)
    if kind in "iu":
        return integers_to_float64(arr)
    if kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None:
        try:  # ml_dtypes' bfloat16, float8_*, ... widen to float32 exactly
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"cannot quantize {arr.dtype} input: pass real numbers (a float or integer array)")


def float32_input(arr: np.ndarray, who: str = "nvfp4") -> np.ndarray:
    """For NVFP4's recipes and the libraries' MX conventions, which compute in float32:
    float64 input is rounded to float32 (RNE), and a finite value that would become Inf is
    refused rather than quantized as if it were Inf."""
    if arr.dtype == np.float64:
        too_big = np.isfinite(arr) & (np.abs(arr) >= 2.0**128 - 2.0**103)  # RNE -> Inf from here
        if too_big.any():
            example = float(arr[too_big].reshape(-1)[0])
            raise ValueError(
                f"{who} computes in float32, and {int(too_big.sum())} finite input value(s) such "
                f"as {example:g} lie beyond float32's range (max 3.4028235e+38): scale the input "
                "down (or clip it) first"
            )
    with np.errstate(under="ignore"):
        return arr.astype(np.float32, copy=False)
