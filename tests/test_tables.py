"""The text tables of ``fpemu formats`` and ``fpemu table`` (fpemu.tables)."""

from __future__ import annotations

import re

from fpemu.formats import FORMATS
from fpemu.tables import format_table


def test_the_formats_table_has_one_number_style_per_column_and_no_trailing_spaces():
    """Issue 42, item 9: the min normal column mixed 0.015625 with 2^-14. Every smallest normal,
    smallest subnormal and epsilon is a power of two, written 2^k; every max is a decimal."""
    lines = format_table().splitlines()
    assert all(line == line.rstrip() for line in lines)
    head = lines[0]
    starts = [head.index(name) for name in ("max", "min normal", "min subnormal", "eps", "Inf")]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == list(FORMATS)
    for name, line in rows.items():
        line = line.ljust(len(head))
        largest, normal, subnormal, eps = (line[a:b].strip() for a, b in zip(starts, starts[1:]))
        assert float(largest) == FORMATS[name].max or abs(float(largest) / FORMATS[name].max - 1) < 1e-7, name
        assert re.fullmatch(r"2\^-?\d+", eps), (name, eps)
        for cell in (normal, subnormal):
            assert cell == "none" or re.fullmatch(r"2\^-?\d+", cell), (name, cell)
    assert rows["e4m3"].split()[5:8] == ["2^-6", "2^-9", "2^-3"]


def test_the_markdown_table_keeps_the_same_cells():
    md = format_table(markdown=True).splitlines()
    assert md[2].startswith("| fp64 | 64 | 11/52 | 1023 | 1.7976931e+308 | 2^-1022 | 2^-1074 | 2^-52 |")
