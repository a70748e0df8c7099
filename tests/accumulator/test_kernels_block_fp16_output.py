"""Hopper and Blackwell FP8 with fp16 output (issue 18): the preset against exact rational
arithmetic, its fields' checks, and its round trip through a vector file.

The hardware check is tests/accumulator/test_units_hwdata.py (5000/5000 on the four H100/B200 FP8
fp16 columns). Here the preset is compared with the model written out independently in
``fractions.Fraction``: within each instruction of 32 products, those with k mod 4 in {0, 1}
first, then the others; two blocks of 16, each aligned with the running fp16 sum to their
largest exponent, every term truncated to 25 fraction bits below it, summed, rounded to fp16
(RNE); the first block from zero; c added after the instruction, rounded once (RNE); the
result is the next instruction's c.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpemu import decode
from fpemu.accumulator import BlockFMA, Sequential, dot, gemm, get_accumulator, model_from_dict
from fpemu.formats import get_format

FP16_MAX = Fraction(65504)


def fp16_rne(v: Fraction) -> Fraction | float:
    """v rounded to fp16, ties to even; IEEE overflow to +-inf."""
    if v == 0:
        return Fraction(0)
    sign, m = (1 if v > 0 else -1), abs(v)
    e = max(m.numerator.bit_length() - m.denominator.bit_length(), -14)
    while Fraction(2) ** e > m and e > -14:
        e -= 1
    while Fraction(2) ** (e + 1) <= m:
        e += 1
    ulp = Fraction(2) ** (e - 10)
    q, r = divmod(m, ulp)
    if r > ulp / 2 or (r == ulp / 2 and q % 2 == 1):
        q += 1
    out = q * ulp
    if out > FP16_MAX:
        return sign * math.inf
    return sign * out


def exponent(x: Fraction, emin: int) -> int:
    """floor(log2 |x|), at least emin (a subnormal counts at its format's emin); a zero's
    does not matter (zero products are dropped)."""
    m = abs(x)
    if m == 0:
        return emin
    e = m.numerator.bit_length() - m.denominator.bit_length()
    while Fraction(2) ** e > m:
        e -= 1
    while Fraction(2) ** (e + 1) <= m:
        e += 1
    return max(e, emin)


def block(acc: Fraction, products: list[tuple[Fraction, int]]) -> Fraction | float:
    """One block: acc and the products aligned to the largest exponent, truncated to 25
    fraction bits below it, summed exactly, rounded to fp16."""
    terms = [(p, e) for p, e in products if p != 0]
    if acc != 0:
        terms.append((acc, exponent(acc, -14)))
    if not terms:
        return Fraction(0)
    E = max(e for _, e in terms)
    unit = Fraction(2) ** (E - 25)
    total = sum((int(p / unit) * unit for p, _ in terms), Fraction(0))  # int(): toward zero
    return fp16_rne(total)


def reference(a: list[float], b: list[float], c: float, fmt: str) -> float:
    """The model in rational arithmetic, over any K (finite inputs, no overflow)."""
    emin = get_format(fmt).emin
    prods = [(Fraction(x) * Fraction(y), exponent(Fraction(x), emin) + exponent(Fraction(y), emin))
             for x, y in zip(a, b)]  # fmt: skip
    d = fp16_rne(Fraction(c))
    for s in range(0, max(len(prods), 1), 32):
        inst = prods[s : s + 32]
        order = [k for k in range(32) if k % 4 < 2] + [k for k in range(32) if k % 4 >= 2]
        lanes = [inst[k] for k in order if k < len(inst)]
        acc = Fraction(0)
        for t in range(0, len(lanes), 16):
            acc = block(acc, lanes[t : t + 16])
        d = fp16_rne(acc + d)
    return float(d)


def finite_values(fmt: str) -> np.ndarray:
    codes = np.arange(256, dtype=np.uint8)
    v = decode(codes, fmt)
    return v[np.isfinite(v)]


def test_hand_computed_example():
    """Products 1 (k = 0) and 2**-12 (k = 2) and c = 2**-11: k = 2 is in the second block, so
    1 + 2**-12 rounds to 1 there, and 1 + 2**-11 is then a tie to even: 1. The exact sum,
    1 + 3 * 2**-12, would round up to 1 + 2**-10."""
    a = np.zeros(32)
    b = np.zeros(32)
    a[0] = b[0] = 1.0
    a[2] = b[2] = 2.0**-6
    got = dot(a, b, 2.0**-11, inputs="e4m3", accumulator="h100", out="fp16")
    assert float(got) == 1.0 == reference(list(a), list(b), 2.0**-11, "e4m3")
    exact = dot(a, b, 2.0**-11, inputs="e4m3", accumulator="exact", out="fp16")
    assert float(exact) == 1 + 2.0**-10


@pytest.mark.parametrize("gpu", ["h100", "h200", "b200", "hopper", "blackwell"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("K", [32, 20, 64, 70])
def test_random_rows_match_rational_arithmetic(gpu, fmt, K):
    """Random FP8 rows (products spread over the format's range, cancelling signs, fp16 c),
    one and several instructions, a short last one: the preset equals the rational model."""
    rng = np.random.default_rng(K)
    vals = finite_values(fmt)
    vals = vals[np.abs(vals) < 64]  # keep the sums far from fp16's overflow
    R = 60
    a = rng.choice(vals, size=(R, K))
    b = rng.choice(vals, size=(R, K))
    a[::3, K // 2 :] = -a[::3, : K - K // 2]  # heavy cancellation in every third row
    b[::3, K // 2 :] = b[::3, : K - K // 2]
    c = np.float16(rng.standard_normal(R) * 2.0 ** rng.integers(-12, 8, size=R)).astype(np.float64)
    c[::7] = 0.0
    got = dot(a, b, c, inputs=fmt, accumulator=gpu, out="fp16")
    want = [reference(list(a[r]), list(b[r]), c[r], fmt) for r in range(R)]
    assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_property_matches_rational_arithmetic(data):
    fmt = data.draw(st.sampled_from(["e4m3", "e5m2"]))
    K = data.draw(st.integers(1, 40))
    vals = finite_values(fmt)
    vals = vals[np.abs(vals) < 32]
    pick = st.lists(st.sampled_from(vals.tolist()), min_size=K, max_size=K)
    a, b = data.draw(pick), data.draw(pick)
    c = float(np.float16(data.draw(st.floats(-1000, 1000, width=16))))
    got = dot([a], [b], [c], inputs=fmt, accumulator="h100", out="fp16")
    assert got.tolist() == [reference(a, b, c, fmt)]


def test_gemm_uses_the_fp16_model_and_the_fp32_one_elsewhere():
    """gemm's rows are dot's rows; the fp32 output keeps the fp32 model (one block of 32, c
    in it)."""
    rng = np.random.default_rng(5)
    vals = finite_values("e4m3")
    A = rng.choice(vals[np.abs(vals) < 16], size=(6, 64))
    B = rng.choice(vals[np.abs(vals) < 16], size=(64, 5))
    C = np.float16(rng.standard_normal((6, 5)))
    g16 = gemm(A, B, C, inputs="e4m3", accumulator="h100", out="fp16")
    rows = dot(np.repeat(A, 5, axis=0), np.tile(B.T, (6, 1)), C.reshape(-1), inputs="e4m3", accumulator="h100",
               out="fp16")  # fmt: skip
    assert g16.reshape(-1).tolist() == rows.tolist()
    assert g16.reshape(-1).tolist() == [reference(list(A[i]), list(B[:, j]), float(C[i, j]), "e4m3")
                                        for i in range(6) for j in range(5)]  # fmt: skip
    acc = get_accumulator("h100", "e4m3")
    assert acc.for_output("fp32") is acc and acc.for_output("bf16") is acc
    assert (acc.block, acc.frac_bits, acc.lane_order, acc.c_after) == (32, 13, None, False)


def test_specials_follow_ieee():
    """An Inf product makes the result Inf; Inf and -Inf (products, or a block result that
    overflowed fp16 and c) make NaN."""
    a = np.zeros((3, 32))
    b = np.zeros((3, 32))
    a[0, 0], b[0, 0] = np.inf, 1.0  # e5m2 has Inf
    a[1, :16] = b[1, :16] = 256.0  # 16 products of 65536: the block overflows fp16 to +Inf
    a[2, 0], b[2, 0], a[2, 1], b[2, 1] = np.inf, 1.0, -np.inf, 1.0
    got = dot(a, b, [1.0, -np.inf, 0.0], inputs="e5m2", accumulator="b200", out="fp16")
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2])


def test_zero_results_are_positive():
    a = np.zeros((2, 32))
    b = np.zeros((2, 32))
    a[0, 0] = b[0, 0] = 1.0
    got = dot(a, b, [-1.0, -0.0], inputs="e4m3", accumulator="h100", out="fp16")
    assert got.tolist() == [0.0, 0.0] and not np.signbit(got).any()


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(lane_order="bit9", instruction_k=32, block=16), "instruction_k above 2\\*\\*j"),
        (dict(lane_order="odd", instruction_k=32, block=16), "lane_order must be 'bit<j>'"),
        (dict(lane_order=1), "lane_order must be 'bit<j>' or None"),
        (dict(lane_order="bit1", block=16), "instruction_k above"),
        (dict(c_after=1), "c_after must be True or False"),
        (dict(fp16_output="h100"), "fp16_output must be a BlockFMA or None, got str"),
        (dict(fp16_output=Sequential("loop")), "fp16_output must be a BlockFMA or None, got Sequential"),
        (dict(fp16_output=BlockFMA("x", fp16_output=BlockFMA("y"))), "fp16_output's own fp16_output"),
    ],
)
def test_field_checks(fields, message):
    with pytest.raises(ValueError, match=message):
        BlockFMA("bad", **fields)
    with pytest.raises(TypeError, match="c_after"):
        Sequential("bad", c_after=True)  # a loop has no such field


def test_model_survives_a_vector_file(tmp_path):
    """asdict writes the fp16 model as a nested dict; model_from_dict reads it back, so a
    vector file made with it re-checks."""
    from fpemu.vectors import dot_vectors, verify_vectors, write_vectors

    acc = get_accumulator("h100", "e5m2")
    again = model_from_dict(dataclasses.asdict(acc))
    assert again == acc and again.fp16_output == acc.fp16_output
    path = tmp_path / "h100_fp16.npz"
    write_vectors(dot_vectors("e5m2", "h100", n=200, out="fp16"), path)
    assert verify_vectors(path) == (200, 200)
