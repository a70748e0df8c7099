"""Which rule fired when a number was rounded into a format: exact, tie, rounding (stochastic:
with its odds), subnormal, underflow, overflow, or no code at all, each with a sentence for the
learner; and where overflow begins under round-to-nearest. ``fpemu show`` (:func:`fpemu.explain`)
and the explorer's page print these same sentences.

The codec decides everything; this module only asks it the right questions: the two format
values around ``x`` (rounding toward zero and away from it), and where ``x`` lands on the
format's grid continued past its largest value (the same format with one more exponent bit
and no Inf or NaN), to tell an overflow from an ordinary rounding down to max. Every number in
a sentence is exact (a value's whole decimal).

>>> [r["rule"] for r in rounding_rules(2.5, get_format("e2m1"), "nearest_even", None, 2.0)]
['tie']
>>> rounding_rules(1e-9, get_format("fp16"), "nearest_even", None, 0.0)[-1]["rule"]
'underflow'
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..formats import Format, get_format
from .exact_numbers import decimal_text, exact_decimal
from .quantizer import quantize

__all__ = ["rounding_rules", "next_step_above_max", "overflow_threshold", "overflow_inclusive", "overflow_words"]

_MODE_WORDS = {
    "toward_zero": "truncated toward zero",
    "up": "rounded up, toward +inf",
    "down": "rounded down, toward -inf",
    "odd": "rounded to odd: to the neighbour whose code is odd",
    "ml_dtypes_e8m0": "rounded as ml_dtypes rounds into E8M0",
}


def next_step_above_max(fmt: str | Format) -> float:
    """The value one step above the largest finite value, on the format's grid continued
    upwards (the code after max, read as a number even where it is Inf or NaN or absent).

    >>> next_step_above_max("e4m3"), next_step_above_max("fp16"), next_step_above_max("int8")
    (480.0, 65536.0, 2.0)
    """
    fmt = get_format(fmt)
    return fmt.magnitude(fmt.max_code + 1)


def overflow_threshold(fmt: str | Format) -> float:
    """Where overflow begins under round-to-nearest: halfway between the largest finite value
    and the next step above it. A magnitude beyond it rounds past max (to Inf, NaN or, under
    a saturating rule, back to max); one exactly on it is a tie, which overflows when max has
    an odd code (nearest_even) and always under nearest_away.

    >>> overflow_threshold("fp16"), overflow_threshold("e2m1"), overflow_threshold("bf16") == 2.0**128 - 2.0**119
    (65520.0, 7.0, True)
    """
    fmt = get_format(fmt)
    return fmt.max + (next_step_above_max(fmt) - fmt.max) / 2


def overflow_inclusive(fmt: str | Format, rounding: str = "nearest_even") -> bool:
    """Whether the tie at :func:`overflow_threshold` itself rounds past max under ``rounding``
    (``nearest_even`` or ``nearest_away``): always away from zero under nearest_away; under
    nearest_even when max's code is odd, as the even neighbour is then the one above it.

    >>> overflow_inclusive("fp16"), overflow_inclusive("e4m3"), overflow_inclusive("e4m3", "nearest_away")
    (True, False, True)
    """
    if rounding not in ("nearest_even", "nearest_away"):
        raise ValueError(f"the overflow threshold is a round-to-nearest notion, not {rounding!r}'s")
    return rounding == "nearest_away" or bool(get_format(fmt).max_code & 1)


def overflow_words(fmt: str | Format, rounding: str = "nearest_even") -> str:
    """Where magnitudes round past max, in words: ``"from X on"`` where the tie X does too,
    ``"beyond X"`` where it stays at max.

    >>> overflow_words("fp16"), overflow_words("e4m3")
    ('from 65520 on', 'beyond 464')
    """
    t = overflow_threshold(fmt)
    text = str(int(t)) if t.is_integer() else repr(t)  # exact: a float64's integer value
    return f"from {text} on" if overflow_inclusive(fmt, rounding) else f"beyond {text}"


@lru_cache(maxsize=64)
def _grid_beyond(fmt: Format) -> Format | None:
    """The format's grid continued upwards: one more exponent bit, no Inf, no NaN (None where
    that would leave float64's range)."""
    try:
        return Format(f"{fmt.name}+", fmt.exponent_bits + 1, fmt.mantissa_bits, fmt.bias, signed=True,
                      inf="none", nan="none", subnormals=fmt.subnormals)
    except ValueError:
        return None


