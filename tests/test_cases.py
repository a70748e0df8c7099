"""The inputs fpemu is checked on (fpemu.cases): edge cases at every boundary, random cases."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import decode, encode
from fpemu.cases import edge_cases, random_cases
from fpemu.formats import format_names

FORMATS = list(format_names())


# ---- the cases themselves --------------------------------------------------------------------
def test_edge_cases_cover_the_boundaries_of_e4m3():
    x, tags = edge_cases("e4m3")
    values = set(x[~np.isnan(x)].tolist())
    assert {464.0, -464.0, 448.0, 480.0, 2.0**-10, -(2.0**-10), np.inf, -np.inf} <= values
    assert 1.0625 in values and 1.1875 in values  # ties inside a binade (SPEC vectors)
    zeros = x[x == 0]
    assert sorted(np.signbit(zeros).tolist()) == [False, True]
    nan_bits = set(x[np.isnan(x)].view(np.uint32).tolist())
    assert {0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF} <= nan_bits
    assert len(set(x.view(np.uint32).tolist())) == x.size  # no repeats
    assert set(tags) >= {"value", "near value", "tie", "near tie", "overflow", "tiny", "zero", "inf", "nan"}


def test_edge_ties_are_exact_midpoints():
    x, tags = edge_cases("bf16")
    ties = x[(tags == "tie") & (x > 0)].astype(np.float64)
    lo = decode(encode(ties, "bf16", rounding="rz"), "bf16")
    hi = decode(encode(ties, "bf16", rounding="ru"), "bf16")
    assert np.all(ties - lo == hi - ties) and np.all(hi > lo)


# ---- every format: no floating-point warning (issue 9) ---------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_and_random_cases_of_every_format(fmt, dtype):
    x, tags = edge_cases(fmt, dtype)
    assert x.dtype == dtype and x.size == tags.size and np.isinf(x).sum() == 2
    r, _ = random_cases(fmt, dtype, 1000, seed=1)
    assert r.size == 1000
