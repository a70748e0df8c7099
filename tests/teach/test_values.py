"""fpemu.teach.values: every code and every finite value of a small format, held to the
independent reference codec (tests/reference.py) and to fpemu.decode of every code."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from reference import ref_decode, representable_magnitudes

import fpemu
from fpemu.formats import FORMATS, Format, get_format
from fpemu.teach import all_codes, finite_values, overflow_threshold, value_classes
from fpemu.teach.values import next_step_above_max

SMALL = [f.name for f in FORMATS.values() if f.bits <= 16]


def reference_values(fmt: Format) -> list[Fraction]:
    """Every finite value, from the Fraction reference, one code at a time."""
    out = set()
    for code in range(fmt.num_codes):
        v = ref_decode(code << fmt.code_shift, fmt)
        if v.kind == "finite":
            out.add(-v.magnitude if v.negative else v.magnitude)
    return sorted(out)


@pytest.mark.parametrize("name", [n for n in SMALL if get_format(n).bits <= 8] + ["fp16", "bf16"])
def test_finite_values_are_the_reference_values_in_order(name):
    fmt = get_format(name)
    got = finite_values(fmt)
    if fmt.bits <= 8:
        assert [Fraction(v) for v in got] == reference_values(fmt)
    else:  # 65536 codes: compare with the reference's positive magnitudes, mirrored
        pos = [m for m in representable_magnitudes(fmt) if m <= Fraction(fmt.max)]
        expect = sorted({-m for m in pos} | set(pos))
        assert [Fraction(v) for v in got] == expect
    assert np.all(np.diff(got) > 0) and np.all(np.isfinite(got))


def test_all_codes_and_values_come_from_decode():
    codes = all_codes("e4m3")
    assert codes.dtype == np.uint8 and codes.tolist() == list(range(256))
    values = fpemu.decode(codes, "e4m3")
    finite = np.unique(values[np.isfinite(values)])
    assert np.array_equal(finite_values("e4m3"), finite)
    assert finite_values("e4m3").size == 253  # 256 codes - 2 NaNs - one of the two zeros
    assert finite_values("e2m1").tolist() == [-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_zero_is_listed_once_and_positive():
    v = finite_values("fp16")
    zeros = v[v == 0]
    assert zeros.size == 1 and not np.signbit(zeros[0])


def test_formats_without_zero_or_sign():
    e8m0 = finite_values("e8m0")
    assert e8m0.size == 255 and e8m0[0] == 2.0**-127 and e8m0[-1] == 2.0**127
    assert np.array_equal(e8m0, np.ldexp(1.0, np.arange(-127, 128)))
    assert finite_values("ue4m3").min() == 0 and finite_values("ue4m3").size == 127
    int8 = finite_values("int8")  # two's complement: -2 .. 127/64 in steps of 1/64
    assert np.array_equal(int8, np.arange(-128, 128) / 64)


def test_user_defined_and_tf32_sized_formats():
    e3m3 = Format("e3m3", 3, 3, bias=3, inf="none", nan="none")
    assert finite_values(e3m3)[-1] == 30.0 and finite_values(e3m3).size == 127
    for wide in ("fp32", "tf32", "fp64", Format("e6m10", 6, 10, 31)):
        with pytest.raises(ValueError, match="at most 16 bits"):
            finite_values(wide)
        with pytest.raises(ValueError, match="at most 16 bits"):
            all_codes(wide)


def test_value_classes():
    fmt = get_format("e4m3")
    v = finite_values(fmt)
    classes = value_classes(v, fmt)
    assert set(classes[np.abs(v) < 2.0**-6]) == {"zero", "subnormal"}
    assert (classes == "zero").sum() == 1 and (classes == "subnormal").sum() == 14  # 7 each side
    expected_sub = np.arange(1, 8) * 2.0**-9  # k * 2**(emin - M)
    assert np.array_equal(v[(classes == "subnormal") & (v > 0)], expected_sub)
    assert set(value_classes(finite_values("e8m0"), "e8m0")) == {"normal"}


@pytest.mark.parametrize("name, step, threshold", [
    ("e4m3", 480.0, 464.0), ("e5m2", 65536.0, 61440.0), ("fp16", 65536.0, 65520.0),
    ("e2m1", 8.0, 7.0), ("e3m2", 32.0, 30.0), ("e2m3", 8.0, 7.75), ("bf16", 2.0**128, 2.0**128 - 2.0**119),
])
def test_overflow_threshold_by_exact_arithmetic(name, step, threshold):
    fmt = get_format(name)
    top = finite_values(fmt)[-1] if fmt.bits <= 16 else fmt.max
    below = finite_values(fmt)[-2]
    # the top binade's spacing continued one step: max + (max - the value below it)
    assert next_step_above_max(fmt) == step == top + (top - below)
    assert overflow_threshold(fmt) == threshold == (Fraction(top) + Fraction(step)) / 2


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "fp16", "bf16", "e4m3fnuz", "float8_e4m3"])
def test_overflow_threshold_is_where_the_codec_overflows(name):
    fmt = get_format(name)
    t = overflow_threshold(fmt)
    just_below, just_above = np.nextafter(t, 0), np.nextafter(t, np.inf)
    with np.errstate(over="ignore"):
        assert fpemu.quantize(np.array([just_below, -just_below]), fmt).tolist() == [fmt.max, -fmt.max]
        assert not np.isfinite(fpemu.quantize(np.array([just_above, -just_above]), fmt)).any()
        # the tie itself goes to the even code: beyond max when max's code is odd
        tie = float(fpemu.quantize(np.array([t]), fmt)[0])
    assert (not np.isfinite(tie)) == bool(fmt.max_code & 1)
