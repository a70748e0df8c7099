"""The options of a conversion: rounding mode, overflow rule and NaN policy, checked against
the format once, before any array work.

>>> _options(get_format("e4m3"), "rne", None, None)
_Options(rounding='nearest_even', overflow='nan', nan='sign')
"""

from __future__ import annotations

from dataclasses import dataclass

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
}  # fmt: skip


#: Overflow policies: what a finite value that rounds above the largest finite value becomes.
OVERFLOW_MODES = ("saturate", "inf", "nan", "saturate_propagate")


_NAN_POLICIES_WITHOUT_NAN = ("raise", "zero", "ml_dtypes")


_NAN_POLICIES_WITH_NAN = ("sign", "positive", "payload", "quiet_payload")


@dataclass(frozen=True)
class _Options:
    """Validated encoding options (hashable, so tables can be cached per option set)."""

    rounding: str
    overflow: str
    nan: str


def _options(fmt: Format, rounding: str, overflow: str | None, nan: str | None) -> _Options:
    """Check the options against the format and resolve the defaults."""
    if not isinstance(rounding, str) or rounding.lower() not in ROUNDING_MODES:
        raise ValueError(
            f"unknown rounding {rounding!r}; choose one of {', '.join(sorted(set(ROUNDING_MODES)))}"
        )
    rounding = ROUNDING_MODES[rounding.lower()]
    if overflow is None:
        # The non-saturating behaviour of each format, as ml_dtypes implements it.
        overflow = "inf" if fmt.has_inf else "nan" if fmt.has_nan else "saturate"
    if overflow not in OVERFLOW_MODES:
        raise ValueError(f"unknown overflow {overflow!r}; choose one of {', '.join(OVERFLOW_MODES)}")
    if overflow == "inf" and not fmt.has_inf:
        raise ValueError(f"format {fmt.name} has no Inf: use overflow='saturate' or 'nan'")
    if overflow == "nan" and not fmt.has_nan:
        raise ValueError(f"format {fmt.name} has no NaN: use overflow='saturate'")
    if fmt.has_nan:
        nan = "sign" if nan is None else nan
        allowed = _NAN_POLICIES_WITH_NAN
    else:
        nan = "raise" if nan is None else nan
        allowed = _NAN_POLICIES_WITHOUT_NAN
    if nan not in allowed:
        kind = "has NaN" if fmt.has_nan else "has no NaN"
        raise ValueError(f"nan={nan!r} does not apply to {fmt.name}, which {kind}; choose one of {allowed}")
    if nan in ("payload", "quiet_payload") and fmt.nan != "ieee":
        raise ValueError(f"nan={nan!r} needs IEEE-style NaNs; {fmt.name} has nan={fmt.nan!r}")
    if nan == "ml_dtypes" and not fmt.signed:
        raise ValueError("nan='ml_dtypes' is defined for signed formats only")
    return _Options(rounding, overflow, nan)
