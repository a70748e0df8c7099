"""Accumulator models against scalar references written with exact rational arithmetic.

Every reference here is an independent, per-element loop over ``fractions.Fraction`` that
follows the rule as written (SPEC section 5, IEEE 754), not the vectorised float64 code.
Inputs are hypothesis-drawn small matrices of in-format values: subnormals, values near the
top of the range (overflow), exact cancellation and mixed signs are all in the pool.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fpemu
from fpemu.accumulator import Accumulator, BlockFMA, gemm, get_accumulator
from fpemu.formats import get_format

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))


def both(**strategies):
    """@given(**strategies) with the default budget, plus a slow-marked twin ``<name>_sweep``
    running the same property with 2000 examples (``pytest -m slow``)."""

    def decorate(fn):
        globals()[fn.__name__ + "_sweep"] = pytest.mark.slow(SLOW(given(**strategies)(fn)))
        return SETTINGS(given(**strategies)(fn))

    return decorate


# ---- scalar references ------------------------------------------------------------------------
def _floor_log2(x: Fraction) -> int:
    """floor(log2(x)) for x > 0, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


def ref_round(x: Fraction, precision: int, emin: int, max_finite: Fraction, mode: str) -> float:
    """IEEE rounding of an exact rational to a binary format (RZ overflow -> max finite)."""
    if x == 0:
        return 0.0
    e = max(_floor_log2(abs(x)), emin)
    quantum = Fraction(2) ** (e - precision + 1)
    n = x / quantum
    q = math.trunc(n) if mode == "rz" else round(n)  # Fraction.__round__ ties to even
    r = q * quantum
    if abs(r) > max_finite:
        return math.copysign(math.inf if mode == "rne" else float(max_finite), x)
    return math.copysign(float(r), x)  # a result rounded to zero keeps the exact sign


def fmt_round(x: Fraction, fmt: str, mode: str = "rne", frac_bits: int | None = None) -> float:
    f = get_format(fmt)
    p = (f.mantissa_bits if frac_bits is None else frac_bits) + 1
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** f.emax
    return ref_round(x, p, f.emin, top, mode)


def ref_add(x: float, y: float, fmt: str) -> float:
    """IEEE x + y rounded once (RNE) to fmt; x, y exact Python floats (finite y)."""
    if math.isinf(x) or math.isinf(y):
        return x + y  # an overflowed partial sum stays Inf (or NaN for Inf - Inf)
    exact = Fraction(x) + Fraction(y)
    if exact == 0:  # x + (-x) is +0; only -0 + -0 is -0 (RNE)
        return -0.0 if (x == 0 and y == 0 and math.copysign(1, x) < 0 and math.copysign(1, y) < 0) else 0.0
    return fmt_round(exact, fmt)


def ref_sequential(a, b, c: float, acc_fmt: str) -> float:
    """acc = c (rounded); acc = RNE(acc + a[k]*b[k]) with exact products (Python floats hold
    every product of these formats exactly)."""
    acc = ref_add(c, 0.0, acc_fmt) if c != 0 else c
    for x, y in zip(a, b):
        acc = ref_add(acc, x * y, acc_fmt)
    return acc


def ref_exact(a, b, c: float, out: str) -> float:
    """The exact sum rounded once (RNE), with IEEE 754's sign of zero: a non-zero sum that
    rounds to zero keeps its sign; an exact zero is -0 only when every term (c and each
    product) is -0, else +0."""
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(c))
    if exact == 0:
        terms = [c] + [x * y for x, y in zip(a, b)]  # Python floats hold these products exactly
        return -0.0 if all(t == 0 and math.copysign(1, t) < 0 for t in terms) else 0.0
    return fmt_round(exact, out)


def ref_pairwise(a, b, c: float) -> float:
    """Adjacent pairs of exact products added with fp32 RNE, level by level (an odd one is
    carried up unchanged), then the tree's value added to c."""
    vals = [x * y for x, y in zip(a, b)]
    while len(vals) > 1:
        nxt = [ref_add(vals[i], vals[i + 1], "fp32") for i in range(0, len(vals) - 1, 2)]
        vals = nxt + (vals[-1:] if len(vals) % 2 else [])
    start = ref_add(c, 0.0, "fp32") if c != 0 else c
    return ref_add(start, vals[0], "fp32")


def _model_exponent(x: float, emin: int) -> int:
    return max(_floor_log2(abs(Fraction(x))), emin)


def ref_block(a, b, c: float, acc: Accumulator, fa: str, fb: str) -> float:
    """SPEC section 5 as written: per block, exact products with exponent e_a + e_b, align to
    the largest exponent (zero c -> zero_c_exponent), truncate each term toward zero to F
    fraction bits, add exactly, round (out_rounding) to fp32 with out_frac_bits, -0 -> +0;
    recursive over K. With ``zero_exponent`` (MMA-Sim's rule) a zero operand counts with that
    exponent and its product takes part in the alignment."""
    ea, eb = get_format(fa).emin, get_format(fb).emin
    for s in range(0, len(a), acc.block):
        if math.isinf(c):
            return c  # an overflowed (RNE) accumulator stays Inf (the products are finite)
        terms = []
        for x, y in zip(a[s : s + acc.block], b[s : s + acc.block]):
            if x != 0 and y != 0:
                terms.append((Fraction(x) * Fraction(y), _model_exponent(x, ea) + _model_exponent(y, eb)))
            elif acc.zero_exponent is not None:
                ex = acc.zero_exponent if x == 0 else _model_exponent(x, ea)
                terms.append((Fraction(0), ex + (acc.zero_exponent if y == 0 else _model_exponent(y, eb))))
        ec = acc.zero_c_exponent if c == 0 else _model_exponent(c, -126)
        E = max([e for _, e in terms] + [ec])
        unit = Fraction(2) ** (E - acc.frac_bits)
        total = sum(math.trunc(v / unit) for v in [t for t, _ in terms] + [Fraction(c)]) * unit
        c = fmt_round(total, "fp32", acc.out_rounding, acc.out_frac_bits) + 0.0
    return c


