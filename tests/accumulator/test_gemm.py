"""The public products (fpemu/accumulator/gemm.py): one gemm and one dot for plain arrays and
block arrays, with one signature and one return type (issue 37: a 1-D fpemu.dot gave a 0-d
array, fpemu.mx.dot an np.float32); batching, operand rounding, output formats; the edge
cases of issue 9 (no silent wrong answer): empty results, K = 0 (the result is c, rounded as
the model rounds), shapes and dtypes refused with an error naming the problem, integers
beyond 2**53 rounded once, inputs never written. Block arrays: test_gemm_block_arrays.py and
test_gemm_block_dot.py."""

from __future__ import annotations

import dataclasses
import inspect
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.accumulator import BlockModel, dot, gemm, get_accumulator

from .test_units import d

# (accumulator, inputs): every kind of model, block ones with fp32, fp16 and 13-bit outputs.
MODELS = [
    ("v100", "fp16"), ("a100", "fp16"), ("h100", "fp16"), ("h100", "e4m3"), ("ada", "e5m2"),
    ("b200", "e4m3"), ("mi250", "fp16"), ("mi300", "bf16"), ("mi300", "e4m3fnuz"),
    ("exact", "fp16"), ("fp32", "bf16"), ("fp16", "fp16"), ("bf16", "fp16"), ("pairwise_fp32", "fp16"),
]
BLOCK_MODELS = [m for m in MODELS if isinstance(get_accumulator(*m), BlockModel)]


def test_one_signature():
    g, d = inspect.signature(fpemu.gemm), inspect.signature(fpemu.dot)
    assert list(g.parameters) == list(d.parameters) == ["a", "b", "c", "inputs", "accumulator", "out", "instruction",
                                                        "workers", "returns"]  # fmt: skip
    assert all(g.parameters[p].default == d.parameters[p].default for p in g.parameters)
    assert fpemu.gemm is fpemu.accumulator.gemm and not hasattr(mx, "matmul") and not hasattr(mx, "dot")


def _vectors(kind):
    if kind == "plain":
        return [1.0, 2.0, 3.0], [4.0, -1.0, 0.5], dict(inputs="fp16")
    return mx.quantize([1.0, 2.0, 3.0], "mxfp4"), mx.quantize([4.0, -1.0, 0.5], "mxfp4"), {}


@pytest.mark.parametrize("kind", ["plain", "block"])
def test_one_return_type(kind):
    x, y, fmt = _vectors(kind)
    one = fpemu.dot(x, y, 1.0, **fmt)
    assert type(one) is np.float32 and one == 4.5  # as np.dot of two float32 vectors
    assert type(fpemu.dot(x, y, **fmt, returns="input")) is np.float32
    rows = np.stack([np.asarray(x, np.float64)] * 2) if kind == "plain" else mx.quantize(np.ones((2, 3)), "mxfp4")
    many = fpemu.dot(rows, rows, **fmt)
    assert type(many) is np.ndarray and many.dtype == np.float32 and many.shape == (2,)
    a = np.ones((2, 32)) if kind == "plain" else mx.quantize(np.ones((2, 32)), "mxfp8_e4m3")
    b = np.ones((32, 3)) if kind == "plain" else mx.quantize(np.ones((32, 3)), "mxfp8_e4m3", axis=0)
    c = fpemu.gemm(a, b, **({"inputs": "e4m3"} if kind == "plain" else {}))
    assert type(c) is np.ndarray and c.dtype == np.float32 and c.tolist() == [[32.0] * 3] * 2


@pytest.mark.parametrize("kind", ["plain", "block"])
def test_torch_returns_a_zero_d_tensor(kind):
    torch = pytest.importorskip("torch")
    x, y, fmt = _vectors(kind)
    d = fpemu.dot(x, y, **fmt, returns="torch")
    assert isinstance(d, torch.Tensor) and d.shape == () and d.dtype == torch.float32 and float(d) == 3.5


