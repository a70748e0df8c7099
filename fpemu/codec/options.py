"""The options of a conversion, as one :class:`Conversion`: rounding mode, overflow rule, NaN
policy, the random bits of stochastic rounding, the overflow sparing rule and the float32 step;
checked against the format once (:meth:`Conversion.resolved`), before any array work.

>>> Conversion(rounding="rne").resolved(get_format("e4m3"))
Conversion(rounding='nearest_even', overflow='nan', nan='sign')
>>> like_gfloat = Conversion(nan="all_ones", directed_overflow="p3109")
>>> dict(like_gfloat), like_gfloat.replace(rounding="rz")
({'nan': 'all_ones', 'directed_overflow': 'p3109'}, Conversion(rounding='rz', nan='all_ones', directed_overflow='p3109'))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ..arguments import option_name
from ..formats import Format, get_format  # noqa: F401  (get_format: the doctest)
from .inputs import check_via
from .option_names import (  # noqa: F401  (the public names every caller reads from here)
    DIRECTED_OVERFLOW, NAN_POLICIES_WITH_NAN, NAN_POLICIES_WITHOUT_NAN, NO_CODE_RULES, OVERFLOW_ALIASES, OVERFLOW_MODES,
    ROUNDING_MODES, STOCHASTIC, STOCHASTIC_WITH_BITS, is_stochastic, resolve_nan, resolve_no_code_rule,
    resolve_overflow, resolve_rounding,
)


_FIELDS = ("rounding", "overflow", "nan", "sr_bits", "directed_overflow", "no_code", "via", "random_bits")


@dataclass(frozen=True, eq=False)
class Conversion(Mapping):
    """How real numbers are converted into a format: every option of :func:`~fpemu.encode`,
    :func:`~fpemu.quantize`, :func:`~fpemu.explain`, ``cast_vectors`` and ``scaled_cast`` in one
    record, the one :func:`~fpemu.like` returns. Each function also takes the options as loose
    keywords, which build a Conversion; a keyword given with ``conversion=`` must agree with it.

    A field left None is not fixed: the function's default applies (``rounding``: nearest even;
    the others: the format's own, see :func:`~fpemu.encode`). The record reads as a mapping of
    its fixed fields, so ``encode(x, fmt, **conversion)`` and ``{**conversion, "rounding": "rz"}``
    work as they did when :func:`~fpemu.like` returned a dict. :meth:`resolved` checks it against
    a format and fills in the defaults: that record is what the kernels read.

    >>> c = Conversion(rounding="stochastic_a", sr_bits=4, random_bits=[2, 14])
    >>> c, c.resolved(get_format("e4m3"))
    (Conversion(rounding='stochastic_a', sr_bits=4, random_bits=<(2,) array>), Conversion(rounding='stochastic_a', overflow='nan', nan='sign', sr_bits=4))
    >>> Conversion(rounding="rne") == {"rounding": "rne"}, "nan" in Conversion(nan="zero")
    (True, True)
    >>> Conversion(rounding="round_up")
    Traceback (most recent call last):
    ...
    ValueError: unknown rounding 'round_up'; choose one of down, ml_dtypes_e8m0, nearest_away, nearest_even, odd, rd, rna, rne, rto, ru, rz, sr, sra, srb, src, sro, stochastic, stochastic_a, stochastic_b, stochastic_c, stochastic_odd, toward_zero, truncate, up
    """

    rounding: str | None = None
    overflow: str | None = None
    nan: str | None = None
    sr_bits: int | None = None
    directed_overflow: str | None = None
    via: str | None = None
    random_bits: Any = None
    no_code: str | None = None

    def __post_init__(self) -> None:
        _check_names(self)

    @classmethod
    def of(cls, conversion: Conversion | Mapping | None = None, **keywords: Any) -> Conversion:
        """The Conversion a call asks for: ``conversion`` (a Conversion, a mapping of its fields,
        or None) with the loose keywords that are not None; a keyword that contradicts a field
        the conversion fixes is an error (which one wins would be a guess).

        >>> Conversion.of(None, rounding="rz", nan=None)
        Conversion(rounding='rz')
        >>> Conversion.of(Conversion(rounding="rz"), rounding="up")
        Traceback (most recent call last):
        ...
        ValueError: conversion= fixes rounding='rz', and rounding='up' contradicts it: pass one of them (conversion.replace(rounding='up') changes it)
        """
        if conversion is None:
            base = cls()
        elif isinstance(conversion, Conversion):
            base = conversion
        elif isinstance(conversion, Mapping):
            base = cls().replace(**conversion)
        else:
            raise TypeError(f"conversion must be a fpemu.Conversion (or a mapping of its options), "
                            f"got {type(conversion).__name__}")
        unknown = sorted(set(keywords) - set(_FIELDS))
        if unknown:
            raise TypeError(f"unknown conversion option {unknown[0]!r}; the options are {', '.join(_FIELDS)}")
        changes = {}
        for name, value in keywords.items():
            if value is None:
                continue
            fixed = getattr(base, name)
            if fixed is not None and not _same(fixed, value):
                raise ValueError(f"conversion= fixes {name}={_shown(fixed)}, and {name}={_shown(value)} "
                                 f"contradicts it: pass one of them (conversion.replace({name}={_shown(value)}) "
                                 "changes it)")
            changes[name] = value
        return base.replace(**changes) if changes else base

    def replace(self, **changes: Any) -> Conversion:
        """A copy with some fields changed (None unfixes one).

        >>> Conversion(nan="all_ones").replace(overflow="saturate", nan=None)
        Conversion(overflow='saturate')
        """
        unknown = sorted(set(changes) - set(_FIELDS))
        if unknown:
            raise ValueError(f"unknown conversion option {unknown[0]!r}; the options are {', '.join(_FIELDS)}")
        return replace(self, **changes)

    def resolved(self, fmt: Format) -> Conversion:
        """The record the kernels read: checked against ``fmt``, canonical names, the defaults
        filled in (``directed_overflow`` stays None for IEEE's rule: :attr:`directed` names it);
        ``via`` and ``random_bits`` are the caller's to apply, so they are not in it."""
        fields = (fmt, self.rounding, self.overflow, self.nan, self.sr_bits, self.directed_overflow, self.no_code)
        try:
            return _resolved_once(*fields)
        except TypeError:  # an unhashable field (sr_bits=[4]): checked, and refused, uncached
            return resolved_options(*fields)

    @property
    def stochastic(self) -> bool:
        """Whether the rounding draws random bits (:func:`.option_names.is_stochastic`; read it
        on a resolved record, whose rounding has its canonical name)."""
        return is_stochastic(self.rounding)

    @property
    def directed(self) -> str:
        """The overflow sparing rule in effect (``directed_overflow``, ``ieee`` when unfixed)."""
        return self.directed_overflow or "ieee"

    # ---- the mapping of the fixed fields --------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        value = getattr(self, name, None) if name in _FIELDS else None
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name in _FIELDS if getattr(self, name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __or__(self, other: Mapping) -> Conversion:
        return self.replace(**other) if isinstance(other, Mapping) else NotImplemented

    def __ror__(self, other: Mapping) -> Conversion:
        return Conversion.of(other).replace(**self) if isinstance(other, Mapping) else NotImplemented

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Conversion):
            return all(_same(getattr(self, n), getattr(other, n)) for n in _FIELDS)
        if isinstance(other, Mapping):
            return set(self) == set(other) and all(_same(self[n], other[n]) for n in self)
        return NotImplemented

    def __hash__(self) -> int:  # (random_bits, an array, is left out: equal records still agree)
        return hash(tuple(getattr(self, n) for n in _FIELDS if n != "random_bits"))

    def __repr__(self) -> str:
        return f"Conversion({', '.join(f'{n}={_shown(v)}' for n, v in self.items())})"


def _same(a: Any, b: Any) -> bool:
    """Whether two option values agree (random bits: element for element)."""
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _shown(value: Any) -> str:
    """An option value for messages and repr (arrays by shape: they may be large)."""
    if isinstance(value, (str, int, type(None))):
        return repr(value)
    return f"<{np.asarray(value).shape} array>"


def _check_names(c: Conversion) -> None:
    """The checks that need no format: known names of every option."""
    if c.rounding is not None and option_name(c.rounding) not in ROUNDING_MODES:
        raise ValueError(f"unknown rounding {c.rounding!r}; choose one of {', '.join(sorted(ROUNDING_MODES))}")
    overflow = option_name(c.overflow)
    if overflow is not None and overflow not in OVERFLOW_MODES and overflow not in OVERFLOW_ALIASES:
        raise ValueError(f"unknown overflow {c.overflow!r}; choose one of {', '.join(OVERFLOW_MODES + tuple(OVERFLOW_ALIASES))}")
    if c.no_code is not None and c.no_code not in NO_CODE_RULES:
        raise ValueError(f"unknown no_code {c.no_code!r}; choose one of {', '.join(NO_CODE_RULES)} (or None)")
    if c.nan is not None and option_name(c.nan) not in NAN_POLICIES_WITHOUT_NAN + NAN_POLICIES_WITH_NAN:
        raise ValueError(f"unknown nan {c.nan!r}; choose one of "
                         f"{', '.join(NAN_POLICIES_WITHOUT_NAN + NAN_POLICIES_WITH_NAN)}")
    directed = option_name(c.directed_overflow)
    if directed is not None and directed not in DIRECTED_OVERFLOW:
        raise ValueError(f"unknown directed_overflow {c.directed_overflow!r}; choose one of {', '.join(DIRECTED_OVERFLOW)}")
    check_via(c.via)  # (sr_bits: checked with the rounding it goes with, in resolved)


def resolved_options(
    fmt: Format, rounding: str, overflow: str | None, nan: str | None, sr_bits: int | None = None,
    directed_overflow: str | None = None, no_code: str | None = None,
) -> Conversion:
    """Check the options against the format and resolve the defaults (names in any case): the
    record :meth:`Conversion.resolved` gives."""
    rounding = resolve_rounding(fmt, "nearest_even" if rounding is None else rounding, sr_bits)
    overflow = resolve_overflow(fmt, option_name(overflow))
    nan = resolve_nan(fmt, option_name(nan))
    directed_overflow = option_name(directed_overflow)
    if directed_overflow in (None, "ieee"):
        directed = None  # (unwritten: the record equals the one written without it)
    elif directed_overflow not in DIRECTED_OVERFLOW:
        raise ValueError(f"unknown directed_overflow {directed_overflow!r}; choose one of {', '.join(DIRECTED_OVERFLOW)}")
    elif overflow not in ("inf", "nan"):
        raise ValueError(f"directed_overflow applies to non-saturating overflow (inf, nan), not {overflow!r}")
    else:
        directed = directed_overflow
    bits = int(sr_bits) if rounding in STOCHASTIC_WITH_BITS else None  # NumPy integers: as int
    return Conversion(rounding, overflow, nan, bits, directed, no_code=resolve_no_code_rule(fmt, no_code))


# resolved_options, cached: every encode, quantize and path question resolves its conversion,
# most of them the same few (a refused one raises, and is not cached). Typed, so that
# sr_bits=4.0 or True, which the checks refuse, never meet the answer for 4.
_resolved_once = lru_cache(maxsize=256, typed=True)(resolved_options)
