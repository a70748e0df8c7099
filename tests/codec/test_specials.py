"""overflow='saturate_propagate' (IEEE P3109 SatPropagate) and the rng argument's checking."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import Format, decode, encode, quantize


@pytest.mark.parametrize(
    "fmt, big, inf_code, max_code",
    [
        # P3109 binary8p3: +Inf 0x7F, max 49152 = 0x7E (SPEC section 1).
        ("binary8p3", 1e6, 0x7F, 0x7E),
        # fp16: +Inf 0x7C00, max 65504 = 0x7BFF; 65520 is the first value that rounds past max.
        ("fp16", 65520.0, 0x7C00, 0x7BFF),
    ],
)
def test_saturate_propagate_saturates_finite_and_keeps_inf(fmt, big, inf_code, max_code):
    codes = fpemu.encode([big, np.inf, -big, -np.inf], fmt, overflow="saturate_propagate")
    sign = fpemu.get_format(fmt).sign_mask
    assert codes.tolist() == [max_code, inf_code, max_code | sign, inf_code | sign]
    # SatFinite turns Inf into max too; SatNone overflows to Inf.
    assert fpemu.encode([np.inf], fmt, overflow="saturate").tolist() == [max_code]
    assert fpemu.encode([big], fmt, overflow="inf").tolist() == [inf_code]


def test_saturate_propagate_without_inf_saturates_inf_input():
    # P3109 v4.0 section 4.7.5, SatPropagate: "+Inf -> +Inf if Extended else M_hi". E4M3 has
    # no Inf, so Inf input saturates like finite overflow (it does not become NaN).
    got = fpemu.encode([1000.0, np.inf, -np.inf], "e4m3", overflow="saturate_propagate")
    assert got.tolist() == [0x7E, 0x7E, 0xFE]
    assert fpemu.encode([np.inf], "binary8p4sf", overflow="sat_propagate").tolist() == [0x7F]  # 240


@pytest.mark.parametrize("rng", ["seed", 1.5, [1, 2]])
def test_bad_rng_names_the_argument(rng):
    with pytest.raises(TypeError, match="rng must be"):
        fpemu.encode([0.3], "bf16", rounding="stochastic", rng=rng)


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_signed_format_without_zero_keeps_the_sign_of_its_smallest_values():
    # Field 0 is an ordinary binade: code 0x00 is +2^-2 * 1.0 = 0.125, 0x20 is -0.125.
    fmt = Format("s", 3, 2, 3, inf="none", nan="none", subnormals=False)
    assert decode([0x00, 0x20], fmt).tolist() == [0.125, -0.125]
    assert encode([-0.125, 0.125, -0.01, 0.01], fmt).tolist() == [0x20, 0x00, 0x20, 0x00]
    assert quantize([-0.01, -0.126], fmt, rounding="toward_zero").tolist() == [-0.125, -0.125]
    # No zero: it saturates to the value closest to it (the only overflow rule without NaN).
    assert encode([0.0, -0.0], fmt).tolist() == [0x00, 0x20]


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_unsigned_format_without_nan_encodes_and_saturates_negatives():
    fmt = Format("u", 3, 3, 3, signed=False, inf="none", nan="none")
    # bias 3, three mantissa bits: 1.0 = field 3, fraction 0 = 0x18. Saturation (the only
    # overflow rule a format without NaN has) clamps negatives to the lowest value, 0, as
    # P3109 SatFinite does for its unsigned formats.
    assert encode([1.0, 0.0, -0.0, -1.0, -np.inf], fmt).tolist() == [0x18, 0, 0, 0, 0]
    # SatNone would make -1 NaN: without a NaN, the NaN option decides.
    with pytest.raises(ValueError, match="no code.*negative"):
        encode([1.0, -1.0], fmt, overflow="sat_none")
    assert encode([1.0, -1.0], fmt, overflow="sat_none", nan="zero").tolist() == [0x18, 0]
