"""Regenerate every table of docs/fp8-fp16-output.md from the hardware dumps and research/fp8_fp16.

Usage: python scripts/gen_fp8_fp16_doc.py [--only scores,ada,variants,residuals,search,probes]

Each table sits between ``<!-- fp8-fp16:NAME:begin -->`` and ``<!-- fp8-fp16:NAME:end -->``;
the prose around them is hand-written. ``scores``, ``ada``, ``variants`` and ``residuals`` take seconds
(research/fp8_fp16/tests/test_staged.py checks that the page holds what they give); ``search`` (the whole
fp8-fp16 space, ~15 s) and ``probes`` (every model of the space on the probe rows, a few
minutes) are slower. Needs ../shared/hwdata.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # research/ is not installed: it is imported from the checkout

from fpemu.fit import load_dump  # noqa: E402
from research.fp8_fp16.fp8_probes import FAMILIES, fp8_fp16_experiments  # noqa: E402
from research.fp8_fp16.spaces import candidates, name_of  # noqa: E402
from research.fp8_fp16.staged import NAMED, Staged, describe  # noqa: E402
from research.fp8_fp16.staged_kernel import evaluate_many, fp16_bits_as_fp32, prepare, staged_dot  # noqa: E402
from research.fp8_fp16.staged_search import residuals, search_space  # noqa: E402

PAGE = ROOT / "docs" / "fp8-fp16-output.md"
HWDATA = ROOT.parent / "shared" / "hwdata"
COLUMNS = ("h100_e4m3", "h100_e5m2", "b200_e4m3", "b200_e5m2")
FOUND = NAMED["hopper-fp8-fp16"]

# One parameter of the found model changed at a time: what the dumps pin down.
VARIANTS = [
    ("order natural (contiguous halves: a plain split-k)", {"order": "natural"}),
    ("order bit0 (even k first)", {"order": "bit0"}),
    ("order bit2", {"order": "bit2"}),
    ("order bit3", {"order": "bit3"}),
    ("the two stages the other way round (bit1r)", {"order": "bit1r"}),
    ("one stage of 32", {"stage": 32}),
    ("stages of 8", {"stage": 8}),
    ("F = 13", {"frac_bits": 13}),
    ("F = 16", {"frac_bits": 16}),
    ("F = 18", {"frac_bits": 18}),
    ("exact stage sums", {"frac_bits": None}),
    ("terms cut down (rd), F = 25", {"term_rounding": "rd"}),
    ("stages rounded to fp16 RZ", {"mid_rounding": "rz"}),
    ("stages rounded to e8m13 (13 bits) RZ", {"mid": "e8m13", "mid_rounding": "rz"}),
    ("stages kept in fp32 (RNE)", {"mid": "fp32"}),
    ("c in the first stage", {"c_at": "first"}),
    ("c in the last stage", {"c_at": "last"}),
    ("c as recorded (fp32), not fp16", {"c_format": "fp32"}),
    ("final rounding RZ", {"final": "rz"}),
    ("acc + c through an fp32 epilogue", {"c_add": "fp32"}),
]


def _dumps():
    missing = [n for n in COLUMNS if not (HWDATA / f"{n}.npz").is_file()]
    if missing:
        raise SystemExit(f"needs {HWDATA} ({', '.join(missing)} absent)")
    return [load_dump(HWDATA / f"{n}.npz") for n in COLUMNS]


def _rows(models: list, dumps) -> np.ndarray:
    """(len(models), len(dumps)) rows reproduced."""
    out = []
    for d in dumps:
        got = fp16_bits_as_fp32(evaluate_many(models, prepare(d.a, d.b, d.c, d.inputs)))
        out.append((got == d.d["fp16"][None, :]).sum(axis=1))
    return np.array(out).T


def _table(head: list, rows: list) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(x) for x in r) + " |" for r in rows])


def scores(dumps) -> str:
    names = list(NAMED)
    rows = _rows([NAMED[n] for n in names], dumps)
    body = [[f"`{n}`", describe(NAMED[n])] + [int(x) for x in r] for n, r in zip(names, rows)]
    return _table(["hypothesis", "model"] + [f"{c} fp16" for c in COLUMNS], body)


def ada(_dumps=None) -> str:
    """The named hypotheses on Ada's FP8 fp16 columns (reproduced by fpemu's Ada preset)."""
    names = list(NAMED)
    dumps = [load_dump(HWDATA / f"ada_{f}.npz") for f in ("e4m3", "e5m2")]
    rows = _rows([NAMED[n] for n in names], dumps)
    return _table(["hypothesis", "ada_e4m3 fp16", "ada_e5m2 fp16"], [[f"`{n}`"] + [int(x) for x in r] for n, r in zip(names, rows)])


def variants(dumps) -> str:
    models = [FOUND] + [Staged(**{**FOUND.as_dict(), **change}) for _, change in VARIANTS]
    rows = _rows(models, dumps)
    body = [["the found model"] + [int(x) for x in rows[0]]]
    body += [[what] + [int(x) for x in r] for (what, _), r in zip(VARIANTS, rows[1:])]
    return _table(["change to the found model"] + list(COLUMNS), body)


def residual_tables(dumps) -> str:
    parts = []
    for d in (dumps[0], dumps[2]):
        res = residuals(NAMED["fp16-sum-then-c"], d, first=0)
        steps = collections.Counter(res.ulps.tolist())
        spread = [[k, n, m, f"{m / n:.0%}"] for k, (n, m) in res.spread.items() if n >= 40]
        cdist = [[k, n, m, f"{m / n:.0%}"] for k, (n, m) in res.c_distance.items() if n >= 40]
        S = (d.a * d.b).sum(axis=1)
        exact = S.astype(np.float16).astype(np.float64) == S  # the products' sum is an fp16 value
        hit = np.isin(res.missed, np.flatnonzero(exact))
        parts.append(f"**{d.name}**, `fp16-sum-then-c` misses {res.missed.size} of {res.rows} rows; hardware minus "
                     "model in fp16 steps: " + ", ".join(f"{k:+d}: {v}" for k, v in sorted(steps.items(), key=lambda kv: -kv[1])[:8])
                     + f". Of the {int(exact.sum())} rows whose exact product sum is an fp16 value, {int(hit.sum())} are missed, "
                     f"by up to {int(np.abs(res.ulps[hit]).max())} steps.")  # fmt: skip
        parts.append(_table(["E_max - e_sum", "rows", "missed", "rate"], spread))
        parts.append(_table(["e_sum - e_c", "rows", "missed", "rate"], cdist))
    return "\n\n".join(parts)


def search(dumps) -> str:
    start = time.perf_counter()
    result = search_space(dumps, "fp8-fp16", top=40)
    seconds = time.perf_counter() - start
    good = [s for s in result.ranked if min(s.rows.values()) >= 4990]
    body = [[s.total] + list(s.rows.values()) + [describe(s.model) + (f" [`{name_of(s.model, 32)}`]" if name_of(s.model, 32) else "")]
            for s in result.ranked[:8]]  # fmt: skip
    text = (f"{result.searched} distinct models searched in {seconds:.0f} s (this machine); "
            f"{len(good)} of the 40 best reach 4990 on every column, all of them the found model's "
            "family (order bit1, two stages of 16 rounded to fp16 RNE, c after).")  # fmt: skip
    assert all(s.model.order == "bit1" and s.model.stage == 16 and s.model.c_at == "after" for s in good)
    return text + "\n\n" + _table(["total", *COLUMNS, "model"], body)


def probes(_dumps=None) -> str:
    rows, classes = [], []
    space = candidates("fp8-fp16", 32)
    for inputs in ("e4m3", "e5m2"):
        ex = fp8_fp16_experiments(inputs)
        count = collections.Counter(ex.family.tolist())
        rows.append([inputs, ex.rows] + [count[f] for f in FAMILIES])
        out = evaluate_many(space, prepare(ex.a, ex.b, ex.c, inputs))
        sig = collections.defaultdict(list)
        for i, r in enumerate(out):
            sig[np.nan_to_num(r, nan=7e7).tobytes()].append(i)
        mine = sig[np.nan_to_num(staged_dot(FOUND, ex.a, ex.b, ex.c, inputs), nan=7e7).tobytes()]
        same = sorted({describe(space[i]) for i in mine})
        classes.append(f"{inputs}: the {len(space)} models of the space fall into {len(sig)} classes of identical "
                       f"answers; the found model shares its class with {len(mine) - 1} other(s): " + "; ".join(same))  # fmt: skip
    table = _table(["inputs", "rows", *FAMILIES], rows)
    return table + "\n\n" + "\n\n".join(classes)


SECTIONS = {"scores": scores, "ada": ada, "variants": variants, "residuals": residual_tables, "search": search,
            "probes": probes}


def section(name: str) -> tuple[str, str]:
    return f"<!-- fp8-fp16:{name}:begin (generated by scripts/gen_fp8_fp16_doc.py) -->", f"<!-- fp8-fp16:{name}:end -->"


def render(names: list, dumps) -> dict:
    return {n: SECTIONS[n](dumps) for n in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="sections to regenerate (comma-separated)")
    names = [n for n in ap.parse_args().only.split(",") if n]
    dumps = _dumps()
    page = PAGE.read_text()
    for name, text in render(names, dumps).items():
        begin, end = section(name)
        head, rest = page.split(begin, 1)
        _, tail = rest.split(end, 1)
        page = f"{head}{begin}\n{text}\n{end}{tail}"
        print(f"{name}: done")
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
