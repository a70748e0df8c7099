"""Integer inputs beyond 2**53 are rounded once, exactly (no double rounding through float64)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpemu


def exact_fp32_rz(v: int) -> int:
    """fp32 code of int v rounded toward zero, from exact integer arithmetic."""
    sign = 0x80000000 if v < 0 else 0
    mag = abs(v)
    if mag == 0:
        return sign
    e = mag.bit_length() - 1
    kept = mag >> (e - 23) if e >= 23 else mag << (23 - e)
    return sign | ((e + 127) << 23) | (kept - (1 << 23))


def exact_fp32_nearest_even(v: int) -> int:
    """fp32 code of int v rounded to nearest even, from Fraction arithmetic."""
    down = exact_fp32_rz(v)
    mag = abs(v)
    e = mag.bit_length() - 1
    if e < 24:
        return down
    ulp = 1 << (e - 23)
    rem = Fraction(mag % ulp, ulp)
    up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and down & 1)
    return down + int(up)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_int64_to_fp32_rounds_once(v):
    x = np.array([v], dtype=np.int64)
    assert int(fpemu.encode(x, "fp32", rounding="rz")[0]) == exact_fp32_rz(v)
    assert int(fpemu.encode(x, "fp32")[0]) == exact_fp32_nearest_even(v)


@pytest.mark.parametrize(
    "v, code",
    [
        # 2**53 + 1 rounds to 2**53 in float64; a second rounding toward +inf must still go up.
        (2**53 + 1, 0x5A000001),
        (2**64 - 1, 0x5F800000),
        (2**63 + 1, 0x5F000000),
    ],
)
def test_uint64_round_up_sees_the_dropped_bits(v, code):
    rounding = "up" if v == 2**53 + 1 else "nearest_even"
    assert int(fpemu.encode(np.array([v], dtype=np.uint64), "fp32", rounding=rounding)[0]) == code


def test_python_ints_and_lists():
    assert fpemu.encode(3, "e4m3") == 0x44
    assert fpemu.encode([1, 2], "bf16").tolist() == [0x3F80, 0x4000]
    assert fpemu.quantize([1, 3], "e2m1").dtype == np.float64
