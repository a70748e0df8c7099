"""The names of the conversion options (rounding modes, overflow rules, NaN policies, the
overflow sparing rules) and their checks against one format: the vocabulary that
:class:`~fpemu.codec.options.Conversion` is made of.

>>> resolve_overflow(get_format("e4m3"), None), resolve_nan(get_format("bf16"), None)
('nan', 'sign')
"""

from __future__ import annotations

from typing import Any

from ..arguments import is_whole, option_name
from ..formats import Format, get_format  # noqa: F401  (get_format: the doctest)

#: Canonical rounding mode names and their accepted aliases.
ROUNDING_MODES: dict[str, str] = {
    "nearest_even": "nearest_even", "rne": "nearest_even",
    "nearest_away": "nearest_away", "rna": "nearest_away",
    "toward_zero": "toward_zero", "rz": "toward_zero", "truncate": "toward_zero",
    "up": "up", "ru": "up",
    "down": "down", "rd": "down",
    "odd": "odd", "rto": "odd",
    "stochastic": "stochastic", "sr": "stochastic",
    # IEEE P3109 v4.0 section 4.7.4: N random bits R per value (given, or drawn from rng).
    "stochastic_a": "stochastic_a", "sra": "stochastic_a",
    "stochastic_b": "stochastic_b", "srb": "stochastic_b",
    "stochastic_c": "stochastic_c", "src": "stochastic_c",
    # gfloat's RoundMode.StochasticOdd: as C, but nu * 2**N rounded to nearest, ties to odd.
    "stochastic_odd": "stochastic_odd", "sro": "stochastic_odd",
    # ml_dtypes' E8M0 cast: ties away, and (2**-127, 2**-126) up to 2**-126 (its denormal path).
    "ml_dtypes_e8m0": "ml_dtypes_e8m0",
}  # fmt: skip

#: The stochastic roundings that take N random bits per value (P3109's A, B, C; gfloat's odd).
STOCHASTIC_WITH_BITS = ("stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd")
#: The roundings that draw random bits (from ``rng``, unless random_bits are given).
STOCHASTIC = ("stochastic",) + STOCHASTIC_WITH_BITS


def is_stochastic(rounding: str | None) -> bool:
    """Whether a rounding mode (canonical name, as a resolved :class:`~fpemu.Conversion`
    holds it) draws random bits: the one test of it.

    >>> is_stochastic("stochastic_a"), is_stochastic("nearest_even")
    (True, False)
    """
    return rounding in STOCHASTIC

#: Overflow policies: what a finite value that rounds beyond the largest finite value (and an
#: Inf input) becomes. ``sat_finite``/``sat_propagate`` are P3109's names of the first two;
#: ``ovf_inf``, P3109 v3's name of SatNone.
OVERFLOW_MODES = ("saturate", "saturate_propagate", "inf", "nan", "sat_none", "ml_dtypes_saturate")
OVERFLOW_ALIASES = {"sat_finite": "saturate", "sat_propagate": "saturate_propagate", "ovf_inf": "sat_none"}

#: Which rounding modes a non-saturating overflow (inf, nan) spares, giving the largest finite
#: value instead: ``ieee`` (IEEE 754 7.4: those that round toward zero for that sign, and
#: round-to-odd, which truncates), ``p3109`` (the same but round-to-odd, for which Inf is the
#: next code up: P3109, gfloat), ``none`` (no mode: ml_dtypes' C++ ``ConvertFrom<kTruncate>``);
#: ``outside_range`` goes further: every value outside [lowest, max] *before* rounding is Inf or
#: NaN, even where rounding gives max (gfloat's ``encode_float``, which truncates).
DIRECTED_OVERFLOW = ("ieee", "p3109", "none", "outside_range")

NAN_POLICIES_WITHOUT_NAN = ("raise", "zero", "max", "ml_dtypes")
NAN_POLICIES_WITH_NAN = ("sign", "positive", "all_ones", "ones_with_sign", "ones_positive", "payload",
                          "quiet_payload", "ones_positive_input")

#: What values with no code become (a negative number in an unsigned format, zero in a format
#: without zero): ``None`` (default) as ``overflow`` and ``nan`` say (specials.py), or
#: ``magnitude``: the magnitude is converted, the smallest value taking every magnitude below
#: it, zero included (NVIDIA's ue8m0 conversions, CUDA 13 ``__nv_cvt_*_to_e8m0``).
NO_CODE_RULES = ("magnitude",)


