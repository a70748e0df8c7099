"""Pairwise summation (``kind="pairwise"``): the products of each block summed as a
balanced binary tree, every addition rounded, each tree's sum added to the accumulator."""

from __future__ import annotations

import numpy as np

from ..model import Accumulator
from .products import _Products, _with_specials
from .rounding import _add, _round, _Target


def _tree(values: np.ndarray, t: _Target) -> np.ndarray:
    """Pairwise sum over axis 0, every addition rounded to the target."""
    while values.shape[0] > 1:
        half = values.shape[0] // 2
        summed = _add(values[0 : 2 * half : 2], values[1 : 2 * half : 2], t)
        values = np.concatenate([summed, values[2 * half :]]) if values.shape[0] % 2 else summed
    return values[0]


def _run_pairwise(prods: _Products, k0: int, k1: int, c: np.ndarray, acc: Accumulator, t: _Target) -> np.ndarray:
    n = acc.block or (k1 - k0)
    out = _round(c, t)
    for s in range(k0, k1, max(n, 1)):
        e = min(s + n, k1)
        finite = np.where(np.isfinite(out), out, 0.0)
        out = _with_specials(prods, s, e, out, _add(finite, _tree(prods.values(s, e), t), t))
    return out
