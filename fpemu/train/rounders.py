"""Rounding to the low formats: the FP32 -> low format -> FP32 casts of the policies."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..formats import Format


def rounder(fmt: Format, overflow: str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """A function rounding an FP32 array to ``fmt`` (RNE; values returned as FP32).

    This is the policies' hot path; :func:`fpemu.quantize` has float32 fast paths for it (the
    bf16 bit trick, float32 "magic number" addition for fp16, tables for FP8).
    """
    from ..codec import quantize

    def round_to_format(x: np.ndarray) -> np.ndarray:
        return np.asarray(quantize(np.asarray(x, dtype=np.float32), fmt, overflow=overflow), dtype=np.float32)

    return round_to_format
