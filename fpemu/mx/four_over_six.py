"""NVFP4 "Four Over Six" (Cook et al., arXiv 2512.02010): each block is quantized twice, its
amax mapped to 6 (E2M1's largest value, the plain rule) and to 4, and keeps the candidate
whose dequantized values lie nearer the input, by the sum of squared (``"mse"``) or absolute
(``"mae"``) errors. The arithmetic is TransformerEngine's (PR #2972,
``cast/nvfp4/quantize_4over6_nvfp4.cuh``), step by step in float32:

* the tensor scale ``S_enc = fmin(6 * e4m3_max / amax, FLT_MAX)`` with ``e4m3_max`` 256 by
  default (the paper's choice, leaving the map-to-4 scale room: ``NVTE_NVFP4_4OVER6_E4M3_USE_256``)
  or 448 (``"mse_448"``, ``"mae_448"``); the candidates' scales and elements as
  :func:`~.nvfp4_scales.four_over_six_block_scales` says;
* each element's error: ``val = fp32(fp32(fp32(q * fp32(scale)) * amax) / (6 * e4m3_max))``,
  ``diff = fp32(val - x)``, then ``fp32(diff * diff)`` or ``|diff|``;
* a block's error: the 16 terms added one by one in float32, left to right (one thread's
  loop); 16x16 tiles: each tile row so, then the 16 row sums by the warp's halving tree
  (lane ``i`` adds lane ``i + 8``, then ``i + 4``, ``i + 2``, ``i + 1``), the tile's first
  axis as TE's rows;
* map-to-4 is kept only where its error is strictly smaller: ties (and NaN errors) keep
  map-to-6 (``pick_map4 = err_map4 < err_map6``).

TransformerEngine refuses stochastic rounding with Four Over Six; so does fpemu. Its
optional fast error path (``NVTE_NVFP4_4OVER6_ERR_USE_FAST_MATH``: errors in the scaled
domain after an FP16 product) is not modelled.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..codec import decode
from .formats import BlockFormat
from .nvfp4_scales import four_over_six_block_scales


class FourOverSix(NamedTuple):
    """One Four Over Six rule: its error metric and TE's bound on the tensor scale."""

    metric: str  # "mse" or "mae"
    e4m3_max: int  # 256 (TE's default for 4over6, the paper's) or 448


#: The names ``four_over_six=`` takes.
FOUR_OVER_SIX = {"mse": FourOverSix("mse", 256), "mae": FourOverSix("mae", 256),
                 "mse_448": FourOverSix("mse", 448), "mae_448": FourOverSix("mae", 448)}


def four_over_six_rule(name: str | None) -> FourOverSix | None:
    """The rule ``four_over_six=`` names (None: off).

    >>> four_over_six_rule("MSE"), four_over_six_rule(None)
    (FourOverSix(metric='mse', e4m3_max=256), None)
    """
    if name is None:
        return None
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in FOUR_OVER_SIX:
        raise ValueError(f"four_over_six must be None or one of {', '.join(FOUR_OVER_SIX)}, got {name!r}")
    return FOUR_OVER_SIX[key]


def block_errors(rows: np.ndarray, codes: np.ndarray, scales: np.ndarray, amax: np.float32,
                 bf: BlockFormat, rule: FourOverSix, tile: tuple[int, ...]) -> np.ndarray:
    """Each block's float32 error (rows: one block's elements per row) for one candidate."""
    f32 = np.float32
    q = decode(codes, bf.element, dtype=np.float32)
    sf = decode(scales, bf.scale, dtype=np.float32)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        val = ((q * sf) * amax) / f32(6 * rule.e4m3_max)
        diff = val - rows
        terms = diff * diff if rule.metric == "mse" else np.abs(diff)
    if len(tile) == 1:
        return _sum_in_order(terms)
    per_row = _sum_in_order(terms.reshape(-1, tile[1])).reshape(-1, tile[0])
    return _halving_tree(per_row)


def _sum_in_order(terms: np.ndarray) -> np.ndarray:
    """Row sums in float32, the terms added left to right (numpy's reductions pair them)."""
    acc = np.zeros(terms.shape[0], np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(terms.shape[1]):
            acc = acc + terms[:, j]
    return acc


def _halving_tree(v: np.ndarray) -> np.ndarray:
    """A warp's shuffle-down sum: padded with zeros to a power of two, lane i adds lane i + n/2
    until one lane is left (the error terms are >= 0, so the padding changes no sum)."""
    n = 1 << max(v.shape[1] - 1, 0).bit_length()
    if n != v.shape[1]:
        v = np.concatenate([v, np.zeros((v.shape[0], n - v.shape[1]), np.float32)], axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        while v.shape[1] > 1:
            half = v.shape[1] // 2
            v = v[:, :half] + v[:, half:]
    return v[:, 0]


class Candidates(NamedTuple):
    """A region's two candidates: scale codes and elementwise multipliers, map-to-4 first."""

    map4: tuple[np.ndarray, np.ndarray]
    map6: tuple[np.ndarray, np.ndarray]


def candidates(bamax: np.ndarray, amax: np.float32, bf: BlockFormat, rule: FourOverSix) -> Candidates:
    """Both candidates' scales and multipliers of blocks with these amaxes."""
    return Candidates(*four_over_six_block_scales(bamax, amax, bf, rule.e4m3_max))
