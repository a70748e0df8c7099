"""Floating-point formats as data.

A :class:`Format` is a frozen dataclass that says everything the codec needs to know about a
format: its field widths, its bias, whether it is signed, and which codes are special (Inf,
NaN). Every derived number (largest finite value, smallest subnormal, ...) is a property
computed from those fields, so a user-defined format is just another ``Format(...)``.

>>> fmt = get_format("e4m3")
>>> fmt.bits, fmt.bias, fmt.max, fmt.min_subnormal
(8, 7, 448.0, 0.001953125)
>>> Format("e3m3", exponent_bits=3, mantissa_bits=3, bias=3, inf="none", nan="none").max
30.0

Code layout: codes are unsigned integers, sign bit (if any) on top, then the exponent field,
then the mantissa field. A format narrower than its container (TF32 in 32 bits) is stored
left-aligned with the unused low bits zero, exactly as CUTLASS stores ``tfloat32_t``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["Format", "FORMATS", "get_format", "format_names", "p3109"]

InfEncoding = Literal["none", "ieee", "top"]
NanEncoding = Literal["none", "ieee", "top", "neg_zero"]


@dataclass(frozen=True)
class Format:
    """A binary floating-point format.

    Attributes:
        name: canonical name used in messages and tables.
        exponent_bits: width of the exponent field.
        mantissa_bits: width of the fraction (trailing significand) field.
        bias: exponent bias; a normal code with exponent field ``E`` has exponent ``E - bias``.
        signed: whether there is a sign bit (E8M0 and UE4M3 have none).
        inf: where +-Inf lives: ``"none"``; ``"ieee"`` (exponent all ones, fraction zero);
            ``"top"`` (the largest magnitude code, as in IEEE P3109).
        nan: where NaN lives: ``"none"``; ``"ieee"`` (exponent all ones, fraction non-zero);
            ``"top"`` (only the all-ones magnitude code, as in OCP E4M3 and E8M0);
            ``"neg_zero"`` (the code of -0, as in the FNUZ formats and P3109, which then have
            no -0).
        subnormals: ``True`` for the usual meaning of exponent field 0 (zero and subnormals).
            ``False`` makes field 0 an ordinary binade, so the format has no zero (E8M0).
        container_bits: storage width when wider than the format (TF32: 32); codes are then
            left-aligned and the unused low bits are ignored on decode.

    >>> Format("fp16", 5, 10, 15).max
    65504.0
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    signed: bool = True
    inf: InfEncoding = "ieee"
    nan: NanEncoding = "ieee"
    subnormals: bool = True
    container_bits: int | None = None

    def __post_init__(self) -> None:
        problems = _type_problems(self)
        if not problems:
            problems = _layout_problems(self)
        if not problems:
            problems = _range_problems(self)
        if problems:
            raise ValueError(f"invalid format {self.name!r}: " + "; ".join(problems))

    # ---- widths and codes -------------------------------------------------------------
    @property
    def bits(self) -> int:
        """Number of meaningful bits in a code."""
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def storage_bits(self) -> int:
        """Bits of the integer that holds a code (8, 16 or 32)."""
        if self.container_bits is not None:
            return self.container_bits
        return 8 if self.bits <= 8 else 16 if self.bits <= 16 else 32

    @property
    def code_dtype(self) -> np.dtype:
        """Unsigned integer dtype of encoded arrays."""
        return np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32}[self.storage_bits])

    @property
    def code_shift(self) -> int:
        """Left shift of a code inside its container (TF32: 13, otherwise 0)."""
        return self.storage_bits - self.bits if self.container_bits is not None else 0

    @property
    def sign_mask(self) -> int:
        """The sign bit of a (right-aligned) code, 0 for unsigned formats."""
        return 1 << (self.exponent_bits + self.mantissa_bits) if self.signed else 0

    @property
    def top_code(self) -> int:
        """The largest magnitude code (all exponent and mantissa bits set)."""
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1

    @property
    def inf_code(self) -> int | None:
        """Magnitude code of +Inf, or None."""
        if self.inf == "ieee":
            return ((1 << self.exponent_bits) - 1) << self.mantissa_bits
        if self.inf == "top":
            return self.top_code
        return None

    @property
    def nan_code(self) -> int | None:
        """The canonical positive (quiet) NaN code, or None when the format has no NaN."""
        if self.nan == "ieee":
            return (((1 << self.exponent_bits) - 1) << self.mantissa_bits) | (
                1 << (self.mantissa_bits - 1)
            )
        if self.nan == "top":
            return self.top_code
        if self.nan == "neg_zero":
            return self.sign_mask
        return None

    @property
    def max_code(self) -> int:
        """Magnitude code of the largest finite value."""
        if self.inf == "ieee" or self.nan == "ieee":
            return (((1 << self.exponent_bits) - 1) << self.mantissa_bits) - 1
        if self.inf == "top" or self.nan == "top":
            return self.top_code - 1
        return self.top_code

    @property
    def has_inf(self) -> bool:
        return self.inf != "none"

    @property
    def has_nan(self) -> bool:
        return self.nan != "none"

    @property
    def has_neg_zero(self) -> bool:
        return self.signed and self.subnormals and self.nan != "neg_zero"

    # ---- values -------------------------------------------------------------------------
    def magnitude(self, k: int) -> float:
        """Value of magnitude code ``k`` (no sign bit) read as a finite number.

        >>> get_format("e2m1").magnitude(5)
        3.0
        """
        M = self.mantissa_bits
        field, frac = k >> M, k & ((1 << M) - 1)
        if self.subnormals and field == 0:
            return float(np.ldexp(float(frac), self.emin - M))
        return float(np.ldexp(float((1 << M) | frac), field - self.bias - M))

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal binade (field 1, or field 0 without subnormals)."""
        return (1 if self.subnormals else 0) - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite value: floor(log2(max))."""
        return int(np.frexp(self.max)[1]) - 1

    @property
    def max(self) -> float:
        """Largest finite value.

        >>> Format("fixed", 1, 7, -3).max  # one exponent bit, IEEE Inf/NaN: subnormals only
        15.875
        """
        return self.magnitude(self.max_code)

    @property
    def has_normals(self) -> bool:
        """Whether some finite code is normal (has an implicit leading 1)."""
        return not self.subnormals or self.max_code >= 1 << self.mantissa_bits

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value; +inf when every finite value is subnormal (the
        minimum of no values), so that ``abs(v) < min_normal`` still tells subnormals."""
        return float(np.ldexp(1.0, self.emin)) if self.has_normals else float("inf")

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value (the smallest normal when there are no subnormals)."""
        return self.magnitude(0 if not self.subnormals else 1)

    @property
    def eps(self) -> float:
        """Relative spacing of a normal binade: 2**-mantissa_bits (the gap after 1.0 where
        1.0 is a normal value)."""
        return float(np.ldexp(1.0, -self.mantissa_bits))

    @property
    def num_codes(self) -> int:
        return 1 << self.bits

    def __str__(self) -> str:
        return self.name