def check_random(rounding: str, rng: Any, random_bits: Any) -> None:
    """``rng`` and ``random_bits`` only where the (canonical) rounding uses them: rng seeds the
    stochastic roundings' bits, random_bits are P3109's given bits; one rule for both.

    >>> check_random("nearest_even", 0, None)
    Traceback (most recent call last):
    ...
    ValueError: rng applies to the stochastic roundings (stochastic, stochastic_a, stochastic_b, stochastic_c, stochastic_odd), not 'nearest_even'
    """
    if random_bits is not None and rounding not in STOCHASTIC_WITH_BITS:
        raise ValueError(f"random_bits apply to {', '.join(STOCHASTIC_WITH_BITS)}, not {rounding!r}")
    if rng is not None and rounding not in STOCHASTIC:
        raise ValueError(f"rng applies to the stochastic roundings ({', '.join(STOCHASTIC)}), not {rounding!r}")
    if rng is not None and random_bits is not None:
        raise ValueError("rng draws the random bits that random_bits gives: pass one of them, not both")


def resolve_rounding(fmt: Format, rounding: str, sr_bits: int | None) -> str:
    key = option_name(rounding)
    if not isinstance(key, str) or key not in ROUNDING_MODES:
        raise ValueError(
            f"unknown rounding {rounding!r}; choose one of {', '.join(sorted(set(ROUNDING_MODES)))}"
        )
    rounding = ROUNDING_MODES[key]
    if rounding in STOCHASTIC_WITH_BITS:
        if not is_whole(sr_bits) or not 1 <= sr_bits <= 32:
            raise ValueError(f"rounding={rounding!r} needs sr_bits, the number N of random bits "
                             f"per value (1..32), got {sr_bits!r}")
    elif sr_bits is not None:
        raise ValueError(f"sr_bits applies to {', '.join(STOCHASTIC_WITH_BITS)}, not {rounding!r}")
    if rounding == "ml_dtypes_e8m0" and (fmt.mantissa_bits or fmt.subnormals):
        raise ValueError("rounding='ml_dtypes_e8m0' is for formats like E8M0: no mantissa bits, no zero")
    return rounding


def resolve_overflow(fmt: Format, overflow: str | None) -> str:
    if overflow is None:
        # The non-saturating behaviour of each format, as ml_dtypes implements it.
        return "inf" if fmt.has_inf else "nan" if fmt.has_nan else "saturate"
    overflow = OVERFLOW_ALIASES.get(overflow, overflow)
    if overflow not in OVERFLOW_MODES:
        names = ", ".join(OVERFLOW_MODES + tuple(OVERFLOW_ALIASES))
        raise ValueError(f"unknown overflow {overflow!r}; choose one of {names}")
    if overflow == "inf" and not fmt.has_inf:
        raise ValueError(f"format {fmt.name} has no Inf: use overflow='saturate' or 'nan'")
    if overflow == "nan" and not fmt.has_nan:
        raise ValueError(f"format {fmt.name} has no NaN: use overflow='saturate'")
    return overflow


def resolve_no_code_rule(fmt: Format, no_code: str | None) -> str | None:
    """The no_code rule (None: the default), refused where the format has a code for every
    value (signed, with zero).

    >>> resolve_no_code_rule(get_format("e8m0"), "magnitude")
    'magnitude'
    """
    if no_code is None:
        return None
    if no_code not in NO_CODE_RULES:
        raise ValueError(f"unknown no_code {no_code!r}; choose one of {', '.join(NO_CODE_RULES)} (or None)")
    if fmt.signed and fmt.subnormals:
        raise ValueError(f"no_code applies to formats without negative numbers or without zero; "
                         f"{fmt.name} has a code for both")
    return no_code


def resolve_nan(fmt: Format, nan: str | None) -> str:
    if fmt.has_nan:
        nan = "sign" if nan is None else nan
        allowed = NAN_POLICIES_WITH_NAN
        if not fmt.signed and fmt.subnormals:  # ml_dtypes' rule for negatives (specials.py)
            allowed += ("ml_dtypes",)
    else:
        nan = "raise" if nan is None else nan
        allowed = NAN_POLICIES_WITHOUT_NAN
    if nan not in allowed:
        kind = "has NaN" if fmt.has_nan else "has no NaN"
        raise ValueError(f"nan={nan!r} does not apply to {fmt.name}, which {kind}; choose one of {allowed}")
    if nan in ("payload", "quiet_payload") and fmt.nan != "ieee":
        raise ValueError(f"nan={nan!r} needs IEEE-style NaNs; {fmt.name} has nan={fmt.nan!r}")
    if nan in ("all_ones", "ones_with_sign", "ones_positive", "ones_positive_input") and fmt.nan not in ("ieee", "top"):
        raise ValueError(f"nan={nan!r}: in {fmt.name} the all-ones code is not a NaN")
    if nan == "ml_dtypes" and not fmt.signed and not fmt.has_nan:
        raise ValueError("nan='ml_dtypes' is defined for signed formats and unsigned ones with NaN and zero")
    return nan
