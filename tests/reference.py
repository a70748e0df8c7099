"""An exact, deliberately slow reference codec built only from a format's definition.

This module is the independent oracle for ``fpemu.codec``: it shares no code with it and
uses nothing but the :class:`fpemu.Format` fields (widths, bias, signedness, where Inf and
NaN live, whether exponent field 0 is subnormal) and exact rational arithmetic
(:class:`fractions.Fraction`). Everything is scalar Python, one value at a time, written for
clarity rather than speed; tests use it on thousands of values, never millions.

The semantics follow ``SPEC.md`` section 2 ("round first, then apply the overflow rule to the
rounded magnitude"):

* Rounding works on *magnitude codes* with an unbounded exponent: the two representable
  neighbours of ``|x|`` are consecutive integers ``k`` and ``k + 1``, so "ties to even" and
  "round to odd" mean "the neighbour whose code is even / odd" (this is also what makes E8M0,
  with no mantissa bits, round 0.75 to 0.5 under RNE, as SPEC says).
* Overflow (rounded magnitude above the largest finite value): ``"saturate"`` gives +-max;
  otherwise Inf where the format has it, else the NaN code, except that the directed modes
  that round toward zero for that sign (rz; rd for x > 0; ru for x < 0; and round-to-odd,
  which truncates) give +-max, as IEEE 754-2019 section 7.4 does.
* Formats without -0 (FNUZ, P3109) give code 0 for anything that rounds to zero. Formats
  without zero (E8M0): positive values below the smallest value give code 0 in every mode;
  zero, negatives and NaN give the NaN code. Unsigned formats: negative inputs that do not
  round to zero give NaN (with ``nan="ml_dtypes"``, ml_dtypes' rule, every negative input but
  -0 does), the others +0.
* NaN input: the canonical NaN code (IEEE: exponent all ones and mantissa MSB set; "top":
  the all-ones magnitude; "neg_zero": the -0 code), carrying the input's sign when the format
  is signed and its NaN is not the -0 code. Formats without NaN (FP4/FP6) follow the ``nan``
  option: "raise", "zero" (code 0) or "ml_dtypes" (+NaN -> the -0 code, -NaN -> 0).

>>> from fpemu.formats import get_format
>>> e4m3 = get_format("e4m3")
>>> hex(ref_encode(464.0, e4m3)), hex(ref_encode(464.0001, e4m3)), hex(ref_encode(1e9, e4m3, overflow="saturate"))
('0x7e', '0x7f', '0x7e')
>>> ref_decode(0x7E, e4m3)
Value(kind='finite', negative=False, magnitude=Fraction(448, 1))
>>> hex(ref_encode(0.75, get_format("e8m0"))), hex(ref_encode(0.75, get_format("e8m0"), rounding="rna"))
('0x7e', '0x7f')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from fpemu.formats import Format

__all__ = [
    "Value",
    "ref_decode",
    "ref_decode_float",
    "ref_encode",
    "ref_neighbours",
    "magnitude_value",
    "representable_magnitudes",
    "resolve_overflow",
    "max_magnitude_code",
    "ROUNDING_ALIASES",
    "ML_DTYPES_TYPES",
    "ml_dtypes_has",
    "oracle_type",
    "decode_table",
    "nan_table",
    "table_rne",
]

# Formats that ml_dtypes (or numpy, for fp16/fp32) implements: format name -> type name.
ML_DTYPES_TYPES = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
    "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
    "e3m2": "float6_e3m2fn",
    "e2m3": "float6_e2m3fn",
    "e2m1": "float4_e2m1fn",
    "e8m0": "float8_e8m0fnu",
    "float8_e4m3": "float8_e4m3",
    "float8_e3m4": "float8_e3m4",
    "float8_e4m3b11fnuz": "float8_e4m3b11fnuz",
    "float8_e5m3fnu": "float8_e5m3fnu",  # ml_dtypes 0.7 and later (see oracle_type)
}

ROUNDING_ALIASES = {
    "nearest_even": "rne",
    "rne": "rne",
    "nearest_away": "rna",
    "rna": "rna",
    "toward_zero": "rz",
    "rz": "rz",
    "up": "ru",
    "ru": "ru",
    "down": "rd",
    "rd": "rd",
    "odd": "odd",
    "rto": "odd",
    "stochastic_a": "sra",
    "sra": "sra",
    "stochastic_b": "srb",
    "srb": "srb",
    "stochastic_c": "src",
    "src": "src",
    "ml_dtypes_e8m0": "ml_dtypes_e8m0",
}


@dataclass(frozen=True)
class Value:
    """A decoded value: ``kind`` is "finite", "inf" or "nan"; zero keeps its sign."""

    kind: str
    negative: bool
    magnitude: Fraction = Fraction(0)

    def to_float(self) -> float:
        """The value as a Python float (exact for every format of 32 bits or less)."""
        if self.kind == "nan":
            return math.nan
        if self.kind == "inf":
            return -math.inf if self.negative else math.inf
        value = float(self.magnitude)
        return -value if self.negative else value


# ---- decoding -----------------------------------------------------------------------------


def magnitude_value(k: int, fmt: Format) -> Fraction:
    """Value of magnitude code ``k`` read as a finite number, with the exponent unbounded above.

    ``k = (exponent_field << mantissa_bits) | mantissa``; ``k`` may exceed the format's
    largest code, which gives the values an unbounded exponent range would have. Consecutive
    ``k`` are consecutive representable values.

    >>> from fpemu.formats import get_format
    >>> [str(magnitude_value(k, get_format("e2m1"))) for k in range(9)]
    ['0', '1/2', '1', '3/2', '2', '3', '4', '6', '8']
    """
    m_bits = fmt.mantissa_bits
    field = k >> m_bits
    frac = k & ((1 << m_bits) - 1)
    if fmt.subnormals and field == 0:
        # Subnormal: no implicit 1, same scale as the smallest normal binade.
        return Fraction(frac) * _pow2(1 - fmt.bias - m_bits)
    return Fraction((1 << m_bits) + frac) * _pow2(field - fmt.bias - m_bits)


def ref_decode(code: int, fmt: Format) -> Value:
    """Decode one integer code (in its container, e.g. TF32 left-aligned) exactly.

    >>> from fpemu.formats import get_format
    >>> ref_decode(0xFC00, get_format("fp16"))
    Value(kind='inf', negative=True, magnitude=Fraction(0, 1))
    """
    shift = _container_shift(fmt)
    code = int(code) >> shift  # low container bits are ignored (TF32)
    width = fmt.exponent_bits + fmt.mantissa_bits
    if fmt.twos_complement:  # the code is a signed integer of width + 1 bits
        v = code - (1 << (width + 1)) if code >> width else code
        return Value("finite", v < 0, magnitude_value(abs(v), fmt))
    negative = fmt.signed and bool((code >> width) & 1)
    k = code & ((1 << width) - 1)
    all_ones_exp = ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    top = (1 << width) - 1
    # Special codes, straight from the Format fields.
    if fmt.nan == "neg_zero" and negative and k == 0:
        return Value("nan", False)
    if fmt.nan == "top" and k == top:
        return Value("nan", negative)
    if fmt.inf == "top" and k == top:
        return Value("inf", negative)
    if fmt.inf == "below_nan" and k == top - 1:
        return Value("inf", negative)
    if fmt.inf == "ieee" and k >= all_ones_exp:
        return Value("inf", negative) if k == all_ones_exp else Value("nan", negative)
    return Value("finite", negative, magnitude_value(k, fmt))


def ref_decode_float(code: int, fmt: Format) -> float:
    """``ref_decode(code, fmt).to_float()``."""
    return ref_decode(code, fmt).to_float()


def representable_magnitudes(fmt: Format) -> list[Fraction]:
    """Every finite magnitude of the format, ascending (formats of 16 bits or less)."""
    return [magnitude_value(k, fmt) for k in range(_max_code(fmt) + 1)]


# ---- encoding -----------------------------------------------------------------------------


OVERFLOW_NAMES = {"sat_finite": "saturate", "sat_propagate": "saturate_propagate", "ovf_inf": "sat_none"}


def resolve_overflow(fmt: Format, overflow: str | None) -> str:
    """The overflow behaviour in effect: the format's non-saturating default for None."""
    if overflow is None:
        if fmt.inf != "none":
            return "inf"
        if fmt.nan != "none":
            return "nan"
        return "saturate"
    overflow = OVERFLOW_NAMES.get(overflow, overflow)
    if overflow not in ("saturate", "saturate_propagate", "inf", "nan", "sat_none", "ml_dtypes_saturate"):
        raise ValueError(f"bad overflow {overflow!r}")
    if overflow == "inf" and fmt.inf == "none":
        raise ValueError(f"{fmt.name} has no Inf")
    if overflow == "nan" and fmt.nan == "none":
        raise ValueError(f"{fmt.name} has no NaN")
    return overflow


