"""The named formats: the registry, its aliases, :func:`get_format`, and the IEEE P3109
constructor.

>>> fmt = get_format("e4m3")
>>> fmt.bits, fmt.bias, fmt.max, fmt.min_subnormal
(8, 7, 448.0, 0.001953125)
"""

from __future__ import annotations

import re
from typing import Any, Callable, TypeVar

from ..arguments import is_whole, option_name, unknown_name

from .definition import Format

T = TypeVar("T")

_P3109_NAME = re.compile(r"^binary(\d+)p(\d+)([su])([ef])$")


def p3109(k: int, p: int | None = None, *, signed: bool = True, domain: str = "extended") -> Format:
    """The IEEE P3109 format binaryKpP (interim report v4.0, section 3.1 and annex C).

    K bits, precision P (P - 1 trailing significand bits); signed formats have K - P exponent
    bits and bias 2**(K-P-1), unsigned ones K - P + 1 and 2**(K-P). One zero, no -0, one NaN:
    signed 2**(K-1) (the code of -0), unsigned 2**K - 1 (the top code). The extended domain
    adds Inf: signed +-Inf on the top codes 2**(K-1) - 1 and 2**K - 1, unsigned +Inf just
    below the NaN. K >= 3 is normative; K = 2 (annex C) is allowed too. Signed formats need
    P < K (section 3.1), so gfloat's signed ``format_info_p3109(K, K)`` has no fpemu twin. ``p3109(P)`` with one
    argument is the 8-bit signed extended binary8pP (the form of earlier fpemu versions).

    >>> f = p3109(8, 3); f.name, f.max, f.bias
    ('binary8p3se', 49152.0, 16)
    >>> u = p3109(8, 4, signed=False); hex(u.inf_code), hex(u.nan_code), u.max
    ('0xfe', '0xff', 53248.0)
    >>> p3109(4, 2, domain="finite").max
    3.0
    """
    if p is None:
        k, p = 8, k
    for name, value in (("K", k), ("P", p)):
        if not is_whole(value):
            raise TypeError(f"P3109 {name} must be an integer, got {value!r}")
    k, p = int(k), int(p)
    if domain not in ("extended", "finite"):
        raise ValueError(f"P3109 domain must be 'extended' or 'finite', got {domain!r}")
    # Interim report v4.0 (26 June 2026), section 3.1: "P shall be strictly less than K (0 < P
    # < K) for signed formats, and less than or equal to K (0 < P <= K) for unsigned formats";
    # its value tables (annex C, tables 4-7) list signed P = 1 .. K-1 only. A signed P = K
    # would leave no exponent bits and a bias of 1/2 (gfloat floors it to 0).
    top = k - 1 if signed else k
    if k < 2 or not 1 <= p <= top:
        kind = "signed formats: 1 <= P < K" if signed else "unsigned formats: 1 <= P <= K"
        raise ValueError(f"P3109 defines K >= 2 and, for {kind} (interim report v4.0, section 3.1); "
                         f"got K={k}, P={p}")
    extended = domain == "extended"
    name = f"binary{k}p{p}{'s' if signed else 'u'}{'e' if extended else 'f'}"
    if signed:
        return Format(name, exponent_bits=k - p, mantissa_bits=p - 1, bias=1 << (k - p - 1),
                      inf="top" if extended else "none", nan="neg_zero")
    return Format(name, exponent_bits=k - p + 1, mantissa_bits=p - 1, bias=1 << (k - p), signed=False,
                  inf="below_nan" if extended else "none", nan="top")


def _p3109_by_name(key: str) -> Format | None:
    """binaryKpP{s|u}{e|f}, any K and P that P3109 defines, or None for other names."""
    match = _P3109_NAME.match(key)
    if not match:
        return None
    k, p, sign, domain = match.groups()
    return p3109(int(k), int(p), signed=sign == "s", domain="extended" if domain == "e" else "finite")


# P3109 formats with names of their own: the 8-bit signed extended ones (binary8p3 and
# p3109_p3 were fpemu's earlier names), the conformance minimum (section 4.5: binary8p4se,
# binary8p3se, binary4p2sf, scale binary8p1uf), and the other 8-bit formats gfloat lists.
_P3109_REGISTERED = [(8, p, True, "extended") for p in range(1, 8)] + [
    (8, 3, True, "finite"), (8, 4, True, "finite"), (8, 7, True, "finite"),
    (8, 1, False, "extended"), (8, 3, False, "extended"), (8, 4, False, "extended"),
    (8, 1, False, "finite"), (8, 3, False, "finite"), (8, 4, False, "finite"), (8, 8, False, "finite"),
    (4, 2, True, "finite"),
]  # fmt: skip


