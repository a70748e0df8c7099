"""Rounding targets and the rounding of exact float64 values every model shares (the exact
arithmetic itself, powers of two, exponents and sums, is :mod:`fpemu.arith`)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ...arith import round_to_odd_sum
from ...codec import quantize
from ...formats import Format, get_format


@dataclass(frozen=True)
class Target:
    """A rounding target: the format results are rounded to (fp32 with fewer fraction bits
    is a Format of its own), the rounding mode ("rz" or "rne"), whether subnormal results
    flush to zero, and what a result beyond the format's range becomes: as IEEE says
    (``"ieee"``: RZ gives the largest finite value) or an Inf whatever the rounding
    (``"inf"``, MMA-Sim's block-scaled MMA)."""

    format: Format
    mode: str
    flush: bool = False
    overflow: str = "ieee"

    @property
    def emin(self) -> int:
        return self.format.emin


def rounding_target(fmt: str | Format, mode: str, frac_bits: int | None = None, flush: bool = False,
                    overflow: str = "ieee") -> Target:  # fmt: skip
    f = get_format(fmt)
    if frac_bits is not None and frac_bits != f.mantissa_bits:
        f = dataclasses.replace(f, name=f"{f.name}_{frac_bits}bit", mantissa_bits=frac_bits)
    return Target(f, mode, flush, overflow)


@dataclass(frozen=True, eq=False)
class RowTargets:
    """A rounding target a row (``fpemu.fit`` tries many models at once): row i is rounded
    to ``format`` with ``frac_bits[i]`` fraction bits, RNE where ``rne[i]``, else RZ.

    >>> t = RowTargets(get_format("fp32"), np.array([23, 10]), np.array([True, False]))
    >>> round_to_target(np.array([1 + 2**-23 + 2**-24, 1 + 2**-10 + 2**-11]), t).tolist() == [1 + 2**-22, 1 + 2**-10]
    True
    """

    format: Format
    frac_bits: np.ndarray
    rne: np.ndarray
    groups: tuple = dataclasses.field(init=False, repr=False)  # (Target, its rows), found once

    def __post_init__(self) -> None:
        key = np.asarray(self.frac_bits, dtype=np.int64) * 2 + np.asarray(self.rne, dtype=np.int64)
        object.__setattr__(self, "groups", tuple(
            (rounding_target(self.format, "rne" if k % 2 else "rz", k // 2), key == k) for k in np.unique(key).tolist()))

    def round(self, v: np.ndarray) -> np.ndarray:
        """v rounded row by row, one call of :func:`round_to_target` a distinct target."""
        r = np.empty_like(v)
        for t, rows in self.groups:
            rows = np.broadcast_to(rows, v.shape)
            r[rows] = round_to_target(v[rows], t)
        return r


_ROUNDING_NAMES = {"rz": "toward_zero", "rne": "nearest_even"}


def round_to_target(v: np.ndarray, t: Target | RowTargets) -> np.ndarray:
    """Round float64 values (exact inputs) to the target with the codec (fp32 RNE: numpy's
    IEEE cast, the same rounding); IEEE overflow (RNE -> Inf, RZ -> largest finite) unless
    the target's overflow is ``"inf"``; a zero keeps its sign. The one output rounding of
    every model, dense and block-scaled.

    >>> round_to_target(np.array([1 + 2**-23 + 2**-24, -3.0]), rounding_target("fp16", "rne")).tolist()
    [1.0, -3.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if isinstance(t, RowTargets):
        return t.round(v)
    if t.mode == "rne" and t.format.name == "fp32":
        with np.errstate(over="ignore"):  # IEEE: the cast rounds RNE, underflows gradually, overflows to Inf
            r = v.astype(np.float32).astype(np.float64)
    elif t.mode == "rz" and _ieee_like(t.format):
        r = _truncated(v, t.format)
    else:
        r = quantize(v, t.format, rounding=_ROUNDING_NAMES[t.mode])
    if t.flush:
        r = np.where(np.abs(r) < np.ldexp(1.0, t.emin), np.copysign(0.0, v), r)
    if t.overflow == "inf":
        r = np.where(np.abs(v) >= 2.0 ** (t.format.emax + 1), np.copysign(np.inf, v), r)
    return np.where(np.isfinite(v), r, v)


@functools.lru_cache(maxsize=None)
def _ieee_like(fmt: Format) -> bool:
    """Whether every float64 value with an exponent in fmt's normal range, cut to fmt's
    mantissa bits, is a value of fmt (its largest value ends the top binade)."""
    return (fmt.signed and fmt.subnormals and not fmt.twos_complement and 1 <= fmt.mantissa_bits <= 52
            and -1022 <= fmt.emin and fmt.emax <= 1023 and fmt.max == (2 - 2.0**-fmt.mantissa_bits) * 2.0**fmt.emax)


def _truncated(v: np.ndarray, fmt: Format) -> np.ndarray:
    """v rounded toward zero into an IEEE-like fmt: in fmt's normal range by clearing the
    float64 fraction bits fmt lacks (one AND); zeros, subnormal results, overflow, Inf and
    NaN (a few, or none) through the codec.

    >>> r = _truncated(np.array([1 + 2**-23 + 2**-30, -(1 + 2**-30), 1.5 * 2.0**-149, -0.0, 2.0**200]), get_format("fp32"))
    >>> r.tolist() == [1 + 2**-23, -1.0, 2.0**-149, -0.0, (2 - 2**-23) * 2.0**127], bool(np.signbit(r[3]))
    (True, True)
    """
    bits = v.view(np.uint64)
    r = (bits & np.uint64((1 << 64) - (1 << (52 - fmt.mantissa_bits)))).view(np.float64)
    field = bits >> np.uint64(52)
    field &= np.uint64(0x7FF)
    field -= np.uint64(fmt.emin + 1023)  # below the normal range it wraps around to huge
    outside = field > np.uint64(fmt.emax - fmt.emin)
    if outside.any():
        r[outside] = quantize(v[outside], fmt, rounding="toward_zero")
    return r


def add_rounded(x: np.ndarray, y: np.ndarray, t: Target) -> np.ndarray:
    """round(x + y) to the target, exactly (x, y exact float64 values)."""
    return round_to_target(round_to_odd_sum(x, y), t)


def read_acc(c: np.ndarray, t: Target) -> np.ndarray:
    """The accumulator operand as a flushing unit reads it: a zero or subnormal one is +0
    (MMA-Sim's CDNA2 flushes c to +0, the sign not kept); unchanged without flushing.

    >>> read_acc(np.array([-0.0, -2.0**-130, 1.0]), rounding_target("fp32", "rne", flush=True)).tolist()
    [0.0, 0.0, 1.0]
    """
    if not t.flush:
        return c
    return np.where(np.abs(c) < np.ldexp(1.0, t.emin), 0.0, c)
