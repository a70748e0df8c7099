"""The named formats: the registry, its aliases, :func:`get_format`, and the IEEE P3109
constructor.

>>> fmt = get_format("e4m3")
>>> fmt.bits, fmt.bias, fmt.max, fmt.min_subnormal
(8, 7, 448.0, 0.001953125)
"""

from __future__ import annotations

from .definition import Format

def p3109(precision: int) -> Format:
    """The IEEE P3109 signed 8-bit format binary8pP (draft v4.0 bias 2**(7-P)).

    NaN is 0x80, +-Inf are 0x7F/0xFF, there is no -0.

    >>> f = p3109(3); f.max, f.bias
    (49152.0, 16)
    """
    if not 1 <= precision <= 7:
        raise ValueError(f"P3109 binary8 precision must be 1..7, got {precision}")
    return Format(
        f"binary8p{precision}",
        exponent_bits=8 - precision,
        mantissa_bits=precision - 1,
        bias=1 << (7 - precision),
        inf="top",
        nan="neg_zero",
    )


def _registry() -> tuple[dict[str, Format], dict[str, str]]:
    formats = [
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
        # Further formats that ml_dtypes implements, useful as cross-check targets.
        (Format("float8_e4m3", 4, 3, 7), ["e4m3ieee"]),
        (Format("float8_e3m4", 3, 4, 3), ["e3m4"]),
        (Format("float8_e4m3b11fnuz", 4, 3, 11, inf="none", nan="neg_zero"), ["e4m3b11fnuz"]),
    ]
    formats += [(p3109(p), [f"p3109_p{p}"]) for p in range(1, 8)]
    by_name = {fmt.name: fmt for fmt, _ in formats}
    aliases = {alias: fmt.name for fmt, names in formats for alias in names}
    return by_name, aliases


FORMATS, _ALIASES = _registry()


def format_names() -> list[str]:
    """Canonical names of the registered formats, in registry order."""
    return list(FORMATS)


def get_format(fmt: str | Format) -> Format:
    """Look a format up by name or alias (case-insensitive); a Format passes through.

    >>> get_format("Float8_E4M3FN").name
    'e4m3'
    >>> get_format("fp9")
    Traceback (most recent call last):
    ...
    ValueError: unknown format 'fp9'; known formats: fp32, tf32, fp16, bf16, e4m3, e5m2, e4m3fnuz, e5m2fnuz, e3m2, e2m3, e2m1, e8m0, ue4m3, float8_e4m3, float8_e3m4, float8_e4m3b11fnuz, binary8p1, binary8p2, binary8p3, binary8p4, binary8p5, binary8p6, binary8p7 (aliases: float32, binary32, single, tensorfloat32, tensorfloat-32, float16, half, binary16, bfloat16, fp8_e4m3, float8_e4m3fn, e4m3fn, fp8_e5m2, float8_e5m2, float8_e4m3fnuz, fp8_e4m3fnuz, float8_e5m2fnuz, fp8_e5m2fnuz, fp6_e3m2, float6_e3m2fn, fp6_e2m3, float6_e2m3fn, fp4, fp4_e2m1, float4_e2m1fn, float8_e8m0fnu, e8m0fnu, float8_ue4m3, e4m3ieee, e3m4, e4m3b11fnuz, p3109_p1, p3109_p2, p3109_p3, p3109_p4, p3109_p5, p3109_p6, p3109_p7)
    """
    if isinstance(fmt, Format):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"a format is a name or a Format, got {type(fmt).__name__}")
    key = fmt.strip().lower()
    key = _ALIASES.get(key, key)
    if key in FORMATS:
        return FORMATS[key]
    raise ValueError(
        f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)} "
        f"(aliases: {', '.join(_ALIASES)})"
    )
