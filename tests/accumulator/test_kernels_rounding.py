"""The one output rounding of every model (fpemu/accumulator/kernels/rounding.py): round_to_target
against the codec (the hot paths: numpy's fp32 cast, RZ by cleared bits) and against Fractions
rounded by hand (overflow as IEEE says, or to Inf whatever the rounding: MMA-Sim's block-scaled
MMA)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.accumulator.kernels.rounding import round_to_target, rounding_target
from fpemu.formats import Format, get_format


@pytest.mark.parametrize("fmt", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("mode", ["rne", "rz"])
@pytest.mark.parametrize("frac_bits", [None, 13])
def test_rounding_kernel_equals_codec(fmt, mode, frac_bits):
    """The hot-path rounding kernel against the codec (a user Format for 13 fraction bits)."""
    if frac_bits is not None and fmt != "fp32":
        pytest.skip("13 fraction bits is an fp32-output parameter")
    f = get_format(fmt)
    target_fmt = f if frac_bits is None else Format("fp32m13", 8, 13, 127)
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.standard_normal(20000) * np.exp2(rng.integers(-160, 130, 20000)),
            np.ldexp(rng.integers(1, 1 << 30, 5000).astype(np.float64), rng.integers(-190, -120, 5000)),
            [0.0, -0.0, f.max, -f.max, f.max * 1.0001, 2.0 * f.max, np.inf, -np.inf],
        ]
    )
    got = round_to_target(x, rounding_target(fmt, mode, frac_bits))
    want = fpemu.quantize(x, target_fmt, rounding="rz" if mode == "rz" else "rne")
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
@pytest.mark.parametrize("fmt", ["fp32", "fp16", "bf16", "tf32", "fp32_10", "fp32_25", "fp32_30", "user",
                                 "e4m3"])
def test_rz_rounding_by_cleared_bits_is_the_codecs_rz(fmt):
    # The models' round-toward-zero clears the fraction bits the target lacks (rounding.py's
    # _truncated); it must be the codec's own RZ on every kind of float64: normal, subnormal
    # and overflowing results, signed zeros, Inf, NaN, and raw random bit patterns.
    from fpemu.accumulator.kernels.rounding import _ieee_like, _truncated
    from fpemu.formats import get_format

    if fmt.startswith("fp32_"):
        f = dataclasses.replace(get_format("fp32"), name=fmt, mantissa_bits=int(fmt[5:]))
    elif fmt == "user":
        f = fpemu.Format("u6m9", 6, 9, 31)
    else:
        f = get_format(fmt)
    rng = np.random.default_rng(len(fmt))
    n = 1 << 15
    v = rng.standard_normal(n) * np.exp2(rng.integers(-1060, 1020, n).astype(float))
    v[::97], v[::101], v[::103], v[::107], v[::109] = 0.0, -0.0, np.inf, -np.inf, np.nan
    raw = rng.integers(0, 1 << 63, n // 2, dtype=np.int64).view(np.float64)
    v = np.concatenate([v, raw, -raw])
    want = fpemu.quantize(v, f, rounding="toward_zero")
    if fmt == "e4m3":  # its largest value (448) ends short of its top binade: the codec rounds
        assert not _ieee_like(f)
        from fpemu.accumulator.kernels.rounding import Target, round_to_target

        got = round_to_target(v, Target(f, "rz"))
        want = np.where(np.isfinite(v), want, v)  # a model keeps non-finite sums as they are
    else:
        assert _ieee_like(f)
        got = _truncated(v, f)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))  # -0 too


def _fp32_by_hand(x: Fraction, mode: str, overflow: str) -> float:
    """x rounded to fp32 by hand: RNE or RZ at 24 bits (fp32's subnormals at 2**-149), beyond
    the range an Inf (RNE, or overflow "inf") or the largest finite value (RZ, "ieee")."""
    if x == 0:
        return 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e = e if Fraction(2) ** e <= a else e - 1
    unit = Fraction(2) ** (max(e, -126) - 23)
    n = a / unit
    r = (math.floor(n) if mode == "rz" else round(n)) * unit  # Fraction.__round__: ties to even
    top = (2 - Fraction(2) ** -23) * Fraction(2) ** 127
    if r > top:
        r = math.inf if mode == "rne" or overflow == "inf" else top
    elif overflow == "inf" and a >= Fraction(2) ** 128:
        r = math.inf
    return math.copysign(float(r), x)


@pytest.mark.parametrize("mode", ["rz", "rne"])
@pytest.mark.parametrize("overflow", ["ieee", "inf"])
def test_overflow_as_the_target_says(mode, overflow):
    top = (2 - 2.0**-23) * 2.0**127
    v = np.array([top, top * (1 + 2.0**-25), top * (1 + 2.0**-24), 2.0**128 * (1 - 2.0**-53), 2.0**128, 2.0**200,
                  1.5, 2.0**-149 * 0.75, 1 + 2.0**-24 + 2.0**-40])  # fmt: skip
    v = np.concatenate([v, -v])
    got = round_to_target(v, rounding_target("fp32", mode, overflow=overflow))
    want = [_fp32_by_hand(Fraction(x), mode, overflow) for x in v]
    assert got.tolist() == want and np.array_equal(np.signbit(got), np.signbit(want))