def _q(x: Fraction | float, fmt: Format, rounding: str, overflow: str | None = "saturate") -> float:
    """x rounded into fmt by the codec (exact input: rounded once from its exact value)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(quantize(np.array([x], dtype=object), fmt, rounding=rounding, overflow=overflow)[0])


def _rule(name: str, text: str) -> dict[str, str]:
    return {"rule": name, "text": text}


def rounding_rules(x: Fraction | float, fmt: Format, rounding: str, overflow: str | None, value: float,
                   shown: str | None = None, sr_bits: int | None = None) -> list[dict[str, str]]:
    """The rules that turned ``x`` (exact: a Fraction, or a float) into ``value`` (its code's
    value in ``fmt``), in order; ``shown``: how the sentences write x (default: its value);
    ``sr_bits``: N, the random bits of ``stochastic_a``/``_b``/``_c``/``_odd`` (their odds).

    Each is ``{"rule": name, "text": sentence}``; names: ``nan``, ``infinity``, ``no-code``,
    ``exact``, ``tie``, ``rounded``, ``stochastic``, ``subnormal``, ``underflow``, ``overflow``.
    Every number in a sentence is exact (a value's whole decimal).

    >>> [r["rule"] for r in rounding_rules(Fraction(1, 10), get_format("fp64"), "nearest_even", None, 0.1)]
    ['rounded']
    """
    g, gx = _text, shown if shown is not None else _text(x)
    if isinstance(x, float) and np.isnan(x):
        return [_rule("nan", "NaN in, " + ("NaN out" if np.isnan(value) else f"{g(value)} out: the format has no NaN"))]
    if isinstance(x, float) and np.isinf(x):
        out = "the same infinity" if value == x else f"{g(value)} (the overflow rule)"
        return [_rule("infinity", f"an infinity in gives {out}")]
    if not fmt.signed and x < 0:
        then = "has no code" if np.isnan(value) else f"becomes {g(value)}"
        return [_rule("no-code", f"{fmt.name} is unsigned, it has no negative values: {gx} {then}")]
    if x == 0 and not fmt.subnormals:
        then = "0 has no code" if np.isnan(value) else f"0 becomes {g(value)}"
        return [_rule("no-code", f"{fmt.name} has no zero (every code is a power of two): {then}")]
    a, top = abs(x), (-fmt.lowest if x < 0 else fmt.max)
    if value == x:
        rules = [_rule("exact", f"{gx} is a value of {fmt.name}: nothing to round")]
        if fmt.exponent_bits and 0 < a < fmt.min_normal:
            rules.append(_subnormal(fmt))
        return rules
    sign = 1.0 if x > 0 else -1.0
    if a <= top:
        near = abs(_q(x, fmt, "toward_zero"))
        far = abs(_q(x, fmt, "up" if x > 0 else "down"))
    else:
        near, far = top, top + (next_step_above_max(fmt) - fmt.max)
    rules = []
    if near < a < far:  # inside one gap of the grid (continued past max)
        lo, hi = sorted((sign * near, sign * far))
        if rounding.startswith("nearest") and Fraction(a) - Fraction(near) == Fraction(far) - Fraction(a):
            how = "the one with the even code" if rounding == "nearest_even" else "the one away from zero"
            rules.append(_rule("tie", f"{gx} is exactly halfway between {g(lo)} and {g(hi)}: "
                                      f"{rounding} takes {how}"))
        elif rounding.startswith("nearest"):
            rules.append(_rule("rounded", f"{gx} lies between {g(lo)} and {g(hi)}: rounded to the nearer"))
        elif rounding == "stochastic":  # 64 random bits: the odds are the exact ones
            rules.append(_rule("stochastic", f"{gx} lies between {g(lo)} and {g(hi)}: stochastic rounding takes "
                                             f"{g(sign * far)} with probability {_chance(a, near, far)}, "
                                             f"else {g(sign * near)}, so on average it is {gx} (unbiased)"))
        elif rounding.startswith("stochastic"):  # P3109's N random bits: the odds they give
            rules.append(_rule("stochastic", _few_bits(x, fmt, rounding, sr_bits, near, far, gx, g(lo), g(hi))))
        else:
            words = _MODE_WORDS.get(rounding, f"rounded {rounding}")
            rules.append(_rule("rounded", f"{gx} lies between {g(lo)} and {g(hi)}: {words}"))
    elif a < near:  # below the smallest value of a format without zero
        rules.append(_rule("rounded", f"{gx} is below {fmt.name}'s smallest value {g(near)}"))
    below_normal = 0 < abs(value) < fmt.min_normal or (value == 0 and a < fmt.min_normal)
    if fmt.exponent_bits and fmt.has_normals and below_normal:
        rules.append(_subnormal(fmt))
    if value == 0:
        rules.append(_rule("underflow", f"{gx} is too small for {fmt.name}: it rounded to zero (underflow)"))
    over = _overflowed(x, fmt, rounding, overflow, sign * top, value, gx)
    if over:
        rules.append(_rule("overflow", over))
    return rules


def _text(v: Fraction | float) -> str:
    """A number exactly: a float64's whole decimal, integers without '.0', a Fraction as its
    decimal where that ends, else p/q.

    >>> _text(0.1), _text(2.0**70), _text(Fraction(1, 3)), _text(Fraction(-5, 2))
    ('0.1000000000000000055511151231257827021181583404541015625', '1180591620717411303424', '1/3', '-2.5')
    """
    if isinstance(v, Fraction):
        return decimal_text(v, max_digits=60).lstrip("+")
    v = float(v)
    return str(int(v)) if v.is_integer() else exact_decimal(v)


def _chance(a: Fraction | float, near: float, far: float) -> str:
    """(a - near) / (far - near), exactly: the chance that stochastic rounding goes away from
    zero, to ``far``."""
    p = (Fraction(a) - Fraction(near)) / (Fraction(far) - Fraction(near))
    return decimal_text(p, max_digits=20).lstrip("+")


def _few_bits(x: Fraction | float, fmt: Format, rounding: str, sr_bits: int | None, near: float, far: float,
              shown: str, lo: str, hi: str) -> str:
    """The sentence of a stochastic rounding with N random bits: the odds of going to ``far``
    are k / 2**N, k the number of the 2**N values of the bits that take x there, which the
    codec itself is asked (it goes there from some value of the bits on: a bisection), and
    how they compare with the exact odds of unbiased rounding.

    >>> print(_few_bits(Fraction(13, 10), get_format("e4m3"), "stochastic_a", 1, 1.25, 1.375, "1.3", "1.25", "1.375"))
    1.3 lies between 1.25 and 1.375: stochastic_a with 1 random bit takes 1.375 with probability 0 (none of the 2 values of its bit), else 1.25; unbiased rounding would take 1.375 with probability 0.4
    """
    sign = -1 if x < 0 else 1
    towards, away = _text(sign * near), _text(sign * far)
    head = f"{shown} lies between {lo} and {hi}: {rounding}"
    exact = _chance(abs(x), near, far)
    if sr_bits is None:  # (the codec needs N: the sentence says what it cannot know)
        return f"{head} takes {away} with a probability near {exact}, else {towards}"
    n = int(sr_bits)
    grid = fmt if abs(x) <= fmt.max else _grid_beyond(fmt)  # past max: where the draw would go
    if grid is None:
        return f"{head} with {n} random bits takes {away} with a probability near {exact}, else {towards}"

    def goes_away(bits: int) -> bool:
        with np.errstate(over="ignore", invalid="ignore"):
            got = quantize(np.array([x], dtype=object), grid, rounding=rounding, overflow="saturate",
                           sr_bits=n, random_bits=[bits])[0]
        return abs(Fraction(float(got))) == Fraction(far)

    first, last = 0, 1 << n  # the least value of the bits that goes to far (last: none does)
    while first < last:
        middle = (first + last) // 2
        first, last = (first, middle) if goes_away(middle) else (middle + 1, last)
    k = (1 << n) - first
    p = Fraction(k, 1 << n)
    count = {0: "none", 1 << n: "all"}.get(k, str(k))
    bits = "bit" if n == 1 else "bits"
    odds = (f"{head} with {n} random {bits} takes {away} with probability {_text(p)} "
            f"({count} of the {1 << n} values of its {bits}), else {towards}")
    if p == (abs(Fraction(x)) - Fraction(near)) / (Fraction(far) - Fraction(near)):
        return odds + f", so on average it is {shown} (unbiased)"
    return odds + f"; unbiased rounding would take {away} with probability {exact}"


def _subnormal(fmt: Format) -> dict[str, str]:
    return _rule("subnormal", f"below the smallest normal {_text(fmt.min_normal)} the values are subnormal: "
                              f"evenly spaced by {_text(fmt.min_subnormal)}, so fewer significant bits")


def _overflowed(x: Fraction | float, fmt: Format, rounding: str, overflow: str | None, end: float, value: float,
                shown: str) -> str:
    """Why the result is beyond, or pinned at, the end of the finite range (``end``: the
    largest or the lowest finite value, on x's side); '' where nothing overflowed."""
    beyond = _grid_beyond(fmt)
    if rounding.startswith("stochastic"):  # its draw is in the value: past max where it is not finite,
        saturating = overflow in ("saturate", "saturate_propagate") or not (fmt.has_inf or fmt.has_nan)
        past = not np.isfinite(value) or (saturating and abs(x) > abs(end))  # or beyond max and pinned there
    elif beyond is not None:
        past = abs(_q(x, beyond, rounding)) > abs(end)  # rounded on the grid that goes on past it
    else:
        past = not np.isfinite(value)
    if not past:
        return ""
    head = f"{shown} rounds past {_text(end)}, the {'lowest' if end < 0 else 'largest'} finite value"
    if abs(end) == fmt.max:
        if rounding in ("nearest_even", "nearest_away"):
            head += f" (under {rounding}, every magnitude {overflow_words(fmt, rounding)} does)"
        else:
            head += f" (under {rounding}; to nearest even only magnitudes {overflow_words(fmt)} would)"
    if np.isnan(value):
        return head + ": the result is NaN" + ("" if fmt.has_inf else f" ({fmt.name} has no Inf)")
    if np.isinf(value):
        return head + ": the result is infinity"
    if overflow not in ("saturate", "saturate_propagate") and (fmt.has_inf or fmt.has_nan):
        return head + f": {rounding} rounds toward zero here, so it stays at {_text(value)} (IEEE 754 7.4)"
    if not (fmt.has_inf or fmt.has_nan):
        return head + f": {fmt.name} has neither Inf nor NaN, so it saturates to {_text(value)}"
    return head + f": the overflow rule ({overflow}) keeps it at {_text(value)}"
