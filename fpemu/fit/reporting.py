"""What ``fpemu fit`` prints: the models that fit, merged into families, and the presets among
them; the closest model when none fits."""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from ..accumulator import Accumulator, BlockFMA, BlockModel
from ..accumulator import get_accumulator  # noqa: F401  (used by the doctest of describe_model)
from .search import GROUPINGS, ZERO_C_NO_PART, FitResult, dump_key


def describe_model(acc: Accumulator, K: int | None = None, out: str = "fp32") -> str:
    """One line of parameters.

    >>> describe_model(get_accumulator("h100", "e4m3"), K=32)
    'block >= 32, F = 13, terms rz, out rz to 13 fraction bits, zero c aligns at 2^-126'
    """
    if not isinstance(acc, BlockModel):
        return f"{acc.kind} ({acc.name})"
    block = f"block >= {acc.block}" if K is not None and acc.block >= K else f"block {acc.block}"
    grouping = next((g for g, v in GROUPINGS.items() if all(getattr(acc, k, False) == x for k, x in v.items())), "custom")
    terms = {"nvidia": "terms rz", "floor": "terms rd"}.get(grouping, f"{grouping}, terms {acc.term_rounding}")
    outs = "out fp16 rne" if out == "fp16" else f"out {acc.out_rounding} to {acc.out_frac_bits} fraction bits"
    zc = "zero c takes no part" if acc.zero_c_exponent <= ZERO_C_NO_PART else f"zero c aligns at 2^{acc.zero_c_exponent}"
    if isinstance(acc, BlockFMA) and (acc.lane_order is not None or acc.c_after):
        lanes = f"lanes {acc.lane_order} first" if acc.lane_order else "lanes in order"
        after = "c added after it" if acc.c_after else "c in the first block"
        zc = f"instruction of {acc.instruction_k}: {lanes}, blocks from zero, {after}"
    return f"{block}, F = {acc.frac_bits}, {terms}, {outs}, {zc}"


def _ranges(values: Sequence[int]) -> str:
    """Compact integer sets: [22, 23, 24, 26] -> '22..24, 26'.

    >>> _ranges([22, 23, 24, 26])
    '22..24, 26'
    """
    vs = sorted(set(values))
    parts, i = [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        parts.append(f"{vs[i]}..{vs[j]}" if j > i else str(vs[i]))
        i = j + 1
    return ", ".join(parts)


def summarize_models(models: Sequence[Accumulator], K: int, out: str) -> list[str]:
    """One line per model family: block models that differ only in F and the zero-c exponent
    are merged (``F = 22..32``); other models (exact, sequential, pairwise) by name."""
    lines, families = [], {}
    for m in models:
        if not isinstance(m, BlockModel):
            lines.append(f"{m.kind} ({m.name})")
            continue
        base = dataclasses.replace(m, name="", frac_bits=0, zero_c_exponent=0, source="")
        fam = families.setdefault(dump_key(base, K, out), (m, [], []))
        fam[1].append(m.frac_bits)
        fam[2].append(m.zero_c_exponent)
    for m, fs, zcs in families.values():
        text = describe_model(m, K, out)
        text = re.sub(r"F = \d+", f"F = {_ranges(fs)}", text)
        zset = sorted(set(zcs), reverse=True)
        zc = "zero c: " + ", ".join("takes no part" if z <= ZERO_C_NO_PART else f"2^{z}" for z in zset)
        lines.append(re.sub(r"zero c (aligns at 2\^-?\d+|takes no part)", zc, text))
    return lines


def report(result: FitResult) -> str:
    """The text `fpemu fit` prints."""
    lines = [
        f"{result.dump}: {result.rows} rows, K = {result.K}, inputs {result.inputs}, output {result.out}",
        f"searched {result.searched} models in {result.seconds:.1f} s",
    ]
    if result.fits:
        lines.append(f"models reproducing all {result.rows} rows (c {result.c_mode}):")
        lines += [f"  {text}" for text in summarize_models(result.models, result.K, result.out)]
        names = ", ".join(result.presets) if result.presets else "none (a new model)"
        lines.append(f"matching presets: {names}")
        if len(result.models) > 12:
            lines.append("  (many models fit: this column does not pin the parameters down)")
    else:
        lines.append(f"NO model in the search space reproduces all {result.rows} rows.")
        if result.best is not None:
            lines.append(
                f"closest: {describe_model(result.best, result.K, result.out)} "
                f"(c {result.c_mode}) reproduces {result.best_rows}/{result.rows} rows"
            )
    return "\n".join(lines)
