"""The ``via`` option: input narrowed to float32 before it is encoded, as libraries that
convert through float32 do (and so round twice).

>>> narrow(np.array([1 + 2.0**-8 + 2.0**-30]), "fp32")  # the float32 nearest, then encoded
array([1.0039062], dtype=float32)
>>> check_via("FP32"), check_via(None)
('fp32', None)
"""

from __future__ import annotations

import numpy as np

VIAS = ("fp32",)


def check_via(via: str | None) -> str | None:
    """The canonical name of a ``via`` option (None: no narrowing), or a ValueError."""
    if via is None:
        return None
    if not isinstance(via, str) or via.lower() not in VIAS:
        raise ValueError(f"unknown via {via!r}; choose 'fp32' (convert to float32 first) or None")
    return via.lower()


def narrow(arr: np.ndarray, via: str | None) -> np.ndarray:
    """arr as float32 by numpy's cast (round to nearest even, Inf beyond float32's range, NaN
    payloads kept as C's cast keeps them) where ``via`` asks for it; float32 input unchanged."""
    if via is None or arr.dtype == np.float32:
        return arr
    with np.errstate(over="ignore"):  # overflow to Inf is the cast's defined result
        return arr.astype(np.float32)