def ref_neighbours(a: Fraction, fmt: Format) -> tuple[int, int]:
    """Magnitude codes ``(k, k + 1)`` with ``value(k) <= a < value(k + 1)`` (unbounded exponent).

    ``a`` must be at least the smallest magnitude the format represents (0, or E8M0's
    smallest value).

    >>> from fpemu.formats import get_format
    >>> ref_neighbours(Fraction(5, 2), get_format("e2m1"))
    (4, 5)
    """
    m_bits = fmt.mantissa_bits
    min_normal = _pow2(_emin(fmt))
    if a < min_normal:
        assert fmt.subnormals and a >= 0, "below the smallest value of a format without zero"
        k = math.floor(a / _pow2(_emin(fmt) - m_bits))
    else:
        e = _floor_log2(a)
        field = e + fmt.bias
        significand = math.floor(a / _pow2(e - m_bits))  # in [2^M, 2^(M+1))
        k = (field << m_bits) | (significand - (1 << m_bits))
    assert magnitude_value(k, fmt) <= a < magnitude_value(k + 1, fmt)
    return k, k + 1


def ref_encode(
    x: float | int | Fraction,
    fmt: Format,
    *,
    rounding: str = "rne",
    overflow: str | None = None,
    nan: str | None = None,
    payload_of: np.floating | None = None,
    sr_bits: int | None = None,
    r: int | None = None,
    directed: str = "ieee",
) -> int:
    """Encode one real number exactly, returning the integer code in its container.

    The order is IEEE P3109 v4.0's (section 4.7): round the magnitude on a grid unbounded
    above, then apply the overflow rule, then encode. ``x`` is a Python float (any float64,
    including -0.0, +-inf and NaN), an int, or a Fraction. Raises ValueError where the codec
    must (a NaN result in a format without NaN under ``nan="raise"``, impossible options).

    * Overflow rules: ``saturate`` (SatFinite) and ``saturate_propagate`` (SatPropagate: Inf
      input stays Inf where the format has it) give the largest finite value, as does
      ``ml_dtypes_saturate`` (but Inf input without an Inf in the format is NaN);
      ``inf``/``nan`` give it in the modes ``directed`` spares (``ieee``: those that round
      toward zero for that sign, and round-to-odd; ``p3109``: without round-to-odd; ``none``),
      else Inf / NaN; ``sat_none`` (SatNone) spares as ``p3109`` does and round-to-odd into
      unsigned formats with Inf, and saturates where the format has no Inf.
    * No code: a negative number of an unsigned format that does not round to zero (under
      ``nan="ml_dtypes"``: any negative number but -0) gives the
      lowest value (code 0) when saturating, or in the modes that round it toward zero
      (``rz``, ``ru``, ``odd`` under IEEE) unless it is -Inf; NaN otherwise. Zero of a format
      without zero: code 0 (with the sign) when saturating, NaN otherwise.
    * NaN results: ``sign`` (canonical, signed), ``positive``, ``all_ones`` (every bit),
      ``ones_with_sign`` (every magnitude bit, signed), ``payload``/``quiet_payload`` (for a
      NaN input ``payload_of``, the float32 or float64 NaN as a numpy scalar: its top fraction
      bits), ``ml_dtypes`` (unsigned formats with zero: the rule for negatives above); without
      NaN: ``raise``, ``zero``, ``ml_dtypes``.
    * Two's complement: negative codes are 2**(width + 1) - k, and the magnitude may reach
      max + 1 below zero.
    * ``sra``/``srb``/``src``: P3109's stochastic rounding A/B/C with ``sr_bits`` N and random
      integer ``r``; ``ml_dtypes_e8m0``: ties away, and the lowest binade of a zero-less format
      rounded up (as if its lower neighbour were zero).
    """
    mode = ROUNDING_ALIASES[rounding]
    ov = resolve_overflow(fmt, overflow)
    saturating = ov in ("saturate", "saturate_propagate", "ml_dtypes_saturate")
    rule = "sat_none" if ov == "sat_none" else directed

    is_nan = isinstance(x, float) and math.isnan(x)
    negative = (math.copysign(1.0, x) < 0) if isinstance(x, float) else x < 0
    if is_nan:
        if nan in ("payload", "quiet_payload"):
            return _place(_payload_nan_code(fmt, negative, nan, payload_of), fmt)
        return _place(_nan_code(fmt, negative, nan), fmt)

    if isinstance(x, float) and math.isinf(x):
        if not fmt.signed and negative:  # (ml_dtypes: Inf is Inf/NaN before the sign counts)
            keep = saturating and ov != "ml_dtypes_saturate"
            return _place(0, fmt) if keep else _place(_nan_code(fmt, False, nan), fmt)
        if ov == "saturate" or (ov in ("sat_none", "saturate_propagate") and fmt.inf == "none"):
            return _finish(_largest(fmt, negative), negative, fmt)
        if fmt.inf != "none":
            return _finish(_inf_code(fmt), negative, fmt)
        return _place(_nan_code(fmt, negative, nan), fmt)

    a = abs(Fraction(x))
    if not fmt.subnormals and a == 0:  # no zero
        return _finish(0, negative, fmt) if saturating else _place(_nan_code(fmt, negative, nan), fmt)
    k = _round_magnitude(a, fmt, mode, negative, sr_bits, r)

    # A negative that rounds to zero is +0, except under ml_dtypes' rule (nan="ml_dtypes" in
    # an unsigned format), where only -0 itself is: every other negative has no code.
    rounds_to_zero = fmt.subnormals and k == 0 and (nan != "ml_dtypes" or a == 0)
    if not fmt.signed and negative and not rounds_to_zero:
        spared = ov in ("inf", "nan", "sat_none") and _spared(mode, True, rule, fmt)
        if saturating or spared:
            return _place(0, fmt)
        return _place(_nan_code(fmt, False, nan), fmt)

    if k > _largest(fmt, negative):
        if saturating or (ov == "sat_none" and fmt.inf == "none"):
            return _finish(_largest(fmt, negative), negative, fmt)
        if ov in ("inf", "nan", "sat_none") and _spared(mode, negative, rule, fmt):
            return _finish(_largest(fmt, negative), negative, fmt)
        if ov == "nan" or fmt.inf == "none":
            return _place(_nan_code(fmt, negative, nan), fmt)
        return _finish(_inf_code(fmt), negative, fmt)
    return _finish(k, negative, fmt)


