"""Cast statistics: underflow and overflow counts and the exponent histogram of the gradient
values a step rounds to the low format."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