# ---- strategies -------------------------------------------------------------------------------
def values(fmt: str, *, wide: bool = True):
    """Finite values of a format, from codes: the whole range (subnormals, the largest values)."""
    f = get_format(fmt)
    top = (1 << f.bits) - 1

    def decode(code: int) -> float:
        return float(fpemu.decode(np.array([code << f.code_shift], dtype=f.code_dtype), f)[0])

    codes = st.integers(0, top)
    # Small magnitudes and exact +-1 make cancellation and mixed signs common.
    pool = st.one_of(codes.map(decode), st.sampled_from([1.0, -1.0, 0.5, -0.5, 0.0, -0.0, f.min_subnormal]))
    return pool.filter(math.isfinite)


@st.composite
def matrices(draw, fmt: str, c_fmt: str = "fp32", max_k: int = 10):
    m = draw(st.integers(1, 3))
    n = draw(st.integers(1, 3))
    k = draw(st.integers(1, max_k))
    v = values(fmt)
    A = np.array(draw(st.lists(v, min_size=m * k, max_size=m * k))).reshape(m, k)
    B = np.array(draw(st.lists(v, min_size=k * n, max_size=k * n))).reshape(k, n)
    # Make exact cancellation likely: sometimes B's column 0 is A's row 0 with a sign flip.
    if draw(st.booleans()) and n >= 1:
        B[:, 0] = -A[0, :]
    C = np.array(draw(st.lists(values(c_fmt), min_size=m * n, max_size=m * n))).reshape(m, n)
    return A, B, C


def _same(got: np.ndarray, want: list[list[float]]) -> None:
    want_arr = np.array(want, dtype=np.float32)
    assert got.view(np.uint32).tolist() == want_arr.view(np.uint32).tolist(), (got, want_arr)


def _each(A, B, C, fn):
    return [[fn(list(A[i]), list(B[:, j]), float(C[i, j])) for j in range(B.shape[1])] for i in range(A.shape[0])]


# ---- tests ------------------------------------------------------------------------------------
@both(data=st.data(), fmt=st.sampled_from(["fp16", "bf16", "e4m3", "e5m2", "fp32"]), out=st.sampled_from(["fp32", "fp16", "bf16"]))
def test_exact_model_equals_fraction_sum(data, fmt, out):
    A, B, C = data.draw(matrices(fmt, "fp16" if out == "fp16" else "fp32"))
    got = gemm(A, B, C, inputs=fmt, accumulator="exact", out=out)
    _same(got, _each(A, B, C, lambda a, b, c: ref_exact(a, b, c, out)))


@both(data=st.data(), fmt=st.sampled_from(["fp16", "bf16", "e4m3", "fp32"]), acc_fmt=st.sampled_from(["fp32", "fp16", "bf16"]))
def test_sequential_models_equal_fraction_loop(data, fmt, acc_fmt):
    A, B, C = data.draw(matrices(fmt, acc_fmt))
    got = gemm(A, B, C, inputs=fmt, accumulator=acc_fmt, out=acc_fmt)
    _same(got, _each(A, B, C, lambda a, b, c: ref_sequential(a, b, c, acc_fmt)))


@both(data=st.data(), fmt=st.sampled_from(["fp16", "bf16", "fp32"]))
def test_pairwise_fp32_equals_fraction_tree(data, fmt):
    A, B, C = data.draw(matrices(fmt))
    got = gemm(A, B, C, inputs=fmt, accumulator="pairwise_fp32")
    _same(got, _each(A, B, C, ref_pairwise))


WIDE = BlockFMA("wide", block=16, frac_bits=48, out_rounding="rne")  # sums beyond 2**53


@both(
    data=st.data(),
    case=st.sampled_from(
        [("v100", "fp16"), ("a100", "bf16"), ("a100", "tf32"), ("h100", "fp16"), ("ada", "e4m3"),
         ("h100", "e5m2"), ("b200", "e5m2"), (WIDE, "fp16"), (WIDE, "bf16")]
    ),
)
def test_block_model_equals_spec_as_written(data, case):
    gpu, fmt = case
    A, B, C = data.draw(matrices(fmt, max_k=40))
    acc = get_accumulator(gpu, fmt)
    got = gemm(A, B, C, inputs=fmt, accumulator=acc)
    _same(got, _each(A, B, C, lambda a, b, c: ref_block(a, b, c, acc, fmt, fmt)))


@both(data=st.data())
def test_promotion_adds_unit_partials_in_fp32(data):
    A, B, C = data.draw(matrices("e4m3", max_k=40))
    acc = dataclasses.replace(get_accumulator("h100", "e4m3"), promote=8)
    unit = get_accumulator("h100", "e4m3")

    def ref(a, b, c):
        total = fmt_round(Fraction(c), "fp32")
        for s in range(0, len(a), 8):
            part = ref_block(a[s : s + 8], b[s : s + 8], 0.0, unit, "e4m3", "e4m3")
            total = fmt_round(Fraction(total) + Fraction(part), "fp32") + 0.0
        return total

    _same(gemm(A, B, C, inputs="e4m3", accumulator=acc), _each(A, B, C, ref))
