"""explain: how one number is encoded, in plain words (for people learning formats); and
:func:`explain_facts`, the same facts as data (the command line's ``show --json`` and the
explorer's page report them, so the error means the same everywhere: value minus input,
exactly, and the relative error divides it by ``|input|``).

The input is taken exactly: a decimal string such as ``"0.1"`` is the decimal 0.1, not the
float64 nearest it (:mod:`.exact_numbers`), and every number shown is exact: a value or an error as
its whole decimal (a rounded one is marked ``≈``). The rules that fired (a tie, an underflow,
an overflow by the tie ...) are the ones the explorer's page lists (:mod:`.rules`).
"""

from __future__ import annotations

from fractions import Fraction
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..formats import Format, get_format
from .decoder import decode
from .encoder import encode
from .exact_numbers import decimal_text, exact_decimal, exact_number, fraction_text, text_of
from .options import Conversion
from .rules import rounding_rules


def _classify(code: int, fmt: Format, value: float) -> str:
    mag = (code >> fmt.code_shift) & fmt.top_code
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf"
    if value == 0:
        return "zero"
    if not fmt.exponent_bits:
        return "fixed"
    if fmt.subnormals and (mag >> fmt.mantissa_bits) == 0:
        return "subnormal"
    return "normal"


def explain_facts(x: Any, fmt: str | Format, *, conversion: Conversion | Mapping | None = None,
                  rounding: str | None = None, overflow: str | None = None, nan: str | None = None,
                  rng: Any = None, sr_bits: int | None = None, random_bits: Any = None,
                  directed_overflow: str | None = None, via: str | None = None,
                  no_code: str | None = None) -> dict[str, Any]:
    """One number rounded into ``fmt``: the input as given (``input``, text) and exactly
    (``exact_input``: a Fraction, or a float for zeros, Inf and NaN), the options as applied
    (defaults resolved), the code, its value (float64, exact) and class, and the error
    ``value - input`` and ``error / |input|`` as Fractions (None where either is not finite),
    and the rules that fired (:func:`fpemu.codec.rules.rounding_rules`: ``{"rule", "text"}``).
    ``rng``: the seed (or Generator) of stochastic rounding.

    >>> f = explain_facts("-65519", "fp16")
    >>> f["value"], f["error"], f["relative_error"], f["overflow"], f["nan"]
    (-65504.0, Fraction(15, 1), Fraction(15, 65519), 'inf', 'sign')
    >>> [r["rule"] for r in explain_facts("65520", "fp16")["rules"]]
    ['tie', 'overflow']
    """

    fmt = get_format(fmt)
    conv = Conversion.of(conversion, rounding=rounding, overflow=overflow, nan=nan, sr_bits=sr_bits,
                         random_bits=random_bits, directed_overflow=directed_overflow, via=via, no_code=no_code)
    opts = conv.resolved(fmt)
    arr = np.asarray(x)
    if arr.ndim != 0:
        raise ValueError("explain takes a single number")
    given = arr.item() if isinstance(x, np.ndarray) else x
    exact = arr.dtype.kind in "OUiu"  # (floats: their float64 value is the exact input)
    source = np.array([given], dtype=object) if exact else arr.reshape(1)
    stochastic = {"rng": rng} if rng is not None else {}
    code = int(encode(source, fmt, conversion=conv, **stochastic)[0])
    exact_input = exact_number(given if exact else float(arr))
    value = float(decode(np.array([code], dtype=fmt.code_dtype), fmt)[0])
    error = relative = None
    if _finite(exact_input) and np.isfinite(value):
        error = Fraction(value) - Fraction(exact_input)
        relative = error / abs(Fraction(exact_input)) if exact_input else None
    shown = text_of(given) if exact else repr(float(arr))
    return {"input": shown, "exact_input": exact_input,
            "format": fmt.name, "rounding": opts.rounding, "overflow": opts.overflow, "nan": opts.nan,
            "directed_overflow": opts.directed, "code": code, "value": value,
            "class": _classify(code, fmt, value), "error": error, "relative_error": relative,
            "rules": rounding_rules(exact_input, fmt, opts.rounding, opts.overflow, value, shown, opts.sr_bits)}


