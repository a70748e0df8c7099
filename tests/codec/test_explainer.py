"""explain (fpemu/codec/explainer.py): the words it prints for a number rounded into a format
(its rules' sentences: tests/test_regressions_show.py and the explorer's tests)."""

from __future__ import annotations

import pytest

from fpemu import explain


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
@pytest.mark.parametrize(
    "value, fmt, reason",
    [
        (0.0, "e8m0", "no code: the format has no zero"),
        (-0.0, "e8m0", "no code: the format has no zero"),
        (-1.0, "e8m0", "no code: the format is unsigned"),
        (-1.0, "ue4m3", "no code: the format is unsigned"),
        (float("inf"), "e4m3", "Inf input: the format has no Inf"),
        (1e9, "e4m3", "overflow: the value is beyond"),
    ],
)
def test_explain_names_the_reason_for_a_nan_code(value, fmt, reason):
    # The error line names the reason; the rule lines that fired follow it.
    lines = [line.strip() for line in explain(value, fmt).splitlines()]
    assert any(line.startswith(f"error     {reason}") for line in lines), lines
