"""A model over all of K: the step of the model's kind, and DeepSeek-V3's promotion of
partial results to an fp32 accumulator."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...formats import get_format
from ..model import Accumulator, BlockFMA, BlockModel, Exact, Sequential
from ..pieces import told_stretches
from .block import run_block
from .exact import exact_sum, signed_zero
from .pairwise import run_pairwise
from .products import Products, with_specials
from .rounding import add_rounded, round_to_target, rounding_target
from .sequential import run_sequential


def lane_permutation(K: int, instruction_k: int, lane_order: str) -> np.ndarray:
    """The order in which the products 0..K-1 enter the blocks: within each instruction of
    ``instruction_k`` products, those whose index has bit j clear first (``"bit<j>"``); a
    short last instruction keeps the order of the indices it has.

    >>> lane_permutation(8, 8, "bit1").tolist(), lane_permutation(10, 8, "bit1").tolist()
    ([0, 1, 4, 5, 2, 3, 6, 7], [0, 1, 4, 5, 2, 3, 6, 7, 8, 9])
    """
    j = int(lane_order[3:])
    within = np.arange(instruction_k)
    within = np.concatenate([within[(within >> j) & 1 == 0], within[(within >> j) & 1 == 1]])
    starts = np.arange(0, K, instruction_k)
    order = (starts[:, None] + within[None, :]).reshape(-1)
    return order[order < K]


def ticks_as_it_goes(acc: Accumulator) -> bool:
    """Whether :func:`run_model` calls its ``tick`` while K runs (block models chained from
    one stretch of K into the next, the exact model), not only at the end."""
    return isinstance(acc, Exact) or (isinstance(acc, BlockModel) and acc.promote is None)


def _chain_unit(acc: BlockModel, K: int) -> int:
    """The products after which a block model's state is its result alone: a block, or for
    ``c_after`` an instruction (all of K where the instruction is not given)."""
    if isinstance(acc, BlockFMA) and acc.c_after:
        return acc.instruction_k or max(K, 1)
    return acc.block


def run_model(prods: Products, c: np.ndarray, acc: Accumulator, out: str, tick: Callable[[int], None] | None = None,
              parts: int = 0) -> np.ndarray:
    """The model over all of K; float64 result values in the output format. ``tick(1)`` is
    called ``parts`` times in all (a progress bar's steps): as K runs where
    :func:`ticks_as_it_goes` (a block model's K in stretches, each result the next one's c,
    which is what its blocks do within one run: the same bits), else at the end."""
    acc = acc.for_output(out)
    K = prods.K
    if isinstance(acc, BlockFMA) and acc.lane_order is not None and not prods.lane_ordered:
        prods = prods.reordered(lane_permutation(K, acc.instruction_k, acc.lane_order))
    if isinstance(acc, Exact):
        rounded = round_to_target(exact_sum(prods, 0, K, c, tick, parts), rounding_target(out, "rne"))
        return with_specials(prods, 0, K, c, signed_zero(prods, 0, K, c, rounded))
    if isinstance(acc, BlockModel):
        t = rounding_target("fp16", "rne") if out == "fp16" else rounding_target("fp32", acc.out_rounding, acc.out_frac_bits)
        c_emin = get_format("fp16" if out == "fp16" else "fp32").emin
        step = lambda k0, k1, c0: run_block(prods, k0, k1, c0, acc, t, c_emin)  # noqa: E731
    else:
        t = rounding_target(acc.acc_format, acc.acc_rounding, flush=acc.flush_subnormals)
        if isinstance(acc, Sequential):
            step = lambda k0, k1, c0: run_sequential(prods, k0, k1, c0, t, acc)  # noqa: E731
        else:
            step = lambda k0, k1, c0: run_pairwise(prods, k0, k1, c0, acc, t)  # noqa: E731
    if acc.promote is None and isinstance(acc, BlockModel):
        result = c
        for k0, k1 in told_stretches(0, K, _chain_unit(acc, K), parts, tick):
            result = step(k0, k1, result)
        return result
    if acc.promote is None:
        result = step(0, K, c)
    else:
        # DeepSeek-V3: each interval starts from a zero accumulator in the unit; its result is
        # added to the fp32 register accumulator on the CUDA cores (RNE).
        fp32 = rounding_target("fp32", "rne")
        result = round_to_target(c, fp32)
        for s in range(0, K, acc.promote):
            partial = step(s, min(s + acc.promote, K), np.zeros(prods.R))
            finite = np.where(np.isfinite(result), result, 0.0)
            total = add_rounded(finite, np.where(np.isfinite(partial), partial, 0.0), fp32)
            with np.errstate(invalid="ignore"):
                naive = result + partial
            result = np.where(np.isfinite(naive), total, naive)
    if tick is not None and parts:
        tick(parts)
    return result
