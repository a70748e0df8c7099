"""A Format is checked when it is made (fpemu/formats/validation.py): nonsense fields are refused
with the reason, NumPy integers become plain ints. (Regressions of issue 9, from the codec's.)"""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import Format


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (dict(exponent_bits=4, mantissa_bits=3, bias=7.5), "bias must be an integer"),
        (dict(exponent_bits=4.0, mantissa_bits=3, bias=7), "exponent_bits must be an integer"),
        (dict(exponent_bits=4, mantissa_bits=True, bias=7), "mantissa_bits must be an integer"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, signed="yes"), "signed must be True or False"),
        (dict(exponent_bits=-1, mantissa_bits=3, bias=7), "exponent_bits must be >= 0"),
        (dict(exponent_bits=0, mantissa_bits=0, bias=7), "at least one exponent or mantissa bit"),
        (dict(exponent_bits=0, mantissa_bits=3, bias=7, subnormals=False), "every code is a subnormal"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, twos_complement=True), "two's complement"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, inf="below_nan", nan="neg_zero"), "nan='top'"),
        (dict(exponent_bits=1, mantissa_bits=0, bias=0, signed=False, inf="below_nan", nan="top"), "no finite value"),
        (dict(exponent_bits=4, mantissa_bits=53, bias=7), "more than float64 holds"),
        (dict(exponent_bits=4, mantissa_bits=-1, bias=7), "mantissa_bits must be >= 0"),
        (dict(exponent_bits=11, mantissa_bits=52, bias=1023, container_bits=32), "narrower"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, inf="ieee", nan="top"), "come together"),
        (dict(exponent_bits=4, mantissa_bits=0, bias=7), "at least one mantissa bit"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, inf="top", nan="top"), "both be the top"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, signed=False, inf="none", nan="neg_zero"), "no -0"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, inf="none", nan="neg_zero", subnormals=False), "needs a zero"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, container_bits=12), "container_bits must be 8, 16, 32 or 64"),
        (dict(exponent_bits=5, mantissa_bits=3, bias=7, container_bits=8), "narrower"),
        (dict(exponent_bits=11, mantissa_bits=3, bias=-10), "beyond float64"),
        (dict(exponent_bits=11, mantissa_bits=10, bias=2000), "below float64"),
        (dict(exponent_bits=4, mantissa_bits=3, bias=7, inf="both"), "inf must be one of"),
    ],
)
def test_nonsense_formats_are_refused_with_the_reason(kwargs, reason):
    with pytest.raises(ValueError, match=reason):
        Format("bad", **kwargs)


def test_numpy_integer_fields_are_plain_integers():
    fmt = Format("np", np.int64(4), np.int32(3), np.int8(7), inf="none", nan="top")
    assert fmt == Format("np", 4, 3, 7, inf="none", nan="top") and hash(fmt) == hash(Format("np", 4, 3, 7, inf="none", nan="top"))
    assert type(fmt.bias) is int
