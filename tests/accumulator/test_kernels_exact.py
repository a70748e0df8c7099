"""The exact dense model (fpemu/accumulator/kernels/exact.py) and the sign of zero: IEEE 754's
sum of the exact products and c rounded once, its zero signed as section 6.3 says, against
Fractions and the reference codec; the exact block model agrees on a negative underflow.
(Regression tests: each failed on the code before its fix.)"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from reference import ref_decode_float, ref_encode

import fpemu
from fpemu.formats import get_format

TINY = {"fp32": 2.0**-100, "bf16": 2.0**-100, "fp16": 2.0**-24}  # products underflow every output


def _negative_zero(v: float) -> bool:
    return v == 0 and bool(np.signbit(v))


def _ieee_sum(a: list[float], b: list[float], c: float, out: str) -> float:
    """IEEE 754's sum of the exact products and c, rounded once (RNE) to ``out``: a non-zero
    exact sum rounds with its sign (an underflow to zero keeps it); an exact zero is -0 only
    when every term is -0 (x + y of two -0 is -0), else +0 (section 6.3, RNE)."""
    terms = [x * y for x, y in zip(a, b)] + [c]
    exact = sum((Fraction(t) for t in terms), Fraction(0))
    if exact == 0:
        return -0.0 if all(_negative_zero(t) for t in terms) else 0.0
    fmt = get_format(out)
    value = ref_decode_float(ref_encode(exact, fmt), fmt)
    return value if value != 0 else (-0.0 if exact < 0 else 0.0)


def _zero_cases(inputs: str) -> list[tuple[list[float], list[float], float]]:
    t = TINY[inputs]
    return [
        ([-t], [t], -0.0),  # a negative product that underflows, c = -0: -0
        ([-t], [t], 0.0),  # ... with c = +0: still negative, -0
        ([t], [t], -0.0),  # a positive one: +0
        ([], [], -0.0),  # K = 0: c itself
        ([], [], 0.0),
        ([-0.0, 0.0], [1.0, -1.0], -0.0),  # all -0: -0
        ([0.0, -0.0], [1.0, 1.0], -0.0),  # +0 and -0 mixed: +0
        ([-0.0], [1.0], 0.0),
        ([1.0, -1.0], [1.0, 1.0], -0.0),  # an exact zero of mixed signs: +0
        ([-t, t], [t, t], -0.0),
    ]


@pytest.mark.parametrize("acc", ["exact", "fp32", "pairwise_fp32"])
@pytest.mark.parametrize("inputs", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("out", ["fp32", "fp16", "bf16"])
def test_sign_of_zero_follows_ieee(acc, inputs, out):
    for a, b, c in _zero_cases(inputs):
        want = _ieee_sum(a, b, c, out)
        shape = (1, len(a))
        got = fpemu.dot(np.reshape(a, shape), np.reshape(b, shape), [c], inputs=inputs, accumulator=acc, out=out)
        assert got.view(np.uint32).tolist() == [np.float32(want).view(np.uint32)], (a, b, c, want, got)
        got = fpemu.gemm(np.reshape(a, shape), np.reshape(b, shape[::-1]), [[c]], inputs=inputs, accumulator=acc, out=out)
        assert got.view(np.uint32).tolist() == [[np.float32(want).view(np.uint32)]], (a, b, c, want, got)


def test_exact_negative_underflow_is_negative_zero():
    got = fpemu.dot([[-(2.0**-100)]], [[2.0**-100]], [-0.0], inputs="fp32", accumulator="exact")
    assert got.view(np.uint32).tolist() == [0x80000000]
    same = fpemu.dot([[-(2.0**-100)]], [[2.0**-100]], [-0.0], inputs="fp32", accumulator="fp32")
    assert same.view(np.uint32).tolist() == [0x80000000]


def test_exact_signed_zero_rows_are_independent():
    a = np.array([[-0.0, -0.0], [-0.0, 0.0], [1.0, -1.0], [-(2.0**-100), 0.0]])
    b = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [2.0**-100, 1.0]])
    got = fpemu.dot(a, b, [-0.0, -0.0, -0.0, 0.0], inputs="fp32", accumulator="exact")
    assert got.view(np.uint32).tolist() == [0x80000000, 0, 0, 0x80000000]


def test_mx_exact_agrees_on_a_negative_underflow():
    from fpemu import mx

    a, b = np.array([[-(2.0**-100)] + [0.0] * 31]), np.array([[2.0**-100] + [0.0] * 31])
    x, y = mx.quantize(a, "mxfp8_e4m3"), mx.quantize(b.T, "mxfp8_e4m3", axis=0)
    want = fpemu.dot(mx.dequantize(x), mx.dequantize(y).T, [-0.0], inputs="fp32", accumulator="exact")
    assert want.view(np.uint32).tolist() == [0x80000000]
    # (with c = +0 they differ by design: mx's exact model adds each block's rounded sum to c)
    assert fpemu.gemm(x, y, [[-0.0]]).view(np.uint32).tolist() == [want.view(np.uint32).tolist()]