# ---- validation: a Format(...) that makes no sense is refused, with the reason ---------------
_INF_ENCODINGS = ("none", "ieee", "top")
_NAN_ENCODINGS = ("none", "ieee", "top", "neg_zero")


def _type_problems(fmt: Format) -> list[str]:
    """Fields of the wrong type (checked first: the other checks compute with them)."""
    problems = []
    if not isinstance(fmt.name, str) or not fmt.name:
        problems.append(f"name must be a non-empty string, got {fmt.name!r}")
    for field in ("exponent_bits", "mantissa_bits", "bias"):
        value = getattr(fmt, field)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            problems.append(f"{field} must be an integer, got {value!r}")
        else:
            object.__setattr__(fmt, field, int(value))  # numpy integers: hash and compare as int
    for field in ("signed", "subnormals"):
        if not isinstance(getattr(fmt, field), (bool, np.bool_)):
            problems.append(f"{field} must be True or False, got {getattr(fmt, field)!r}")
    if fmt.inf not in _INF_ENCODINGS:
        problems.append(f"inf must be one of {_INF_ENCODINGS}, got {fmt.inf!r}")
    if fmt.nan not in _NAN_ENCODINGS:
        problems.append(f"nan must be one of {_NAN_ENCODINGS}, got {fmt.nan!r}")
    if fmt.container_bits is not None and fmt.container_bits not in (8, 16, 32):
        problems.append(f"container_bits must be 8, 16 or 32, got {fmt.container_bits!r}")
    return problems


def _layout_problems(fmt: Format) -> list[str]:
    """Field widths and special-code placements that cannot work together."""
    problems = []
    if fmt.exponent_bits < 1:
        problems.append("exponent_bits must be >= 1")
    if fmt.mantissa_bits < 0:
        problems.append("mantissa_bits must be >= 0")
    if fmt.bits > 32:
        problems.append(f"at most 32 bits are supported, got {fmt.bits}")
    if (fmt.inf == "ieee") != (fmt.nan == "ieee"):
        problems.append("IEEE-style Inf and NaN come together (inf='ieee', nan='ieee')")
    if fmt.nan == "ieee" and fmt.mantissa_bits == 0:
        problems.append("IEEE-style NaNs need at least one mantissa bit")
    if fmt.inf == "top" and fmt.nan == "top":
        problems.append("Inf and NaN cannot both be the top code")
    if fmt.nan == "neg_zero" and not fmt.signed:
        problems.append("an unsigned format has no -0 code to use as NaN")
    if fmt.nan == "neg_zero" and not fmt.subnormals:
        problems.append("nan='neg_zero' needs a zero (subnormals=True): without it the code "
                        "of -0 is the negative smallest value")
    if fmt.container_bits is not None and fmt.container_bits < fmt.bits:
        problems.append(f"container_bits ({fmt.container_bits}) is narrower than the format ({fmt.bits} bits)")
    return problems


def _range_problems(fmt: Format) -> list[str]:
    """Formats with no finite value to round to, or values float64 cannot hold exactly."""
    if fmt.subnormals and fmt.max_code < 1:
        return ["it has no positive finite value (every code is zero, Inf or NaN)"]
    # Every value must be a float64 (decode is exact, encode rounds float64 input once).
    top_exponent = (fmt.max_code >> fmt.mantissa_bits) - fmt.bias
    low_exponent = fmt.emin - fmt.mantissa_bits
    problems = []
    if top_exponent > 1023:
        problems.append(f"its largest value (about 2^{top_exponent}) is beyond float64; use a larger bias")
    if low_exponent < -1074:
        problems.append(f"its smallest value (2^{low_exponent}) is below float64's 2^-1074; use a smaller bias")
    return problems


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
