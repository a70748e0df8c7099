"""The explorer's JSON API for one number: a format from its name or its fields, one code read
field by field, and one number rounded into the format with the rule that fired.

Every value comes from fpemu's codec (:func:`fpemu.encode`, :func:`fpemu.decode`,
:func:`fpemu.quantize`); the page only shows it. Numbers travel as text (``repr`` of the
float64, or ``inf``, ``-inf``, ``nan``), codes as hex and as a string of bits, so that 64-bit
codes and non-finite values survive JSON.

>>> d = describe_code("e4m3", "00111000")
>>> d["code"], d["value"], d["class"], d["down"]["value"], d["up"]["value"]
('0x38', '1.0', 'normal', '0.9375', '1.125')
>>> e = encode_number("e4m3", "500")
>>> e["code"], e["value"], [r["rule"] for r in e["rules"]]
('0x7F', 'nan', ['overflow'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import is_whole
from ..codec import decode, encode, quantize
from ..codec import (NAN_POLICIES_WITHOUT_NAN, STOCHASTIC, STOCHASTIC_WITH_BITS, decimal_text, exact_decimal,
                     explain_facts, fraction_float)
from ..formats import Format
from .options import (BLOCK_ROUNDINGS, NANS, OVERFLOWS, ROUNDINGS, format_fields, format_from_spec,  # noqa: F401
                      formats_payload)
from .rules import number_text, parse_exact
from .strip import overflow_from, short_label, strips

__all__ = ["format_from_spec", "format_fields", "describe_code", "encode_number", "formats_payload",
           "whole_number", "code_hex", "code_bits", "code_class", "exact_text", "ROUNDINGS", "BLOCK_ROUNDINGS",
           "OVERFLOWS", "NANS", "number_text"]

def _code_from(fmt: Format, code: Any) -> int:
    """A code from a string of bits (``"00111000"``), a hex string (``"0x38"``) or an int."""
    if isinstance(code, (bool, np.bool_)):
        raise TypeError("a code is a string of bits, a hex string or an integer")
    if isinstance(code, str):
        text = code.strip().replace("_", "").replace(" ", "")
        if text.lower().startswith("0x") and len(text) > 2 and all(c in "0123456789abcdefABCDEF" for c in text[2:]):
            stored = int(text, 16)
        elif text and set(text) <= {"0", "1"} and len(text) == fmt.bits:
            stored = int(text, 2) << fmt.code_shift
        else:
            raise ValueError(f"a code of {fmt.name} is {fmt.bits} bits (0/1) or hex (0x...), got {code!r}")
    elif is_whole(code):
        stored = int(code)
    else:
        raise TypeError("a code is a string of bits, a hex string or an integer")
    if stored & ((1 << fmt.code_shift) - 1):  # (TF32: 19 bits in the top of 32; the rest are 0)
        raise ValueError(f"a code of {fmt.name} is {fmt.bits} bits stored in the top of {fmt.storage_bits}: its low "
                         f"{fmt.code_shift} bits are 0, got 0x{stored:X} = {stored}; the next code is "
                         f"{1 << fmt.code_shift} further")
    raw = stored >> fmt.code_shift
    if not 0 <= raw < fmt.num_codes:
        raise ValueError(f"code {code!r} is out of range for {fmt.name} ({fmt.bits} bits)")
    return raw << fmt.code_shift


def _neighbour(fmt: Format, value: float, up: bool) -> dict[str, str] | None:
    """The next finite value above (or below) ``value``, by the codec: the float64 just past
    it, rounded up (down) into the format. None where there is none."""
    if np.isnan(value):
        return None
    start = np.nextafter(np.float64(value), np.inf if up else -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        got = float(quantize(np.array([start]), fmt, rounding="up" if up else "down")[0])
    if not np.isfinite(got) or (got <= value if up else got >= value):
        return None
    got += 0.0  # the neighbour zero is +0, whichever zero the rounding gave
    code = int(encode(np.array([got]), fmt)[0])
    return {"value": number_text(got), "value_exact": exact_text(got), "code": code_hex(fmt, code), "bits": code_bits(fmt, code)}


def _no_neighbour(fmt: Format, value: float, up: bool) -> str:
    """Why a value has no finite neighbour on one side, in words (the page shows it)."""
    if np.isnan(value):
        return "none: NaN is not on the number line"
    if np.isinf(value):
        return f"none: {number_text(value)} is past every finite value"
    if up and value == fmt.max:
        return (f"none: {short_label(fmt.max)} is the largest finite value of {fmt.name} "
                f"({'overflow' if fmt.has_inf or fmt.has_nan else 'saturation'} {overflow_from(fmt)})")
    if not up and value == fmt.lowest:
        return f"none: {short_label(fmt.lowest)} is the lowest value of {fmt.name}"
    return "none"


def code_hex(fmt: Format, code: int) -> str:
    return f"0x{code:0{(fmt.storage_bits + 3) // 4}X}"


def code_bits(fmt: Format, code: int) -> str:
    return format(code >> fmt.code_shift, f"0{fmt.bits}b")


def describe_code(fmt: Any, code: Any) -> dict[str, Any]:
    """One code of ``fmt`` read field by field: its bits, the code as hex and as an integer
    (as :func:`fpemu.encode` returns it), the fields, the class, the value (:func:`fpemu.decode`;
    ``value_exact``: its whole decimal), the formula and the two neighbouring finite values.

    >>> d = describe_code("fp16", "0x0001")
    >>> d["class"], d["value"], d["value_exact"], d["formula"], d["down"]["value"], d["integer"]
    ('subnormal', '5.960464477539063e-08', '5.9604644775390625e-08', '+2^-14 × (0 + 1/1024)', '0.0', '1')
    """
    fmt = format_from_spec(fmt)
    code = _code_from(fmt, code)
    value = float(decode(np.array([code], dtype=fmt.code_dtype), fmt)[0])
    raw = code >> fmt.code_shift
    M, E = fmt.mantissa_bits, fmt.exponent_bits
    bits = code_bits(fmt, code)
    frac, efield = raw & ((1 << M) - 1), (raw >> M) & ((1 << E) - 1)
    negative = bool(fmt.signed and raw >> (E + M))
    cls = code_class(fmt, value, efield)
    fields, at = [], 0
    for name, width in format_fields(fmt)["layout"]:
        field = int(bits[at:at + width], 2)
        fields.append({"name": name, "bits": bits[at:at + width], "value": field,
                       "meaning": _meaning(fmt, name, field, cls)})
        at += width
    if cls in ("normal", "subnormal", "fixed"):
        formula = _formula(fmt, raw, efield, frac, negative, cls)
    else:
        formula = {"nan": "NaN: not a number", "inf": "infinity", "zero": "zero"}[cls]
    down, up = _neighbour(fmt, value, up=False), _neighbour(fmt, value, up=True)
    return {"format": format_fields(fmt), "code": code_hex(fmt, code), "integer": str(code), "bits": bits,
            "fields": fields, "sign": "-" if negative else "+", "exponent_field": efield, "class": cls,
            "value": number_text(value), "value_exact": exact_text(value), "formula": formula, "down": down,
            "up": up, "down_none": None if down else _no_neighbour(fmt, value, up=False),
            "up_none": None if up else _no_neighbour(fmt, value, up=True),
            "line": strips(fmt, value)}


def code_class(fmt: Format, value: float, efield: int) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf"
    if value == 0:
        return "zero"
    if not fmt.exponent_bits:
        return "fixed"
    return "subnormal" if fmt.subnormals and efield == 0 else "normal"


def _meaning(fmt: Format, name: str, field: int, cls: str) -> str:
    """What one field of a code says, in words (for the page's table of fields)."""
    if cls in ("nan", "inf"):
        return "part of the special code" if name != "sign" else ("-" if field else "+")
    if name == "sign":
        return "negative (two's complement)" if fmt.twos_complement and field else ("-" if field else "+")
    if name == "exponent":
        if fmt.subnormals and field == 0:
            return f"0: zero or subnormal, the exponent stays at emin = 1 - bias = {fmt.emin}"
        return f"{field} - bias {fmt.bias} = {field - fmt.bias}"
    M = fmt.mantissa_bits
    if fmt.twos_complement:
        return f"{field}: with the sign bit, the two's complement integer"
    lead = 0 if cls in ("zero", "subnormal", "fixed") else 1
    return f"{lead} + {field}/{1 << M} = {exact_decimal(lead + field / (1 << M))}"  # (exact: M <= 52)


def exact_text(value: float) -> str:
    """A value's whole decimal, or inf, -inf, nan (as :func:`number_text`)."""
    return exact_decimal(value) if np.isfinite(value) else number_text(value)


def _formula(fmt: Format, raw: int, efield: int, frac: int, negative: bool, cls: str) -> str:
    """How the fields make the value, in words and powers of two."""
    M = fmt.mantissa_bits
    sign = "-" if negative else "+"
    if fmt.twos_complement:
        signed = raw - (1 << fmt.bits) if negative else raw
        return f"{signed} × 2^{fmt.emin - M} (two's complement)"
    if cls in ("subnormal", "fixed"):
        return f"{sign}2^{fmt.emin} × (0 + {frac}/{1 << M})"
    if not M:
        return f"{sign}2^{efield - fmt.bias}"
    return f"{sign}2^{efield - fmt.bias} × (1 + {frac}/{1 << M})"


def encode_number(fmt: Any, text: Any, rounding: str = "nearest_even", overflow: str = "default",
                  nan: str = "default", seed: Any = 0, sr_bits: Any = None) -> dict[str, Any]:
    """Round the number ``text`` into ``fmt``, once, from its exact value (``"0.1"`` is one
    tenth, not the float64 nearest it): the code's description (:func:`describe_code`) with
    the input (as typed, and ``input_value``, the float64 nearest it), the error (value -
    input, exactly: ``error_exact``, and ``error``, the float64 nearest it; relative: divided
    by |input|) and the rules that fired: all of it :func:`fpemu.codec.explainer.explain_facts`,
    the facts ``fpemu show`` prints. ``nan``: what a NaN result becomes; ``seed``: stochastic
    rounding's seed (a whole number, so that the same link gives the same draw); ``sr_bits``:
    the number of random bits per value (1..32) of stochastic_a, _b, _c and stochastic_odd,
    which need it (ignored by the other modes, as the seed is; the codec checks it).

    >>> e = encode_number("e2m1", "2.5")
    >>> e["value"], e["error"], [r["rule"] for r in e["rules"]]
    ('2.0', '-0.5', ['tie'])
    >>> e = encode_number("fp64", "0.1")
    >>> e["value"], e["error_exact"], e["relative_error"], [r["rule"] for r in e["rules"]]
    ('0.1', '+5.5511151231257827021181583404541015625e-18', '5.551115123125783e-17', ['rounded'])
    >>> e = encode_number("e4m3", "1.3", "stochastic_a", seed=3, sr_bits=2)
    >>> e["code"], e["sr_bits"], [r["rule"] for r in e["rules"]]
    ('0x3A', 2, ['stochastic'])
    """
    fmt = format_from_spec(fmt)
    if rounding not in ROUNDINGS:
        raise ValueError(f"unknown rounding {rounding!r}; the explorer offers {', '.join(ROUNDINGS)}")
    if overflow not in OVERFLOWS:
        raise ValueError(f"unknown overflow {overflow!r}; choose one of {', '.join(OVERFLOWS)}")
    if nan not in NANS:
        raise ValueError(f"unknown NaN rule {nan!r}; choose one of {', '.join(NANS)}")
    seed = whole_number(seed)
    if not is_whole(seed) or not 0 <= int(seed) < 2**63:
        raise ValueError(f"the seed of stochastic rounding is a whole number 0 .. 2^63-1, got {seed!r}")
    sr_bits = whole_number(sr_bits)
    with_bits = rounding in STOCHASTIC_WITH_BITS
    x = parse_exact(text)
    if isinstance(x, float) and np.isnan(x) and not fmt.has_nan and nan == "default":
        raise ValueError(f"{fmt.name} has no NaN: choose what a NaN becomes under 'NaN results' "
                         f"({', '.join(NAN_POLICIES_WITHOUT_NAN[1:])})")
    typed = text.strip().replace("−", "-") if isinstance(text, str) else x  # (read exactly by explain_facts)
    facts = explain_facts(typed, fmt, rounding=rounding, overflow=None if overflow == "default" else overflow,
                          nan=None if nan == "default" else nan,
                          rng=int(seed) if rounding in STOCHASTIC else None,
                          sr_bits=sr_bits if with_bits else None)
    out = describe_code(fmt, facts["code"])
    err, rel = facts["error"], facts["relative_error"]
    out.update(input=text.strip() if isinstance(text, str) else number_text(text), input_value=number_text(fraction_float(x)), rounding=rounding, overflow=overflow,
               nan=nan, seed=int(seed), sr_bits=int(sr_bits) if with_bits else None, rules=facts["rules"],
               error=None if err is None else number_text(fraction_float(err)),
               error_exact=None if err is None else decimal_text(err, max_digits=60),
               relative_error=None if rel is None else number_text(fraction_float(rel)),
               relative_error_exact=None if rel is None else decimal_text(rel, max_digits=60),
               line=strips(fmt, facts["value"], x))
    return out


def whole_number(value: Any) -> Any:
    """A whole number typed on the page (``"12"``) as an int; anything else as it came, for the
    check that refuses it to name it (``'abc'``, not None).

    >>> whole_number(" 12 "), whole_number("abc"), whole_number(3), whole_number(None)
    (12, 'abc', 3, None)
    """
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value
