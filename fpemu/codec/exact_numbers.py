"""Exact input: what number a decimal string, a ``fractions.Fraction``, a ``decimal.Decimal``
(or a Python int or float beside them in an object array) names, exactly, so that encode
rounds it once; and the exact decimal of a float64.

A value is a :class:`~fractions.Fraction` when it is finite and not zero, else the float
that is exactly it (``0.0``, ``-0.0``, ``inf``, ``-inf``, ``nan``): a Fraction has no signed
zero. Text is read as written, never through float64: a decimal (``-0.1``, ``1e-40``,
``1.00048828125000000001``), ``inf``/``infinity``/``nan`` with an optional sign, a hex float
(``0x1.8p3``, every digit kept) or a fraction ``p/q``.

>>> exact_number("0.1"), exact_number("-0"), exact_number("-0x1.8p-1"), exact_number("1/3")
(Fraction(1, 10), -0.0, Fraction(-3, 4), Fraction(1, 3))
>>> exact_decimal(0.1)
'0.1000000000000000055511151231257827021181583404541015625'
"""

from __future__ import annotations

import math
import numbers
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

#: The largest decimal (and, times 4, binary) exponent text may have: far beyond every
#: format's range (2**-1074 .. 2**1024 is about 1e-324 .. 1e308), small enough that the exact
#: rational stays cheap to build.
MAX_EXPONENT = 100_000

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", re.IGNORECASE)
_HEX = re.compile(r"([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?\d+))?", re.IGNORECASE)
_RATIO = re.compile(r"[+-]?\d+/\d+")
_SPECIALS = {"inf": math.inf, "infinity": math.inf, "nan": math.nan}


def exact_number(x: Any) -> Fraction | float:
    """The exact value of one scalar (see the module docstring); TypeError for what is not a
    real number (None, bool, complex, bytes, ...), ValueError for text that is not one.

    >>> exact_number(2**70 + 1) == 2**70 + 1, exact_number(0.5), exact_number(float("-inf"))
    (True, Fraction(1, 2), -inf)
    >>> exact_number("1,5")
    Traceback (most recent call last):
    ...
    ValueError: cannot read '1,5' as a number
    """
    if isinstance(x, str):
        return _from_text(x)
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"cannot encode the boolean {x!r}: pass a number")
    if isinstance(x, Decimal):
        return _from_decimal(x, repr(x))
    if isinstance(x, (numbers.Rational, np.integer)):
        return _finite(Fraction(int(x.numerator), int(x.denominator)), False)
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(x) or x == 0:
            return float(x)  # (a NaN keeps its float64 payload)
        return Fraction(*x.as_integer_ratio())
    if isinstance(x, (complex, np.complexfloating)):
        raise TypeError(f"cannot encode the complex number {x!r}: pass real numbers")
    raise TypeError(f"cannot encode {x!r} ({type(x).__name__}): pass numbers, Fractions, Decimals "
                    "or decimal strings")


def _finite(value: Fraction, negative: bool) -> Fraction | float:
    """value, or the signed float zero where it is zero."""
    return value if value else (-0.0 if negative else 0.0)


def _from_text(text: str) -> Fraction | float:
    t = text.strip()
    body = t.lstrip("+-")
    negative = t.startswith("-")
    if body.lower() in _SPECIALS and len(t) - len(body) <= 1:
        return -_SPECIALS[body.lower()] if negative else _SPECIALS[body.lower()]
    if _DECIMAL.fullmatch(t):
        return _from_decimal(Decimal(t), repr(text))
    hexa = _HEX.fullmatch(t)
    if hexa and (hexa.group(2) or hexa.group(3)):
        digits = hexa.group(2) + (hexa.group(3) or "")
        power = int(hexa.group(4) or 0) - 4 * len(hexa.group(3) or "")
        _check_exponent(power / 4, text)
        value = Fraction(int(digits, 16)) * Fraction(2) ** power
        return _finite(-value if negative else value, negative)
    if _RATIO.fullmatch(t):
        num, den = t.split("/")
        if int(den) == 0:
            raise ValueError(f"cannot read {text!r} as a number: division by zero")
        return _finite(Fraction(int(num), int(den)), negative)
    raise ValueError(f"cannot read {text!r} as a number")


