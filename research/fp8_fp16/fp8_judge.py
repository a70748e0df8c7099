"""Reading the answers of ``python -m research.fp8_fp16 probe``: which named hypotheses agree
with a device on every row (per family), which products the device sums before a rounding
(the ``lanes`` rows, read without any model), the staged models of a space that fit best, and
the raw results recorded in the hwdata layout (``python -m research.fp8_fp16 fit FILE`` reads
them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpemu.fit.dumps import Dump
from fpemu.version import __version__

from .fp8_probes import FAMILIES, Experiments, K
from .staged import NAMED, describe
from .staged_kernel import fp16_bits_as_fp32, staged_dot


@dataclass
class Verdict:
    """One device path's answers to the experiment set, judged."""

    path: str
    inputs: str
    rows: int
    agree: dict  # hypothesis -> {family: rows agreeing}
    per_family: dict  # family -> rows
    consistent: list  # hypotheses agreeing on every row
    stage_classes: list  # sets of positions summed before a rounding (from the lanes rows), or []
    first_misses: dict = field(default_factory=dict)  # hypothesis -> first disagreeing row's question
    broken: str = ""  # why the path's answers cannot be read (plumbing), or ""


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x == y) | (np.isnan(x) & np.isnan(y))


def stage_classes(ex: Experiments, got: np.ndarray) -> list:
    """Positions the device sums exactly before a rounding, read from the lanes rows with the
    1 at position 0: two 2^-11 at k and m give 1 + 2^-10 when they meet before a rounding
    (union-find over those pairs). [] when the lanes rows are absent or inconsistent."""
    lanes = [(i, w) for i, (f, w) in enumerate(zip(ex.family, ex.what)) if f == "lanes" and w.startswith("1 at 0,")]
    if not lanes:
        return []
    parent = list(range(K))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, what in lanes:
        k, m = (int(v) for v in what.split("at ")[-1].split(" and "))
        if got[i] == 1 + 2.0**-10:
            parent[find(k)] = find(m)
        elif got[i] != 1:
            return []
    groups: dict = {}
    for k in range(1, K):
        groups.setdefault(find(k), []).append(k)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


def judge(path: str, ex: Experiments, got: np.ndarray) -> Verdict:
    """Compare a device's results with every named hypothesis."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != (ex.rows,):
        raise RuntimeError(f"{path}: the device returned {got.size} results for {ex.rows} experiments")
    fams = {f: int((ex.family == f).sum()) for f in FAMILIES}
    agree, first = {}, {}
    for name, m in NAMED.items():
        ok = _same(staged_dot(m, ex.a, ex.b, ex.c, ex.inputs), got)
        agree[name] = {f: int(ok[ex.family == f].sum()) for f in FAMILIES}
        if not ok.all():
            first[name] = str(ex.what[np.flatnonzero(~ok)[0]])
    consistent = [n for n, a in agree.items() if sum(a.values()) == ex.rows]
    singles = ex.family == "single"
    exact = singles & np.array([w.startswith("p[") and ("1.0" in w or "1.5" in w or "-3.5" in w) for w in ex.what])
    want = (ex.a * ex.b).sum(axis=1)
    broken = ""
    if exact.any() and not np.array_equal(got[exact], want[exact]):
        i = np.flatnonzero(exact & (got != want))[0]
        broken = f"exact single products come back wrong ({ex.what[i]} gave {got[i]!r}): a layout or transfer problem"
    return Verdict(path, ex.inputs, ex.rows, agree, fams, consistent, stage_classes(ex, got), first, broken)


def verdict_report(v: Verdict) -> str:
    """Lines for one path."""
    lines = [f"{v.path} ({v.inputs}, {v.rows} experiments):"]
    if v.broken:
        return "\n".join(lines + [f"  UNREADABLE: {v.broken}"])
    head = "  " + " ".join(f"{f:>9}" for f in FAMILIES) + "  hypothesis"
    lines += [head, "  " + " ".join(f"{v.per_family[f]:>9}" for f in FAMILIES) + "  (rows)"]
    for name, a in v.agree.items():
        lines.append("  " + " ".join(f"{a[f]:>9}" for f in FAMILIES) + f"  {name}")
    if v.consistent:
        lines.append("  consistent with every row: " + ", ".join(f"{n} ({describe(NAMED[n], K)})" for n in v.consistent))
    else:
        lines.append("  no named hypothesis agrees with every row; first disagreements:")
        lines += [f"    {n}: {w}" for n, w in list(v.first_misses.items())[:4]]
    if v.stage_classes:
        lines.append("  positions summed before a rounding (lanes rows): "
                     + "  ".join("{" + ",".join(map(str, g)) + "}" for g in v.stage_classes) + "  (position 0 holds the 1)")  # fmt: skip
    return "\n".join(lines)


def as_dump(ex: Experiments, got: np.ndarray, name: str) -> Dump:
    """The answers as a :class:`Dump` (fp16 column), for
    :func:`~research.fp8_fp16.staged_search.search_space`."""
    return Dump(name, ex.inputs, ex.a, ex.b, ex.c, {"fp16": fp16_bits_as_fp32(got)})


def record(path: str | Path, ex: Experiments, got: np.ndarray, meta: dict) -> Path:
    """Write the raw results in the hwdata layout (a, b, c as fp32 bit patterns, d_fp16 as the
    fp16 results widened to fp32 bits), with the family and question of every row and a JSON
    ``meta`` (type "dot", the inputs, fpemu's version and what ``meta`` adds: device, driver,
    library versions, path)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    bits = lambda x: np.asarray(x, dtype=np.float32).view(np.uint32)  # noqa: E731
    info = {"type": "dot", "inputs": ex.inputs, "out": "fp16", "experiment": "fp8-fp16", "fpemu": __version__, **meta}
    np.savez_compressed(path, a=bits(ex.a), b=bits(ex.b), c=bits(ex.c), d_fp16=fp16_bits_as_fp32(got),
                        family=ex.family, what=ex.what, meta=np.array(json.dumps(info, sort_keys=True)))  # fmt: skip
    return path
