"""overflow='saturate_propagate' (IEEE P3109 SatPropagate) and the rng argument's checking."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu


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
