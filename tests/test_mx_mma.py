"""Block-scaled accumulator models (fpemu.mx.mma): the model's checks and errors, and every
preset's results against an exact scalar oracle (tests/mma_oracle.py, Fractions) on hand-made
cases with known answers (ties, overflow, NaN/Inf, signed zero) and on random codes
(hypothesis). MMA-Sim itself is the oracle of tests/test_mx_mma_mmasim.py."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mma_oracle import ELEMENT, exact_dot, f32_mul, fused_dot, to_f32
from mx_helpers import block_array

import fpemu
from fpemu import mx
from fpemu.mx.mma import BlockScaledAccumulator, cublaslt_alpha, get_block_accumulator

PRESETS = ["exact", "b200", "blackwell", "mmasim-blackwell"]


def arrays(fa, fb, A, B, sa, sb, block, amax=2688.0):
    """BlockArrays of A (M, K) and B (K, N) from codes and per-(row, K-block) scale codes."""
    kw = dict(global_amax=amax) if fa == "nvfp4" else {}
    return (block_array(np.asarray(A, np.uint8), np.asarray(sa, np.uint8), fa, 1, block, **kw),
            block_array(np.asarray(B, np.uint8), np.asarray(sb, np.uint8), fb, 0, block, **kw))


def oracle(qa, qb, c, accumulator, instruction=None):
    """The oracle's (M, N) result, one dot at a time (alpha 1 for NVFP4: amax 2688)."""
    fa, fb = qa.format.name, qb.format.name
    sfmt = qa.format.scale.name
    model = get_block_accumulator(accumulator, (fa, fb), block_size=qa.block_size, instruction=instruction)
    M, N = qa.shape[0], qb.shape[1]
    c = np.broadcast_to(np.float32(0.0 if c is None else c), (M, N))
    out = np.empty((M, N), np.float32)
    for i in range(M):
        for j in range(N):
            args = (qa.codes[i], qb.codes[:, j], qa.scales[i], qb.scales[:, j], float(c[i, j]),
                    ELEMENT[fa], ELEMENT[fb], sfmt, qa.block_size)  # fmt: skip
            out[i, j] = exact_dot(*args) if model.kind == "blockwise" else fused_dot(*args, model)
    return out


