"""The IEEE loop (``kind="sequential"``): ``acc = round(acc + a[k]*b[k])`` for every k,
exact products, one rounding per step (an FMA chain)."""

from __future__ import annotations

import numpy as np

from ..model import Accumulator
from .products import _Products, _with_specials
from .rounding import _add, _read_acc, _round, _Target


def _run_sequential(prods: _Products, k0: int, k1: int, c: np.ndarray, t: _Target, acc: Accumulator | None = None) -> np.ndarray:
    every = acc.instruction_k if acc is not None else None
    out = _read_acc(_round(c, t), t)
    for k in range(k0, k1):
        if every and k > k0 and (k - k0) % every == 0:
            out = _read_acc(out, t)  # a new instruction reads its accumulator operand
        finite = np.where(np.isfinite(out), out, 0.0)
        out = _with_specials(prods, k, k + 1, out, _add(finite, prods.value(k), t))
    return out
