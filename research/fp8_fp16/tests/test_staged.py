"""Staged models (research.fp8_fp16.staged, issue 18): the vectorized kernel against a scalar
Fraction transcription of the model's words, the search on the hardware dumps (the H100/B200 FP8
fp16 columns), search spaces as data, ``python -m research.fp8_fp16 fit``, and ``fpemu fit``'s hint that names it."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fpemu import cli
from fpemu.codec import quantize
from fpemu.fit import load_dump
from fpemu.formats import get_format
from research.fp8_fp16 import cli as research_cli
from research.fp8_fp16.spaces import SPACES, candidates, load_space, name_of
from research.fp8_fp16.staged import MIDS, NAMED, Staged, describe, order_of
from research.fp8_fp16.staged_kernel import evaluate_many, fp16_bits_as_fp32, prepare, round_to, staged_dot
from research.fp8_fp16.staged_search import residuals, search_space

HWDATA = Path(__file__).resolve().parents[4] / "shared" / "hwdata"
COLUMNS = ("h100_e4m3", "h100_e5m2", "b200_e4m3", "b200_e5m2")


def _dump(name: str):
    path = HWDATA / f"{name}.npz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return load_dump(path)


# ---- a scalar reference, written from the words of research/fp8_fp16/staged.py -------------
def _exp(x: Fraction, emin: int) -> int:
    """floor(log2 |x|), at least emin."""
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    if Fraction(n, d) < Fraction(2) ** e:
        e -= 1
    return max(e, emin)


def _round(x: Fraction, mid: str, mode: str):
    if MIDS[mid] is None or x == 0:
        return x
    bits, emin, top = MIDS[mid]
    ulp = Fraction(2) ** (_exp(x, emin) - bits + 1)
    r = (round(x / ulp) if mode == "rne" else math.trunc(x / ulp)) * ulp  # round(): half to even
    if abs(r) > Fraction(top):
        return math.copysign(math.inf, x) if mode == "rne" else math.copysign(top, x)
    return r


def _reference(m: Staged, a: list, b: list, c: float, inputs: str) -> float:
    emin = get_format(inputs).emin
    c = float(np.float16(c)) if m.c_format == "fp16" else float(np.float32(c))
    terms = [(Fraction(x) * Fraction(y), _exp(Fraction(x), emin) + _exp(Fraction(y), emin)) for x, y in zip(a, b)]
    order = order_of(m.order, len(a))
    stages = [order[s : s + m.stage] for s in range(0, len(a), m.stage)]
    acc = Fraction(0)
    for i, ks in enumerate(stages):
        part = [terms[k] for k in ks if terms[k][0] != 0]
        if acc != 0:
            part.append((acc, _exp(acc, -1022 if MIDS[m.mid] is None else MIDS[m.mid][1])))
        if c != 0 and ((m.c_at == "first" and i == 0) or (m.c_at == "last" and i == len(stages) - 1)):
            part.append((Fraction(c), _exp(Fraction(c), -14 if m.c_format == "fp16" else -126)))
        if not part:
            acc = Fraction(0)
            continue
        E = max(e for _, e in part)
        unit = Fraction(2) ** (E - m.frac_bits) if m.frac_bits is not None else None
        cut = (math.trunc if m.term_rounding == "rz" else math.floor) if unit else None
        acc = _round(sum((cut(v / unit) * unit if unit else v) for v, _ in part), m.mid, m.mid_rounding)
        if isinstance(acc, float):
            return acc
    if m.c_at != "after":
        return float(_round(acc, "fp16", m.final))
    if m.convert is not None:
        acc = _round(acc, "fp16", m.convert)
        if isinstance(acc, float):
            return acc + c
    total = acc + Fraction(c)
    if m.c_add == "fp32":
        total = _round(total, "fp32", "rne")
    return float(_round(total, "fp16", m.final))


def _fp8_rows(inputs: str, rows: int, K: int, seed: int):
    rng = np.random.default_rng(seed)
    fmt = get_format(inputs)
    a = quantize(rng.standard_normal((rows, K)) * 2.0 ** rng.integers(-6, 3, (rows, K)), fmt, overflow="saturate")
    b = quantize(rng.standard_normal((rows, K)) * 2.0 ** rng.integers(-6, 3, (rows, K)), fmt, overflow="saturate")
    a[rng.random((rows, K)) < 0.05] = 0
    c = rng.standard_normal(rows) * 2.0 ** rng.integers(-8, 4, rows)
    c[rng.random(rows) < 0.05] = 0
    return a, b, c


def test_kernel_agrees_with_the_fraction_reference():
    space = candidates("fp8-fp16", 32)
    pick = list(NAMED.values()) + random.Random(0).sample(space, 60)
    pick += [Staged(order="bit0", stage=4, frac_bits=16, term_rounding="rd", mid="e8m13", mid_rounding="rz"),
             Staged(order="bit2", stage=8, frac_bits=13, term_rounding="rd", c_at="last", c_format="fp32"),
             Staged(stage=32, frac_bits=13, mid="e8m13", mid_rounding="rz", c_format="fp32", convert=None, c_add="fp32")]  # fmt: skip
    for inputs, seed in (("e4m3", 1), ("e5m2", 2)):
        a, b, c = _fp8_rows(inputs, 40, 32, seed)
        got = evaluate_many(pick, prepare(a, b, c, inputs))
        for m, row in zip(pick, got):
            want = [_reference(m, a[i].tolist(), b[i].tolist(), c[i], inputs) for i in range(len(c))]
            assert np.array_equal(row, want), describe(m)


def test_kernel_edge_cases_against_the_reference():
    # Ties at the fp16 stage rounding, subnormal products, overflow past 65504, -0 results.
    cases = [
        ([1.0, 2.0**-11, 0, 0], [1, 1, 1, 1], 0.0),  # 1 + half an ulp: a tie, to even
        ([1.0, 3 * 2.0**-11, 0, 0], [1, 1, 1, 1], 0.0),  # 1 + 1.5 ulp: up
        ([2.0**-16, 2.0**-16, 0, 0], [2.0**-16, 1, 0, 0], 0.0),  # e5m2: a product of 2^-32
        ([448.0, 448.0, 448.0, 0], [448.0, 1, 1, 0], 0.0),  # 200704 overflows fp16
        ([1.0, -1.0, 0, 0], [1, 1, 0, 0], -0.0),  # an exact zero
        ([1.0, 2.0**-12, 0, 2.0**-12], [1, 1, 0, 1], 2.0**-12),
    ]
    models = list(NAMED.values()) + [Staged(stage=2, mid="fp16", mid_rounding="rz", c_at="after", final="rz"),
                                     Staged(order="bit1", stage=2, frac_bits=8, mid="fp16", convert=None)]  # fmt: skip
    for a, b, c in cases:
        for m in models:
            got = staged_dot(m, np.array([a]), np.array([b], dtype=float), [c], "e5m2")[0]
            want = _reference(m, a, [float(x) for x in b], c, "e5m2")
            assert got == want and math.copysign(1, got) == 1 or (np.isnan(got) and np.isnan(want)), (describe(m), a, got, want)


def test_round_to_agrees_with_the_codec():
    rng = np.random.default_rng(3)
    v = rng.standard_normal(4000) * 2.0 ** rng.integers(-30, 20, 4000)
    v = np.concatenate([v, [65504.0, 65519.99, 65520.0, 2.0**-25, 3 * 2.0**-26, 0.0]])
    # (dataclasses.replace, not __dict__: that also holds the format's cached properties once used)
    e8m13 = dataclasses.replace(get_format("fp32"), name="e8m13", mantissa_bits=13)
    for mid, fmt in (("fp16", "fp16"), ("e8m13", e8m13), ("fp32", "fp32")):
        for mode, rounding in (("rne", "nearest_even"), ("rz", "toward_zero")):
            with np.errstate(all="ignore"):
                want = quantize(v, fmt, rounding=rounding)
            assert np.array_equal(round_to(v, mid, mode), want + 0.0), (mid, mode)


# ---- the hardware dumps ----------------------------------------------------------------------
@pytest.mark.parametrize("name", COLUMNS)
def test_the_found_model_reproduces_every_fp16_row(name):
    d = _dump(name)
    got = fp16_bits_as_fp32(staged_dot(NAMED["hopper-fp8-fp16"], d.a, d.b, d.c, d.inputs))
    assert np.array_equal(got, d.d["fp16"])


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_the_staged_kernel_reproduces_ada_as_the_accumulator_preset_does(fmt):
    from fpemu.accumulator import dot

    d = _dump(f"ada_{fmt}")
    got = fp16_bits_as_fp32(staged_dot(NAMED["ada-two-blocks"], d.a, d.b, d.c, d.inputs))
    assert np.array_equal(got, d.d["fp16"])
    preset = dot(d.a[:500], d.b[:500], d.c[:500], inputs=d.inputs, accumulator="ada", out="fp16")
    assert np.array_equal(preset.astype(np.float32).view(np.uint32), got[:500])


# Rows of 5000 each named hypothesis reproduces (docs/fp8-fp16-output.md, scripts/gen_fp8_fp16_doc.py).
SCORES = {
    "wgmma-block32-f13": (3113, 3340, 3094, 3375), "ada-two-blocks": (2789, 2936, 2822, 2943),
    "fp16-sum-then-c": (3931, 4212, 3929, 4241), "exact-rne": (3120, 3356, 3108, 3403),
    "e8m13-then-fp16": (3121, 3343, 3099, 3372), "fp32-halves-then-fp16": (3120, 3356, 3108, 3403),
    "split-k-fp16-then-c": (3477, 3821, 3500, 3850),
}  # fmt: skip


def test_the_ruled_out_hypotheses_keep_their_scores():
    dumps = [_dump(n) for n in COLUMNS]
    ops = [prepare(d.a, d.b, d.c, d.inputs) for d in dumps]
    for name, want in SCORES.items():
        got = tuple(int((fp16_bits_as_fp32(evaluate_many([NAMED[name]], o)[0]) == d.d["fp16"]).sum()) for o, d in zip(ops, dumps))
        assert got == want, name


def test_the_dumps_pin_the_order_and_where_c_enters():
    d = _dump("h100_e4m3")
    ops = prepare(d.a, d.b, d.c, d.inputs)
    found = NAMED["hopper-fp8-fp16"]
    variants = [Staged(**{**found.as_dict(), **change}) for change in
                ({"order": o} for o in ("natural", "bit0", "bit2", "bit3"))]  # fmt: skip
    variants += [Staged(**{**found.as_dict(), "c_at": at}) for at in ("first", "last")]
    variants += [Staged(**{**found.as_dict(), "mid_rounding": "rz"}), Staged(**{**found.as_dict(), "frac_bits": 16})]
    rows = (fp16_bits_as_fp32(evaluate_many(variants, ops)) == d.d["fp16"]).sum(axis=1)
    assert rows[:-1].max() < 4990 and rows[-1] < 5000, rows  # F >= 18 is needed (16 misses 4 rows)


def test_search_on_a_small_space_finds_the_model(tmp_path):
    dumps = [_dump(n) for n in ("h100_e4m3", "b200_e5m2")]
    space = {"axes": {"order": ["natural", "bit0", "bit1"], "stage": [8, 16, 32], "frac_bits": [13, 25],
                      "mid": ["fp16", "exact"], "c_at": ["first", "after"]}}  # fmt: skip
    path = tmp_path / "space.json"
    path.write_text(json.dumps(space))
    result = search_space(dumps, str(path), top=3)
    assert result.fits and name_of(result.best.model, 32) == "hopper-fp8-fp16"
    assert result.ranked[1].total < 10000
    res = residuals(NAMED["fp16-sum-then-c"], dumps[0], first=3)
    assert res.missed.size == 5000 - 3931 and len(res.table) == 3
    assert sum(m for _, m in res.spread.values()) == res.missed.size


@pytest.mark.slow
def test_the_full_fp8_fp16_space_ranks_the_found_model_first():
    dumps = [_dump(n) for n in COLUMNS]
    result = search_space(dumps, "fp8-fp16")
    assert result.fits and name_of(result.best.model, 32) == "hopper-fp8-fp16"
    assert all(s.total < 20000 for s in result.ranked[2:])


def test_search_recovers_a_synthetic_staged_model(tmp_path):
    model = Staged(order="bit0", stage=8, frac_bits=16, mid="e8m13", mid_rounding="rz", c_at="after", convert="rz")
    a, b, c = _fp8_rows("e4m3", 3000, 32, 7)
    d16 = fp16_bits_as_fp32(staged_dot(model, a, b, c, "e4m3"))
    bits = lambda x: np.asarray(x, dtype=np.float32).view(np.uint32)  # noqa: E731
    path = tmp_path / "synthetic_e4m3.npz"
    np.savez(path, a=bits(a), b=bits(b), c=bits(c), d_fp16=d16)
    result = search_space([load_dump(path)], "fp8-fp16", top=20)
    assert result.fits and model.key(32) in {s.model.key(32) for s in result.ranked if s.total == 3000}


# ---- spaces as data and the command line -----------------------------------------------------
def test_spaces_fold_choices_that_cannot_matter(tmp_path):
    ms = candidates("fp8-fp16", 32)
    assert len({m.key(32) for m in ms}) == len(ms)
    assert ms[: len(NAMED)] == list(NAMED.values())
    assert Staged(order="bit1", stage=32).key(32) == Staged(stage=32).key(32)
    assert Staged(mid="fp16", convert="rz").key(32) == Staged(mid="fp16", convert=None).key(32)
    assert load_space("fp8-fp16") is SPACES["fp8-fp16"]
    for text, match in (("[1, 2]", "a JSON object"), ('{"axes": {"colour": [1]}}', "unknown axes colour"),
                        ('{"axes": {"stage": []}}', "non-empty list"), ("{", "not JSON")):  # fmt: skip
        p = tmp_path / "bad.json"
        p.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_space(str(p))
    p.write_text('{"axes": {"stage": [0]}}')
    with pytest.raises(ValueError, match="stage must be a positive integer"):
        candidates(str(p), 32)
    # (a regression: NumPy integers wherever an int is taken, and no bool for one)
    assert Staged(stage=np.int64(16), frac_bits=np.int32(20)) == Staged(stage=16, frac_bits=20)
    with pytest.raises(ValueError, match="stage must be"):
        Staged(stage=True)
    with pytest.raises(ValueError, match="unknown search space 'nope'"):
        load_space("nope")


def test_fit_cli_space(capsys, tmp_path):
    paths = [str(HWDATA / f"{n}.npz") for n in ("h100_e5m2", "b200_e4m3")]
    _dump("h100_e5m2")
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"axes": {"order": ["natural", "bit1"], "stage": [16, 32], "mid": ["fp16", "exact"]}}))
    assert research_cli.main(["fit", *paths, "--space", str(space), "--top", "2", "--residuals", "1"]) == 0
    out, err = capsys.readouterr()
    assert "reproduces every row" in out and "[hopper-fp8-fp16]" in out and err == ""
    assert "residual rows of the best named hypothesis that misses rows, fp16-sum-then-c" in out
    assert "h100_e5m2:fp16: 788 of 5000 rows missed" in out
    # A column no model reproduces (a synthetic one, one row off by an fp16 step): status 1.
    d = _dump("h100_e5m2")
    bits = lambda x: np.asarray(x, dtype=np.float32).view(np.uint32)  # noqa: E731
    d16 = d.d["fp16"].copy()
    d16[7] += 1 << 13  # the next fp16 value
    odd = tmp_path / "odd_e5m2.npz"
    np.savez(odd, a=bits(d.a), b=bits(d.b), c=bits(d.c), d_fp16=d16)
    assert research_cli.main(["fit", str(odd), "--space", str(space), "--top", "1", "--residuals", "1"]) == 1
    out, err = capsys.readouterr()
    assert "best: order bit1" in out and "reproduces 4999 of 5000 rows" in out
    assert "odd_e5m2:fp16: 1 of 5000 rows missed" in out and "    7     " in out
    assert err == f"research.fp8_fp16: error: no model of the search space {space} reproduces every row of odd_e5m2:fp16\n"
    assert research_cli.main(["fit", paths[0], "--space", "nope"]) == 2
    assert capsys.readouterr().err.startswith("research.fp8_fp16: error: unknown search space 'nope'")
    assert research_cli.main(["fit", paths[0], "--space", "fp8-fp16", "--out", "fp32"]) == 2
    assert "not searchable" in capsys.readouterr().err
    assert research_cli.main(["fit", paths[0], "--space", "block"]) == 2
    assert f"--space block is the library's search: fpemu fit {paths[0]}" in capsys.readouterr().err
    assert research_cli.main(["fit", str(tmp_path / "absent_e4m3.npz")]) == 2  # a missing file: usage
    assert research_cli.main(["fit", paths[0], "--top", "0"]) == 2
    assert research_cli.main(["fit"]) == 2  # a dump is required
    err = capsys.readouterr().err
    assert [line.split(": error: ")[0] for line in err.splitlines()] == ["research.fp8_fp16"] * 3


def test_fit_cli_space_as_a_module(tmp_path):
    """python -m research.fp8_fp16 fit from the repository root: the same report, one-line errors."""
    import subprocess
    import sys

    _dump("h100_e5m2")
    root = Path(__file__).resolve().parents[3]
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"axes": {"order": ["bit1"], "stage": [16], "mid": ["fp16"]}}))
    run = lambda *a: subprocess.run([sys.executable, "-m", "research.fp8_fp16", *a], cwd=root,  # noqa: E731
                                    capture_output=True, text=True, timeout=300)  # fmt: skip
    done = run("fit", str(HWDATA / "h100_e5m2.npz"), "--space", str(space), "--top", "1", "--json")
    assert done.returncode == 0 and done.stderr == ""
    got = json.loads(done.stdout)
    assert got["fits"] and got["ranked"][0]["rows"] == {"h100_e5m2:fp16": 5000}
    done = run("fit", str(HWDATA / "h100_e5m2.npz"), "--space", "nope")
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("research.fp8_fp16: error: unknown search space 'nope'")


def test_fit_block_hint_names_the_new_command(capsys, tmp_path):
    """An FP8 fp16 column no block model reproduces (the H100 one with a row one fp16 step
    off): the hint names the moved search."""
    d = _dump("h100_e5m2")
    bits = lambda x: np.asarray(x, dtype=np.float32).view(np.uint32)  # noqa: E731
    d16 = d.d["fp16"].copy()
    d16[7] += 1 << 13
    path = tmp_path / "odd_e5m2.npz"
    np.savez(path, a=bits(d.a), b=bits(d.b), c=bits(d.c), d_fp16=d16)
    assert cli.main(["fit", str(path), "--out", "fp16", "-q"]) == 1
    out = capsys.readouterr().out
    assert f"hint: FP8 with fp16 output runs in stages: python -m research.fp8_fp16 fit {path} " in out


def test_fpemu_never_imports_research():
    """Not even its whole command line, run where research/ is importable (the repository root)."""
    import subprocess
    import sys

    code = ("import fpemu, fpemu.fit, fpemu.probe, fpemu.cli; fpemu.cli._register_feature_commands(); "
            "import sys; print(' '.join(sorted(sys.modules)))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3],
                          capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    modules = done.stdout.split()
    assert "fpemu.fit.cli" in modules and "fpemu.probe.cli" in modules
    assert [m for m in modules if m.split(".")[0] == "research"] == []


# ---- docs/fp8-fp16-output.md: its quick tables are what the script gives ---------------------
def test_the_doc_tables_are_current():
    from script_helpers import ROOT, load_script

    for n in COLUMNS:
        _dump(n)
    gen = load_script("scripts/gen_fp8_fp16_doc.py")
    page = (ROOT / "docs" / "fp8-fp16-output.md").read_text()
    for name, text in gen.render(["scores", "ada", "variants", "residuals"], gen._dumps()).items():
        begin, end = gen.section(name)
        assert page.split(begin, 1)[1].split(end, 1)[0].strip() == text.strip(), f"run scripts/gen_fp8_fp16_doc.py --only {name}"
