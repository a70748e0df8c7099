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

from functools import lru_cache
from typing import Any

import numpy as np

from ..arguments import is_whole
from ..codec import Conversion, decode, encode, quantize
from ..codec.exact import decimal_text, exact_decimal, fraction_float
from ..codec.explainer import explain_facts
from ..codec.option_names import NAN_POLICIES_WITH_NAN, NAN_POLICIES_WITHOUT_NAN, STOCHASTIC, STOCHASTIC_WITH_BITS
from ..formats import FORMATS, Format, get_format
from ..mx import get_block_format
from ..mx.inputs import ELEMENT_ROUNDINGS
from .blocks import BLOCK_NAMES, SCALE_RULES, block_element
from .plot_text import short_exact
from .rules import number_text, parse_exact
from .strip import overflow_from, short_label, strips
from .values import overflow_words, smallest_subnormal

__all__ = ["format_from_spec", "format_fields", "describe_code", "encode_number", "formats_payload",
           "compare_formats", "table_payload", "whole_number", "ROUNDINGS", "BLOCK_ROUNDINGS", "OVERFLOWS",
           "NANS", "COMPARED", "number_text"]

#: The rounding modes the explorer offers for one number: every canonical mode of the codec
#: (``fpemu.codec.ROUNDING_MODES``). The stochastic ones take a seed, so that a link replays
#: the draw; P3109's stochastic A, B, C and gfloat's stochastic odd also take ``sr_bits``, the
#: number of random bits per value; ``ml_dtypes_e8m0`` is for E8M0-like formats (the codec
#: refuses it for others, and the page shows its message).
ROUNDINGS = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd", "stochastic") + \
    STOCHASTIC_WITH_BITS + ("ml_dtypes_e8m0",)
#: The element roundings of the block view: what :func:`fpemu.mx.quantize` takes (no sr_bits,
#: so not the modes with N random bits, nor the E8M0-only one), in the page's order.
BLOCK_ROUNDINGS = tuple(r for r in ROUNDINGS if r in ELEMENT_ROUNDINGS)
#: The overflow rules it offers ("default": the format's own).
OVERFLOWS = ("default", "saturate", "saturate_propagate", "inf", "nan", "sat_none")
#: What a NaN result becomes ("default": NaN's code where the format has one, else refused).
NANS = ("default",) + tuple(NAN_POLICIES_WITH_NAN) + tuple(NAN_POLICIES_WITHOUT_NAN)
_FIELDS = ("exponent_bits", "mantissa_bits", "bias", "signed", "inf", "nan", "subnormals")
#: The formats the page compares side by side when a link names none.
COMPARED = ("fp32", "bf16", "fp16", "e4m3", "e2m1")
#: The widest format the printable code table lists (256 codes on one page).
TABLE_BITS = 8


def format_from_spec(spec: Any) -> Format:
    """A format from the page: a registered name, or a dict of a :class:`Format`'s fields
    (``exponent_bits``, ``mantissa_bits``, ``bias``, optional ``name``, ``signed``, ``inf``,
    ``nan``, ``subnormals``), checked by ``Format`` itself.

    >>> format_from_spec({"exponent_bits": 3, "mantissa_bits": 3, "bias": 3, "inf": "none", "nan": "none"}).max
    30.0
    """
    if isinstance(spec, (str, Format)):
        return get_format(spec)
    if not isinstance(spec, dict):
        raise TypeError("format must be a name or an object of fields")
    unknown = sorted(set(spec) - set(_FIELDS) - {"name"})
    if unknown:
        raise ValueError(f"unknown format field(s): {', '.join(unknown)}; known: name, {', '.join(_FIELDS)}")
    missing = [k for k in ("exponent_bits", "mantissa_bits", "bias") if k not in spec]
    if missing:
        raise ValueError(f"a format needs {', '.join(missing)}")
    name = str(spec.get("name") or "custom")
    return Format(name, **{k: spec[k] for k in _FIELDS if k in spec})


def format_fields(fmt: Format) -> dict[str, Any]:
    """A format's fields and landmarks, for the page.

    >>> f = format_fields(get_format("e2m1"))
    >>> f["bits"], f["max"], f["layout"]
    (4, '6.0', [['sign', 1], ['exponent', 2], ['mantissa', 1]])
    >>> format_fields(get_format("e8m0"))["min_subnormal"] is None  # E8M0 has no subnormals
    True
    """
    layout = ([["sign", 1]] if fmt.signed else []) + ([["exponent", fmt.exponent_bits]] if fmt.exponent_bits else [])
    layout += [["mantissa", fmt.mantissa_bits]] if fmt.mantissa_bits else []
    return {"name": fmt.name, "bits": fmt.bits, **{k: getattr(fmt, k) for k in _FIELDS},
            "twos_complement": fmt.twos_complement, "layout": layout, "max": number_text(fmt.max),
            "min_normal": number_text(fmt.min_normal) if fmt.has_normals and fmt.exponent_bits else None,
            "min_subnormal": None if (sub := smallest_subnormal(fmt)) is None else number_text(sub),
            "container_bits": fmt.storage_bits if fmt.code_shift else None, "code_shift": fmt.code_shift,
            "summary": format_summary(fmt), "accepts": accepted_options(fmt)}


