"""The arithmetic of an error enclosure: float64 sums rounded outward only when they are
inexact (a TwoSum tells), a running sum (its exact part and the unit's error range), and the
rounding steps of a model (their error bounds, and the rounding of an interval's ends).

Outward rounding only where float64 actually rounded matters: an end that is exactly a
value of the output format must stay that value, or a truncating rounding would step one
ulp down for nothing.

>>> one, tiny = np.array([1.0]), np.array([2.0**-60])
>>> bool(_add_down(one, tiny)[0] == 1.0), bool(_add_up(one, tiny)[0] > 1.0), bool(_add_up(one, -one)[0] == 0.0)
(True, True, True)
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from ..accumulator import Accumulator, BlockModel, Exact
from ..arith import exponent, pow2
from ..codec import quantize
from ..formats import Format, get_format

_MODES = {"rz": "toward_zero", "rne": "nearest_even"}


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a + b) and the exact error e = a + b - s (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _add_down(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The largest float64 <= a + b."""
    s, e = _two_sum(a, b)
    return np.where(e < 0, np.nextafter(s, -np.inf), s)


def _add_up(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The smallest float64 >= a + b."""
    s, e = _two_sum(a, b)
    return np.where(e > 0, np.nextafter(s, np.inf), s)


def sum_down(x: np.ndarray) -> np.ndarray:
    """A lower bound of the sum over axis 1, exact where float64 is."""
    total = np.zeros(x.shape[0])
    for k in range(x.shape[1]):
        total = _add_down(total, x[:, k])
    return total


def sum_up(x: np.ndarray) -> np.ndarray:
    return -sum_down(-x)


class Sum:
    """A running sum: the exact sum of c and the products so far, ``hi + lo`` (double-double)
    within ``slack``, and the unit's error range: ``elo <= r - exact <= ehi``."""

    def __init__(self, c: np.ndarray):
        self.hi, self.lo = c.astype(np.float64), np.zeros(c.shape)
        self.slack, self.elo, self.ehi = np.zeros(c.shape), np.zeros(c.shape), np.zeros(c.shape)

    def _spread(self) -> np.ndarray:
        return _add_up(_add_up(np.abs(self.lo), self.slack), np.maximum(-self.elo, self.ehi))

    def mag(self) -> np.ndarray:
        """An upper bound on |r|."""
        return _add_up(np.abs(self.hi), self._spread())

    def min_mag(self) -> np.ndarray:
        """A lower bound on |r| (0 where r may be zero)."""
        return np.maximum(_add_down(np.abs(self.hi), -self._spread()), 0.0)

    def sign(self) -> tuple[np.ndarray, np.ndarray]:
        """Where r is surely positive, and surely negative."""
        low, high = self.ends()
        return low > 0, high < 0

    def add(self, p: np.ndarray) -> None:
        """Products p (R, q) added exactly (TwoSum into hi + lo; lo's own errors to slack)."""
        for k in range(p.shape[1]):
            self.hi, e = _two_sum(self.hi, p[:, k])
            self.lo, e2 = _two_sum(self.lo, e)
            self.slack = _add_up(self.slack, np.abs(e2))

    def err(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.elo, self.ehi = _add_down(self.elo, lo), _add_up(self.ehi, hi)

    def merge(self, other: Sum) -> None:
        """Another running sum (a part computed from zero) added exactly to this one."""
        self.add(np.stack([other.hi, other.lo], axis=1))
        self.slack = _add_up(self.slack, other.slack)
        self.err(other.elo, other.ehi)

    def set_range(self, low: np.ndarray, high: np.ndarray) -> None:
        """r now lies in [low, high] (the running error becomes that less the exact sum)."""
        self.elo = _add_down(_add_down(_add_down(low, -self.hi), -self.lo), -self.slack)
        self.ehi = _add_up(_add_up(_add_up(high, -self.hi), -self.lo), self.slack)

    def ends(self) -> tuple[np.ndarray, np.ndarray]:
        """Float64 bounds of r: exact where float64 can hold them."""
        low = _add_down(self.hi, _add_down(_add_down(self.lo, self.elo), -self.slack))
        high = _add_up(self.hi, _add_up(_add_up(self.lo, self.ehi), self.slack))
        return low, high


class _Rounding(NamedTuple):
    """Where a step's result goes: a format (fp32 with fewer fraction bits is a format of its
    own, as the unit keeps them), "rz" or "rne", and whether results below the smallest normal
    flush to zero."""

    fmt: Format
    mode: str
    flush: bool = False


def make_rounding(name: str, mode: str, frac_bits: int | None = None, flush: bool = False) -> _Rounding:
    f = get_format(name)
    if frac_bits is not None and frac_bits != f.mantissa_bits:
        f = dataclasses.replace(f, name=f"{f.name}_{frac_bits}bit", mantissa_bits=frac_bits)
    return _Rounding(f, mode, flush)


def apply(x: np.ndarray, r: _Rounding) -> np.ndarray:
    """x rounded as the step rounds it, through the codec (exact, and monotone in x)."""
    y = np.asarray(quantize(x, r.fmt, rounding=_MODES[r.mode], overflow="saturate"), dtype=np.float64)
    return np.where(np.abs(y) < 2.0**r.fmt.emin, 0.0, y) if r.flush else y


class Ctx:
    """What every step of one model reads: its rounding, the exponent floor and fraction bits
    of its accumulator operand, the roundings of the last result, and the elements whose
    values may reach a format's overflow (``wild``: nothing is claimed there)."""

    def __init__(self, acc: Accumulator, out: str, R: int):
        self.acc, self.wild = acc, np.zeros(R, dtype=bool)
        if isinstance(acc, BlockModel):
            fp32 = make_rounding("fp32", acc.out_rounding, acc.out_frac_bits)
            self.t = make_rounding("fp16", "rne") if out == "fp16" else fp32
            self.finals = [self.t] + ([make_rounding("bf16", "rne")] if out == "bf16" else [])
        elif isinstance(acc, Exact):
            # (the exact sum rounds once, to out; t is the fp32 step promotion would use)
            self.t = make_rounding("fp32", "rne", flush=acc.flush_subnormals)
            self.finals = [make_rounding(out, "rne")]
        else:
            self.t = make_rounding(acc.acc_format, acc.acc_rounding, flush=acc.flush_subnormals)
            self.finals = [self.t]
            if get_format(acc.acc_format).name != out:
                self.finals.append(make_rounding(out, "rne"))
        self.c_emin, self.f_c = (-14, 10) if out == "fp16" else (-126, 23)

    def round_error(self, V: np.ndarray, sign, t: _Rounding | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) of round(v) - v for |v| <= V: under an ulp (half for RNE) of V's binade;
        one-sided for RZ where v's sign is known; a flush loses under 2**emin."""
        t = t or self.t
        self.wild |= V >= t.fmt.max
        u = pow2(np.maximum(exponent(V), t.fmt.emin) - t.fmt.mantissa_bits)
        if t.flush:
            u = np.maximum(u, 2.0**t.fmt.emin)
        if t.mode == "rne" and not t.flush:
            return -0.5 * u, 0.5 * u
        pos, neg = sign if t.mode == "rz" and not t.flush else (False, False)
        return np.where(neg, 0.0, -u), np.where(pos, 0.0, u)

    def round_step(self, st: Sum, final: bool, t: _Rounding | None = None) -> None:
        """A rounding: left to the ends (final), or applied to them now (rounding is monotone,
        so the rounded ends bound every rounded value)."""
        if final:
            return
        t = t or self.t
        low, high = st.ends()
        self.wild |= np.maximum(np.abs(low), np.abs(high)) >= t.fmt.max
        st.set_range(apply(np.where(self.wild, 0.0, low), t), apply(np.where(self.wild, 0.0, high), t))

    def finish(self, st: Sum, finals: list[_Rounding]) -> tuple[np.ndarray, np.ndarray]:
        """The ends of st through the last roundings (monotone: the ends' images bound every
        result); wild elements get -inf and inf."""
        lo, hi = st.ends()
        for t in finals:
            self.wild |= np.maximum(np.abs(lo), np.abs(hi)) >= t.fmt.max
            lo, hi = np.where(self.wild, 0.0, lo), np.where(self.wild, 0.0, hi)
            lo, hi = apply(lo, t), apply(hi, t)
        return np.where(self.wild, -np.inf, lo), np.where(self.wild, np.inf, hi)
