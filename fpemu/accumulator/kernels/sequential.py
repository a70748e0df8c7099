"""The IEEE loop (``kind="sequential"``): ``acc = round(acc + a[k]*b[k])`` for every k,
exact products, one rounding per step."""

from __future__ import annotations

import numpy as np

from .products import _Products, _with_specials
from .rounding import _add, _round, _Target


def _run_sequential(prods: _Products, k0: int, k1: int, c: np.ndarray, t: _Target) -> np.ndarray:
    acc = _round(c, t)
    for k in range(k0, k1):
        finite = np.where(np.isfinite(acc), acc, 0.0)
        acc = _with_specials(prods, k, k + 1, acc, _add(finite, prods.value(k), t))
    return acc
