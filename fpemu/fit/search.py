"""The search: every block model of the parameter space, and every preset, tried on a dump;
screened on a few rows first, and kept when it reproduces every row."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from ..accumulator import Accumulator, BlockFMA, Exact, RoundedModel, TwoStage
from ..backends import _presets
from .dumps import Dump, check_inputs
from .kernel import batch_matches, model_matches


# Ways the terms of a block are grouped and cut: NVIDIA (all terms with c, truncated), the same
# with floor, CDNA3 (products first, then c; optionally even/odd lanes apart).
GROUPINGS = {
    "nvidia": dict(term_rounding="rz", late_c=False, even_odd=False),
    "floor": dict(term_rounding="rd", late_c=False, even_odd=False),
    "late c": dict(term_rounding="rd", late_c=True, even_odd=False),
    "late c, even/odd": dict(term_rounding="rd", late_c=True, even_odd=True),
}
# A zero accumulator aligns at 2^-126, at 2^-149, or takes no part: ZERO_C_NO_PART lies far
# below every product (>= 2^-252) and c, and 2^(F - ZERO_C_NO_PART) stays a normal float64.
ZERO_C_NO_PART = -900
_ZERO_C = (-126, -149, ZERO_C_NO_PART)
_FRAC_BITS = range(8, 49)  # up to 48: as many as fpemu.accumulator keeps exactly


def _used_fraction_bits(d_bits: np.ndarray) -> int:
    """Most fraction bits any normal non-zero fp32 result uses (its lowest set bit's place)."""
    exp = (d_bits >> 23) & 0xFF
    frac = d_bits & 0x7FFFFF
    normal = (exp > 0) & (exp < 255) & (frac != 0)
    if not normal.any():
        return 1
    f = frac[normal].astype(np.int64)
    low = f & -f  # lowest set bit
    return int(23 - np.log2(low).astype(int).min())


def candidate_models(K: int, out: str, used_bits: int = 23) -> Iterator[Accumulator]:
    """Every block model of the search space for K products per row.

    Blocks of K or more products behave alike on K-product rows, so block sizes stop at K.
    Output fraction bits: the most any result uses, or 23.
    """
    blocks = sorted({min(1 << i, K) for i in range(0, 7)})
    outs = [("rne", 23)] if out == "fp16" else [(r, p) for r in ("rz", "rne") for p in sorted({used_bits, 23})]
    for block, (grouping, g), (orr, ofb), F, zc in itertools.product(blocks, GROUPINGS.items(), outs, _FRAC_BITS, _ZERO_C):
        if g["even_odd"] and block < 2:  # no odd lane in a one-product block
            continue
        late = dict(g)
        cls = TwoStage if late.pop("late_c") else BlockFMA
        if cls is BlockFMA:
            late.pop("even_odd")  # a block FMA's lanes are not apart
        yield cls(
            f"block {block}, F {F}, {grouping}", block=block, frac_bits=F, out_rounding=orr,
            out_frac_bits=ofb, zero_c_exponent=zc, **late,
        )


def dump_key(acc: Accumulator, K: int, out: str) -> tuple:
    """The parameters a K-product dump can tell apart."""
    block = getattr(acc, "block", None)
    block = None if block is None else min(block, K)
    if isinstance(acc, Exact):
        return (acc.kind, acc.flush_subnormals)
    if isinstance(acc, RoundedModel):
        return (acc.kind, block, acc.flush_subnormals, acc.acc_format, acc.acc_rounding)
    fields = [acc.kind, block, acc.frac_bits, acc.term_rounding, acc.zero_c_exponent, getattr(acc, "even_odd", False),
              acc.flush_subnormals]  # fmt: skip
    if isinstance(acc, BlockFMA) and (acc.lane_order is not None or acc.c_after):  # an instruction's lanes, c after it
        fields += [acc.lane_order, acc.c_after, acc.instruction_k]
    if out == "fp32":
        fields += [acc.out_rounding, acc.out_frac_bits]
    return tuple(fields)


@dataclass
class FitResult:
    """What :func:`fit` found for one dump and output column."""

    dump: str
    inputs: str
    out: str
    rows: int
    K: int
    c_mode: str = "as recorded"
    models: list = field(default_factory=list)  # Accumulators reproducing every row
    presets: list = field(default_factory=list)  # names of presets among them
    best: Accumulator | None = None  # closest model when none fits
    best_rows: int = 0
    searched: int = 0
    seconds: float = 0.0

    @property
    def fits(self) -> bool:
        return bool(self.models)


def fit(dump: Dump, out: str = "fp32", screen: Sequence[int] = (64, 500)) -> FitResult:
    """Every model of the search space (and every preset) that reproduces every row.

    Candidates are tested on the first ``screen[0]`` rows, the survivors on ``screen[1]``,
    then on all rows. The search space runs through a batched kernel; models that fit, and
    every named preset, are confirmed with :func:`fpemu.accumulator.dot` itself. When no
    model fits with the recorded ``c``, the search is repeated with ``c = 0`` (the H100 FP8
    dumps ran with a zero accumulator) and the result says so.
    """
    if out not in dump.d:
        raise ValueError(f"{dump.name} has no d_{out} column (it has: {', '.join('d_' + k for k in dump.d)})")
    if dump.a.ndim != 2 or dump.rows < 1 or dump.K < 1:
        raise ValueError(f"{dump.name}: a dump needs at least one row of at least one product, got a {dump.a.shape}")
    check_inputs(dump, dump.name)  # values outside the input format would be re-rounded by the model code
    start = time.perf_counter()
    result = FitResult(dump.name, dump.inputs, out, dump.rows, dump.K)
    c_modes = [("as recorded", dump.c)]
    if np.any(dump.c != 0):
        c_modes.append(("ignored (c = 0)", np.zeros_like(dump.c)))
    # Each preset as it writes this output (H100/B200 FP8 write fp16 through another model).
    presets = {name: acc.for_output(out) for name, acc in _presets(dump.inputs).items()}
    used = _used_fraction_bits(dump.d[out]) if out == "fp32" else 23
    space = list(candidate_models(dump.K, out, used))
    best: tuple[int, Accumulator | None, str] = (-1, None, "")
    for c_mode, c in c_modes:
        result.searched += len(space) + len(presets)
        first = slice(0, screen[0])
        scores = batch_matches(dump, c, out, space, first).sum(axis=1)
        alive = [m for m, s in zip(space, scores) if s == min(screen[0], dump.rows)]
        for n in list(screen[1:]) + [dump.rows]:
            if alive:
                ok = batch_matches(dump, c, out, alive, slice(0, n)).all(axis=1)
                alive = [m for m, keep in zip(alive, ok) if keep]
        # Confirm a spread of the survivors with the real model code (the batched kernel is
        # tested against it; a disagreement here is a bug, not a misfit), and try every
        # preset as it is.
        for m in alive[:: max(1, len(alive) // 8)]:
            if not model_matches(dump, c, out, m, slice(None)).all():
                raise RuntimeError(f"fit's batched kernel disagrees with fpemu.accumulator.dot on {m} (a bug in fit)")
        fitting = list(alive)
        fitting += [a for a in presets.values() if model_matches(dump, c, out, a, slice(None)).all()]
        if fitting:
            result.c_mode, result.models = c_mode, _dedupe(fitting, dump.K, out)
            keys = {dump_key(m, dump.K, out) for m in fitting}
            result.presets = [n for n, a in presets.items() if dump_key(a, dump.K, out) in keys]
            break
        # Nothing fits: remember the closest (best on the screen, then on all rows).
        order = np.argsort(-scores, kind="stable")[:16]
        top = [space[i] for i in order]
        counts = batch_matches(dump, c, out, top, slice(None)).sum(axis=1)
        for acc in presets.values():
            n_ok = int(model_matches(dump, c, out, acc, slice(None)).sum())
            if n_ok > best[0]:
                best = (n_ok, acc, c_mode)
        for acc, n_ok in zip(top, counts):
            if n_ok > best[0]:
                best = (int(n_ok), acc, c_mode)
    if not result.fits:
        result.best_rows, result.best, result.c_mode = best
    result.seconds = time.perf_counter() - start
    return result


def _dedupe(models: list[Accumulator], K: int, out: str) -> list[Accumulator]:
    seen, unique = set(), []
    for m in models:
        k = dump_key(m, K, out)
        if k not in seen:
            seen.add(k)
            unique.append(m)
    return unique
