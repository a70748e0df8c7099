"""MX elements of float32 blocks encoded without computing the quotients
(fpemu.codec.encode_scaled_blocks: each block's scale exponent comes off the exponent fields
inside the top-half arithmetic's addition), against the exact quotients (Fractions, as in
tests/mx/test_mx_quantization.py), with a spy that the arithmetic really ran:

* hypothesis: blocks whose exponents cluster or spread over all of float32 (zeros,
  subnormals, ties, values near the element maxima), every element format, rounding and scale
  rule the arithmetic serves;
* the edges of :func:`~fpemu.codec.fast.top_half.scaled_blocks_hold`: the smallest scale exponent it
  takes, with zeros and float32 subnormals in the block (read as if normal there), and the
  one below it (the quotients instead); the largest amax of float32; Inf and NaN blocks;
* the floor scale read off the top halves (fpemu.codec.encode_scaled_by_block_max): against
  exact log2 of every float32 top half; and an array of many pieces where some pieces hold
  what it declines (an all-zero block, a float32-subnormal amax, Inf, NaN, a scale below
  the smallest it takes), which take the amax way while the rest does not: against float64
  input (no top halves) everywhere and Fractions at those blocks and the pieces' edges.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fpemu
import fpemu.mx.mx_quantization as mxq
from fpemu import mx
from fractions import Fraction

from fpemu.codec.chunks import TOP_HALF_CHUNK
from fpemu.mx.mx_scales import floor_exponents
from mx_helpers import check, expected_codes, oracle_scale, wide_blocks

ARITHMETIC = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2")
ROUNDINGS = ("nearest_even", "nearest_away", "toward_zero")
RULES = ("floor", "rceil", "ceil", "even")


@pytest.fixture
def calls(monkeypatch):
    """How many times the scaled-block arithmetic ran (one of the codec's two entries said it
    did: encode_scaled_blocks, or encode_scaled_by_block_max with some rows done)."""
    count = [0]
    scaled, by_max = mxq.encode_scaled_blocks, mxq.encode_scaled_by_block_max

    def spy(*args, **kwargs):
        ran = scaled(*args, **kwargs)
        count[0] += bool(ran)
        return ran

    def spy_max(rows, *args, **kwargs):
        done = by_max(rows, *args, **kwargs)
        count[0] += done is not None and sum(p.stop - p.start for p in done[1]) < rows.shape[0]
        return done

    monkeypatch.setattr(mxq, "encode_scaled_blocks", spy)
    monkeypatch.setattr(mxq, "encode_scaled_by_block_max", spy_max)
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


FLOAT_ELEMENTS = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4")


@pytest.mark.parametrize("fmt", FLOAT_ELEMENTS)
def test_the_floor_scale_of_every_top_half(fmt):
    """floor_exponents of every float32 top half (sign off) against the exact floor(log2)
    rule of the smallest and the largest float32 with that top half; None for zero and
    subnormal amax (field 0) and for Inf/NaN (field 255)."""
    bf = fpemu.mx.get_block_format(fmt)
    normal = np.arange(0x0080, 0x7F80, dtype=np.uint16)
    got = floor_exponents(normal, bf)
    for low in (0, 0xFFFF):
        values = ((normal.astype(np.uint32) << 16) | low).view(np.float32)
        want = [oracle_scale(Fraction(float(v)), fmt, "floor") - 127 for v in values[::61]]
        assert got[::61].tolist() == want
    assert got.tolist() == (np.clip((normal >> 7).astype(int) - 127 - bf.emax, -127, 127)).tolist()
    for outside in ([0x0000, 0x0100], [0x007F, 0x3F80], [0x7F80, 0x3F80], [0x7FC0]):
        assert floor_exponents(np.array(outside, np.uint16), bf) is None


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("fmt", ARITHMETIC)
def test_pieces_the_block_max_declines_take_the_amax_way(calls, monkeypatch, fmt, workers):
    piece = TOP_HALF_CHUNK  # (a worker thread's pieces are larger: 12 of these hold three of its)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(12 * piece).astype(np.float32)
    x[piece + 64: piece + 96] = 0.0  # piece 1: an all-zero block (amax 0)
    x[2 * piece + 32: 2 * piece + 64] = np.float32(2.0**-140) * rng.standard_normal(32)  # piece 2: subnormal amax
    x[3 * piece + 5] = np.inf  # piece 3: Inf (one block), NaN (another)
    x[3 * piece + 70] = np.nan
    e_small = -(127 + fpemu.mx.get_block_format(fmt).element.emin)  # piece 4: one below the smallest taken
    x[4 * piece: 4 * piece + 32] *= np.float32(2.0 ** (e_small + fpemu.mx.get_block_format(fmt).emax)) / 4
    undone = []
    by_max = mxq.encode_scaled_by_block_max

    def spy(rows, *args, **kwargs):
        done = by_max(rows, *args, **kwargs)
        undone.extend(p.stop - p.start for p in (done[1] if done is not None else ()))
        return done

    monkeypatch.setattr(mxq, "encode_scaled_by_block_max", spy)
    q = mx.quantize(x, fmt, workers=workers)
    assert calls[0] > 0 and undone  # some rows by the top halves' maxima, some not
    q64 = mx.quantize(x.astype(np.float64), fmt, workers=workers)
    assert np.array_equal(q.scales, q64.scales) and np.array_equal(q.codes, q64.codes)
    assert q.scales[piece // 32 + 2] == 0 and q.scales[3 * piece // 32] == 0xFF
    for start in (0, piece - 32, piece, piece + 64, 2 * piece + 32, 3 * piece + 64, 4 * piece, 5 * piece,
                  8 * piece, 12 * piece - 32):
        block = x[start: start + 32]
        if not np.isfinite(block).all():
            continue
        scale = q.scales[start // 32]
        assert scale == oracle_scale(max(Fraction(float(abs(v))) for v in block), fmt, "floor")
        assert q.codes[start: start + 32].tolist() == expected_codes(block, q.scales[start // 32: start // 32 + 1],
                                                                     fmt, "nearest_even", 0).tolist()


@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
def test_the_codec_declines_pieces_with_inf_or_nan_whatever_the_rule(special):
    """encode_scaled_by_block_max leaves a piece holding Inf or NaN undone even where the
    caller's rule would give it an exponent (its top half 0x7F80 reads as a finite field)."""
    fmt, conv = fpemu.get_format("e4m3"), fpemu.Conversion(overflow="saturate", nan="sign")
    rows = np.random.default_rng(3).standard_normal((2 * TOP_HALF_CHUNK // 32, 32)).astype(np.float32)
    rows[TOP_HALF_CHUNK // 32 + 5, 7] = special  # in the second piece
    out = np.zeros(rows.shape, np.uint8)
    exponents, undone = fpemu.codec.encode_scaled_by_block_max(
        rows, fmt, conv, lambda maxima: np.minimum((maxima >> 7).astype(np.int64) - 127 - 8, 127), out)
    assert undone == [slice(TOP_HALF_CHUNK // 32, 2 * TOP_HALF_CHUNK // 32)]
    first = rows[: TOP_HALF_CHUNK // 32]
    floor = np.floor(np.log2(np.abs(first).max(axis=1))).astype(np.int64) - 8
    assert exponents[: TOP_HALF_CHUNK // 32].tolist() == floor.tolist()
    assert np.array_equal(out[: TOP_HALF_CHUNK // 32],
                          fpemu.encode(first / np.exp2(floor)[:, None], fmt, conversion=conv))