def explain(
    x: Any,
    fmt: str | Format,
    *,
    conversion: Conversion | Mapping | None = None,
    rounding: str | None = None,
    overflow: str | None = None,
    nan: str | None = None,
    color: bool = False,
    rng: Any = None,
    sr_bits: int | None = None,
    random_bits: Any = None,
    directed_overflow: str | None = None,
    no_code: str | None = None,
    via: str | None = None,
) -> str:
    """Describe in plain words how one number is encoded: fields, class, value and error
    (value - x, exactly; relative: divided by |x|, so its sign is the error's) and the rules
    that fired, the same sentences as the explorer's page (a result equal to x needs none). x: a
    float, an int, or an exact number (``Fraction``, ``Decimal``, a decimal string: read exactly,
    not as the float64 nearest). ``rng``: the seed (or Generator) of stochastic rounding, as
    :func:`fpemu.encode` takes it; ``sr_bits``: how many random bits it compares.

    >>> print(explain("0.3", "e4m3"))
    0.3 in e4m3 (rounding nearest_even, overflow nan)
      code      0x2A = 0 0101 010
      sign      0 -> +
      exponent  0101 = 5, minus bias 7 -> 2^-2
      mantissa  010 -> 1 + 2/8 = 1.25 (normal)
      value     0.3125
      error     +0.0125 (relative ≈+4.17%)
      rounded   0.3 lies between 0.28125 and 0.3125: rounded to the nearer
    >>> for line in explain("65520", "fp16").splitlines()[-2:]: print(line)  # a tie that overflows
      tie       65520 is exactly halfway between 65504 and 65536: nearest_even takes the one with the even code
      overflow  65520 rounds past 65504, the largest finite value (under nearest_even, every magnitude from 65520 on does): the result is infinity
    >>> print(explain("-0.015625", "int8"))
    -0.015625 in int8 (rounding nearest_even, overflow saturate)
      code      0xFF = 1 1111111
      sign      1 -> - (two's complement: the top bit weighs -2^7)
      integer   11111111 = -128 + 127 = -1 -> -1 x 2^-6 (fixed point: steps of 2^-6)
      value     -0.015625
      error     +0 (relative +0%)
    """
    facts = explain_facts(x, fmt, conversion=conversion, rounding=rounding, overflow=overflow, nan=nan,
                          rng=rng, sr_bits=sr_bits, random_bits=random_bits, directed_overflow=directed_overflow,
                          via=via, no_code=no_code)
    fmt = get_format(fmt)
    code, value, cls = facts["code"], facts["value"], facts["class"]
    raw = code >> fmt.code_shift
    M, E = fmt.mantissa_bits, fmt.exponent_bits
    sign_bit = (raw >> (E + M)) & 1 if fmt.signed else None
    efield = (raw >> M) & ((1 << E) - 1)
    frac = raw & ((1 << M) - 1)
    ebits = format(efield, f"0{E}b") if E else ""
    mbits = format(frac, f"0{M}b") if M else ""

    def paint(text: str, ansi: str) -> str:
        return f"\033[{ansi}m{text}\033[0m" if color and text else text

    fields = [paint(str(sign_bit), "31")] if fmt.signed else []
    fields += [paint(bits, ansi) for bits, ansi in ((ebits, "32"), (mbits, "34")) if bits]
    width = (fmt.storage_bits + 3) // 4
    lines = [f"{facts['input']} in {fmt.name} (rounding {facts['rounding']}, overflow {facts['overflow']})"]
    lines.append(f"  code      0x{code:0{width}X} = {' '.join(fields)}")
    if fmt.signed:
        twos = f" (two's complement: the top bit weighs -2^{M})" if fmt.twos_complement and sign_bit else ""
        lines.append(f"  sign      {sign_bit} -> {'-' if sign_bit else '+'}{twos}")
    if not E and cls not in ("nan", "inf"):
        lines.append("  integer   " + _fixed_point_steps(fmt, raw, frac, mbits))
    elif cls in ("normal", "subnormal"):
        if cls == "subnormal":
            lines.append(f"  exponent  {ebits} = 0 (subnormal) -> 2^{fmt.emin}")
            lead = 0
        else:
            lines.append(f"  exponent  {ebits} = {efield}, minus bias {fmt.bias} -> 2^{efield - fmt.bias}")
            lead = 1
        if M:
            significand = exact_decimal(lead + frac / (1 << M))  # (exact: M <= 52 bits)
            lines.append(f"  mantissa  {mbits} -> {lead} + {frac}/{1 << M} = {significand} ({cls})")
        else:
            lines.append(f"  mantissa  (none) -> {lead} ({cls})")
    else:
        lines.append(f"  class     {cls}")
    shown = exact_decimal(value)
    lines.append(f"  value     {value!r}" + (f" (exactly {shown})" if shown != repr(value) else ""))
    if facts["error"] is not None:
        err, rel = facts["error"], facts["relative_error"]
        relative = f" (relative {_percent(rel)})" if rel is not None else ""
        lines.append(f"  error     {decimal_text(err, max_digits=60)}{relative}")
    elif not _is_nan(facts["exact_input"]) and not np.isfinite(value):
        lines.append(f"  error     {_why_not_finite(facts['exact_input'], fmt)}")
    lines += [f"  {r['rule']:<9} {r['text']}" for r in facts["rules"] if r["rule"] != "exact"]
    return "\n".join(lines)