def _from_decimal(d: Decimal, name: str) -> Fraction | float:
    if d.is_nan():
        return -math.nan if d.is_signed() else math.nan
    if d.is_infinite():
        return -math.inf if d.is_signed() else math.inf
    if not d:
        return -0.0 if d.is_signed() else 0.0
    _check_exponent(d.adjusted(), name)
    return Fraction(d)


def _check_exponent(exponent: float, name: str) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"{name} is too large or too small to read exactly (a decimal exponent "
                         f"beyond ±{MAX_EXPONENT}; every format's range ends near 1e±330)")


def exact_decimal(value: float) -> str:
    """The exact decimal of a float64 (every binary fraction has a finite one), without an
    exponent for magnitudes from 1e-6 to 1e21 and with one (``e-20``) beyond; repr of Inf/NaN.

    >>> exact_decimal(2.0**-20), exact_decimal(-1.5), exact_decimal(2.0**80)
    ('9.5367431640625e-07', '-1.5', '1208925819614629174706176.0')
    """
    value = float(value)
    if not math.isfinite(value) or value == 0 or value.is_integer():
        return repr(value) if not value.is_integer() or abs(value) < 1e16 else f"{int(value)}.0"
    d = Decimal(value)  # exact: a Decimal holds every float64
    if 1e-6 <= abs(value) < 1e21:
        return format(d, "f")
    digits = format(d, "e")  # every digit, one before the point
    mantissa, exponent = digits.split("e")
    return f"{mantissa}e{int(exponent):+03d}"