def format_summary(fmt: Format) -> str:
    """The page's one line about a format: its bits, its range in exact short numbers, what it
    is the element of, and how its codes are stored.

    >>> format_summary(get_format("int8"))
    "int8: 8 bits, two's complement fixed point: code × 2^-6, from -2 to 1.984375 in steps of 0.015625 (the element of mxint8); saturates from 1.9921875 on"
    >>> format_summary(get_format("e2m1"))
    'e2m1: 4 bits, largest 6, smallest normal 1, smallest subnormal 0.5 (the element of mxfp4, nvfp4); saturates from 7 on'
    """
    head = f"{fmt.name}: {fmt.bits} bits" + (f", stored in the top {fmt.bits} of {fmt.storage_bits}" if fmt.code_shift else "")
    label = short_label
    if fmt.twos_complement or not fmt.exponent_bits:
        step = smallest_subnormal(fmt) or fmt.min_subnormal
        kind = "two's complement fixed point" if fmt.twos_complement else "fixed point"
        body = (f"{kind}: code × 2^{fmt.emin - fmt.mantissa_bits}, from {label(fmt.lowest)} to "
                f"{label(fmt.max)} in steps of {label(step)}")
    else:
        sub = smallest_subnormal(fmt)
        body = (f"largest {label(fmt.max)}"
                + (f", smallest normal {label(fmt.min_normal)}" if fmt.has_normals else "")
                + (", no subnormals" if sub is None else f", smallest subnormal {label(sub)}")
                + ("" if fmt.signed else ", unsigned"))
    elements = [b for b in BLOCK_NAMES if block_element(get_block_format(b)).name == fmt.name]
    used = f" (the element of {', '.join(elements)})" if elements else ""
    ends = "overflows" if fmt.has_inf or fmt.has_nan else "saturates"
    return f"{head}, {body}{used}; {ends} {overflow_from(fmt)}"


@lru_cache(maxsize=256)
def accepted_options(fmt: Format) -> dict[str, list[str]]:
    """The roundings, overflow rules and NaN rules the codec takes for ``fmt``, asked of the
    codec itself (its check of a :class:`fpemu.codec.Conversion` for the format: what encode
    runs first), so that the page's menus offer only those: E4M3 has no ``overflow="inf"``, a
    format with NaN no NaN-result rule, ``ml_dtypes_e8m0`` is for E8M0.

    >>> accepted_options(get_format("e4m3"))["overflows"]
    ['default', 'saturate', 'saturate_propagate', 'nan', 'sat_none']
    >>> accepted_options(get_format("e2m1"))["nans"], accepted_options(get_format("e4m3"))["nans"]
    (['default', 'zero', 'max', 'ml_dtypes'], ['default'])
    """
    def takes(**options: Any) -> bool:
        try:
            Conversion.of(None, **options).resolved(fmt)
        except ValueError:
            return False
        return True

    roundings = [r for r in ROUNDINGS if takes(rounding=r, **({"sr_bits": 8} if r in STOCHASTIC_WITH_BITS else {}))]
    overflows = ["default"] + [o for o in OVERFLOWS[1:] if takes(overflow=o)]
    # what a NaN input becomes: only where the format has no NaN of its own ("raise" is the default)
    nans = ["default"] + ([n for n in NAN_POLICIES_WITHOUT_NAN if n != "raise" and takes(nan=n)] if not fmt.has_nan else [])
    return {"roundings": roundings, "overflows": overflows, "nans": nans}


def formats_payload() -> dict[str, Any]:
    """What the page loads first: the registered formats, the modes, the block formats."""
    blocks = [{"name": n, "block_size": get_block_format(n).block_size, "nvfp4": get_block_format(n).is_nvfp4}
              for n in BLOCK_NAMES]
    compared = list(COMPARED)
    return {"formats": [format_fields(f) for f in FORMATS.values()], "roundings": list(ROUNDINGS),
            "block_roundings": list(BLOCK_ROUNDINGS), "seeded_roundings": list(STOCHASTIC),
            "sr_bits_roundings": list(STOCHASTIC_WITH_BITS),
            "overflows": list(OVERFLOWS), "nans": list(NANS), "nans_without_nan": list(NAN_POLICIES_WITHOUT_NAN),
            "blocks": blocks, "scale_roundings": list(SCALE_RULES), "compared": compared, "table_bits": TABLE_BITS,
            "docs": _docs_available()}


def _docs_available() -> bool:
    from .server import docs_available  # (the server knows where the docs are)

    return docs_available()


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
    return {"value": number_text(got), "value_exact": _exact(got), "code": _hex(fmt, code), "bits": _bits(fmt, code)}


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


def _hex(fmt: Format, code: int) -> str:
    return f"0x{code:0{(fmt.storage_bits + 3) // 4}X}"


