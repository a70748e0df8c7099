"""The intervals of fpemu.testing against outputs fpemu did not compute: the real GPUs' dumps
(../shared/hwdata) and MMA-Sim's models (../shared/mmasim; skipped without it or torch).

Each dump's results lie in its preset's interval (all but the one open B200 e5m2 row, which the
preset does not reproduce either) and in the any-order interval of the whole NVIDIA family.
MMA-Sim's AMD instructions lie in their presets' intervals and in the AMD family's; MMA-Sim's
Blackwell FP8 model (25 kept bits, truncation) lies outside the b200 preset's interval but
inside a parameter family around it (F in {25, 48}, RZ or RNE, zero operands with or without
an exponent): the family is what a test should use when the evidence disagrees.
"""

from __future__ import annotations

import numpy as np
import pytest
from mmasim_helpers import AMD, DISTRIBUTIONS, PAIRS, as_dots, nv_ptx, operands, patched_amd, to_torch
from tolerance_helpers import dump_columns, dump_dots

from fpemu.accumulator import get_accumulator
from fpemu.testing import model_family, model_interval

DUMPS = dump_columns()
OPEN = {("b200_e5m2", "d_fp32"): 4999}  # the preset reproduces 4999/5000 (docs/accumulator.md)


def dump_inside(path, column, accumulator, order) -> tuple[int, int]:
    gpu, fmt, a, b, c, want = dump_dots(path, column)
    out = "fp16" if column == "d_fp16" else "fp32"
    iv = model_interval(a, b, c, accumulator=gpu if accumulator is None else accumulator, inputs=fmt, out=out,
                        order=order, layout="dot")  # fmt: skip
    return int(iv.contains(want).sum()), want.size


@pytest.mark.skipif(not DUMPS, reason="../shared/hwdata not available")
@pytest.mark.parametrize("path,column", DUMPS, ids=[f"{p.stem}-{c}" for p, c in DUMPS])
def test_dumps_lie_in_their_presets_interval(path, column):
    inside, total = dump_inside(path, column, None, "model")
    assert inside == OPEN.get((path.stem, column), total), (inside, total)


@pytest.mark.slow
@pytest.mark.skipif(not DUMPS, reason="../shared/hwdata not available")
@pytest.mark.parametrize("path,column", DUMPS, ids=[f"{p.stem}-{c}" for p, c in DUMPS])
def test_dumps_lie_in_the_nvidia_any_order_interval(path, column):
    inside, total = dump_inside(path, column, "nvidia", "any")
    assert inside == total


def amd_run(monkeypatch, config, dist: str, chain: int, seed: int):
    """MMA-Sim's results for ``chain`` chained instructions, and their operands as dots."""
    amd = patched_amd(monkeypatch)
    arch, qualifier, preset, fmts = config
    inst = amd.mfma(arch, qualifier)
    rng = np.random.default_rng(seed)
    runs = [operands(dist, inst.m, inst.n, inst.k, *fmts, rng) for _ in range(chain)]
    D = to_torch(runs[0][2], "fp32")
    for A, B, _ in runs:
        D = inst(to_torch(A, fmts[0]), to_torch(B, fmts[1]), D)
    a, b, c = as_dots([r[0] for r in runs], [r[1] for r in runs], runs[0][2])
    acc = get_accumulator(preset, fmts, instruction=qualifier)  # the instruction's family and K
    return a, b, c, D.numpy().reshape(-1), acc, fmts


def check_amd(monkeypatch, config, dists, chains=(1, 2)) -> None:
    for i, dist in enumerate(dists):
        for chain in chains:
            a, b, c, want, acc, fmts = amd_run(monkeypatch, config, dist, chain, seed=31 * i + chain)
            for accumulator, order in ((acc, "model"), ("amd", "model"), ("amd", "any")):
                iv = model_interval(a, b, c, accumulator=accumulator, inputs=fmts, order=order, layout="dot")
                inside = iv.contains(want)
                assert inside.all(), (config[1], dist, chain, order, int((~inside).sum()))


QUICK = [c for c in AMD if c[:2] in (("CDNA2", "f32_16x16x8bf16"), ("CDNA3", "f32_16x16x4_4b_f16"))]


@pytest.mark.parametrize("config", QUICK, ids=[f"{c[0]}-{c[1]}" for c in QUICK])
def test_mmasim_amd_outputs_lie_in_the_intervals(monkeypatch, config):
    check_amd(monkeypatch, config, ("cancel",), chains=(1,))


@pytest.mark.slow
@pytest.mark.parametrize("config", AMD, ids=[f"{c[0]}-{c[1]}" for c in AMD])
def test_mmasim_amd_outputs_lie_in_the_intervals_sweep(monkeypatch, config):
    check_amd(monkeypatch, config, DISTRIBUTIONS)


def blackwell_run(fmts, dist: str, seed: int):
    inst = nv_ptx().tcgen05mma("Blackwell", f"m64n8k32.f32.{fmts[0]}.{fmts[1]}")
    A, B, C = operands(dist, inst.m, inst.n, inst.k, *fmts, np.random.default_rng(seed))
    D = inst(to_torch(A, fmts[0]), to_torch(B, fmts[1]), to_torch(C, "fp32")).numpy().reshape(-1)
    return (*as_dots([A], [B], C), D)


def check_blackwell(fmts, dists) -> None:
    family = model_family("b200", fmts, frac_bits=(25, 48), out_rounding=("rz", "rne"), zero_exponent=(None, -126))
    outside_preset = 0
    for i, dist in enumerate(dists):
        a, b, c, want = blackwell_run(fmts, dist, seed=40 + i)
        assert model_interval(a, b, c, accumulator=family, inputs=fmts, layout="dot").contains(want).all()
        outside_preset += int((~model_interval(a, b, c, accumulator="b200", inputs=fmts, layout="dot").contains(want)).sum())
    assert outside_preset > 0  # the preset alone does not admit MMA-Sim's model: the dumps side with it


def test_mmasim_blackwell_lies_in_a_family_around_the_b200_preset():
    check_blackwell(("e4m3", "e4m3"), ("uniform",))


@pytest.mark.slow
@pytest.mark.parametrize("fmts", PAIRS, ids=["x".join(p) for p in PAIRS])
def test_mmasim_blackwell_lies_in_a_family_around_the_b200_preset_sweep(fmts):
    check_blackwell(fmts, DISTRIBUTIONS)
