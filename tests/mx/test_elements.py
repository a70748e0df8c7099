"""MXINT8 with the codec's ``int8`` element Format (issue 10, item 3): every element rounding,
the OCP symmetric clamp, microxcaling's rule reproduced code for code, exact integer dots.

The oracles are written from the sources in exact integer / Fraction arithmetic, not with
fpemu code:

* OCP MX v1.0 (SPEC.md section 3): INT8 elements are two's complement with an implicit 2**-6
  (-2 .. 127/64, "-128 may be left unused"); element magnitudes above the element max are
  clamped to max, sign kept, i.e. to +-127/64 (code 0x81 on the negative side).
* microxcaling (mx/elemwise_ops.py ``_quantize_elemwise_core`` and ``_round_mantissa``;
  mx/formats.py int8: emax 0, max_norm 127/64): A = 64 * V/X with X = 2**floor(log2 amax),
  element = clamp(round(A), -127, 127); round "nearest" (its default) is
  ``sign(A) * floor(|A| + 1/2)``, half away from zero; "even" ties to even; "floor" is
  ``sign(A) * floor(|A|)``, toward zero.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.formats import Format
from fpemu.mx.inputs import ELEMENT_ROUNDINGS

from mx_helpers import block_of

#: microxcaling's element rounding names and the fpemu rounding that reproduces each.
MICROXCALING = {"nearest": "nearest_away", "even": "nearest_even", "floor": "toward_zero"}


# ---- microxcaling's rule, exactly ------------------------------------------------------------
def floor_log2(fr: Fraction) -> int:
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > fr else e


def microxcaling_round(a: Fraction, mode: str) -> int:
    """``_round_mantissa`` on an exact A: nearest = half away, even = half even, floor = trunc."""
    sign = -1 if a < 0 else 1
    if mode == "nearest":
        return sign * math.floor(abs(a) + Fraction(1, 2))
    if mode == "floor":
        return sign * math.floor(abs(a))
    return round(a)  # Python rounds a Fraction half to even


def microxcaling_mxint8(x: np.ndarray, mode: str) -> tuple[list[int], list[int], list[bool]]:
    """(scale codes, element codes, is-a-tie) of 32-element blocks with a nonzero amax."""
    scales, codes, ties = [], [], []
    for i in range(0, x.size, 32):
        block = [Fraction(float(v)) for v in x[i : i + 32]]
        e = floor_log2(max(abs(v) for v in block)) - 0  # emax of int8 is 0
        scales.append(e + 127)
        for v in block:
            a = v * 64 / Fraction(2) ** e
            n = max(-127, min(127, microxcaling_round(a, mode)))  # torch.clamp(+-max_norm)
            codes.append(n & 0xFF)  # the two's complement byte
            ties.append(a - math.floor(a) == Fraction(1, 2))
    return scales, codes, ties


def tie_blocks(dtype, nblocks: int = 400, seed: int = 0) -> np.ndarray:
    """Blocks of k/128 * 2**E (odd k: ties of 64 * V/X), |k| up to 255 (64 * V/X = +-127.5:
    the clamp), one element per block with |k| >= 128 so that X = 2**E, plus non-tie values
    and zeros."""
    rng = np.random.default_rng(seed)
    k = rng.integers(-255, 256, (nblocks, 32)).astype(np.float64)
    k[:, 0] = rng.choice([-1, 1], nblocks) * rng.integers(128, 256, nblocks)
    other = rng.random((nblocks, 32)) < 0.25
    k[other] = rng.uniform(-255, 255, other.sum())
    k[rng.random((nblocks, 32)) < 0.05] = 0
    e = rng.integers(-100, 100, (nblocks, 1))
    return (k / 128 * np.exp2(e)).astype(dtype).ravel()


@pytest.mark.parametrize("mode", list(MICROXCALING))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_microxcaling_rounding_is_reproduced_code_for_code(mode, dtype):
    x = tie_blocks(dtype)
    want_scales, want_codes, ties = microxcaling_mxint8(x, mode)
    q = mx.quantize(x, "mxint8", rounding=MICROXCALING[mode])
    assert q.scales.tolist() == want_scales
    assert q.codes.tolist() == want_codes
    assert sum(ties) > 1000 and 0x81 in want_codes and 0x7F in want_codes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_default_rne_differs_from_microxcaling_exactly_on_ties(dtype):
    """fpemu's default follows the OCP spec's RNE; microxcaling's default rounds ties away.
    They differ exactly at the ties whose two roundings differ (half of them: 0.5 -> 0 or 1,
    but 1.5 -> 2 either way; +-127.5 clamps to +-127 either way)."""
    x = tie_blocks(dtype, seed=1)
    _, away, ties = microxcaling_mxint8(x, "nearest")
    _, even, _ = microxcaling_mxint8(x, "even")
    rne = mx.quantize(x, "mxint8").codes
    assert rne.tolist() == even
    assert mx.quantize(x, "mxint8", rounding="nearest_away").codes.tolist() == away
    differ = rne != np.array(away, np.uint8)
    ties = np.array(ties)
    assert not (differ & ~ties).any()  # never off a tie
    assert np.array_equal(differ, ties & (np.array(even) != np.array(away)))
    assert 500 < differ.sum() < ties.sum()


def test_microxcaling_float32_tie_test_is_not_exact():
    """Why fpemu's ties-away does not compute floor(|A| + 1/2) in the input precision, as
    microxcaling's Python path does in float32: the sum rounds 0.5 - 2**-25 up to 1.0, so that
    path gives code 1 for V/X = (0.5 - 2**-25)/64, where the exact rule (and fpemu) gives 0."""
    a = np.float32(0.5 - 2.0**-25)
    assert np.floor(a + np.float32(0.5)) == 1
    assert microxcaling_round(Fraction(float(a)), "nearest") == 0
    x = block_of([1.0, float(a) / 64])
    for dtype in (np.float32, np.float64):
        q = mx.quantize(x.astype(dtype), "mxint8", rounding="nearest_away")
        assert q.codes[:2].tolist() == [0x40, 0x00]


# ---- the symmetric clamp, every rounding ------------------------------------------------------
BEYOND = [1.99, -1.99, 127.5 / 64, -127.5 / 64, -(2 - 2.0**-20), 127 / 64, -127 / 64, 1.0, -1.0]


@pytest.mark.parametrize("rounding", ELEMENT_ROUNDINGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symmetric_clamp_in_every_rounding(rounding, dtype):
    """Magnitudes beyond 127/64 (scale 1) become +-127/64 in every mode: 'down' would round
    -1.99 to -2.0 (0x80), 'up' 1.99 to 2.0 (beyond int8) without the OCP clamp."""
    for seed in range(20 if rounding == "stochastic" else 1):
        q = mx.quantize(block_of(BEYOND, dtype=dtype), "mxint8", rounding=rounding,
                        rng=seed if rounding == "stochastic" else None)
        assert q.scales.tolist() == [127]
        assert q.codes[:7].tolist() == [0x7F, 0x81, 0x7F, 0x81, 0x81, 0x7F, 0x81]
        assert q.codes[7:9].tolist() == [0x40, 0xC0]
        assert 0x80 not in q.codes.tolist()
    q = mx.quantize(block_of([np.inf, -np.inf, 1.0], dtype=dtype), "mxint8", rounding=rounding,
                    inf="saturate", rng=0 if rounding == "stochastic" else None)  # TE: Inf -> +-max, scale 0xFE
    assert q.scales.tolist() == [0xFE] and q.codes[:2].tolist() == [0x7F, 0x81]
    assert q.dequantize(np.float64)[:2].tolist() == [127 / 64 * 2.0**127, -127 / 64 * 2.0**127]


DETERMINISTIC = [r for r in ELEMENT_ROUNDINGS if r != "stochastic"]


def int8_codes(y: np.ndarray, rounding: str) -> np.ndarray:
    return fpemu.encode(np.clip(y, -127 / 64, 127 / 64), "int8", rounding=rounding, overflow="saturate")


@pytest.mark.parametrize("rounding", ELEMENT_ROUNDINGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_rounding_equals_the_codec_over_many_chunks(rounding, dtype):
    """600k values (three 256Ki-element chunks) of ties, non-ties, tiny values beside huge ones
    and zeros: the codes are ``fpemu.encode(clip(V/X, +-127/64), "int8")`` of the exact quotient
    (stochastic: one of the codes of 'down' and 'up', both taken; tests/mx/test_mx_quantization.py holds
    it to the codec's own random bits)."""
    rng = np.random.default_rng(2)
    x = rng.integers(-300, 301, 600_000) / 128 * np.exp2(rng.integers(-60, 60, 600_000))
    x[::7] = rng.standard_normal(x[::7].size)
    x[::11] = rng.choice([2.0**-149, -(2.0**-149), 0.0, -0.0], x[::11].size)
    x[::5000] = 2.0**100
    x = x.astype(dtype)
    q = mx.quantize(x, "mxint8", rounding=rounding, rng=5 if rounding == "stochastic" else None)
    y = x.astype(np.float64) / np.repeat(np.ldexp(1.0, q.scales.astype(int) - 127), 32)
    if rounding != "stochastic":
        assert np.array_equal(q.codes, int8_codes(y, rounding))
        return
    down, up = int8_codes(y, "down"), int8_codes(y, "up")
    assert np.all((q.codes == down) | (q.codes == up))
    assert 0.3 < np.mean(q.codes[down != up] == up[down != up]) < 0.7


# ---- the code 0x80, read back and multiplied -----------------------------------------------------
def test_hand_made_0x80_reads_minus_two_and_multiplies_exactly():
    """quantize never writes 0x80, but a BlockArray built by hand may hold it (or the int8 value
    -128): it reads -2.0 * scale, and matmul's exact block sums use the two's complement
    values of the codes."""
    rng = np.random.default_rng(3)
    codes_a = rng.integers(0, 256, (5, 96)).astype(np.uint8)
    codes_b = rng.integers(0, 256, (96, 4)).astype(np.uint8)
    codes_a[:, ::3], codes_b[::5] = 0x80, 0x80
    sa, sb = rng.integers(110, 140, (5, 3)), rng.integers(110, 140, (3, 4))
    a = mx.MXArray(codes_a, sa.astype(np.uint8), "mxint8", 1, 32)
    b = mx.MXArray(codes_b.view(np.int8).astype(np.int64), sb.astype(np.uint8), "mxint8", 0, 32)
    ia, ib = codes_a.view(np.int8).astype(np.int64), codes_b.view(np.int8).astype(np.int64)
    for dtype in (np.float32, np.float64):
        want = ia * np.ldexp(1.0, np.repeat(sa, 32, axis=1) - 127 - 6)  # exact in float64
        assert np.array_equal(a.dequantize(dtype), want.astype(dtype))
    assert a.dequantize(np.float64)[0, 0] == -2.0 * 2.0 ** (int(sa[0, 0]) - 127)
    expect = np.zeros((5, 4), np.float32)
    for j in range(3):  # per block: the exact integer sum (below 2**20) times both scales
        s = ia[:, 32 * j : 32 * j + 32] @ ib[32 * j : 32 * j + 32]
        expect += (s * np.ldexp(1.0, sa[:, j, None] + sb[None, j, :] - 254 - 12)).astype(np.float32)
    assert np.array_equal(fpemu.gemm(a, b), expect)
    minus_two = mx.MXArray(np.full(32, -128), np.array([127]), "mxint8", 0, 32)
    assert fpemu.dot(minus_two, minus_two) == np.float32(32 * 4.0)


# ---- any two's complement element format -------------------------------------------------------
def test_a_narrower_twos_complement_element_takes_the_same_path():
    """The element path is the Format's, not MXINT8's: a hand-made 4-bit two's complement block
    format (values -2 .. 1.75 in steps of 1/4) clamps to +-1.75 and keeps its codes in 4 bits."""
    int4 = Format("int4", 0, 3, 0, inf="none", nan="none", twos_complement=True)
    e8m0 = mx.get_block_format("mxint8").scale
    bf = mx.BlockFormat("mxint4", int4, e8m0, 32, int4.emax, int4.max, 2, int4.bits)
    x = np.random.default_rng(4).uniform(-2, 2, 320) * np.exp2(np.repeat(np.arange(-5, 5), 32))
    for rounding in DETERMINISTIC:
        q = mx.quantize(x, bf, rounding=rounding)
        y = x / np.repeat(np.ldexp(1.0, q.scales.astype(int) - 127), 32)
        want = fpemu.encode(np.clip(y, -1.75, 1.75), int4, rounding=rounding, overflow="saturate")
        assert np.array_equal(q.codes, want) and q.codes.max() < 16 and 8 not in q.codes.tolist()