def test_block_rows_of_a_two_d_tiled_a_on_several_workers():
    """A (M, K) in NVFP4's 16x16 tiles, cut into pieces of rows for two workers: each piece
    reads its rows' tile scales (the exact model sliced the tile scales by element rows and
    refused the product before issue 37)."""
    g = np.random.default_rng(0)
    a = mx.quantize(g.standard_normal((256, 64)), "nvfp4", axis=(0, 1), block_size=(16, 16))
    b = mx.quantize(g.standard_normal((64, 8)), "nvfp4", axis=0)
    for acc in ("exact", "b200"):
        one = fpemu.gemm(a, b, accumulator=acc, workers=1)
        assert np.array_equal(one, fpemu.gemm(a, b, accumulator=acc, workers=2), equal_nan=True)
        rows = [fpemu.gemm(a.with_layout(a.codes[i : i + 16], a.scales[i // 16 : i // 16 + 1]), b, accumulator=acc)
                for i in range(0, 256, 16)]
        assert np.array_equal(one, np.concatenate(rows), equal_nan=True)


# ---- API ----------------------------------------------------------------------------------------
def test_dot_batches_over_leading_axes():
    rng = np.random.default_rng(0)
    a = fpemu.quantize(rng.standard_normal((2, 3, 20)), "fp16")
    b = fpemu.quantize(rng.standard_normal((2, 3, 20)), "fp16")
    c = rng.standard_normal((2, 3)).astype(np.float32)
    got = dot(a, b, c, inputs="fp16", accumulator="a100")
    assert got.shape == (2, 3) and got.dtype == np.float32
    flat = dot(a.reshape(6, 20), b.reshape(6, 20), c.reshape(6), inputs="fp16", accumulator="a100")
    np.testing.assert_array_equal(got.reshape(6), flat)


@pytest.mark.parametrize("acc", ["a100", "h100", "exact", "fp16", "pairwise_fp32", "mi250", "mi300"])
def test_gemm_matches_dot_elementwise(acc):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 37))
    B = rng.standard_normal((37, 4))
    C = rng.standard_normal((5, 4))
    got = gemm(A, B, C, inputs="bf16", accumulator=acc)
    Aq, Bq = fpemu.quantize(A, "bf16"), fpemu.quantize(B, "bf16")
    rows = dot(np.repeat(Aq, 4, axis=0), np.tile(Bq.T, (5, 1)), C.reshape(-1), inputs="bf16", accumulator=acc)
    np.testing.assert_array_equal(got, rows.reshape(5, 4))


def test_gemm_quantizes_inputs_with_rne():
    x = 1 + 2**-11 + 2**-20  # just above the fp16 tie: RNE goes up
    got = gemm([[x]], [[1.0]], inputs="fp16", accumulator="exact")
    assert got[0, 0] == 1 + 2**-10


def test_gemm_mixed_fp8_inputs_and_outputs():
    A = np.array([[1.5, 2.0]])
    B = np.array([[3.0], [0.25]])
    assert gemm(A, B, inputs=("e4m3", "e5m2"), accumulator="h100")[0, 0] == 5.0
    # c = 1/3 -> fp16 0x3555; aligned to E = 2 with 13 bits it is cut to 682 * 2**-11; the sum
    # 5 + 682/2048 is rounded RNE to fp16: 5 + 85/256.
    assert gemm(A, B, [[1 / 3]], inputs="e4m3", accumulator="h100", out="fp16")[0, 0] == 5 + 85 / 256
    assert gemm(A, B, [[2**-9]], inputs="e4m3", accumulator="exact", out="bf16")[0, 0] == 5.0


def test_gemm_output_bf16_rounds_the_fp32_result():
    got = gemm([[1.0, 1.0]], [[1.0], [2**-8 + 2**-12]], inputs="bf16", accumulator="a100", out="bf16")
    assert got[0, 0] == 1 + 2**-7  # fp32 1+2**-8+2**-12 rounded to bf16 (RNE: above the tie)


def test_fp16_output_rounds_c_to_fp16_first():
    c = 1 + 2**-11  # a tie in fp16: RNE -> 1.0
    assert d([0.0], [0.0], c, acc="a100", out="fp16") == 1.0
    assert d([0.0], [0.0], c, acc="a100") == c


def test_inputs_are_not_modified():
    A = np.array([[1.1, 2.2]])
    B = np.array([[3.3], [4.4]])
    C = np.array([[0.1]])
    copies = [A.copy(), B.copy(), C.copy()]
    gemm(A, B, C, inputs="e4m3", accumulator="h100")
    for x, y in zip((A, B, C), copies):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: gemm(np.ones((2, 3)), np.ones((2, 3)), inputs="fp16", accumulator="a100"), ValueError, "gemm needs"),
        (lambda: dot(np.ones(3), np.ones(4), inputs="fp16", accumulator="a100"), ValueError, "same shape"),
        (lambda: gemm(np.ones((2, 3)), np.ones((3, 2)), inputs="fp16", accumulator="a100", out="e4m3"), ValueError, "out must be"),
        (lambda: gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones(5), inputs="fp16", accumulator="a100"), ValueError, "broadcast"),
        (lambda: gemm([["x"]], [[1.0]], inputs="fp16", accumulator="a100"), TypeError, "real numbers"),
        (lambda: gemm([[1.0]], [[1.0]], inputs=3, accumulator="a100"), TypeError, "inputs"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp16", accumulator=3), TypeError, "accumulator"),
    ],
)
def test_bad_input_raises_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()


