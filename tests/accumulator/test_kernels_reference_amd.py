"""The AMD models and Blackwell's (B200 and RTX) FP6/FP4 operands against scalar references in exact rational
arithmetic (``fractions.Fraction``), on hypothesis-drawn matrices.

The references follow MMA-Sim's rules as written (simulator/amd.py, arithmetic.py), one
element at a time, sharing no code with fpemu's kernels; tests/accumulator/test_units_mmasim*.py
compare with MMA-Sim itself. Here K runs over several groups and past them (a short last group: fpemu pads
it with zeros, as a kernel does), which MMA-Sim's fixed-K instructions never show.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from .test_kernels_reference import (
    SETTINGS,
    SLOW,
    _each,
    _floor_log2,
    _same,
    fmt_round,
    matrices,
    ref_add,
    ref_block,
    values,
)

from fpemu.accumulator import Accumulator, gemm, get_accumulator
from fpemu.formats import get_format

TINY32 = 2.0**-126


def both(**strategies):
    """@given(**strategies) with the default budget, plus a slow-marked twin ``<name>_sweep``
    in this module (2000 examples, ``pytest -m slow``)."""

    def decorate(fn):
        globals()[fn.__name__ + "_sweep"] = pytest.mark.slow(SLOW(given(**strategies)(fn)))
        return SETTINGS(given(**strategies)(fn))

    return decorate


def ref_cdna_tree(a, b, c: float, fmt: str, group: int, flush: bool) -> float:
    """CDNA1/2 fp16/bf16: inputs and c below the smallest normal read as +0 (flush); each
    product is fmaf(a, b, +0): rounded to fp32, an exact zero +0; a group of products (padded
    with +0) summed as MMA-Sim's halving tree in fp32 RNE; the group's value added to the
    accumulator in fp32 RNE; every rounded result below 2^-126 flushed to a zero of its sign."""
    ftz = (lambda x: math.copysign(0.0, x) if abs(x) < TINY32 else x) if flush else (lambda x: x)
    tiny = get_format(fmt).min_normal
    if flush:
        a = [0.0 if abs(x) < tiny else x for x in a]
        b = [0.0 if abs(y) < tiny else y for y in b]
        c = 0.0 if abs(c) < TINY32 else c

    def product(x: float, y: float) -> float:
        exact = Fraction(x) * Fraction(y)
        return ftz(fmt_round(exact, "fp32")) if exact != 0 else 0.0

    def tree(v: list[float]) -> float:
        if len(v) == 1:
            return v[0]
        m = len(v) // 2
        return ftz(ref_add(tree(v[:m]), tree(v[m:]), "fp32"))

    acc = c
    for s in range(0, len(a), group):
        leaves = [product(x, y) for x, y in zip(a[s : s + group], b[s : s + group])]
        acc = ftz(ref_add(acc, tree(leaves + [0.0] * (group - len(leaves))), "fp32"))
    return acc


def _exponent(x: float, emin: int) -> int:
    """MMA-Sim's exponent of an operand: a zero counts as -126, a subnormal as emin."""
    return -126 if x == 0 else max(_floor_log2(abs(Fraction(x))), emin)


def _cut(v: Fraction, E: int, bits: int, how) -> Fraction:
    unit = Fraction(2) ** (E - bits)
    return how(v / unit) * unit


def ref_cdna3(a, b, c: float, group: int, fa: str, fb: str, fp8: bool) -> float:
    """CDNA3: per group, every product truncated to 24 fraction bits below the largest product
    exponent (of its lane: even and odd products apart for FP8, each lane then floored to 24
    bits below the larger lane exponent); M = max(that exponent, c's); the product sum floored
    to 31 bits below M, c to 24 (FP8: 0 when more than 25 binades below M); the sum rounded
    RNE to fp32 (an underflow keeps its sign). A product >= 2^128: Inf (both signs: NaN)."""
    ea, eb = get_format(fa).emin, get_format(fb).emin
    for s in range(0, len(a), group):
        if not math.isfinite(c):
            return c  # the products are finite: an Inf or NaN accumulator stays
        idx = range(s, min(s + group, len(a)))
        prods = {i: (Fraction(a[i]) * Fraction(b[i]), _exponent(a[i], ea) + _exponent(b[i], eb)) for i in idx}
        big = {p > 0 for p, _ in prods.values() if abs(p) >= 2**128}
        if big:
            c = math.nan if len(big) == 2 else (math.inf if True in big else -math.inf)
            continue
        lanes = [[i for i in idx if (i - s) % 2 == r] for r in (0, 1)] if fp8 else [list(idx)]
        sums = []
        for lane in [ln for ln in lanes if ln]:
            E = max(prods[i][1] for i in lane)
            sums.append((sum(_cut(prods[i][0], E, 24, math.trunc) for i in lane), E))
        Ep = max(E for _, E in sums)
        S = sum(_cut(v, Ep, 24, math.floor) for v, _ in sums) if fp8 else sums[0][0]
        ec = _exponent(c, -126)
        M = max(Ep, ec)
        C = Fraction(0) if fp8 and ec < M - 25 else _cut(Fraction(c), M, 24, math.floor)
        c = fmt_round(_cut(S, M, 31, math.floor) + C, "fp32", "rne")
    return c