def text_of(x: Any) -> str:
    """How an input is shown: text as typed, a Fraction as p/q, a Decimal as its digits, a
    float as repr.

    >>> text_of(" 0.10 "), text_of(Fraction(1, 3)), text_of(Decimal("1e-40")), text_of(np.float32(0.5))
    ('0.10', '1/3', '1E-40', '0.5')
    """
    if isinstance(x, str):
        return x.strip()
    if isinstance(x, (Fraction, Decimal)):
        return str(x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    return str(x)


def fraction_float(q: Fraction) -> float:
    """q as the nearest float64 (Python rounds a Fraction correctly), +-inf beyond its range.

    >>> fraction_float(Fraction(1, 3)), fraction_float(Fraction(-(10**400)))
    (0.3333333333333333, -inf)
    """
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def fraction_text(q: Fraction, digits: int = 6) -> str:
    """q as ``"%+.6g"`` writes a float (``digits`` significant digits), also beyond float64:
    rounded once, to nearest even, from q itself (not through the float64 nearest it, whose
    own rounding could change the last digit).

    >>> fraction_text(Fraction(1, 3)), fraction_text(Fraction(448) - 10**400), fraction_text(Fraction(0))
    ('+0.333333', '-1e+400', '+0')
    >>> fraction_text(Fraction(-5389888524041847408094772650050395779473, 10**85), 17)  # float64: ...477e-46
    '-5.3898885240418474e-46'
    """
    q = Fraction(q)
    if not q:
        return "+0"
    sign = "-" if q < 0 else "+"
    n, exponent = significant_digits(q, digits)
    text = str(n).rstrip("0") or "0"
    if -4 <= exponent < digits:  # as %g: plain in this range, else d.ddde+XX
        return sign + _digits_text(text, exponent, plain_from=-5)
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{sign}{mantissa}e{exponent:+03d}"


def significant_digits(q: Fraction, digits: int) -> tuple[int, int]:
    """|q| (not zero) rounded to ``digits`` significant decimal digits, to nearest even, with
    integer arithmetic only: (n, e) with 10**(digits-1) <= n < 10**digits and
    |q| ~ n * 10**(e - digits + 1). Cheap for huge numerators and denominators (no string
    of them is made).

    >>> significant_digits(Fraction(2, 3), 3), significant_digits(Fraction(9995, 10**7), 3)
    ((667, -1), (100, -3))
    """
    a, b = abs(q.numerator), q.denominator
    # 10**e <= a/b < 10**(e+1): estimated from the bit lengths (off by at most one), then fixed
    e = math.floor((a.bit_length() - b.bit_length()) * math.log10(2))
    while True:
        shift = digits - 1 - e
        num, den = (a * 10**shift, b) if shift >= 0 else (a, b * 10**-shift)
        n, rest = divmod(num, den)
        if n >= 10**digits:
            e += 1
        elif n < 10 ** (digits - 1):
            e -= 1
        else:
            break
    if 2 * rest > den or (2 * rest == den and n % 2):
        n += 1
        if n == 10**digits:  # 99.9 -> 100: one more digit, all zeros after the first
            n, e = n // 10, e + 1
    return n, e


def decimal_text(q: Fraction | int, max_digits: int = 40) -> str:
    """q exactly, signed: its decimal where that ends within ``max_digits`` significant digits
    (every sum of binary and decimal fractions ends), else ``p/q`` where that is shorter, else
    ``≈`` and 17 significant digits, rounded once from q (the one case that is not exact, and
    says so). Fast for any size: no loop runs once per power of 2 or 5 of the denominator,
    and no string is made of a number longer than the text shown (1e-100000 takes
    milliseconds).

    >>> decimal_text(Fraction(1, 80)), decimal_text(Fraction(-15)), decimal_text(Fraction(-1, 768))
    ('+0.0125', '-15', '-1/768')
    >>> decimal_text(Fraction(0.1) - Fraction(1, 10)), decimal_text(Fraction(1, 3 * 10**30))
    ('+5.5511151231257827021181583404541015625e-18', '≈+3.3333333333333333e-31')
    >>> decimal_text(Fraction(-1, 10**100000)), decimal_text(Fraction(10**5000 + 1, 10**5000))
    ('-1e-100000', '≈+1')
    """
    q = Fraction(q)
    if not q:
        return "+0"
    sign = "-" if q < 0 else "+"
    num, den = abs(q.numerator), q.denominator
    twos = (den & -den).bit_length() - 1
    fives = _power_of(den >> twos, 5)
    if fives is not None:  # the decimal ends: q = n / 10**k exactly
        k = max(twos, fives)
        n = num * 2 ** (k - twos) * 5 ** (k - fives)
        # n ends in zeros only where q is a whole number (else num is prime to 10)
        zeros = _trailing_zeros(n, max_digits) if k == 0 else 0
        if zeros is not None and _digit_count(n) - zeros <= max_digits:
            digits = str(n // 10**zeros)
            return sign + _digits_text(digits, len(digits) - 1 - k + zeros)
    if _digit_count(num) + _digit_count(den) <= 24:
        return f"{sign}{num}/{den}" if den != 1 else f"{sign}{num}"
    return "≈" + fraction_text(q, 17)


def _digit_count(n: int) -> int:
    """The number of decimal digits of n >= 0, without making its string where it is long."""
    if n.bit_length() <= 64:
        return len(str(n))
    d = math.floor((n.bit_length() - 1) * math.log10(2)) + 1  # (the true count or one less)
    return d + (n >= 10**d)


def _power_of(n: int, p: int) -> int | None:
    """k where n == p**k, else None."""
    k = round((n.bit_length() - 1) / math.log2(p)) if n > 1 else 0
    for guess in (k - 1, k, k + 1):
        if guess >= 0 and p**guess == n:
            return guess
    return None


def _trailing_zeros(n: int, max_digits: int) -> int | None:
    """How many zeros n > 0 ends in; None where n has more than ``max_digits`` other digits
    anyway (no need to count)."""
    twos = (n & -n).bit_length() - 1
    if _digit_count(n) - twos > max_digits:
        return None  # (n has at most `twos` trailing zeros)
    zeros = 0
    for power in reversed([1 << i for i in range(max(twos, 1).bit_length())]):  # binary search
        if zeros + power <= twos and n % 10 ** (zeros + power) == 0:
            zeros += power
    return zeros


def _digits_text(digits: str, exponent: int, plain_from: int = -7) -> str:
    """The decimal d.ddd x 10**exponent (``digits``: d, d, d ...) as text: plain from 1e-7
    (or 10**(plain_from+1)) to 1e21, else with an exponent."""
    if exponent >= len(digits) - 1 and exponent < 21:
        return digits + "0" * (exponent - len(digits) + 1)
    if 0 <= exponent < 21:
        return digits[:exponent + 1] + "." + digits[exponent + 1:]
    if plain_from < exponent < 0:
        return "0." + "0" * (-exponent - 1) + digits
    return (digits[0] + ("." + digits[1:] if len(digits) > 1 else "")) + f"e{exponent:+03d}"