def bits(x: np.ndarray) -> list[int]:
    return np.asarray(x, dtype=np.float32).view(np.uint32).ravel().tolist()


# ---- empty results ---------------------------------------------------------------------------
@pytest.mark.parametrize("acc,inputs", MODELS)
@pytest.mark.parametrize("a_shape,b_shape,want", [((2, 3), (3, 0), (2, 0)), ((0, 3), (3, 2), (0, 2)),
                                                   ((0, 0), (0, 0), (0, 0))])
def test_gemm_with_an_empty_result(acc, inputs, a_shape, b_shape, want):
    got = gemm(np.ones(a_shape), np.ones(b_shape), inputs=inputs, accumulator=acc)
    assert got.shape == want and got.dtype == np.float32


@pytest.mark.parametrize("acc,inputs", MODELS)
def test_dot_with_an_empty_batch(acc, inputs):
    got = dot(np.ones((0, 5)), np.ones((0, 5)), inputs=inputs, accumulator=acc)
    assert got.shape == (0,) and got.dtype == np.float32
    assert dot(np.ones((2, 0, 5)), np.ones((2, 0, 5)), inputs=inputs, accumulator=acc).shape == (2, 0)


# ---- K = 0: no products, the result is c as the model rounds it ------------------------------
@pytest.mark.parametrize("acc,inputs", MODELS)
def test_k0_without_c_is_positive_zero(acc, inputs):
    got = gemm(np.ones((2, 0)), np.ones((0, 3)), inputs=inputs, accumulator=acc)
    assert got.shape == (2, 3) and bits(got) == [0] * 6
    got = dot(np.ones((4, 0)), np.ones((4, 0)), inputs=inputs, accumulator=acc)
    assert got.shape == (4,) and bits(got) == [0] * 4
    assert bits(dot([], [], inputs=inputs, accumulator=acc)) == [0]  # one dot product, K = 0


@pytest.mark.parametrize("acc,inputs", BLOCK_MODELS)
def test_k0_block_models_equal_zero_padding(acc, inputs):
    """A block FMA drops zero products, so K = 0 is K = 1 with a zero product: c goes through
    one block and is rounded as the unit rounds (-0 becomes +0)."""
    rng = np.random.default_rng(3)
    c = np.concatenate([rng.standard_normal(50) * 2.0 ** rng.integers(-140, 60, 50),
                        [0.0, -0.0, 1 + 2**-20, -(1 + 2**-14), 2**-149, np.inf, -np.inf, np.nan]]).astype(np.float32)
    for out in ("fp32", "fp16", "bf16"):
        empty = dot(np.zeros((c.size, 0)), np.zeros((c.size, 0)), c, inputs=inputs, accumulator=acc, out=out)
        padded = dot(np.zeros((c.size, 1)), np.zeros((c.size, 1)), c, inputs=inputs, accumulator=acc, out=out)
        assert np.array_equal(empty.view(np.uint32), padded.view(np.uint32)) or np.array_equal(
            empty, padded, equal_nan=True
        ), (acc, inputs, out)