def _percent(rel: Fraction) -> str:
    """A relative error in percent, 3 significant digits, marked ``≈`` where they round it.

    >>> _percent(Fraction(1, 24)), _percent(Fraction(-1, 8)), _percent(Fraction(0))
    ('≈+4.17%', '-12.5%', '+0%')
    """
    text = fraction_text(rel * 100, 3)
    return ("" if Fraction(text) == rel * 100 else "≈") + text + "%"


def _finite(v: Fraction | float) -> bool:
    return isinstance(v, Fraction) or bool(np.isfinite(v))


def _is_nan(v: Fraction | float) -> bool:
    return isinstance(v, float) and bool(np.isnan(v))


def _fixed_point_steps(fmt: Format, raw: int, frac: int, mbits: str) -> str:
    """How a fixed-point code (no exponent field) makes its value: an integer times the step
    2^(emin - M); in two's complement the integer is every bit, the top one weighing -2^M."""
    step = fmt.emin - fmt.mantissa_bits
    if fmt.twos_complement:
        M = fmt.mantissa_bits
        top = raw >> M
        n = frac - (top << M)
        how = f"-{1 << M} + {frac} = {n}" if top else f"{n}"
        return f"{format(raw, f'0{M + 1}b')} = {how} -> {n} x 2^{step} (fixed point: steps of 2^{step})"
    negative = fmt.signed and raw >> fmt.mantissa_bits
    signed = -frac if negative else frac
    return f"{mbits} = {frac} -> {signed} x 2^{step} (fixed point: steps of 2^{step})"


def _why_not_finite(x: Fraction | float, fmt: Format) -> str:
    """Why a number that is not NaN got a NaN or Inf code (for explain)."""
    if x == 0 and not fmt.subnormals:
        return "no code: the format has no zero"
    if not fmt.signed and x < 0:
        return "no code: the format is unsigned, it has no negative values"
    if isinstance(x, float) and np.isinf(x):
        return "Inf input" + ("" if fmt.has_inf else ": the format has no Inf")
    return "overflow: the value is beyond the format's largest finite value"
