"""The :class:`Format` dataclass: a format's fields, and every number derived from them.

A format narrower than its container (TF32 in 32 bits) is stored left-aligned with the unused
low bits zero, exactly as CUTLASS stores ``tfloat32_t``. Codes are unsigned integers: sign bit
(if any) on top, then the exponent field, then the mantissa field.

>>> Format("e3m3", exponent_bits=3, mantissa_bits=3, bias=3, inf="none", nan="none").max
30.0
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .validation import layout_problems, range_problems, type_problems

InfEncoding = Literal["none", "ieee", "top", "below_nan"]
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
            ``"top"`` (the largest magnitude code, as in IEEE P3109's signed formats);
            ``"below_nan"`` (the code just below a ``"top"`` NaN, as in P3109's unsigned
            extended formats: +Inf 0xFE, NaN 0xFF).
        nan: where NaN lives: ``"none"``; ``"ieee"`` (exponent all ones, fraction non-zero);
            ``"top"`` (only the all-ones magnitude code, as in OCP E4M3 and E8M0);
            ``"neg_zero"`` (the code of -0, as in the FNUZ formats and P3109, which then have
            no -0).
        subnormals: ``True`` for the usual meaning of exponent field 0 (zero and subnormals).
            ``False`` makes field 0 an ordinary binade, so the format has no zero (E8M0).
            With ``exponent_bits=0`` every code is a subnormal: a fixed-point format.
        container_bits: storage width when wider than the format (TF32: 32); codes are then
            left-aligned and the unused low bits are ignored on decode.
        twos_complement: negative numbers are the two's complement of their magnitude code
            (OCP INT8: a fixed-point format, ``exponent_bits=0``); there is no -0, and the
            code ``-2**mantissa_bits`` is the lowest value, one step beyond ``-max``.

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
    twos_complement: bool = False

    def __post_init__(self) -> None:
        problems = type_problems(self)
        if not problems:
            problems = layout_problems(self)
        if not problems:
            problems = range_problems(self)
        if problems:
            raise ValueError(f"invalid format {self.name!r}: " + "; ".join(problems))

    # ---- widths and codes -------------------------------------------------------------
    @property
    def bits(self) -> int:
        """Number of meaningful bits in a code."""
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def storage_bits(self) -> int:
        """Bits of the integer that holds a code (8, 16, 32 or 64)."""
        if self.container_bits is not None:
            return self.container_bits
        return next(b for b in (8, 16, 32, 64) if self.bits <= b)

    @property
    def code_dtype(self) -> np.dtype:
        """Unsigned integer dtype of encoded arrays."""
        return np.dtype(f"uint{self.storage_bits}")

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
        if self.inf == "below_nan":
            return self.top_code - 1
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
        """Magnitude code of the largest finite value (0 where zero is the only one)."""
        if self.inf == "ieee" or self.nan == "ieee":
            return (((1 << self.exponent_bits) - 1) << self.mantissa_bits) - 1
        if self.inf == "below_nan":
            return self.top_code - 2
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
        return self.signed and self.subnormals and self.nan != "neg_zero" and not self.twos_complement

    # ---- values -------------------------------------------------------------------------
    def magnitude(self, k: int) -> float:
        """Value of magnitude code ``k`` (no sign bit) read as a finite number.

        >>> Format("e2m1", 2, 1, 1, inf="none", nan="none").magnitude(5)
        3.0
        """
        return float(self.magnitudes(np.array([k]))[0])

    def magnitudes(self, k: np.ndarray) -> np.ndarray:
        """float64 values of an array of magnitude codes read as finite numbers (the exponent
        unbounded above: codes past the largest finite one give the values an endless format
        would have, up to float64's range)."""
        M = self.mantissa_bits
        k = np.asarray(k).astype(np.uint64)
        field = (k >> np.uint64(M)).astype(np.int64)
        frac = (k & np.uint64((1 << M) - 1)).astype(np.float64)
        sub = (field == 0) if self.subnormals else np.zeros(field.shape, bool)
        significand = np.where(sub, frac, frac + 2.0**M)
        exponent = np.where(sub, self.emin, field - self.bias) - M
        with np.errstate(over="ignore"):  # past float64's range: Inf (only beyond the format)
            return np.ldexp(significand, exponent.astype(np.int32))

    def codes(self) -> np.ndarray:
        """Every code in order (in its container), formats of at most 16 bits.

        >>> Format("e2m1", 2, 1, 1, inf="none", nan="none").codes().tolist()[:4]
        [0, 1, 2, 3]
        """
        self._check_enumerable("codes")
        return (np.arange(self.num_codes, dtype=np.uint64) << np.uint64(self.code_shift)).astype(self.code_dtype)

    def values(self) -> np.ndarray:
        """Every finite value, ascending, each once (zero once), as float64; formats of at most
        16 bits.

        >>> Format("e2m1", 2, 1, 1, inf="none", nan="none").values().tolist()
        [-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
        """
        self._check_enumerable("values")
        positive = self.magnitudes(np.arange(self.max_code + 1))
        negative = -positive[::-1] if self.signed else positive[:0]
        if self.twos_complement:
            negative = np.concatenate([[-self.magnitude(self.max_code + 1)], negative])
        return np.unique(np.concatenate([negative, positive]) + 0.0)  # + 0.0: -0 is 0

    def _check_enumerable(self, what: str) -> None:
        if self.bits > 16:
            raise ValueError(f"{what}() lists formats of at most 16 bits; {self.name} has {self.bits}")

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal binade (field 1, or field 0 without subnormals)."""
        return (1 if self.subnormals else 0) - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite value: floor(log2(max)); where zero is the only
        finite value, one below the exponent of the smallest step (nothing lies above it)."""
        if self.max == 0:
            return self.emin - self.mantissa_bits - 1
        return int(np.frexp(self.max)[1]) - 1

    @functools.cached_property  # the codec reads it several times a call: computed once
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
        """Smallest positive value (the smallest normal when there are no subnormals; +inf
        where zero is the only finite value)."""
        if self.subnormals and self.max_code == 0:
            return float("inf")
        return self.magnitude(0 if not self.subnormals else 1)

    @property
    def lowest(self) -> float:
        """Most negative finite value (-max, one step lower in two's complement; the smallest
        value of an unsigned format).

        >>> Format("int8", 0, 7, 0, inf="none", nan="none", twos_complement=True).lowest
        -2.0
        """
        if not self.signed:
            return 0.0 if self.subnormals else self.magnitude(0)
        if self.twos_complement:
            return -self.magnitude(self.max_code + 1)
        return -self.max

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
