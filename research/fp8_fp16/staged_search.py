"""Staged models searched on one or more dump columns at once: every candidate of a space
scored on a screen of rows of every column, the best on all rows, ranked by the rows they
reproduce; and the rows a model misses, studied (:func:`residuals`).

A column is one dump's output (``fp16``, say): the same model must serve all of them, so the
ranking is by the sum over the columns, each column's count kept for the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from fpemu.arith import exponent
from fpemu.fit.dumps import Dump

from .spaces import candidates, load_space
from .staged import Staged
from .staged_kernel import Operands, evaluate, evaluate_many, fp16_bits_as_fp32, prepare


@dataclass
class Scored:
    """One candidate and the rows it reproduces per column."""

    model: Staged
    rows: dict  # column name -> rows reproduced

    @property
    def total(self) -> int:
        return sum(self.rows.values())


@dataclass
class SpaceFit:
    """What :func:`search_space` found."""

    space: str
    columns: dict  # column name -> number of rows
    K: int
    searched: int = 0
    seconds: float = 0.0
    ranked: list = field(default_factory=list)  # Scored, best first (the kept top)

    @property
    def best(self) -> Scored:
        return self.ranked[0]

    @property
    def fits(self) -> bool:
        return bool(self.ranked) and all(self.best.rows[c] == n for c, n in self.columns.items())


def column_name(dump: Dump, out: str) -> str:
    return f"{dump.name}:{out}"


def _matches(models: list, ops: Operands, want: np.ndarray) -> np.ndarray:
    """(len(models), R) bool: the rows each model reproduces."""
    return fp16_bits_as_fp32(evaluate_many(models, ops)) == want[None, :]


def _rows(ops: Operands, idx: np.ndarray) -> Operands:
    return Operands(ops.p[idx], ops.ep[idx], {k: v[idx] for k, v in ops.c.items()}, {k: v[idx] for k, v in ops.ec.items()})


def search_space(dumps: list[Dump], space: str = "fp8-fp16", out: str | None = None,
                 screens: tuple = ((16, 1000), (256, 100)), top: int = 10) -> SpaceFit:  # fmt: skip
    """Score every model of ``space`` on column ``out`` of every dump (the space's output by
    default). ``screens``: (rows, kept) steps: every candidate on the first rows of each
    column, the best kept for the next step; the survivors of the last step on every row. The
    ``top`` best are returned, best first (ties: the screens' order, the named hypotheses and
    the space's order first)."""
    spec = load_space(space)
    out = out or spec["out"]
    if out != "fp16":
        raise ValueError(f"staged models give fp16 results; --out {out} is not searchable with this space")
    if not dumps:
        raise ValueError("search_space needs at least one dump")
    Ks = {d.K for d in dumps}
    if len(Ks) != 1:
        raise ValueError(f"the dumps must share K to be fitted by one model, got K = {sorted(Ks)}")
    for d in dumps:
        if out not in d.d:
            raise ValueError(f"{d.name} has no d_{out} column (it has {', '.join('d_' + k for k in d.d)})")
    K = Ks.pop()
    start = time.perf_counter()
    alive = candidates(spec, K)
    cols = {column_name(d, out): d.rows for d in dumps}
    result = SpaceFit(space if isinstance(space, str) else "custom", cols, K, searched=len(alive))
    prepared = [(column_name(d, out), prepare(d.a, d.b, d.c, d.inputs), d.d[out]) for d in dumps]
    shuffled = [np.random.default_rng(0).permutation(want.size) for _, _, want in prepared]
    for n, kept in screens:
        if len(alive) <= max(kept, top):
            continue
        score = sum(_matches(alive, _rows(ops, idx[:n]), want[idx[:n]]).sum(axis=1)
                    for (_, ops, want), idx in zip(prepared, shuffled))  # fmt: skip
        alive = [alive[i] for i in np.argsort(-score, kind="stable")[: max(kept, top)]]
    rows = {name: _matches(alive, ops, want).sum(axis=1) for name, ops, want in prepared}
    scored = [Scored(m, {name: int(rows[name][i]) for name in rows}) for i, m in enumerate(alive)]
    scored.sort(key=lambda s: -s.total)  # stable
    result.ranked = scored[:top]
    result.seconds = time.perf_counter() - start
    return result


@dataclass
class Residuals:
    """The rows one model misses on one column, and what they have in common."""

    column: str
    rows: int
    missed: np.ndarray  # row indices
    ulps: np.ndarray  # hardware minus model, in fp16 steps, per missed row
    spread: dict  # E_max - e_S -> (rows, missed)
    c_distance: dict  # e_S - e_c -> (rows, missed)
    table: list  # first rows decoded: dicts


def _ordered(v: np.ndarray) -> np.ndarray:
    """fp16 values as integers in value order (adjacent values differ by 1)."""
    code = v.astype(np.float16).view(np.uint16).astype(np.int64)
    return np.where(code & 0x8000, -(code & 0x7FFF), code)


def residuals(model: Staged, dump: Dump, out: str = "fp16", first: int = 5) -> Residuals:
    """Which rows of a column ``model`` misses, by how many fp16 steps, how the misses depend
    on the exponent spread of the products (E_max - e_S, E_max the largest product exponent,
    e_S the exponent of their exact sum) and on c (e_S - e_c), and the ``first`` missed rows
    decoded."""
    ops = prepare(dump.a, dump.b, dump.c, dump.inputs)
    got = evaluate(model, ops)
    hw = dump.d[out].view(np.float32).astype(np.float64)
    miss = fp16_bits_as_fp32(got) != dump.d[out]
    idx = np.flatnonzero(miss)
    S = ops.p.sum(axis=1)  # exact for FP8 and fp16 products (at most 53 bits spanned)
    spread = ops.ep.max(axis=1) - exponent(S, -1022)
    c_dist = exponent(S, -1022) - ops.ec["fp16"]
    tally = lambda key: {int(k): (int((key == k).sum()), int((key[miss] == k).sum())) for k in np.unique(key[np.abs(key) < 60])}  # noqa: E731
    table = []
    for i in idx[:first]:
        h16, m16 = np.float16(hw[i]), np.float16(got[i])
        table.append({"row": int(i), "c": float(dump.c[i]), "c16": float(ops.c["fp16"][i]), "sum": float(S[i]),
                      "model": float(got[i]), "hardware": float(hw[i]),
                      "model_bits": int(m16.view(np.uint16)), "hardware_bits": int(h16.view(np.uint16)),
                      "steps": int(_ordered(hw[i : i + 1])[0] - _ordered(got[i : i + 1])[0]),
                      "spread": int(spread[i]), "c_distance": int(c_dist[i])})  # fmt: skip
    ulps = _ordered(hw[idx]) - _ordered(got[idx]) if idx.size else np.zeros(0, dtype=np.int64)
    return Residuals(column_name(dump, out), dump.rows, idx, ulps, tally(spread), tally(c_dist), table)
