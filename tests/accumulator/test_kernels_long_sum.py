"""The one exact long sum (fpemu/accumulator/kernels/long_sum.py) against Fraction sums rounded
to odd by hand, and both ways of the exact block model (float64 sums where the bounds allow,
the long sum otherwise) against the Fraction oracle of tests/mma_oracle.py."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mma_oracle import exact_dot

import fpemu
from fpemu import mx
from fpemu.accumulator.kernels import blockwise
from fpemu.accumulator.kernels.long_sum import LongSum


def round_to_odd(x: Fraction) -> float:
    """x rounded to odd at 53 bits, by hand: truncated, the last bit set if anything was cut."""
    if x == 0:
        return 0.0
    sign, a = (-1, -x) if x < 0 else (1, x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e = e if Fraction(2) ** e <= a else e - 1
    unit = Fraction(2) ** (e - 52)
    m = a // unit
    if m * unit != a:
        m |= 1
    return sign * float(m * unit)


# Terms of the sizes the models add (products of formats up to fp32, scaled elements): far
# from float64's subnormals, so the sum's last bit is a normal float64's.
floats = st.floats(allow_nan=False, allow_infinity=False, width=64).filter(lambda v: v == 0 or 2.0**-600 < abs(v) < 2.0**600)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(floats, min_size=1, max_size=12), min_size=1, max_size=4))
def test_floats_add_exactly_and_read_to_odd(rows):
    width = max(map(len, rows))
    terms = np.array([r + [0.0] * (width - len(r)) for r in rows])  # (R, terms)
    nz = np.abs(terms[terms != 0])
    lowest = int(np.frexp(nz)[1].min()) - 53 if nz.size else 0
    highest = int(np.frexp(nz)[1].max()) if nz.size else 0
    total = LongSum(len(rows), lowest, highest, width)
    for k in range(width):
        total.add_floats(terms[:, k])
    want = [round_to_odd(sum((Fraction(v) for v in r), Fraction(0))) for r in rows]
    assert total.read().tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(0, 40)), min_size=1, max_size=10))
def test_integers_add_exactly_and_read_to_odd(terms):
    total = LongSum(1, 0, 110, len(terms))
    for x, weight in terms:
        total.add_integers(np.array([x]), weight)
    assert total.read().tolist() == [round_to_odd(Fraction(sum(x * 2**w for x, w in terms)))]


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp4", "nvfp4", "nvfp4_ue5m3"])
@pytest.mark.parametrize("bits", [53, 0])  # float64 sums where the bounds allow; the long sum always
def test_both_ways_of_the_exact_block_model_are_exact(fmt, bits, monkeypatch):
    monkeypatch.setattr(blockwise, "FLOAT_SUM_BITS", bits)
    rng = np.random.default_rng(len(fmt) + bits)
    x = rng.standard_normal((3, 70)) * np.exp2(rng.integers(-30, 30, (3, 1)))
    y = rng.standard_normal((70, 2))
    x[0, :5] = 0.0
    x[1, 32:64] = -0.0
    nv = dict(global_amax=6 * 448.0) if fmt == "nvfp4" else {}  # a per-tensor scale of 1: alpha is 1
    qa, qb = mx.quantize(x, fmt, **nv), mx.quantize(y, fmt, axis=0, **nv)
    c = np.array([[0.5, -0.0], [-0.0, 3.0], [-2.0, 1e-30]], np.float32)
    got = fpemu.gemm(qa, qb, c, accumulator="exact")
    sfmt, el = qa.format.scale.name, qa.format.element.name
    want = [[exact_dot(qa.codes[i], qb.codes[:, j], qa.scales[i], qb.scales[:, j], float(c[i, j]), el, el, sfmt,
                       qa.block_size) for j in range(2)] for i in range(3)]  # fmt: skip
    assert np.array_equal(np.asarray(want, np.float32).view(np.uint32), got.view(np.uint32))