# ---- tests ------------------------------------------------------------------------------------
@both(data=st.data(), case=st.sampled_from([("mi100", "fp16", 4, False), ("mi100", "bf16", 2, False),
                                            ("mi250", "fp16", 4, True), ("mi250", "bf16", 4, True),
                                            ("mi250/bf16", "bf16", 2, True)]))  # fmt: skip
def test_cdna1_cdna2_trees_equal_fraction_reference(data, case):
    name, fmt, group, flush = case
    A, B, C = data.draw(matrices(fmt, max_k=12))
    got = gemm(A, B, C, inputs=fmt, accumulator=name)
    _same(got, _each(A, B, C, lambda a, b, c: ref_cdna_tree(a, b, c, fmt, group, flush)))


@both(data=st.data(), case=st.sampled_from([("mi300", "fp16", 8), ("mi300/f16_k4", "fp16", 4), ("mi300", "bf16", 8),
                                            ("mi300x", "tf32", 4), ("mi325x", "e4m3fnuz", 16), ("cdna3", "e5m2fnuz", 16)]))  # fmt: skip
def test_cdna3_equals_fraction_reference(data, case):
    name, fmt, group = case
    A, B, C = data.draw(matrices(fmt, max_k=40))
    got = gemm(A, B, C, inputs=fmt, accumulator=name)
    _same(got, _each(A, B, C, lambda a, b, c: ref_cdna3(a, b, c, group, fmt, fmt, "fnuz" in fmt)))


@st.composite
def mixed(draw, fa: str, fb: str, max_k: int = 40):
    """A (m, k) in fa, B (k, n) in fb, C (m, n) in fp32."""
    m, n, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, max_k))
    A = np.array(draw(st.lists(values(fa), min_size=m * k, max_size=m * k))).reshape(m, k)
    B = np.array(draw(st.lists(values(fb), min_size=k * n, max_size=k * n))).reshape(k, n)
    C = np.array(draw(st.lists(values("fp32"), min_size=m * n, max_size=m * n))).reshape(m, n)
    return A, B, C


@both(data=st.data(), pair=st.sampled_from([("e4m3fnuz", "e5m2fnuz"), ("e5m2fnuz", "e4m3fnuz")]))
def test_cdna3_mixed_fp8_equals_fraction_reference(data, pair):
    A, B, C = data.draw(mixed(*pair))
    got = gemm(A, B, C, inputs=pair, accumulator="mi300x")
    _same(got, _each(A, B, C, lambda a, b, c: ref_cdna3(a, b, c, 16, *pair, True)))


F8F6F4 = ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1"]


@both(data=st.data(), fa=st.sampled_from(F8F6F4), fb=st.sampled_from(F8F6F4[2:]))
def test_blackwell_fp6_fp4_operands_follow_the_block_model(data, fa, fb):
    """kind::f8f6f4 with FP6/FP4 on either side: the B200 FP8 model (32 products, 48 bits
    below the largest exponent, RNE), against SPEC section 5 written with Fractions."""
    A, B, C = data.draw(mixed(fa, fb))
    acc = get_accumulator("b200", (fa, fb))
    assert isinstance(acc, Accumulator) and (acc.block, acc.frac_bits, acc.out_rounding) == (32, 48, "rne")
    got = gemm(A, B, C, inputs=(fa, fb), accumulator=acc)
    _same(got, _each(A, B, C, lambda a, b, c: ref_block(a, b, c, acc, fa, fb)))


@both(data=st.data(), fa=st.sampled_from(F8F6F4), fb=st.sampled_from(F8F6F4[2:]))
def test_rtx_blackwell_fp6_fp4_operands_follow_mmasim_rules(data, fa, fb):
    """sm_120 mma kind::f8f6f4 with FP6/FP4 on either side, which MMA-Sim cannot run: its
    rules (32 products, 25 bits below the largest exponent, a zero operand counting as 2**-126,
    fp32 RZ), against SPEC section 5 written with Fractions."""
    A, B, C = data.draw(mixed(fa, fb))
    acc = get_accumulator("rtx5090", (fa, fb))
    assert (acc.block, acc.frac_bits, acc.out_rounding, acc.zero_exponent) == (32, 25, "rz", -126)
    got = gemm(A, B, C, inputs=(fa, fb), accumulator=acc)
    _same(got, _each(A, B, C, lambda a, b, c: ref_block(a, b, c, acc, fa, fb)))