@pytest.mark.parametrize(
    "acc,inputs,out,c,want",
    [
        ("a100", "fp16", "fp32", -0.0, 0.0),  # the block's -0 -> +0
        ("a100", "fp16", "fp32", 1 + 2**-23, 1 + 2**-23),  # fp32 c passes an F = 24 block intact
        ("h100", "e4m3", "fp32", 1 + 2**-20, 1.0),  # 13 fraction bits, RZ
        ("h100", "e4m3", "fp32", -(1 + 2**-13 + 2**-14), -(1 + 2**-13)),
        ("b200", "e4m3", "fp32", 1 + 2**-23, 1 + 2**-23),
        ("a100", "fp16", "fp16", 1 + 2**-11, 1.0),  # c is rounded to fp16 (RNE) first
        ("a100", "bf16", "bf16", 1 + 2**-8 + 2**-20, 1 + 2**-7),  # the bf16 epilogue (RNE)
        ("fp32", "fp16", "fp32", -0.0, -0.0),  # an IEEE loop over no products returns c
        ("bf16", "fp16", "fp32", 1 + 2**-8 + 2**-20, 1 + 2**-7),  # c rounded to the bf16 accumulator
        ("fp16", "fp16", "fp32", 1 + 2**-11 + 2**-20, 1 + 2**-10),  # ... to the fp16 accumulator
        ("exact", "fp16", "bf16", 1 + 2**-8 + 2**-20, 1 + 2**-7),  # one RNE rounding to out
        ("pairwise_fp32", "fp16", "fp32", 3.0, 3.0),
        ("mi250", "fp16", "fp32", 2**-130, 0.0),  # CDNA2 flushes the subnormal accumulator
    ],
)
def test_k0_result_is_c_rounded_as_the_model_rounds(acc, inputs, out, c, want):
    got = dot(np.zeros((1, 0)), np.zeros((1, 0)), [c], inputs=inputs, accumulator=acc, out=out)
    assert bits(got) == bits(np.array([want]))
    got = gemm(np.zeros((1, 0)), np.zeros((0, 1)), [[c]], inputs=inputs, accumulator=acc, out=out)
    assert bits(got) == bits(np.array([[want]]))


@pytest.mark.parametrize("acc,inputs", MODELS)
def test_k0_special_c(acc, inputs):
    got = gemm(np.zeros((1, 0)), np.zeros((0, 3)), [[np.inf, -np.inf, np.nan]], inputs=inputs, accumulator=acc)
    assert got[0, 0] == np.inf and got[0, 1] == -np.inf and np.isnan(got[0, 2])


def test_k0_with_promotion_is_the_fp32_accumulator():
    acc = dataclasses.replace(get_accumulator("h100", "e4m3"), promote=128)
    got = gemm(np.zeros((1, 0)), np.zeros((0, 2)), [[1 + 2**-20, -0.0]], inputs="e4m3", accumulator=acc)
    assert bits(got) == bits(np.array([1 + 2**-20, -0.0]))  # no unit result: c, in fp32


# ---- refused shapes and dtypes ---------------------------------------------------------------
@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: gemm(np.ones((2, 3)), np.ones((4, 2)), inputs="fp16", accumulator="a100"), ValueError,
         r"gemm needs A \(M, K\) and B \(K, N\), got shapes \(2, 3\) and \(4, 2\)"),
        (lambda: gemm(np.ones(3), np.ones((3, 2)), inputs="fp16", accumulator="a100"), ValueError, r"\(3,\) and \(3, 2\)"),
        (lambda: gemm(np.ones((1, 2, 3)), np.ones((3, 2)), inputs="fp16", accumulator="a100"), ValueError, "gemm needs"),
        (lambda: gemm(2.0, 3.0, inputs="fp16", accumulator="a100"), ValueError, r"got shapes \(\) and \(\)"),
        (lambda: dot(np.ones((2, 3)), np.ones((3, 2)), inputs="fp16", accumulator="a100"), ValueError,
         r"same shape \(\.\.\., K\), got \(2, 3\) and \(3, 2\)"),
        (lambda: dot(np.ones(3), np.ones((2, 3)), inputs="fp16", accumulator="a100"), ValueError, "same shape"),
        (lambda: dot(1.0, 1.0, inputs="fp16", accumulator="a100"), ValueError, "same shape"),
        (lambda: gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 2)), inputs="fp16", accumulator="a100"), ValueError,
         r"c of shape \(3, 2\) does not broadcast to the result shape \(2, 2\)"),
        (lambda: dot(np.ones((2, 3)), np.ones((2, 3)), np.ones(3), inputs="fp16", accumulator="a100"), ValueError,
         "does not broadcast"),
        (lambda: gemm([[1.0, 2.0], [3.0]], [[1.0], [2.0]], inputs="fp16", accumulator="a100"), ValueError,
         "a is not a rectangular array"),
        (lambda: gemm([["1"]], [[1.0]], inputs="fp16", accumulator="a100"), TypeError, "a must be an array of real numbers, got strings"),
        (lambda: gemm([[1.0]], [[True]], inputs="fp16", accumulator="a100"), TypeError, "b must .* got booleans"),
        (lambda: gemm([[1j]], [[1.0]], inputs="fp16", accumulator="a100"), TypeError, "got complex numbers"),
        (lambda: gemm(None, [[1.0]], inputs="fp16", accumulator="a100"), TypeError, "a must .*dtype object"),
        (lambda: gemm([[2**70]], [[1.0]], inputs="fp16", accumulator="a100"), TypeError, "convert to float64"),
        (lambda: gemm([[1.0]], [[1.0]], [[Fraction(1, 3)]], inputs="fp16", accumulator="a100"), TypeError, "c must"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp16", accumulator="a100", out=None), TypeError, "format"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp16", accumulator="a100", out="e4m3"), ValueError, "out must be"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp17", accumulator="a100"), ValueError, "unknown format 'fp17'"),
        (lambda: gemm([[1.0]], [[1.0]], inputs=("fp16", "fp16", "fp16"), accumulator="a100"), TypeError, "pair"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp16", accumulator="z80"), ValueError, "unknown accumulator 'z80'"),
        (lambda: gemm([[1.0]], [[1.0]], inputs="fp16", accumulator=None), TypeError, "accumulator"),
    ],
)
def test_bad_operands_are_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- exactness of the operands ---------------------------------------------------------------
def _fp32_rne(v: int) -> float:
    """An integer rounded once to fp32 (RNE), from exact integer arithmetic."""
    e = abs(v).bit_length() - 1
    q = Fraction(2) ** max(e - 23, 0)
    return float(round(Fraction(v) / q) * q)


