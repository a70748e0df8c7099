"""What ``python -m research.fp8_fp16 fit ...`` prints: the best staged candidates with their
rows per column, the named hypotheses' scores, and the residual rows of the best candidate that misses
some (counts, fp16 steps, dependence on the exponent spread and on c, first rows decoded)."""

from __future__ import annotations

from fpemu.fit.dumps import Dump

from .spaces import name_of
from .staged import NAMED, describe
from .staged_kernel import evaluate, fp16_bits_as_fp32, prepare
from .staged_search import Residuals, SpaceFit, residuals


def _short(column: str) -> str:
    return column.split(":")[0]


def _scores_line(rows: dict, columns: dict) -> str:
    return "  ".join(f"{rows[c]:>{max(5, len(_short(c)))}}" for c in columns)


def named_scores(dumps: list[Dump], out: str = "fp16") -> dict:
    """Rows every named hypothesis reproduces, per column: {name: {column: rows}}."""
    prepared = [(f"{d.name}:{out}", prepare(d.a, d.b, d.c, d.inputs), d.d[out]) for d in dumps]
    return {name: {col: int((fp16_bits_as_fp32(evaluate(m, ops)) == want).sum()) for col, ops, want in prepared}
            for name, m in NAMED.items()}  # fmt: skip


def residual_text(res: Residuals, limit: int = 5) -> list[str]:
    """Lines on one column's residual rows."""
    lines = [f"  {res.column}: {res.missed.size} of {res.rows} rows missed"]
    if not res.missed.size:
        return lines
    steps: dict = {}
    for s in res.ulps.tolist():
        steps[s] = steps.get(s, 0) + 1
    common = sorted(steps.items(), key=lambda kv: -kv[1])[:8]
    lines.append("    hardware - model, in fp16 steps: " + ", ".join(f"{k:+d}: {v}" for k, v in common))
    rate = lambda tally: ", ".join(f"{k}: {m}/{n}" for k, (n, m) in tally.items() if n >= 20)  # noqa: E731
    lines.append(f"    missed/rows by E_max - e_sum (exponent spread): {rate(res.spread)}")
    lines.append(f"    missed/rows by e_sum - e_c (c above the sum when < 0): {rate(res.c_distance)}")
    if res.table[:limit]:
        lines.append("    row       c16           exact sum      model          hardware       fp16 bits    steps")
    for t in res.table[:limit]:
        lines.append(f"    {t['row']:<5d} {t['c16']:<13.9g} {t['sum']:<+14.9g} {t['model']:<+14.9g} {t['hardware']:<+14.9g} "
                     f"{t['model_bits']:04X}->{t['hardware_bits']:04X}  {t['steps']:+d}")  # fmt: skip
    return lines


def space_report(fit: SpaceFit, dumps: list[Dump], first: int = 5) -> str:
    """The text of ``python -m research.fp8_fp16 fit``."""
    cols = fit.columns
    lines = [
        f"search space {fit.space}: {len(cols)} column(s), K = {fit.K}: "
        + ", ".join(f"{c} ({n} rows)" for c, n in cols.items()),
        f"searched {fit.searched} staged models in {fit.seconds:.1f} s",
    ]
    best = fit.best
    total = sum(cols.values())
    verdict = "reproduces every row" if fit.fits else f"reproduces {best.total} of {total} rows"
    lines += [f"best: {describe(best.model, fit.K)}: {verdict}", f"  {best.model!r}"]
    lines.append("ranked (rows reproduced per column):")
    lines.append("  " + "  ".join(f"{_short(c):>5}" for c in cols) + "  model")
    for s in fit.ranked:
        tag = name_of(s.model, fit.K)
        lines.append(f"  {_scores_line(s.rows, cols)}  {describe(s.model, fit.K)}" + (f"  [{tag}]" if tag else ""))
    out = next(iter(cols)).split(":")[1]
    lines.append("named hypotheses (rows reproduced per column):")
    named = named_scores(dumps, out)
    for name, rows in named.items():
        lines.append(f"  {_scores_line(rows, cols)}  {name}: {describe(NAMED[name], fit.K)}")
    shown = next((s.model for s in fit.ranked if s.total < total), None)
    which = "the best candidate" if shown is best.model else "the best listed candidate that misses rows"
    if shown is None:
        misses = {n: sum(r.values()) for n, r in named.items() if sum(r.values()) < total}
        if misses:
            pick = max(misses, key=misses.get)
            shown, which = NAMED[pick], f"the best named hypothesis that misses rows, {pick}"
    if shown is not None and first > 0:
        lines.append(f"residual rows of {which} ({describe(shown, fit.K)}):")
        for d in dumps:
            lines += residual_text(residuals(shown, d, out, first), first)
    return "\n".join(lines)
