"""The block-scaled FMA (fpemu/accumulator/kernels/block_scaled.py), and the exact blockwise
model beside it: every block-scaled preset's results against an exact scalar oracle
(tests/mma_oracle.py, Fractions) on hand-made cases with known answers (ties, overflow,
NaN/Inf, signed zero) and on random codes (hypothesis). MMA-Sim itself is the oracle of
tests/accumulator/test_units_mmasim_block_scaled.py."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from mx_helpers import block_array
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mma_oracle import oracle, same, to_f32

import fpemu
from fpemu import mx

PRESETS = ["exact", "b200", "blackwell", "mmasim-blackwell"]


def arrays(fa, fb, A, B, sa, sb, block, amax=2688.0):
    """BlockArrays of A (M, K) and B (K, N) from codes and per-(row, K-block) scale codes."""
    kw = dict(global_amax=amax) if fa == "nvfp4" else {}
    return (block_array(np.asarray(A, np.uint8), np.asarray(sa, np.uint8), fa, 1, block, **kw),
            block_array(np.asarray(B, np.uint8), np.asarray(sb, np.uint8), fb, 0, block, **kw))


def one(x: float) -> int:
    """The E8M0 code of 2**x."""
    return 127 + x


# ---- the exact preset is the old mx.matmul ----------------------------------------------------
@pytest.mark.parametrize("fa, fb", [("mxfp8_e4m3", "mxfp8_e5m2"), ("mxfp6_e2m3", "mxfp4"), ("nvfp4", "nvfp4")])
def test_exact_preset_is_the_default_and_the_ocp_model(fa, fb):
    rng = np.random.default_rng(5)
    a = mx.quantize(rng.standard_normal((3, 70)) * np.exp2(rng.integers(-20, 20, (3, 70))), fa)
    b = mx.quantize(rng.standard_normal((70, 4)) * np.exp2(rng.integers(-20, 20, (70, 4))), fb, axis=0)
    if fa == "nvfp4":
        a, b = arrays(fa, fb, a.codes, b.codes, a.scales, b.scales, 16)
    c = rng.standard_normal((3, 4)).astype(np.float32)
    assert same(fpemu.gemm(a, b), oracle(a, b, None, "exact"))
    assert same(fpemu.gemm(a, b, accumulator="exact"), fpemu.gemm(a, b))
    assert same(fpemu.gemm(a, b, c), oracle(a, b, c, "exact"))


# ---- hand-made cases with known answers --------------------------------------------------------
def case(tail_codes, tail_scale, c, fmt="mxfp8_e4m3", b_scale=127):
    """One dot of K = 32: A's row holds tail_codes under scale code tail_scale, B is all ones
    under scale code b_scale."""
    A = np.zeros((1, 32), np.uint8)
    A[0, : len(tail_codes)] = tail_codes
    one_code = 0x38 if fmt == "mxfp8_e4m3" else 0x3C
    B = np.full((32, 1), one_code, np.uint8)
    return arrays(fmt, fmt, A, B, [[tail_scale]], [[b_scale]], 32) + (np.float32(c),)


E4M3_ONE, E4M3_2M6, E4M3_3 = 0x38, 0x08, 0x44  # 1.0, 2**-6, 3.0
MAX32 = float(np.finfo(np.float32).max)


@pytest.mark.parametrize("codes, scale, c, want", [  # scale: A's (B's: 1, or 2**-13 with A's 2**-127)
    ([E4M3_ONE], one(-24), 1.0, {"b200": 1.0, "mmasim-blackwell": 1.0, "exact": 1.0}),                 # a tie: even
    ([E4M3_3], one(-24), 1.0, {"b200": 1 + 2**-22, "mmasim-blackwell": 1 + 2**-23, "exact": 1 + 2**-22}),  # tie up
    ([E4M3_ONE, E4M3_2M6], one(-24), 1.0,                                                              # above a tie
     {"b200": 1 + 2**-23, "mmasim-blackwell": 1.0, "exact": 1 + 2**-23}),
    ([E4M3_ONE], one(103), MAX32, {"b200": math.inf, "mmasim-blackwell": MAX32, "exact": math.inf}),   # overflow
    ([E4M3_ONE], one(102), MAX32, {"b200": MAX32, "mmasim-blackwell": MAX32, "exact": MAX32}),
    ([0x01], one(-127), 0.0, {"b200": 2**-149, "mmasim-blackwell": 2**-149, "exact": 2**-149}),        # subnormal
    ([0x01, 0x01], one(-127), 0.0, {"b200": 2**-148, "mmasim-blackwell": 2**-148, "exact": 2**-148}),
    ([0x01], one(-127), -0.0, {"b200": 2**-149, "mmasim-blackwell": 2**-149, "exact": 2**-149}),
    ([0x80], 127, -0.0, {"b200": 0.0, "mmasim-blackwell": 0.0, "exact": 0.0}),                         # -0 + -0: +0
    ([E4M3_ONE, 0xB8], 127, -0.0, {"b200": 0.0, "mmasim-blackwell": 0.0, "exact": 0.0}),               # 1 - 1: +0
    ([E4M3_ONE], 255, 1.0, {"b200": math.nan, "mmasim-blackwell": math.nan, "exact": math.nan}),       # NaN scale
    ([0x7F], 127, 1.0, {"b200": math.nan, "mmasim-blackwell": math.nan, "exact": math.nan}),           # NaN element
    ([E4M3_ONE], 127, math.inf, {"b200": math.inf, "mmasim-blackwell": math.inf, "exact": math.inf}),
    ([E4M3_ONE], 127, math.nan, {"b200": math.nan, "mmasim-blackwell": math.nan, "exact": math.nan}),
])  # fmt: skip
def test_known_answers(codes, scale, c, want):
    a, b, c = case(codes, scale, c, b_scale=one(-13) if scale == one(-127) else 127)
    for acc, value in want.items():
        got = fpemu.gemm(a, b, c, accumulator=acc)[0, 0]
        assert same(got, value), (acc, float(got), value)
        assert same(got, oracle(a, b, c, acc)[0, 0]), acc


def test_e5m2_infinities():
    """Inf * 1 = Inf; Inf - Inf = NaN; Inf * 0 = NaN, in every model (IEEE)."""
    inf, ninf, one_, zero = 0x7C, 0xFC, 0x3C, 0x00
    for codes, want in (([inf, one_], math.inf), ([inf, ninf], math.nan), ([ninf], -math.inf)):
        a, b, c = case(codes, 127, 0.0, "mxfp8_e5m2")
        for acc in PRESETS:
            assert same(fpemu.gemm(a, b, c, accumulator=acc), want), acc
    A = np.zeros((1, 32), np.uint8)
    A[0, 0] = inf
    a, b = arrays("mxfp8_e5m2", "mxfp8_e5m2", A, np.zeros((32, 1), np.uint8) + zero, [[127]], [[127]], 32)
    for acc in PRESETS:
        assert np.isnan(fpemu.gemm(a, b, accumulator=acc)[0, 0]), acc


@pytest.mark.parametrize("fmt, block, scale", [("mxfp4", 32, 127), ("mxfp4", 16, 127), ("nvfp4", 16, 0x38)])
@pytest.mark.parametrize("acc", ["b200", "mmasim-blackwell"])
def test_mxf4nvf4_with_infinite_c_is_ieee(fmt, block, scale, acc):
    """fpemu's rule where MMA-Sim crashes (kind::mxf4nvf4, c = +-Inf): the IEEE sum, the Inf;
    a NaN scale in the same instruction still gives NaN."""
    A, B = np.full((2, 64), 0x2, np.uint8), np.full((64, 1), 0x2, np.uint8)  # 1.0 each
    sa = np.full((2, 64 // block), scale, np.uint8)
    sb = np.full((64 // block, 1), scale, np.uint8)
    sa[1, 0] = 0x7F if fmt == "nvfp4" else 0xFF
    a, b = arrays(fmt, fmt, A, B, sa, sb, block)
    for c in (math.inf, -math.inf):
        got = fpemu.gemm(a, b, np.float32(c), accumulator=acc, instruction="mxf4nvf4")
        assert got[0, 0] == c and np.isnan(got[1, 0])


# ---- random codes against the oracle -----------------------------------------------------------
FUSED_PAIRS = [("mxfp8_e4m3", "mxfp8_e4m3", None), ("mxfp8_e5m2", "mxfp8_e4m3", None),
               ("mxfp6_e3m2", "mxfp6_e2m3", None), ("mxfp4", "mxfp8_e5m2", None),
               ("mxfp4", "mxfp4", "mxf8f6f4"), ("mxfp4", "mxfp4", "mxf4nvf4"), ("nvfp4", "nvfp4", None)]  # fmt: skip


@st.composite
def problems(draw):
    fa, fb, inst = draw(st.sampled_from(FUSED_PAIRS))
    block = 16 if fa == "nvfp4" or (inst == "mxf4nvf4" and draw(st.booleans())) else 32
    m, n, k = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 100))
    bits = {f: mx.get_block_format(f).bits for f in (fa, fb)}
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kb = -(-k // block)
    wide = draw(st.booleans())
    if fa == "nvfp4":
        lo, hi = (0, 128) if wide else (0x30, 0x48)
    else:
        lo, hi = (0, 256) if wide else (110, 140)
    A = rng.integers(0, 1 << bits[fa], (m, k))
    B = rng.integers(0, 1 << bits[fb], (k, n))
    sa, sb = rng.integers(lo, hi, (m, kb)), rng.integers(lo, hi, (kb, n))
    c = rng.integers(0, 1 << 32, (m, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    c = np.where(rng.random((m, n)) < 0.5, c, np.float32(rng.standard_normal((m, n))))
    return arrays(fa, fb, A, B, sa, sb, block) + (c.astype(np.float32), inst)


@settings(max_examples=60, deadline=None)
@given(problems(), st.sampled_from(["b200", "mmasim-blackwell", "exact"]))
def test_presets_equal_the_oracle_on_random_codes(problem, acc):
    a, b, c, inst = problem
    inst = None if acc == "exact" else inst
    if acc == "mmasim-blackwell" and a.format.element.name == "e2m1" and inst != "mxf8f6f4":
        c = np.where(np.isinf(c), np.float32(0), c)  # kept comparable with MMA-Sim's own runs
    got = fpemu.gemm(a, b, c, accumulator=acc, instruction=inst)
    assert same(got, oracle(a, b, c, acc, inst))


def test_the_default_of_both_kinds_is_their_exact_model():
    """No accumulator= means "exact": for block arrays the OCP blockwise model (tests/mma_oracle.py's
    Fraction oracle), for plain arrays the exact sum rounded once (a Fraction sum rounded by
    hand). (It replaces a test that compared fpemu.gemm with fpemu.mx.matmul, which forwarded
    to it.)"""
    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(4, 40)), rng.normal(size=(40, 3))
    qa, qb = mx.quantize(A, "mxfp8_e4m3"), mx.quantize(B, "mxfp8_e4m3", axis=0)
    assert same(fpemu.gemm(qa, qb), oracle(qa, qb, None, "exact"))
    a16, b16 = fpemu.quantize(A, "bf16").astype(np.float64), fpemu.quantize(B, "bf16").astype(np.float64)
    want = [[to_f32(sum(Fraction(x) * Fraction(y) for x, y in zip(a16[i], b16[:, j]))) for j in range(3)]
            for i in range(4)]  # fmt: skip
    assert same(fpemu.gemm(A, B, inputs="bf16"), want)  # the exact sum rounded once (RNE), by hand
    with pytest.raises(TypeError, match="c must be an array of real numbers, got booleans"):
        fpemu.gemm(qa, qb, np.ones((4, 3), bool))
