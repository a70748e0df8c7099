"""MX elements of float32 blocks encoded without computing the quotients
(fpemu.codec.encode_scaled_blocks: each block's scale exponent comes off the exponent fields
inside the top-half arithmetic's addition), against the exact quotients (Fractions, as in
tests/mx/test_mx_quantization.py), with a spy that the arithmetic really ran:

* hypothesis: blocks whose exponents cluster or spread over all of float32 (zeros,
  subnormals, ties, values near the element maxima), every element format, rounding and scale
  rule the arithmetic serves;
* the edges of :func:`~fpemu.codec.fast.top_half.scaled_blocks_hold`: the smallest scale exponent it
  takes, with zeros and float32 subnormals in the block (read as if normal there), and the
  one below it (the quotients instead); the largest amax of float32; Inf and NaN blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fpemu
import fpemu.mx.mx_quantization as mxq
from fpemu import mx
from mx_helpers import check, wide_blocks

ARITHMETIC = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2")
ROUNDINGS = ("nearest_even", "nearest_away", "toward_zero")
RULES = ("floor", "rceil", "ceil", "even")


@pytest.fixture
def calls(monkeypatch):
    """How many times the scaled-block arithmetic ran (the codec's entry said it did)."""
    count = [0]
    real = mxq.encode_scaled_blocks

    def spy(*args, **kwargs):
        ran = real(*args, **kwargs)
        count[0] += bool(ran)
        return ran

    monkeypatch.setattr(mxq, "encode_scaled_blocks", spy)
    return count


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(x=wide_blocks(), fmt=st.sampled_from(ARITHMETIC), rounding=st.sampled_from(ROUNDINGS),
       rule=st.sampled_from(RULES), seed=st.integers(0, 2**32 - 1))
def test_the_arithmetic_gives_the_exact_quotients_codes(calls, x, fmt, rounding, rule, seed):
    check(x, fmt, rounding, rule, seed)


def _emin(fmt: str) -> int:
    return fpemu.mx.get_block_format(fmt).element.emin


def _block(amax_exponent: int, fmt: str, seed: int) -> np.ndarray:
    """One block of 32 float32 values: amax 1.5 * 2**amax_exponent, then zeros (both signs),
    float32 subnormals and random values below the amax."""
    rng = np.random.default_rng(seed)
    x = (rng.uniform(-1, 1, 32) * 2.0 ** amax_exponent).astype(np.float32)
    x[0] = np.float32(1.5 * 2.0 ** amax_exponent)
    x[1:3] = [0.0, -0.0]
    x[3:6] = np.array([1, 2**22 + 3, 2**23 - 1], np.uint32).view(np.float32)  # subnormals
    x[6] = -x[4]
    return x


@pytest.mark.parametrize("fmt", ARITHMETIC)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_the_smallest_scales_with_zeros_and_subnormals(calls, fmt, rounding):
    """The smallest scale exponent the arithmetic takes, -(126 + emin), and the next one
    below (which it leaves to the quotients), each with zeros and float32 subnormals among
    larger values: the exact quotients' codes either way."""
    emax = fpemu.mx.get_block_format(fmt).emax
    for e, arithmetic in ((-(126 + _emin(fmt)), True), (-(127 + _emin(fmt)), False)):
        calls[0] = 0
        x = _block(e + emax, fmt, seed=abs(e))
        q = mx.quantize(x, fmt, rounding=rounding)
        assert int(q.scales[0]) - 127 == e  # the case meant
        check(x, fmt, rounding, "floor", 0)
        assert (calls[0] > 0) == arithmetic, f"scale exponent {e}"


@pytest.mark.parametrize("fmt", ARITHMETIC)
def test_the_largest_amax_and_blocks_with_inf_or_nan(calls, fmt):
    big = np.concatenate([_block(126, fmt, 1), _block(0, fmt, 2)])
    big[0] = np.float32(np.finfo(np.float32).max)
    check(big, fmt, "nearest_even", "floor", 0)
    assert calls[0] > 0
    for special in (np.inf, -np.inf, np.nan):
        calls[0] = 0
        x = np.concatenate([_block(3, fmt, 3), _block(-5, fmt, 4)])
        x[40] = special
        q = mx.quantize(x, fmt)
        assert q.scales[1] == 0xFF and calls[0] == 0  # the quotients: a NaN block
        assert mx.quantize(x[:32], fmt).codes.tolist() == q.codes[:32].tolist()
