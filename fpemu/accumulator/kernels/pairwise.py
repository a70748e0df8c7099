"""Pairwise summation (``kind="pairwise"``): the products of each block summed as a
balanced binary tree, every addition rounded, each tree's sum added to the accumulator.

With ``round_products`` (AMD CDNA1/2 as MMA-Sim has them) every product is first rounded as
``fmaf(a, b, +0)`` would, a short last group is padded with +0 products, and Inf/NaN travel
through the IEEE additions themselves."""

from __future__ import annotations

import numpy as np

from ..model import Pairwise
from .products import Products, with_specials
from .rounding import add_rounded, read_acc, round_to_target, Target


def _tree(values: np.ndarray, t: Target) -> np.ndarray:
    """Pairwise sum over axis 0, every addition rounded to the target (adjacent pairs; an odd
    one is carried up: for 2**j values, the halving tree of MMA-Sim's ``pairwise_dot``).

    >>> from .rounding import rounding_target
    >>> _tree(np.array([[1.0], [2.0**-24], [2.0**-24], [0.0]]), rounding_target("fp32", "rne")).tolist()
    [1.0]
    """
    while values.shape[0] > 1:
        half = values.shape[0] // 2
        summed = add_rounded(values[0 : 2 * half : 2], values[1 : 2 * half : 2], t)
        values = np.concatenate([summed, values[2 * half :]]) if values.shape[0] % 2 else summed
    return values[0]


def _rounded_products(prods: Products, s: int, e: int, n: int, t: Target) -> np.ndarray:
    """Products s..e-1 as fmaf(a, b, +0) gives them (an exact zero is +0, Inf/NaN kept),
    padded with +0 to n rows.

    >>> from .products import element_products
    >>> from .rounding import rounding_target
    >>> from ...formats import get_format
    >>> bf16 = get_format("bf16")
    >>> p = element_products(np.array([[-0.0, 2.0**-100]]), np.array([[1.0, -(2.0**-100)]]), bf16, bf16, False, False)
    >>> _rounded_products(p, 0, 2, 4, rounding_target("fp32", "rne"))[:, 0].tolist()  # +0, an underflow to -0, padding
    [0.0, -0.0, 0.0, 0.0]
    """
    rows = [prods.raw_value(k) for k in range(s, e)] + [np.zeros(prods.R)] * (n - (e - s))
    return round_to_target(np.stack(rows) + 0.0, t)  # one rounding call for the whole group


def run_pairwise(prods: Products, k0: int, k1: int, c: np.ndarray, acc: Pairwise, t: Target) -> np.ndarray:
    n = acc.block or (k1 - k0)
    out = read_acc(round_to_target(c, t), t)
    for s in range(k0, k1, max(n, 1)):
        e = min(s + n, k1)
        if acc.instruction_k and s > k0 and (s - k0) % acc.instruction_k == 0:
            out = read_acc(out, t)  # a new instruction reads its accumulator operand
        if acc.round_products:
            out = add_rounded(out, _tree(_rounded_products(prods, s, e, n, t), t), t)
            continue
        finite = np.where(np.isfinite(out), out, 0.0)
        out = with_specials(prods, s, e, out, add_rounded(finite, _tree(prods.values(s, e), t), t))
    return out
