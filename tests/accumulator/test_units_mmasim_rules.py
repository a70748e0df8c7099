"""One dot product per rule of the AMD models, each run through MMA-Sim and fpemu.

Random operands rarely reach some rules (a zero operand setting the alignment, an overflowing
product, an underflow's sign, a bf16 product rounded to fp32, -0 at an instruction boundary),
so each gets a hand-made case here: fpemu must equal MMA-Sim bit for bit, and the model with
that one field changed must not, which shows that the case does probe the rule.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from mmasim_helpers import patched_amd, same_bits, to_torch

from fpemu.accumulator import dot, get_accumulator

T = 2.0  # for powers of two below


@pytest.fixture
def amd(monkeypatch):
    return patched_amd(monkeypatch)


# (arch, qualifier, preset, inputs, [(a, b) per instruction], c, the field change that must
#  alter the result (None: none needed), what the case shows)
CASES = [
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([0.0, T**-60 * (1 + T**-7)], [T**100, 1.0])], 0.0,
     dict(zero_exponent=None), "a zero times 2^100 sets the alignment at 2^-26: the 2^-60 product is cut away"),
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([T**100, -(T**99)], [T**28, 1.5 * T**28])], 0.0,
     dict(product_overflow=False), "a product of 2^128 is +Inf although the sum, 2^126, is finite"),
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([T**100, -(T**100)], [T**30, T**30])], 0.0,
     dict(product_overflow=False), "overflowed products of both signs: NaN"),
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([T**100, 1.0], [T**30, 1.0])], -np.inf,
     None, "c = -Inf wins over an overflowed product (no NaN)"),
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([-(T**-100)], [T**-60])], 0.0,
     dict(signed_underflow=False), "-2^-160, floored to 31 bits below 2^-126, rounds to -0"),
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([T**-24], [1 + T**-7])], 1.0,
     dict(sum_frac_bits=30), "the product sum keeps 31 bits below c's exponent: 1 + 2^-24 + 2^-31 rounds up"),
    ("CDNA3", "f32_4x4x4_16b_bf16", "mi300/bf16_k4", "bf16", [([1.0], [2.0])], T**-23 + T**-24,
     dict(c_frac_bits=25), "c keeps 24 bits below the product's exponent: 2 + 2^-23 is a tie, to even"),
    ("CDNA1", "f32_4x4x2bf16", "mi100", "bf16", [([T**-72 * (1 + T**-7), T**-60], [T**-72, T**-60])], 0.0,
     dict(round_products=False), "the 2^-151 bit of a product is lost in its fp32 rounding: no round-up"),
    ("CDNA1", "f32_4x4x2bf16", "mi100", "bf16", [([-0.0, -0.0], [1.0, 1.0])], -0.0,
     dict(round_products=False), "fmaf(-0, 1, +0) = +0: the result is +0, not -0"),
    ("CDNA2", "f32_4x4x2bf16", "mi250/bf16", "bf16", [([T**-63, 0.0], [-(T**-62), 0.0])], 1.5 * T**-126,
     dict(flush_subnormals=False), "a subnormal result flushes to a zero of its sign: -0"),
    ("CDNA2", "f32_4x4x2bf16", "mi250/bf16", "bf16",
     [([T**-63, 0.0], [-(T**-62), 0.0]), ([-(T**-70), -(T**-70)], [T**-70, T**-70])], 1.5 * T**-126,
     dict(instruction_k=None), "the -0 of the first instruction is read as +0 by the second: +0"),
    ("CDNA2", "f32_4x4x2bf16", "mi250/bf16", "bf16", [([-(T**-70), -(T**-70)], [T**-70, T**-70])], -0.0,
     dict(flush_subnormals=False), "c = -0 is flushed to +0; +0 + -0 = +0"),
]


def run_case(amd, arch, qualifier, preset, fmt, steps, c, acc):
    """D[0, 0] of MMA-Sim's chained instructions, and fpemu's dot of the same row."""
    inst = amd.mfma(arch, qualifier)
    D = to_torch(np.zeros((inst.m, inst.n)), "fp32")
    D[0, 0] = c
    rows, cols = [], []
    for a, b in steps:
        A, B = np.zeros((inst.m, inst.k)), np.zeros((inst.k, inst.n))
        A[0, : len(a)], B[: len(b), 0] = a, b
        D = inst(to_torch(A, fmt), to_torch(B, fmt), D)
        rows.append(A[0])
        cols.append(B[:, 0])
    got = dot([np.concatenate(rows)], [np.concatenate(cols)], [c], inputs=fmt, accumulator=acc)
    return got[0], np.float32(D[0, 0].item())


@pytest.mark.parametrize("case", CASES, ids=[c[-1][:40] for c in CASES])
def test_rule_against_mmasim(amd, case):
    arch, qualifier, preset, fmt, steps, c, change, _ = case
    inst = amd.mfma(arch, qualifier)
    acc = dataclasses.replace(get_accumulator(preset, fmt), instruction_k=inst.k)
    got, want = run_case(amd, arch, qualifier, preset, fmt, steps, c, acc)
    assert same_bits(got, want), (float(got), float(want))
    if change is not None:
        changed, _ = run_case(amd, arch, qualifier, preset, fmt, steps, c, dataclasses.replace(acc, **change))
        assert not same_bits(changed, want), f"{change} does not change this case: it probes nothing"