def _largest(fmt: Format, negative: bool) -> int:
    """The largest magnitude code of a finite value of this sign."""
    return _max_code(fmt) + (1 if fmt.twos_complement and negative else 0)


def _spared(mode: str, negative: bool, rule: str, fmt: Format) -> bool:
    """Whether this mode rounds an overflow of this sign to the largest finite value."""
    if rule == "none":
        return False
    if mode == "rz" or (mode == "ru" and negative) or (mode == "rd" and not negative):
        return True
    if mode == "odd":
        return rule == "ieee" or (rule == "sat_none" and not fmt.signed and fmt.inf != "none")
    return False


def _finish(k: int, negative: bool, fmt: Format) -> int:
    """The code of magnitude code k with its sign (unsigned zero where there is no -0)."""
    width = fmt.exponent_bits + fmt.mantissa_bits
    if not fmt.signed or not negative:
        return _place(k, fmt)
    if fmt.twos_complement:
        return _place((1 << (width + 1)) - k if k else 0, fmt)
    has_neg_zero = fmt.nan != "neg_zero" or not fmt.subnormals
    if k == 0 and fmt.subnormals and not has_neg_zero:
        return _place(0, fmt)
    return _place((1 << width) | k, fmt)


def _round_magnitude(a: Fraction, fmt: Format, mode: str, negative: bool, sr_bits, r) -> int:
    """The magnitude code of a rounded in mode, on the grid unbounded above."""
    if not fmt.subnormals and a < _pow2(_emin(fmt)):
        return 0  # below the smallest value of a format without zero: the closest is it
    lo, hi = ref_neighbours(a, fmt)
    if magnitude_value(lo, fmt) == a:
        return lo
    if mode == "ml_dtypes_e8m0" and lo == 0 and not fmt.subnormals:
        return hi
    return _pick(a, lo, hi, mode, negative, fmt, sr_bits, r)


