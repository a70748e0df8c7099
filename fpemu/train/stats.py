"""Cast statistics: underflow and overflow counts, per kind of tensor, and the exponent
histogram of the gradient values a step rounds to the low format."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

HIST_LO, HIST_HI = -80, 24  # exponent bins floor(log2|g|) of the gradient histogram

# The kinds of gradient tensor a step casts, in the order tables and plots list them, with the
# words a sentence uses for them.
KIND_NAMES = {
    "loss": "loss gradients",
    "act": "activation gradients",
    "weight": "weight gradients",
    "bias": "bias gradients",
    "attn": "attention gradients",
}


@dataclass
class CastStats:
    """Counters of the gradient values rounded to the low format during one step, per kind of
    tensor (``"loss"``: the gradient of the loss w.r.t. the logits; ``"act"``: the activation
    gradients entering the backward GEMMs; ``"weight"``, ``"bias"``: the parameter gradients
    the GEMMs write out).

    >>> s = CastStats()
    >>> s.add(np.array([1e-9, 2.0, 0.0], np.float32), np.array([0.0, 2.0, 0.0], np.float32), kind="loss")
    >>> s.nonzero, s.underflow, s.kinds["loss"].tolist()
    (2, 1, [2, 1, 0])
    """

    hist: np.ndarray | None = None  # exponent histogram, when this step samples it
    kinds: dict = field(default_factory=dict)  # kind -> int64 [nonzero, underflow, overflow]

    def add(self, before: np.ndarray, after: np.ndarray, overflowed: np.ndarray | None = None,
            kind: str = "act") -> None:
        """Count the non-zero values of ``before`` that ``after`` (their rounded copies) made 0
        (underflow) or Inf (overflow; or the ``overflowed`` mask, for saturating casts)."""
        nz = before != 0
        if overflowed is None:
            overflowed = np.isinf(after) & np.isfinite(before)
        counts = self.kinds.setdefault(kind, np.zeros(3, np.int64))
        counts += (int(np.count_nonzero(nz)), int(np.count_nonzero(nz & (after == 0))),
                   int(np.count_nonzero(overflowed)))
        if self.hist is not None:
            self.hist += _exponent_histogram(before)

    def _total(self, i: int) -> int:
        return int(sum(int(c[i]) for c in self.kinds.values()))

    @property
    def nonzero(self) -> int:
        return self._total(0)

    @property
    def underflow(self) -> int:
        return self._total(1)

    @property
    def overflow(self) -> int:
        return self._total(2)


def _exponent_histogram(g: np.ndarray) -> np.ndarray:
    """Counts of ``floor(log2|g|)`` over the bins ``HIST_LO .. HIST_HI`` (ends clipped).

    >>> int(_exponent_histogram(np.array([3.0, 0.25, 0.0]))[1 - HIST_LO])
    1
    """
    g = g[(g != 0) & np.isfinite(g)]
    _, e = np.frexp(g)  # |g| = m * 2**e with m in [0.5, 1): floor(log2|g|) = e - 1
    e = np.clip(e.astype(np.int64) - 1, HIST_LO, HIST_HI) - HIST_LO
    return np.bincount(e, minlength=HIST_HI - HIST_LO + 1)
