"""What the explorer offers: the modes and rules of its menus, a format from the page's fields,
and each format's fields, landmarks, one-line summary and the options the codec takes for it
(so that a menu never offers what the codec would refuse).

>>> accepted_options(get_format("e2m1"))["overflows"], format_fields(get_format("e2m1"))["layout"]
(['default', 'saturate', 'saturate_propagate', 'sat_none'], [['sign', 1], ['exponent', 2], ['mantissa', 1]])
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..codec import NAN_POLICIES_WITH_NAN, NAN_POLICIES_WITHOUT_NAN, STOCHASTIC, STOCHASTIC_WITH_BITS, Conversion
from ..formats import FORMATS, Format, get_format
from ..mx import get_block_format
from ..mx.inputs import ELEMENT_ROUNDINGS
from .blocks import BLOCK_NAMES, SCALE_RULES, block_element
from .rules import number_text
from .strip import overflow_from, short_label
from .values import smallest_subnormal

__all__ = ["ROUNDINGS", "BLOCK_ROUNDINGS", "OVERFLOWS", "NANS", "FIELDS", "COMPARED", "TABLE_BITS",
           "format_from_spec", "format_fields", "format_summary", "accepted_options", "formats_payload"]

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
FIELDS = ("exponent_bits", "mantissa_bits", "bias", "signed", "inf", "nan", "subnormals")
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
    unknown = sorted(set(spec) - set(FIELDS) - {"name"})
    if unknown:
        raise ValueError(f"unknown format field(s): {', '.join(unknown)}; known: name, {', '.join(FIELDS)}")
    missing = [k for k in ("exponent_bits", "mantissa_bits", "bias") if k not in spec]
    if missing:
        raise ValueError(f"a format needs {', '.join(missing)}")
    name = str(spec.get("name") or "custom")
    return Format(name, **{k: spec[k] for k in FIELDS if k in spec})


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
    return {"name": fmt.name, "bits": fmt.bits, **{k: getattr(fmt, k) for k in FIELDS},
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
            "blocks": blocks, "scale_roundings": list(SCALE_RULES), "compared": compared, "table_bits": TABLE_BITS}