# ---- helpers -------------------------------------------------------------------------------


def _pick(a: Fraction, lo: int, hi: int, mode: str, negative: bool, fmt: Format,
          sr_bits: int | None = None, r: int | None = None) -> int:
    """Choose between the neighbour codes of an inexact magnitude ``a``."""
    if mode == "rz":
        return lo
    if mode == "ru":  # toward +inf: larger magnitude for positives
        return lo if negative else hi
    if mode == "rd":
        return hi if negative else lo
    if mode == "odd":
        return lo if lo & 1 else hi
    below = a - magnitude_value(lo, fmt)
    above = magnitude_value(hi, fmt) - a
    if mode in ("sra", "srb", "src"):
        nu = below / (below + above)  # the dropped fraction of a unit, exactly
        n = sr_bits
        if mode == "sra":
            return hi if math.floor(nu * 2**n) + r >= 2**n else lo
        if mode == "srb":
            return hi if math.floor(nu * 2 ** (n + 1)) + 2 * r + 1 >= 2 ** (n + 1) else lo
        return hi if round(nu * 2**n) + r >= 2**n else lo  # Python's round: ties to even
    if below != above:
        return lo if below < above else hi
    if mode in ("rna", "ml_dtypes_e8m0"):
        return hi
    return lo if lo & 1 == 0 else hi  # rne: the even code