def same(got, want) -> bool:
    """Same fp32 bits, any NaN equal to any NaN."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return bool(np.all((got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))))


def one(x: float) -> int:
    """The E8M0 code of 2**x."""
    return 127 + x


# ---- the model and the names ------------------------------------------------------------------
def test_unknown_preset_lists_the_names():
    q = mx.quantize(np.ones((1, 32)), "mxfp8_e4m3")
    with pytest.raises(ValueError, match="unknown block-scaled accumulator 'h100'; known: exact, b200, blackwell, mmasim-blackwell"):
        mx.matmul(q, mx.quantize(np.ones((32, 1)), "mxfp8_e4m3", axis=0), accumulator="h100")
    assert mx.block_accumulator_names() == PRESETS


@pytest.mark.parametrize("fields, message", [
    (dict(kind="fused"), "needs instruction_k and frac_bits"),
    (dict(kind="fused", instruction_k=32, frac_bits=61), "frac_bits must be in 0..60"),
    (dict(kind="fused", instruction_k=32, sub_block=5, term_exponent="scale", frac_bits=30), "sub_block must divide"),
    (dict(kind="fused", instruction_k=32, frac_bits=30, out_rounding="rtz"), "out_rounding must be one of rz, rne"),
    (dict(kind="blockwise", frac_bits=30), "frac_bits applies to fused models only"),
    (dict(kind="fused", instruction_k=True, frac_bits=30), "instruction_k must be an integer or None"),
])  # fmt: skip
def test_model_checks(fields, message):
    with pytest.raises(ValueError, match=message):
        BlockScaledAccumulator("m", **fields)


def test_one_class_per_kind():
    """The record spelling builds the class its kind names; each class has only its own fields,
    so a fused field on the exact model is refused by name, and the classes build directly."""
    exact, b200 = get_block_accumulator("exact", "mxfp8_e4m3"), get_block_accumulator("b200", "nvfp4")
    assert type(exact) is mx.Blockwise and type(b200) is mx.BlockScaledFMA
    assert not hasattr(exact, "frac_bits") and (b200.instruction_k, b200.sub_block) == (64, 16)
    assert mx.BlockScaledFMA("m", instruction_k=32, frac_bits=30) == BlockScaledAccumulator(
        "m", "fused", instruction_k=32, frac_bits=30)
    assert BlockScaledAccumulator("e", "blockwise", frac_bits=None).kind == "blockwise"  # the default says nothing
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        BlockScaledAccumulator("m", "fused", instruction_k=32, frac_bits=30, lanes=4)
    with pytest.raises(TypeError, match="instruction_k"):
        mx.Blockwise("e", instruction_k=32)


def test_lookup_errors():
    with pytest.raises(ValueError, match="no block-scaled MMA for int8 x int8"):
        get_block_accumulator("b200", "mxint8")
    with pytest.raises(ValueError, match="unknown instruction 'mxf9'"):
        get_block_accumulator("b200", "mxfp4", instruction="mxf9")
    with pytest.raises(ValueError, match="cannot mix MX and NVFP4"):
        get_block_accumulator("b200", ("mxfp4", "nvfp4"))
    with pytest.raises(ValueError, match="exact model has no instructions"):
        get_block_accumulator("exact", "mxfp4", instruction="mxf4nvf4")
    assert get_block_accumulator("b200", "mxfp4", instruction="mxf8f6f4").instruction_k == 32
    assert get_block_accumulator("blackwell", "nvfp4").sub_block == 16


def test_operand_errors():
    a = mx.quantize(np.ones((2, 32)), "mxfp8_e4m3")
    b = mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=0)
    for acc in PRESETS:
        with pytest.raises(TypeError, match="BlockArray"):
            mx.matmul(np.ones((2, 32)), b, accumulator=acc)
        with pytest.raises(ValueError, match="does not broadcast to the result shape"):
            mx.matmul(a, b, np.ones((3, 2)), accumulator=acc)
        with pytest.raises(ValueError, match="block"):
            mx.matmul(a, mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=0, block_size=16), accumulator=acc)
        with pytest.raises(ValueError, match="blocked along K|axis"):
            mx.matmul(a, mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=1), accumulator=acc)
    with pytest.raises(TypeError, match="real numbers"):
        mx.matmul(a, b, np.array([["x"]]))
    with pytest.raises(ValueError, match="one number"):
        mx.dot(mx.quantize(np.ones(32), "mxfp4"), mx.quantize(np.ones(32), "mxfp4"), [1.0, 2.0])
    with pytest.raises(ValueError, match="exact model only"):
        mx.matmul(mx.quantize(np.ones((1, 32)), "mxint8"), mx.quantize(np.ones((32, 1)), "mxint8", axis=0),
                  accumulator=BlockScaledAccumulator("m", instruction_k=32, frac_bits=30))
    with pytest.raises(ValueError, match="instruction= picks a preset"):
        mx.matmul(a, b, accumulator=get_block_accumulator("b200", "mxfp8_e4m3"), instruction="mxf8f6f4")


def test_inputs_are_not_modified_and_workers_do_not_matter():
    rng = np.random.default_rng(3)
    a = mx.quantize(rng.standard_normal((70, 96)), "mxfp8_e4m3")
    b = mx.quantize(rng.standard_normal((96, 9)), "mxfp8_e5m2", axis=0)
    c = rng.standard_normal((70, 9)).astype(np.float32)
    before = [x.copy() for x in (a.codes, a.scales, b.codes, b.scales, c)]
    for acc in PRESETS:
        r1 = mx.matmul(a, b, c, accumulator=acc, workers=1)
        assert same(r1, mx.matmul(a, b, c, accumulator=acc, workers=3))
    for x, y in zip(before, (a.codes, a.scales, b.codes, b.scales, c)):
        assert np.array_equal(x, y)


# ---- the exact preset is the old mx.matmul ----------------------------------------------------
@pytest.mark.parametrize("fa, fb", [("mxfp8_e4m3", "mxfp8_e5m2"), ("mxfp6_e2m3", "mxfp4"), ("nvfp4", "nvfp4")])
def test_exact_preset_is_the_default_and_the_ocp_model(fa, fb):
    rng = np.random.default_rng(5)
    a = mx.quantize(rng.standard_normal((3, 70)) * np.exp2(rng.integers(-20, 20, (3, 70))), fa)
    b = mx.quantize(rng.standard_normal((70, 4)) * np.exp2(rng.integers(-20, 20, (70, 4))), fb, axis=0)
    if fa == "nvfp4":
        a, b = arrays(fa, fb, a.codes, b.codes, a.scales, b.scales, 16)
    c = rng.standard_normal((3, 4)).astype(np.float32)
    assert same(mx.matmul(a, b), oracle(a, b, None, "exact"))
    assert same(mx.matmul(a, b, accumulator="exact"), mx.matmul(a, b))
    assert same(mx.matmul(a, b, c), oracle(a, b, c, "exact"))


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
        got = mx.matmul(a, b, c, accumulator=acc)[0, 0]
        assert same(got, value), (acc, float(got), value)
        assert same(got, oracle(a, b, c, acc)[0, 0]), acc


def test_e5m2_infinities():
    """Inf * 1 = Inf; Inf - Inf = NaN; Inf * 0 = NaN, in every model (IEEE)."""
    inf, ninf, one_, zero = 0x7C, 0xFC, 0x3C, 0x00
    for codes, want in (([inf, one_], math.inf), ([inf, ninf], math.nan), ([ninf], -math.inf)):
        a, b, c = case(codes, 127, 0.0, "mxfp8_e5m2")
        for acc in PRESETS:
            assert same(mx.matmul(a, b, c, accumulator=acc), want), acc
    A = np.zeros((1, 32), np.uint8)
    A[0, 0] = inf
    a, b = arrays("mxfp8_e5m2", "mxfp8_e5m2", A, np.zeros((32, 1), np.uint8) + zero, [[127]], [[127]], 32)
    for acc in PRESETS:
        assert np.isnan(mx.matmul(a, b, accumulator=acc)[0, 0]), acc


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
        got = mx.matmul(a, b, np.float32(c), accumulator=acc, instruction="mxf4nvf4")
        assert got[0, 0] == c and np.isnan(got[1, 0])


# ---- NVFP4's per-tensor scales as cuBLASLt's alpha --------------------------------------------
@pytest.mark.parametrize("amax_a, amax_b", [(1.0, 1.0), (3.0, 1000.0), (2688.0, 2688.0), (1e-30, 7.0), (3e38, 3e38)])
def test_cublaslt_alpha_is_te_arithmetic(amax_a, amax_b):
    qa = mx.quantize(np.ones((1, 16)), "nvfp4", global_amax=amax_a)
    qb = mx.quantize(np.ones((16, 1)), "nvfp4", axis=0, global_amax=amax_b)
    fa, fb = float(np.float32(amax_a)), float(np.float32(amax_b))
    factor = to_f32(Fraction(1, 6 * 6 * 448 * 448))
    want = f32_mul(f32_mul(f32_mul(1.0, fa), fb), factor)
    assert same(cublaslt_alpha(qa, qb), want)


def test_nvfp4_alpha_applied_to_the_accumulator():
    rng = np.random.default_rng(8)
    a = mx.quantize(rng.standard_normal((3, 64)), "nvfp4", global_amax=5.0)
    b = mx.quantize(rng.standard_normal((64, 2)), "nvfp4", axis=0, global_amax=7.0)
    one_a, one_b = arrays("nvfp4", "nvfp4", a.codes, b.codes, a.scales, b.scales, 16)  # alpha 1
    alpha = float(cublaslt_alpha(a, b))
    for acc in ("b200", "mmasim-blackwell"):
        base = oracle(one_a, one_b, None, acc)
        want = np.array([[f32_mul(float(x), alpha) for x in row] for row in base], np.float32)
        assert same(mx.matmul(a, b, accumulator=acc), want), acc


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
    got = mx.matmul(a, b, c, accumulator=acc, instruction=inst)
    assert same(got, oracle(a, b, c, acc, inst))


def test_matmul_and_dot_return_torch_tensors_when_asked():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    A = mx.quantize(rng.normal(size=(3, 64)), "mxfp8_e4m3")
    B = mx.quantize(rng.normal(size=(64, 2)), "mxfp8_e4m3", axis=0)
    want = mx.matmul(A, B, accumulator="b200")
    got = mx.matmul(A, B, accumulator="b200", returns="torch")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))
    assert np.array_equal(fpemu.gemm(A, B, accumulator="b200", returns="torch").numpy(), want)
    x, y = mx.quantize([1.0, 2.0, 3.0], "mxfp4"), mx.quantize([4.0, -1.0, 0.5], "mxfp4")
    d = mx.dot(x, y, returns="torch")
    assert isinstance(d, torch.Tensor) and d.shape == () and float(d) == 3.5
    assert isinstance(mx.dot(x, y), np.float32)


def test_gemm_and_mx_matmul_share_the_exact_default():
    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(4, 40)), rng.normal(size=(40, 3))
    assert np.array_equal(fpemu.gemm(A, B, inputs="bf16"), fpemu.gemm(A, B, inputs="bf16", accumulator="exact"))
    qa, qb = mx.quantize(A, "mxfp8_e4m3"), mx.quantize(B, "mxfp8_e4m3", axis=0)
    assert np.array_equal(fpemu.gemm(qa, qb), mx.matmul(qa, qb, accumulator="exact"))
    with pytest.raises(TypeError, match="c must be an array of real numbers, got booleans"):
        mx.matmul(qa, qb, np.ones((4, 3), bool))