@pytest.mark.parametrize("v", [2**54 + 2**30 + 1, -(2**60 + 2**36 + 7), 2**53 + 1, 2**63 - 1])
def test_integers_beyond_2_pow_53_are_rounded_once(v):
    # Through float64 first, 2**54 + 2**30 + 1 would become 2**54 + 2**30, a tie that rounds to
    # 2**54 in fp32: the exact value is above the tie and rounds up.
    want = _fp32_rne(v)
    a = np.array([[v]], dtype=np.int64)
    assert gemm(a, [[1]], inputs="fp32", accumulator="exact")[0, 0] == want
    assert gemm([[0]], [[0]], a, inputs="fp16", accumulator="exact")[0, 0] == want  # c too
    assert dot(a, np.ones((1, 1), np.int64), inputs="fp32", accumulator="fp32")[0] == want
    if v > 0:
        assert gemm(a.astype(np.uint64), [[1]], inputs="fp32", accumulator="exact")[0, 0] == want


@pytest.mark.parametrize("inputs", ["e4m3", "e4m3fnuz", "fp16", "e2m1"])
def test_specials_and_overflow_follow_the_input_format(inputs):
    """gemm rounds its operands with the codec: the result is that of the rounded operands."""
    a = np.array([[1e6, 1.0, -3.7], [np.inf, 2.0, 0.1]])
    if inputs == "e2m1":
        a[1, 0] = 7.0  # e2m1 has no Inf/NaN code
    b = np.array([[1.0], [0.5], [2.0]])
    acc = {"e4m3fnuz": "mi300"}.get(inputs, "exact")
    got = gemm(a, b, inputs=inputs, accumulator=acc)
    want = gemm(fpemu.quantize(a, inputs), fpemu.quantize(b, inputs), inputs=inputs, accumulator=acc)
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("acc,inputs", MODELS)
def test_inputs_are_never_written(acc, inputs):
    """Operands of every dtype, c broadcast from a row: untouched (read-only arrays work)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 5)).astype(np.float32)
    A[0, 0] = 2**-130  # a subnormal: the flushing models must not flush it in place
    B = rng.integers(-3, 4, (5, 2))
    C = rng.standard_normal((1, 2))
    keep = [x.copy() for x in (A, B, C)]
    for x in (A, B, C):
        x.flags.writeable = False
    gemm(A, B, C, inputs=inputs, accumulator=acc)
    dot(A[:2], B.T, C[0], inputs=inputs, accumulator=acc)
    for x, y in zip((A, B, C), keep):
        assert np.array_equal(x, y) and x.dtype == y.dtype


def test_narrow_float_operands():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([[1.5, 2.25]], dtype=ml_dtypes.bfloat16)
    b = np.array([[2.0], [4.0]], dtype=ml_dtypes.float8_e4m3fn)
    assert gemm(a, b, inputs="bf16", accumulator="a100")[0, 0] == 12.0
    assert dot(np.array([1.5, 2.25], np.float16), np.array([2.0, 4.0], np.float16), inputs="fp16", accumulator="v100") == 12.0
