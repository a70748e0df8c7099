"""Approximate and very long decimals (issue 41, items 5 and 6): a value marked ``≈`` is its
exact value rounded once to 17 significant digits (never float64's 17th digit), and numbers
of thousands of digits (1e-100000, a 5000-digit decimal) are written without a quadratic loop
or Python's 4300-digit limit on int-to-text. The reference is Python's Decimal, dividing the
exact numerator by the exact denominator in a context of 17 digits (one correct rounding).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fpemu.codec.exact_numbers import decimal_text, fraction_text
from fpemu.teach import encode_number


def rounded(q: Fraction, digits: int) -> Decimal:
    """q rounded once to ``digits`` significant digits, by Decimal."""
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = digits, ROUND_HALF_EVEN
        ctx.Emax, ctx.Emin = 10**6, -(10**6)
        return Decimal(q.numerator) / Decimal(q.denominator)


def test_fp32_1e_minus_40_error_is_rounded_once():
    e = encode_number("fp32", "1e-40")
    err = Fraction(e["value_exact"]) - Fraction("1e-40")
    assert str(rounded(err, 22)) == "-5.389888524041847408095E-46"  # the exact digits
    assert e["error_exact"] == "≈-5.3898885240418474e-46"  # (float64 wrote ...477e-46)
    rel = err / Fraction("1e-40")
    assert e["relative_error_exact"] == "≈-5.3898885240418474e-06"
    assert Decimal(e["relative_error_exact"][1:]) == rounded(rel, 17)


def test_a_relative_error_just_below_4e_minus_30_is_not_shown_above_it():
    x = Fraction("2.50000000000000000000000000001")
    e = encode_number("fp32", str(x))
    rel = (Fraction(e["value_exact"]) - x) / x
    assert -Fraction(4, 10**30) < rel < 0 and e["relative_error_exact"] == "≈-4e-30"
    assert Fraction(e["relative_error_exact"].lstrip("≈")) == Fraction(str(rounded(rel, 17)))


@given(st.fractions(min_value=-(10**30), max_value=10**30).filter(bool), st.sampled_from([1, 3, 6, 17]))
def test_fraction_text_rounds_once(q, digits):
    shown = fraction_text(q, digits)
    assert Decimal(shown) == rounded(q, digits), (q, shown)


@given(st.integers(1, 10**40), st.integers(-400, 400), st.integers(1, 10**6))
def test_decimal_text_exact_or_rounded_once(n, power, odd):
    q = Fraction(n) * Fraction(10) ** power / odd
    shown = decimal_text(q, max_digits=60)
    if shown.startswith("≈"):
        assert Decimal(shown[1:]) == rounded(q, 17)
    else:
        assert Fraction(shown) == q


@pytest.mark.parametrize("typed", ["1e-100000", "-3e99999", "0." + "1" * 5000, "1" * 5000 + ".5",
                                   "0." + "0" * 4999 + "7"], ids=lambda t: t[:12] + f"..({len(t)})")
def test_very_long_numbers_are_written_without_failing(typed):
    e = encode_number("fp32", typed)  # (a 5000-digit number hit Python's 4300-digit limit)
    x = Fraction(Decimal(typed))  # (Fraction(text) stops at 4300 digits, Decimal does not)
    if e["error_exact"] is not None:
        err = Fraction(e["value_exact"]) - x
        shown = e["error_exact"]
        assert (Decimal(shown[1:]) == rounded(err, 17)) if shown.startswith("≈") else Fraction(shown) == err
        rel = e["relative_error_exact"]
        assert (Decimal(rel[1:]) == rounded(err / abs(x), 17)) if rel.startswith("≈") else Fraction(rel) == err / abs(x)


def test_decimal_text_of_huge_and_tiny_exact_values():
    assert decimal_text(Fraction(-1, 10**100000)) == "-1e-100000"
    assert decimal_text(Fraction(10**100000)) == "+1e+100000"
    assert decimal_text(Fraction(12345 * 10**4990)) == "+1.2345e+4994"
    assert decimal_text(Fraction(10**5000 + 1, 10**5000), 60) == "≈+1"  # 5001 digits: more than 60
    assert decimal_text(Fraction(10**4000 + 1, 10**4000), 4100) == "+1." + "0" * 3999 + "1"