def _bits(fmt: Format, code: int) -> str:
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
    bits = _bits(fmt, code)
    frac, efield = raw & ((1 << M) - 1), (raw >> M) & ((1 << E) - 1)
    negative = bool(fmt.signed and raw >> (E + M))
    cls = _class(fmt, value, efield)
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
    return {"format": format_fields(fmt), "code": _hex(fmt, code), "integer": str(code), "bits": bits,
            "fields": fields, "sign": "-" if negative else "+", "exponent_field": efield, "class": cls,
            "value": number_text(value), "value_exact": _exact(value), "formula": formula, "down": down,
            "up": up, "down_none": None if down else _no_neighbour(fmt, value, up=False),
            "up_none": None if up else _no_neighbour(fmt, value, up=True),
            "line": strips(fmt, value)}


def _class(fmt: Format, value: float, efield: int) -> str:
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


def _exact(value: float) -> str:
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


def compare_formats(text: Any, formats: Any = COMPARED, rounding: str = "nearest_even", seed: Any = 0,
                    sr_bits: Any = None) -> dict[str, Any]:
    """One number rounded into several formats, side by side (each with its own overflow and
    NaN rules): a row per format with :func:`encode_number`'s code, value, error and rules, or
    ``error``, that format's refusal in one line (NaN into E2M1, ``ml_dtypes_e8m0`` outside
    E8M0, an unknown name).

    >>> c = compare_formats("0.1", ["fp32", "bf16", "e2m1", "nosuch"])
    >>> [(r["format"], r.get("code"), r.get("value_exact")) for r in c["rows"][:3]]
    [('fp32', '0x3DCCCCCD', '0.100000001490116119384765625'), ('bf16', '0x3DCD', '0.10009765625'), ('e2m1', '0x00', '0.0')]
    >>> c["rows"][3]["error"][:24]
    "unknown format 'nosuch';"
    """
    if isinstance(formats, str):
        formats = [f for f in formats.replace(" ", ",").split(",") if f]
    if not isinstance(formats, (list, tuple)) or not formats:
        raise ValueError("name one format or more to compare (fp32, bf16, e4m3 ...)")
    if len(formats) > 12:
        raise ValueError(f"the side-by-side view takes up to 12 formats, got {len(formats)}")
    x = parse_exact(text)  # (a number that cannot be read is one error, not one per row)
    rows = []
    for name in formats:
        try:
            e = encode_number(name, text, rounding, seed=seed, sr_bits=sr_bits)
        except (ValueError, TypeError) as exc:
            rows.append({"format": str(name), "error": str(exc).strip().splitlines()[0]})
            continue
        rows.append({"format": e["format"]["name"], "bits_count": e["format"]["bits"], "code": e["code"],
                     "integer": e["integer"], "bits": " ".join(f["bits"] for f in e["fields"]), "class": e["class"],
                     "value": e["value"], "value_exact": e["value_exact"], "error_exact": e["error_exact"],
                     "relative_error_exact": e["relative_error_exact"], "rules": [r["rule"] for r in e["rules"]],
                     "rule_texts": [r["text"] for r in e["rules"]]})
    return {"input": text.strip() if isinstance(text, str) else number_text(fraction_float(x)),
            "rounding": rounding, "rows": rows}


def table_payload(fmt: Any) -> dict[str, Any]:
    """Every code of a format of at most 8 bits, for the page's printable table: a grid of
    2^ceil(b/2) columns (the low bits) by 2^floor(b/2) rows (the high bits); each cell the
    code, its value in few characters, exactly (:func:`~fpemu.teach.plot_text.short_exact`),
    its whole decimal and its class.

    >>> t = table_payload("e2m1")
    >>> t["columns"], t["rows"][0]["cells"][1]["value"], t["rows"][3]["cells"][3]["value"]
    (4, '0.5', '-6')
    """
    fmt = format_from_spec(fmt)
    if fmt.bits > TABLE_BITS:
        raise ValueError(f"the printable table lists every code of a format of at most {TABLE_BITS} bits (256 codes "
                         f"on one page); {fmt.name} has {fmt.bits} bits ({fmt.num_codes:,} codes)")
    codes = np.arange(fmt.num_codes, dtype=np.uint64) << np.uint64(fmt.code_shift)
    values = decode(codes.astype(fmt.code_dtype), fmt).tolist()
    M, E = fmt.mantissa_bits, fmt.exponent_bits
    columns = 1 << ((fmt.bits + 1) // 2)
    rows = []
    for start in range(0, fmt.num_codes, columns):
        cells = []
        for raw in range(start, start + columns):
            v = values[raw]
            code = raw << fmt.code_shift
            cells.append({"code": _hex(fmt, code), "bits": _bits(fmt, code), "value": short_exact(v),
                          "exact": _exact(v), "class": _class(fmt, v, (raw >> M) & ((1 << E) - 1))})
        rows.append({"head": _hex(fmt, start << fmt.code_shift), "cells": cells})
    return {"format": format_fields(fmt), "columns": columns, "column_heads": [f"+{c:X}" for c in range(columns)],
            "rows": rows, "summary": format_summary(fmt)}
