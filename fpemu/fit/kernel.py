"""Which rows of a dump each candidate block model reproduces: thousands of models scored at
once through the accumulator's own block kernel (:func:`fpemu.accumulator.kernels.block.block_rows`),
or one named model through :func:`fpemu.accumulator.dot`."""

from __future__ import annotations

import numpy as np

from ..accumulator import Accumulator, BlockModel, dot
from ..accumulator.kernels.block import block_rows
from ..accumulator.kernels.products import Products, element_products
from ..accumulator.kernels.rounding import RowTargets
from ..codec import quantize
from ..formats import get_format
from .dumps import Dump

# fpemu.accumulator.dot takes one Accumulator per call; the search tries thousands. The
# experiment rows are repeated once per model of one structure (block, cut, grouping), and the
# parameters that differ (F, zero-c exponent, output rounding and bits) become per-row arrays
# that the accumulator's own block kernel takes (block_rows): the same arithmetic, the same bits.


def _batch_model(prods: Products, c: np.ndarray, out: str, structure: BlockModel, F, zc, rne, frac) -> np.ndarray:
    """float32 results of the block model ``structure`` for the rows of ``prods`` and
    accumulators c, with per-row F, zero-c exponent, RNE flag and output fraction bits."""
    target = RowTargets(get_format(out), frac, rne)
    return block_rows(prods, c, structure, target, get_format(out).emin, F, zc).astype(np.float32)


def batch_matches(dump: Dump, c: np.ndarray, out: str, models: list[Accumulator], rows: slice) -> np.ndarray:
    """(len(models), n_rows) bool: which rows each block model reproduces. Models that share
    their structure (block, grouping) run in one batched call."""
    fmt = get_format(dump.inputs)
    prods = element_products(dump.a[rows], dump.b[rows], fmt, fmt, outer=False, flush=False)
    cq = quantize(c[rows], "fp16" if out == "fp16" else "fp32")
    want = dump.d[out][rows]
    R = prods.R
    result = np.zeros((len(models), R), dtype=bool)
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(models):
        groups.setdefault((m.block, m.term_rounding, m.late_c, getattr(m, "even_odd", False)), []).append(i)
    # Models per batched call: the tiled products stay near _BATCH_VALUES, whatever the
    # number of rows, K or models.
    per_call = max(1, _BATCH_VALUES // max(1, R * prods.K))
    for all_idx in groups.values():
        for start in range(0, len(all_idx), per_call):
            idx = all_idx[start : start + per_call]
            result[idx] = _batch_group(prods, cq, want, out, [models[i] for i in idx])
    return result


#: Products held at once by one batched call of the search (float64 and int arrays of this size).
_BATCH_VALUES = 1 << 21


def _batch_group(prods: Products, cq, want, out: str, ms: list[Accumulator]) -> np.ndarray:
    """(len(ms), R) bool: which rows each model of one structure (block, cut, late c,
    even/odd) reproduces, in one batched call."""
    R, n = prods.R, len(ms)
    per_row = lambda values: np.repeat(np.array(values), R)  # noqa: E731
    got = _batch_model(
        prods.tiled(n), np.tile(cq, n), out, ms[0],
        F=per_row([m.frac_bits for m in ms]), zc=per_row([m.zero_c_exponent for m in ms]),
        rne=per_row([out == "fp16" or m.out_rounding == "rne" for m in ms]),
        frac=per_row([10 if out == "fp16" else m.out_frac_bits for m in ms]),
    )
    return (got.view(np.uint32) == np.tile(want, n)).reshape(n, R)


def model_matches(dump: Dump, c: np.ndarray, out: str, acc: Accumulator, rows: slice) -> np.ndarray:
    """Rows one (named) model reproduces, through fpemu.accumulator.dot itself."""
    d = dot(dump.a[rows], dump.b[rows], c[rows], inputs=dump.inputs, accumulator=acc, out=out)
    return d.astype(np.float32).view(np.uint32) == dump.d[out][rows]
