"""The IEEE loop (:class:`~fpemu.accumulator.Sequential`): ``acc = round(acc + a[k]*b[k])`` for every k,
exact products, one rounding per step (an FMA chain)."""

from __future__ import annotations

import numpy as np

from ..model import Sequential
from .products import Products, with_specials
from .rounding import add_rounded, read_acc, round_to_target, Target


def run_sequential(prods: Products, k0: int, k1: int, c: np.ndarray, t: Target, acc: Sequential | None = None) -> np.ndarray:
    every = acc.instruction_k if acc is not None else None
    out = read_acc(round_to_target(c, t), t)
    for k in range(k0, k1):
        if every and k > k0 and (k - k0) % every == 0:
            out = read_acc(out, t)  # a new instruction reads its accumulator operand
        finite = np.where(np.isfinite(out), out, 0.0)
        out = with_specials(prods, k, k + 1, out, add_rounded(finite, prods.value(k), t))
    return out