def _nan_code(fmt: Format, negative: bool, nan: str | None) -> int:
    """Right-aligned NaN code for a NaN result (a NaN input, or an overflow or a value with no
    code that must be NaN)."""
    width = fmt.exponent_bits + fmt.mantissa_bits
    sign_bit = 1 << width if fmt.signed else 0
    if nan == "positive":
        negative = False
    if nan == "all_ones" and fmt.nan != "none":
        return (1 << (width + int(fmt.signed))) - 1
    if nan == "ones_with_sign" and fmt.nan != "none":
        return (sign_bit if negative else 0) | ((1 << width) - 1)
    if nan == "ones_positive" and fmt.nan != "none":
        return (1 << width) - 1
    if fmt.nan == "ieee":
        k = (((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits) | (1 << (fmt.mantissa_bits - 1))
        return (sign_bit if negative else 0) | k
    if fmt.nan == "top":
        return (sign_bit if negative else 0) | ((1 << width) - 1)
    if fmt.nan == "neg_zero":
        return sign_bit
    # No NaN in the format (FP4/FP6).
    option = "raise" if nan is None else nan
    if option == "raise":
        raise ValueError(f"NaN cannot be encoded in {fmt.name}")
    if option == "zero":
        return 0
    if option == "max":
        return _max_code(fmt)
    if option == "ml_dtypes":
        return 0 if negative else sign_bit  # ml_dtypes: +NaN -> the -0 code, -NaN -> +0
    raise ValueError(f"bad nan option {option!r}")


def _payload_nan_code(fmt: Format, negative: bool, nan: str, source: np.floating) -> int:
    """IEEE NaN keeping the top ``mantissa_bits`` fraction bits of the input's own pattern:
    ``payload`` forces a non-zero fraction (numpy's float->half rule), ``quiet_payload``
    sets the quiet bit (what FPUs do)."""
    assert fmt.nan == "ieee", "payload NaNs need IEEE-style NaNs"
    nmant = np.finfo(source.dtype).nmant
    pattern = int(np.asarray(source).view(f"u{source.dtype.itemsize}"))
    frac = pattern & ((1 << nmant) - 1)
    m_bits = fmt.mantissa_bits
    top = frac >> (nmant - m_bits) if nmant >= m_bits else frac << (m_bits - nmant)
    if nan == "payload":
        top = max(top, 1)
    else:
        top |= 1 << (m_bits - 1)
    sign_bit = 1 << (fmt.exponent_bits + m_bits) if negative and fmt.signed else 0
    return sign_bit | (((1 << fmt.exponent_bits) - 1) << m_bits) | top


def max_magnitude_code(fmt: Format) -> int:
    """Magnitude code of the largest finite value, from where Inf and NaN live.

    >>> from fpemu.formats import get_format
    >>> [hex(max_magnitude_code(get_format(n))) for n in ("e4m3", "e5m2", "e2m1", "e8m0", "binary8p3")]
    ['0x7e', '0x7b', '0x7', '0xfe', '0x7e']
    """
    return _max_code(fmt)


def _max_code(fmt: Format) -> int:
    width = fmt.exponent_bits + fmt.mantissa_bits
    top = (1 << width) - 1
    if fmt.inf == "ieee":
        return (((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits) - 1
    if fmt.inf == "below_nan":
        return top - 2
    if fmt.inf == "top" or fmt.nan == "top":
        return top - 1
    return top


def _inf_code(fmt: Format) -> int:
    if fmt.inf == "ieee":
        return ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    if fmt.inf == "below_nan":
        return (1 << (fmt.exponent_bits + fmt.mantissa_bits)) - 2
    return (1 << (fmt.exponent_bits + fmt.mantissa_bits)) - 1


def _emin(fmt: Format) -> int:
    return (1 if fmt.subnormals else 0) - fmt.bias


def _place(code: int, fmt: Format) -> int:
    """Put a right-aligned code into its container (TF32: shift left by 13)."""
    return code << _container_shift(fmt)


def _width(fmt: Format) -> int:
    """Meaningful bits of a code: sign (if any), exponent and mantissa fields."""
    return int(fmt.signed) + fmt.exponent_bits + fmt.mantissa_bits


def _container_shift(fmt: Format) -> int:
    """A format narrower than its container (TF32) sits left-aligned in it."""
    return fmt.container_bits - _width(fmt) if fmt.container_bits else 0


def _pow2(e: int) -> Fraction:
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


def _floor_log2(a: Fraction) -> int:
    """Exact floor(log2(a)) for a positive Fraction."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    # 2^e is now within a factor of 2 of a; fix up exactly.
    while _pow2(e) > a:
        e -= 1
    while _pow2(e + 1) <= a:
        e += 1
    return e


# ---- vectorized table oracle (formats of 16 bits or less) --------------------------------


def ml_dtypes_has(name: str) -> bool:
    """Whether the installed ml_dtypes (or numpy) implements format ``name`` (False where
    ml_dtypes is missing, or is a release before the type: float8_e5m3fnu came in 0.7)."""
    type_name = ML_DTYPES_TYPES.get(name)
    if type_name is None:
        return False
    if type_name in ("float32", "float16"):
        return True
    try:
        import ml_dtypes
    except ImportError:
        return False
    return hasattr(ml_dtypes, type_name)


def oracle_type(name: str):
    """The numpy / ml_dtypes scalar type implementing format ``name`` (ml_dtypes imported
    lazily); the calling test is skipped where the installed ml_dtypes lacks the type."""
    type_name = ML_DTYPES_TYPES[name]
    if type_name in ("float32", "float16"):
        return getattr(np, type_name)
    import ml_dtypes

    if not hasattr(ml_dtypes, type_name):
        import pytest

        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {type_name} (ml_dtypes 0.7 added it)")
    return getattr(ml_dtypes, type_name)


@lru_cache(maxsize=None)
def decode_table(fmt: Format) -> np.ndarray:
    """float64 value of every code of a format of 16 bits or less, from :func:`ref_decode`."""
    assert _width(fmt) <= 16 and _container_shift(fmt) == 0
    table = np.array([ref_decode_float(c, fmt) for c in range(1 << _width(fmt))], dtype=np.float64)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=None)
def nan_table(fmt: Format) -> np.ndarray:
    """Boolean: is code ``c`` a NaN (formats of 16 bits or less)."""
    table = np.isnan(decode_table(fmt))
    table.setflags(write=False)
    return table


def table_rne(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Vectorized RNE encoder with the default overflow, from the sorted table of magnitudes.

    An independent second oracle for millions of inputs: it finds the neighbours of ``|x|``
    by binary search in the exact table of representable magnitudes (plus the first value
    past the largest, so overflow rounds correctly) and compares the two distances in
    float64. Both distances are exact (Sterbenz: the neighbours are within a factor of two
    of ``|x|``), so the result is the exact RNE result for any float64 input. NaN into a
    format without NaN follows the ml_dtypes convention (code 0 in two's complement).

    >>> from fpemu.formats import get_format
    >>> table_rne(np.array([0.25, 0.75, 5.0, -7.0, np.nan]), get_format("e2m1")).tolist()
    [0, 2, 6, 15, 8]
    """
    with np.errstate(invalid="ignore"):  # float32 signalling NaNs flag "invalid" when widened
        x = np.asarray(x, dtype=np.float64)
    max_code = _max_code(fmt)
    width = fmt.exponent_bits + fmt.mantissa_bits
    sign_bit = 1 << width if fmt.signed else 0
    mags = np.array([float(magnitude_value(k, fmt)) for k in range(max_code + 2)])

    a = np.abs(x)
    negative = np.signbit(x)
    nan_in = np.isnan(x)
    a_clean = np.where(nan_in, 0.0, a)
    lo = np.searchsorted(mags, a_clean, side="right") - 1  # mags[lo] <= a (lo = -1 below E8M0's min)
    lo_c = np.clip(lo, 0, max_code)
    d_lo = a_clean - mags[lo_c]
    d_hi = mags[lo_c + 1] - a_clean
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo_c % 2 == 1))
    k = np.where(lo > max_code, max_code + 1, lo_c + up)
    if not fmt.subnormals:
        k = np.where(lo < 0, 0, k)  # below the smallest value: clamp to it (E8M0)

    sign = np.where(negative, sign_bit, 0)
    code = sign | k
    overflow = resolve_overflow(fmt, None)
    largest = np.where(negative & fmt.twos_complement, max_code + 1, max_code)
    over = k > largest
    if fmt.twos_complement:  # no NaN, no Inf: saturates; negatives are 2**(width+1) - k
        k = np.minimum(k, largest)
        code = np.where(negative & (k > 0), (1 << (width + 1)) - k, k)
        code = np.where(nan_in, 0, code)  # NaN: code 0 (the nan="zero" convention)
        return code.astype(np.uint8 if _width(fmt) <= 8 else np.uint16)
    if overflow == "saturate":
        code = np.where(over, sign | max_code, code)
    elif overflow == "inf":
        code = np.where(over, sign | _inf_code(fmt), code)
    has_neg_zero = fmt.signed and fmt.subnormals and fmt.nan != "neg_zero"
    if fmt.subnormals:
        code = np.where((k == 0) & ~(negative & has_neg_zero), 0, code)
    nan_pos = _nan_code(fmt, False, "ml_dtypes")
    nan_neg = _nan_code(fmt, True, "ml_dtypes")
    nan_signed = np.where(negative, nan_neg, nan_pos)
    if overflow == "nan":
        code = np.where(over, nan_signed, code)
    if not fmt.signed:  # negatives that do not round to zero have no code
        code = np.where(negative & (a_clean > 0) & ((k > 0) | ~np.bool_(fmt.subnormals)), nan_pos, code)
    if not fmt.subnormals:
        code = np.where(a_clean == 0, nan_pos, code)
    code = np.where(nan_in, nan_signed, code)
    return code.astype(np.uint8 if _width(fmt) <= 8 else np.uint16)


def assert_same_floats(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Equal values, NaN where NaN, and the same sign on zeros (and everything else)."""
    # float32 signalling NaNs (the fp32/tf32 word sweeps hold them) raise "invalid" when
    # widened to float64; the comparison is NaN-aware, so that flag is expected here.
    with np.errstate(invalid="ignore"):
        got = np.asarray(got, dtype=np.float64)
        expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape
    nan_g, nan_e = np.isnan(got), np.isnan(expected)
    bad = (nan_g != nan_e) | (~nan_e & ((got != expected) | (np.signbit(got) != np.signbit(expected))))
    idx = np.flatnonzero(bad)
    assert idx.size == 0, f"{what}: {idx.size} differ, first at {idx[:5].tolist()}: got {got[idx[:5]]} expected {expected[idx[:5]]}"
