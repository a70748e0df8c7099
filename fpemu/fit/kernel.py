"""A batched block-FMA kernel: the block model of :class:`fpemu.accumulator.Accumulator` for
many parameter sets at once, and which rows of a dump each candidate model reproduces."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..accumulator import Accumulator, dot
from ..arith import aligned_sum, exponent
from ..codec import quantize
from ..formats import get_format
from .dumps import Dump

# fpemu.accumulator.dot takes one Accumulator per call; the search tries thousands. This kernel
# computes the same block model (tests check it against dot on the dumps) for many parameter
# sets at once: the experiment rows are repeated once per (F, zero-c exponent, output
# rounding, output bits) set and those parameters become per-row arrays. The exponents and
# the aligned sum (F one per row) are fpemu.arith's, the accumulator's own.


def _round_rows(v: np.ndarray, prec: np.ndarray, rne: np.ndarray, out: str) -> np.ndarray:
    """Round exact float64 values to the output format with prec-bit significands (per row),
    RNE or RZ, with the codec (one call per distinct (prec, rounding) pair); IEEE overflow."""
    base = get_format(out)
    key = np.broadcast_to(np.asarray(prec, dtype=np.int64) * 2 + np.asarray(rne, dtype=np.int64), v.shape)
    r = np.empty_like(v)
    for k in np.unique(key).tolist():
        rows = key == k
        fmt = dataclasses.replace(base, name=f"{base.name}_p{k // 2}", mantissa_bits=k // 2 - 1)
        r[rows] = quantize(v[rows], fmt, rounding="nearest_even" if k % 2 else "toward_zero")
    return r + 0.0


def _products(a: np.ndarray, b: np.ndarray, inputs: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact products and their model exponents e_a + e_b (a subnormal at its format's emin)."""
    fmt = get_format(inputs)
    return a * b, exponent(a, fmt.emin) + exponent(b, fmt.emin)


def _batch_model(p, ep, c, out: str, block: int, cut: str, late_c: bool, even_odd: bool,
                 F, zc, rne, prec) -> np.ndarray:  # fmt: skip
    """The block model for rows of products p (exponents ep) and accumulators c, with per-row
    F, zero-c exponent, RNE flag and output precision (bits with the hidden one); float32
    results in the output format."""
    c_emin = get_format(out).emin
    K = p.shape[1]
    for s in range(0, K, block):
        ks = range(s, min(s + block, K))
        ec = np.where(c == 0, zc, exponent(c, c_emin))
        # A block result that overflowed (fp16 output, F bits cut short of the sum) stays
        # +-Inf: the products are finite, so c + products is c, as fpemu.accumulator has it.
        finite = np.isfinite(c)
        fc = np.where(finite, c, 0.0)
        if not late_c:
            total, _ = aligned_sum([fc] + [p[:, k] for k in ks], [ec] + [ep[:, k] for k in ks], F, cut)
        else:
            groups = [ks[0::2], ks[1::2]] if even_odd else [ks]
            vals, exps = [fc], [ec]
            for g in groups:
                if len(g):
                    v, _ = aligned_sum([p[:, k] for k in g], [ep[:, k] for k in g], F, cut)
                    vals.append(v)
                    exps.append(exponent(v))
            total, _ = aligned_sum(vals, exps, F, cut)
        c = np.where(finite, _round_rows(total, prec, rne, out), c)
    return c.astype(np.float32)


def batch_matches(dump: Dump, c: np.ndarray, out: str, models: list[Accumulator], rows: slice) -> np.ndarray:
    """(len(models), n_rows) bool: which rows each block model reproduces. Models that share
    their structure (block, grouping) run in one batched call."""
    from ..codec import quantize

    p, ep = _products(dump.a[rows], dump.b[rows], dump.inputs)
    cq = quantize(c[rows], "fp16" if out == "fp16" else "fp32")
    want = dump.d[out][rows]
    R = p.shape[0]
    result = np.zeros((len(models), R), dtype=bool)
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(models):
        groups.setdefault((m.block, m.term_rounding, m.late_c, getattr(m, "even_odd", False)), []).append(i)
    # Models per batched call: the tiled products stay near _BATCH_VALUES, whatever the
    # number of rows, K or models.
    per_call = max(1, _BATCH_VALUES // max(1, R * p.shape[1]))
    for (block, cut, late_c, even_odd), all_idx in groups.items():
        for start in range(0, len(all_idx), per_call):
            idx = all_idx[start : start + per_call]
            result[idx] = _batch_group(p, ep, cq, want, out, (block, cut, late_c, even_odd), [models[i] for i in idx])
    return result


#: Products held at once by one batched call of the search (float64 and int arrays of this size).
_BATCH_VALUES = 1 << 21


def _batch_group(p, ep, cq, want, out: str, structure: tuple, ms: list[Accumulator]) -> np.ndarray:
    """(len(ms), R) bool: which rows each model of one structure (block, cut, late c,
    even/odd) reproduces, in one batched call."""
    block, cut, late_c, even_odd = structure
    R, n = p.shape[0], len(ms)
    per_row = lambda values: np.repeat(np.array(values), R)  # noqa: E731
    got = _batch_model(
        np.tile(p, (n, 1)), np.tile(ep, (n, 1)), np.tile(cq, n), out, block, cut, late_c, even_odd,
        F=per_row([m.frac_bits for m in ms]), zc=per_row([m.zero_c_exponent for m in ms]),
        rne=per_row([out == "fp16" or m.out_rounding == "rne" for m in ms]),
        prec=per_row([11 if out == "fp16" else m.out_frac_bits + 1 for m in ms]),
    )
    return (got.view(np.uint32) == np.tile(want, n)).reshape(n, R)


def model_matches(dump: Dump, c: np.ndarray, out: str, acc: Accumulator, rows: slice) -> np.ndarray:
    """Rows one (named) model reproduces, through fpemu.accumulator.dot itself."""
    d = dot(dump.a[rows], dump.b[rows], c[rows], inputs=dump.inputs, accumulator=acc, out=out)
    return d.astype(np.float32).view(np.uint32) == dump.d[out][rows]
