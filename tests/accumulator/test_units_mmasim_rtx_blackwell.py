"""RTX Blackwell (sm_120: ``rtx5090``, ``rtx5080``, ``rtxpro6000``, ``rtx-blackwell``) against
MMA-Sim itself, bit for bit, instruction by instruction.

The preset is MMA-Sim's model written as data (fpemu/accumulator/units.py; no dump of an sm_120
GPU exists here), so MMA-Sim is the whole evidence: every dense ``mma`` qualifier MMA-Sim lists
for "RTX Blackwell" (but f64) runs on random operands from the five distributions of
tests/mmasim_helpers.py (uniform, wide exponents, heavy cancellation, subnormal-heavy, Inf/NaN
sprinkled; signed zeros in all), one instruction and two chained ones (the first result is the
second's c), and ``fpemu.dot`` with that instruction looked up by its name must give the same
fp32 (or fp16) bits; any NaN equals any NaN. ``pytest -s`` prints the counts, ``-m slow`` runs
four times as many. MMA-Sim crashes on e2m1 operands (its torch dtype is uint8): those
instructions are shown to crash, and are left to the Fraction references. Random operands
rarely reach some rules, so hand-made dots probe each one (the changed field must change the
result). The block-scaled ``mma.block_scale`` instructions are in
tests/accumulator/test_units_mmasim_block_scaled.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from mmasim_helpers import DISTRIBUTIONS, as_dots, mmasim, nv_ptx, operands, same_bits, to_torch

from fpemu import quantize
from fpemu.accumulator import dot, get_accumulator, units

ARCH = "RTX Blackwell"
_OUT = {"f32": "fp32", "f16": "fp16"}
_IN = {"f16": "fp16", "bf16": "bf16", "tf32": "tf32", "e4m3": "e4m3", "e5m2": "e5m2", "e2m1": "e2m1"}


def dense_instructions() -> list[str]:
    """Every dense instruction of the rtx-blackwell rows, in table order."""
    return [q for fam in units.families("rtx-blackwell", False).values() for q in fam["instructions"]]


def formats_of(qualifier: str) -> tuple[tuple[str, str], str]:
    """((A's format, B's format), output format) of an mma qualifier ``shape.d.a.b.c``."""
    _, d, a, b, _ = qualifier.split(".")
    return (_IN[a], _IN[b]), _OUT[d]


RUNNABLE = [q for q in dense_instructions() if "e2m1" not in q]
CRASHING = [q for q in dense_instructions() if "e2m1" in q]


def compare(qualifier: str, dist: str, chain: int, seed: int) -> tuple[int, int]:
    """(identical dots, dots): MMA-Sim's instruction ``chain`` times, each result the next c,
    against fpemu's rtx5090 preset looked up by the instruction's name."""
    inst = nv_ptx().mma(ARCH, qualifier)
    fmts, out = formats_of(qualifier)
    rng = np.random.default_rng(seed)
    parts = [operands(dist, inst.m, inst.n, inst.k, *fmts, rng) for _ in range(chain)]
    C = np.asarray(quantize(parts[0][2], out), dtype=np.float64)  # c has the output's type
    D = to_torch(C, out)
    for A, B, _ in parts:
        D = inst(to_torch(A, fmts[0]), to_torch(B, fmts[1]), D)
    acc = get_accumulator("rtx5090", fmts, instruction=qualifier)
    assert acc.block == inst.k, (acc.block, inst.k)  # one fused sum per instruction: no split-k
    a, b, c = as_dots([p[0] for p in parts], [p[1] for p in parts], C)
    got = dot(a, b, c, inputs=fmts, accumulator=acc, out=out)
    return int(same_bits(got, D.float().numpy().reshape(-1)).sum()), got.size


def run(qualifier: str, repeat: int) -> dict[str, tuple[int, int]]:
    counts = {}
    for i, dist in enumerate(DISTRIBUTIONS):
        same = total = 0
        for r in range(repeat):
            for chain in (1, 2):
                s, n = compare(qualifier, dist, chain, seed=1000 * r + 10 * i + chain)
                same, total = same + s, total + n
        counts[dist] = (same, total)
    print(f"\n{ARCH} mma.{qualifier} vs rtx5090: " + ", ".join(f"{d} {s}/{n}" for d, (s, n) in counts.items()))
    return counts


def test_every_mmasim_instruction_is_listed():
    """The table lists every dense mma qualifier MMA-Sim has for RTX Blackwell (f64 aside), each
    once; the block-scale ones are the block-scaled kinds' (scale, block) pairs."""
    mmasim()
    from mmasim.isa.nv_ptx.nv_mma import arch_mma_block_scale_qualifiers, arch_mma_qualifiers

    ours = dense_instructions()
    assert len(ours) == len(set(ours))
    assert set(ours) == {q for q in arch_mma_qualifiers[ARCH] if ".f64." not in q}
    kinds = units.families("rtx-blackwell", True)
    theirs = set()
    for q in arch_mma_block_scale_qualifiers[ARCH]:
        shape, block, _, a, b, _, scale = q.split(".")
        kind = "mxf4nvf4" if shape.endswith("k64") else "mxf8f6f4"
        theirs.add((kind, a, b, {"ue8m0": "e8m0"}.get(scale, scale), int(block.removeprefix("block"))))
    ours_scaled = {(k, a, b, s, n) for k, fam in kinds.items() for a in fam["takes"] for b in fam["takes"]
                   if a == b or fam["mixed"] for s, n in fam["scales"]}  # fmt: skip
    fp6 = ("e3m2", "e2m3")  # MMA-Sim: TODO; fpemu applies its rules
    assert theirs == {t for t in ours_scaled if t[1] not in fp6 and t[2] not in fp6}