def _registry() -> tuple[dict[str, Format], dict[str, str]]:
    formats = [
        (Format("fp64", 11, 52, 1023), ["float64", "binary64", "double"]),
        (Format("fp32", 8, 23, 127), ["float32", "binary32", "single"]),
        (Format("tf32", 8, 10, 127, container_bits=32), ["tensorfloat32", "tensorfloat-32"]),
        (Format("fp16", 5, 10, 15), ["float16", "half", "binary16"]),
        (Format("bf16", 8, 7, 127), ["bfloat16"]),
        (Format("e4m3", 4, 3, 7, inf="none", nan="top"), ["fp8_e4m3", "float8_e4m3fn", "e4m3fn"]),
        (Format("e5m2", 5, 2, 15), ["fp8_e5m2", "float8_e5m2"]),
        (Format("e4m3fnuz", 4, 3, 8, inf="none", nan="neg_zero"), ["float8_e4m3fnuz", "fp8_e4m3fnuz"]),
        (Format("e5m2fnuz", 5, 2, 16, inf="none", nan="neg_zero"), ["float8_e5m2fnuz", "fp8_e5m2fnuz"]),
        (Format("e3m2", 3, 2, 3, inf="none", nan="none"), ["fp6_e3m2", "float6_e3m2fn"]),
        (Format("e2m3", 2, 3, 1, inf="none", nan="none"), ["fp6_e2m3", "float6_e2m3fn"]),
        (Format("e2m1", 2, 1, 1, inf="none", nan="none"), ["fp4", "fp4_e2m1", "float4_e2m1fn"]),
        (
            Format("e8m0", 8, 0, 127, signed=False, inf="none", nan="top", subnormals=False),
            ["float8_e8m0fnu", "e8m0fnu"],
        ),
        (Format("ue4m3", 4, 3, 7, signed=False, inf="none", nan="top"), ["float8_ue4m3"]),
        # OCP MX INT8: two's complement with an implicit 2**-6 (values -2 .. 127/64).
        (Format("int8", 0, 7, 0, inf="none", nan="none", twos_complement=True), ["ocp_int8", "mxint8_element"]),
        # Further formats that ml_dtypes implements, useful as cross-check targets.
        (Format("float8_e4m3", 4, 3, 7), ["e4m3ieee"]),
        (Format("float8_e3m4", 3, 4, 3), ["e3m4"]),
        (Format("float8_e4m3b11fnuz", 4, 3, 11, inf="none", nan="neg_zero"), ["e4m3b11fnuz"]),
        # ml_dtypes 0.7: unsigned, no Inf, NaN 0xFF only, max 114688 (0xFE); a block scale (UE5M3).
        (Format("float8_e5m3fnu", 5, 3, 15, signed=False, inf="none", nan="top"), ["ue5m3", "e5m3fnu"]),
    ]
    for k, p, signed, domain in _P3109_REGISTERED:
        short = [f"binary8p{p}", f"p3109_p{p}"] if (k, signed, domain) == (8, True, "extended") else []
        formats.append((p3109(k, p, signed=signed, domain=domain), short))
    by_name = {fmt.name: fmt for fmt, _ in formats}
    aliases = {alias: fmt.name for fmt, names in formats for alias in names}
    return by_name, aliases


FORMATS, _ALIASES = _registry()


def format_names() -> list[str]:
    """Canonical names of the registered formats, in registry order."""
    return list(FORMATS)


def get_format(fmt: str | Format) -> Format:
    """Look a format up by name or alias (case-insensitive); a Format passes through. Any
    IEEE P3109 name ``binaryKpP{s|u}{e|f}`` is built on request.

    >>> get_format("Float8_E4M3FN").name
    'e4m3'
    >>> get_format("Binary12p5ue").max  # (2 - 3 * 2**-4) * 2**127: Inf and NaN take the top
    3.083808950221005e+38
    >>> get_format("e4m4")
    Traceback (most recent call last):
    ...
    ValueError: unknown format 'e4m4'; did you mean e4m3, float8_e3m4 or ue4m3? `fpemu formats` lists the rest; any P3109 binaryKpP{s|u}{e|f} works too
    """
    if isinstance(fmt, Format):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"a format is a name or a Format, got {type(fmt).__name__}")
    key = option_name(fmt)
    key = _ALIASES.get(key, key)
    if key in FORMATS:
        return FORMATS[key]
    built = _p3109_by_name(key)
    if built is not None:
        return built
    note = "; any P3109 binaryKpP{s|u}{e|f} works too"
    raise ValueError(unknown_name("format", fmt, FORMATS, "`fpemu formats`", aliases=_ALIASES, note=note))


def one_or_pair(value: Any, get: Callable[[Any], T], single: tuple[type, ...], what: str, noun: str) -> tuple[T, T]:
    """A pair (of A's and B's formats, say) from one value (used for both) or a pair of them,
    each looked up with ``get``; anything else is refused as "``what`` must be ``noun`` or a
    pair of them".

    >>> [f.name for f in one_or_pair("fp16", get_format, (str, Format), "inputs", "a format name")]
    ['fp16', 'fp16']
    >>> [f.name for f in one_or_pair(("e4m3", "e5m2"), get_format, (str, Format), "inputs", "a format name")]
    ['e4m3', 'e5m2']
    """
    if isinstance(value, single):
        one = get(value)
        return one, one
    try:
        first, second = value
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be {noun} or a pair of them, got {value!r}") from None
    return get(first), get(second)
