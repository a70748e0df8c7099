"""fpemu.arith's round-to-odd sum against exact rational arithmetic (fractions.Fraction)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fpemu.arith import round_to_odd_sum


def odd53(q: Fraction) -> float:
    """q rounded to odd at float64's 53 bits: toward zero, then the last bit set if inexact."""
    f = float(q)  # nearest
    if Fraction(f) == q:
        return f
    if abs(Fraction(f)) > abs(q):
        f = math.nextafter(f, 0.0)
    bits = np.float64(f).view(np.int64)
    return f if bits & 1 else math.nextafter(f, math.copysign(math.inf, f))


def floats(scale: int):
    """Finite float64 values over a window of binades, some with short significands (so that
    sums are often exact) and some zeros."""
    full = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)
    short = st.integers(-(2**20), 2**20).map(float)
    return st.tuples(st.one_of(full, short, st.just(0.0)), st.integers(-scale, scale)).map(lambda t: math.ldexp(*t))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(floats(70), floats(70)), min_size=1, max_size=40))
def test_round_to_odd_sum_is_the_exact_sum_rounded_to_odd(pairs):
    x = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    got = round_to_odd_sum(x, y)
    want = [odd53(Fraction(a) + Fraction(b)) for a, b in pairs]
    assert got.tolist() == want
    zero = got == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(x[zero] + y[zero]))  # IEEE's sign of an exact zero


def test_round_to_odd_sum_passes_inf_and_nan_through():
    x = np.array([np.inf, -np.inf, np.nan, 1.0, 1.0])
    y = np.array([1.0, -np.inf, 0.0, np.inf, 2.0**-60])
    got = round_to_odd_sum(x, y)
    assert got[:2].tolist() == [np.inf, -np.inf] and np.isnan(got[2]) and got[3] == np.inf
    assert got[4] == 1 + 2.0**-52
    assert round_to_odd_sum(np.float64(1.0), np.float64(2.0**-60)) == 1 + 2.0**-52  # 0-d operands