@pytest.mark.parametrize("qualifier", RUNNABLE)
def test_rtx_blackwell_equals_mmasim(qualifier):
    counts = run(qualifier, repeat=1)
    assert all(s == n for s, n in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("qualifier", RUNNABLE)
def test_rtx_blackwell_equals_mmasim_sweep(qualifier):
    counts = run(qualifier, repeat=4)
    assert all(s == n for s, n in counts.values()), counts


@pytest.mark.parametrize("qualifier", CRASHING[:1] + CRASHING[-1:])
def test_mmasim_cannot_run_e2m1_operands(qualifier):
    """Why e2m1 is checked against Fractions, not MMA-Sim: its torch dtype is uint8, which
    MMA-Sim's arithmetic refuses (an assertion)."""
    inst = nv_ptx().mma(ARCH, qualifier)
    with pytest.raises(AssertionError):
        inst.dotadd([1.0] * inst.k, [1.0] * inst.k, 0.0)


T = 2.0
# (qualifier, a, b, c, the field change that must alter the result, what the case shows)
CASES = [
    ("m16n8k16.f32.f16.f16.f32", [0.0], [T**15], T**-140, dict(zero_exponent=None),
     "a zero times 2^15 counts as 2^-111: c = 2^-140 falls below the 25 kept bits, +0"),
    ("m16n8k32.f32.e4m3.e4m3.f32", [0.0], [T**8], -(T**-147), dict(zero_exponent=None),
     "a zero e4m3 times 2^8 counts as 2^-118: c = -2^-147 is cut, +0"),
    ("m16n8k16.f32.f16.f16.f32", [1.0, -(1 - T**-11), T**-13], [1.0, 1.0, T**-13], 0.0, dict(frac_bits=26),
     "1 - (1 - 2^-11) + 2^-26: the 2^-26 term lies below F = 25 (truncated)"),
    ("m16n8k16.f32.f16.f16.f32", [1.0] * 2 + [T**-13] * 14, [1.0] * 2 + [T**-12] * 14, 0.0,
     dict(block=8), "14 products of 2^-25 with 2 ones: one fused sum of 16, no split-k"),
    ("m16n8k32.f32.e5m2.e5m2.f32", [T**-16] * 4, [T**-16] * 4, T**-100, None,
     "subnormal e5m2 products (2^-32 each, exponent -14 - 14 in MMA-Sim's terms) and a tiny c"),
    ("m16n8k32.f16.e4m3.e4m3.f16", [16.0, 0.5, T**-9], [16.0, 0.25, T**-9], 0.0, dict(frac_bits=26),
     "fp16 output: 256 + 2^-3 + 2^-18, the 2^-18 cut (F = 25), is a tie: RNE to 256"),
    ("m16n8k16.f32.bf16.bf16.f32", [T**100, -(T**100), 1.0], [T**20, T**20, T**-30], 1.0, None,
     "heavy cancellation: 2^120 - 2^120 leaves 1 + 2^-30, but only bits down to 2^95 were kept"),
    ("m16n8k16.f32.f16.f16.f32", [np.inf, 0.0], [1.0, 1.0], -np.inf, None, "Inf - Inf: NaN"),
    ("m16n8k8.f32.tf32.tf32.f32", [T**-126, T**-126], [T**-20, -(T**-21)], 0.0, None,
     "a sum below fp32's subnormals truncates to +0"),
]


def one_dot(qualifier, a, b, c, acc):
    """D[0, 0] of MMA-Sim's instruction, and fpemu's dot of the same row."""
    inst = nv_ptx().mma(ARCH, qualifier)
    fmts, out = formats_of(qualifier)
    A, B, C = np.zeros((inst.m, inst.k)), np.zeros((inst.k, inst.n)), np.zeros((inst.m, inst.n))
    A[0, : len(a)], B[: len(b), 0], C[0, 0] = a, b, c
    D = inst(to_torch(A, fmts[0]), to_torch(B, fmts[1]), to_torch(C, out))
    got = dot([A[0]], [B[:, 0]], [c], inputs=fmts, accumulator=acc, out=out)
    return got[0], np.float32(D[0, 0].item())


@pytest.mark.parametrize("case", CASES, ids=[c[-1][:40] for c in CASES])
def test_rule_against_mmasim(case):
    qualifier, a, b, c, change, _ = case
    fmts, _ = formats_of(qualifier)
    acc = get_accumulator("rtx-blackwell", fmts, instruction=qualifier)
    got, want = one_dot(qualifier, a, b, c, acc)
    assert same_bits(got, want), (float(got), float(want))
    if change is not None:
        changed, _ = one_dot(qualifier, a, b, c, dataclasses.replace(acc, **change))
        assert not same_bits(changed, want), f"{change} does not change this case: it probes nothing"


def test_overflow_under_rz_is_where_fpemu_and_mmasim_differ():
    """A finite sum of 2^128 (tf32 2^64 * 2^64): MMA-Sim's truncated result still becomes Inf,
    fpemu's RZ gives the largest finite value (IEEE; no dump decides, docs/accumulator.md).
    fp16, bf16 and FP8 products are too small to reach it from a finite c."""
    got, want = one_dot("m16n8k8.f32.tf32.tf32.f32", [T**64], [T**64], 0.0, get_accumulator("rtx5090", "tf32"))
    assert float(got) == float(np.finfo(np.float32).max) and want == np.inf
