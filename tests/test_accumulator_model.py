"""The Accumulator fields and their checks (fpemu/accumulator/model.py)."""

from __future__ import annotations

import pytest

from fpemu.accumulator import Accumulator


def test_invalid_parameters_raise():
    with pytest.raises(ValueError, match="frac_bits"):
        Accumulator("bad", block=4, frac_bits=60)
    with pytest.raises(ValueError, match="block"):
        Accumulator("bad", block=0)
    with pytest.raises(ValueError, match="even_odd needs late_c"):
        Accumulator("bad", block=4, even_odd=True)


@pytest.mark.parametrize(
    "fields,message",
    [
        (dict(frac_bits=23.5), "frac_bits must be an integer"),
        (dict(block=True), "block must be a positive integer or None, got True"),
        (dict(block=2.0), "block must be a positive integer"),
        (dict(block=-3), "block must be a positive integer"),
        (dict(promote=0), "promote must be a positive integer"),
        (dict(promote=1.5), "promote must be a positive integer"),
        (dict(out_frac_bits="23"), "out_frac_bits must be an integer"),
        (dict(zero_c_exponent=10**10), r"zero_c_exponent must be in -1022\.\.1023"),
        (dict(late_c="yes"), "late_c must be True or False"),
        (dict(acc_format=3), "acc_format must be a format name"),
        (dict(block=10**18, frac_bits=24), "must fit in int64"),
        (dict(kind="magic"), "kind must be"),
    ],
)
def test_accumulator_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        Accumulator("mine", **fields)
    with pytest.raises(ValueError, match="name must be a string"):
        Accumulator(None)
