"""Tolerances from the accumulation model: is a kernel's output one that a matrix unit of this
model, or of this family of models, can produce?

:func:`model_interval` gives every output element the interval [lo, hi] that holds every
result the model's arithmetic can give (derived from its parameters: block size, kept bits,
cut and rounding modes, the order of c and of the products; docs/tolerance.md has the math);
for a family (a list of models, a family name such as ``"nvidia"``, or the parameter ranges of
:func:`model_family`) the hull of its members' intervals. :func:`assert_within_model` fails
with the elements outside, their interval and how far outside they are.

>>> import numpy as np
>>> A, B, C = np.array([[1.0]]), np.array([[1.0]]), np.array([[-(1 - 2**-24)]])
>>> iv = model_interval(A, B, C, accumulator=["v100", "a100"], inputs="fp16")
>>> iv.lo.tolist() == [[2**-24]], iv.hi.tolist() == [[2**-23]]
(True, True)
>>> assert_within_model([[2**-23]], A, B, C, accumulator="nvidia", inputs="fp16")
>>> assert_within_model([[2**-23 + 2**-46]], A, B, C, accumulator="nvidia", inputs="fp16")
Traceback (most recent call last):
...
AssertionError: 1 of 1 elements outside what nvidia (3 models) can produce (fp32 output, model order)
  [0, 0]: got 1.1920930376163597e-07, allowed [5.960464477539063e-08, 1.1920928955078125e-07]: 1 ulps above (by 1.4210854715202004e-14)
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..accumulator import Accumulator, get_accumulator
from ..arith import exponent, pow2
from ..codec import quantize
from ..codec import is_torch
from ..formats import Format, get_format
from ..formats.registry import one_or_pair
from .bound import bound

__all__ = ["FAMILIES", "ModelInterval", "assert_within_model", "model_family", "model_interval"]

#: Named families: every architecture of a vendor (the instruction families that are no input
#: format's default included), for the input formats each takes.
FAMILIES: dict[str, tuple[str, ...]] = {
    "nvidia": ("volta", "turing", "ampere", "ada", "hopper", "blackwell"),
    "amd": ("cdna1", "cdna2", "cdna2/bf16", "cdna3", "cdna3/f16_k4", "cdna3/bf16_k4"),
}
FAMILIES["gpu"] = FAMILIES["nvidia"] + FAMILIES["amd"]
_ROWS = 1 << 20  # products held at once (rows of A per pass times N times K)
_SHOWN = 5


@dataclass(frozen=True)
class ModelInterval:
    """Per element: every output the models can give lies in [lo, hi] (values of ``out``);
    where ``may_nan`` (an Inf/NaN operand, or a value that may overflow), nothing is claimed:
    lo = -inf, hi = inf, NaN allowed."""

    lo: np.ndarray
    hi: np.ndarray
    may_nan: np.ndarray
    out: str
    members: tuple[str, ...]

    def contains(self, got: Any) -> np.ndarray:
        """Elementwise: got lies in [lo, hi], or is NaN where NaN may come."""
        g = _values(got)
        with np.errstate(invalid="ignore"):
            return ((g >= self.lo) & (g <= self.hi)) | (np.isnan(g) & self.may_nan)

    def width_ulps(self) -> np.ndarray:
        """hi - lo in ulps of ``out`` at the larger end's magnitude (0: one possible value;
        near zero after cancellation this counts the ulps of the larger end, not the many
        tiny ones in between); inf where wild."""
        with np.errstate(invalid="ignore"):
            return np.where(self.may_nan, np.inf, (self.hi - self.lo) / _ulp(np.maximum(np.abs(self.lo), np.abs(self.hi)), self.out))


def _values(x: Any) -> np.ndarray:
    """x as float64 (torch tensors, bf16 ones included, through float32: exact)."""
    if is_torch(x):
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=np.float64)


def _same_model(acc: Accumulator) -> tuple:
    """The fields that make the arithmetic (names and sources aside), as a hashable key."""
    return tuple(repr(v) for k, v in dataclasses.asdict(acc).items() if k not in ("name", "source"))


def members_of(accumulator: Any, inputs) -> list[Accumulator]:
    """The distinct models a name, an Accumulator, a family name or a list of these stands for
    (a family's members that take no such inputs are left out).

    >>> [m.name for m in members_of("nvidia", "e4m3")]
    ['ada/e4m3', 'hopper/e4m3', 'blackwell/e4m3']
    """
    items = [accumulator] if isinstance(accumulator, (str, Accumulator)) else list(accumulator)
    found = []
    for item in items:
        if isinstance(item, str) and item in FAMILIES:
            for name in FAMILIES[item]:
                try:
                    found.append(get_accumulator(name, inputs))
                except ValueError:  # this unit has no such inputs
                    continue
        else:
            found.append(get_accumulator(item, inputs))
    if not found:
        raise ValueError(f"no model of {accumulator!r} takes {inputs!r} inputs")
    unique = {}
    for acc in found:
        unique.setdefault(_same_model(acc), acc)
    return list(unique.values())


def model_family(base: str | Accumulator, inputs="fp32", **ranges: Sequence) -> list[Accumulator]:
    """Every model that differs from ``base`` in the fields given, over all combinations of
    their values (e.g. ``frac_bits=range(23, 27)``): a family of parameter ranges.

    >>> [m.name for m in model_family("a100", "fp16", frac_bits=(23, 24), block=(4, 8))][:2]
    ['a100/fp16[frac_bits=23, block=4]', 'a100/fp16[frac_bits=23, block=8]']
    """
    acc = get_accumulator(base, inputs)
    fields = {f.name for f in dataclasses.fields(acc) if f.init}
    unknown = sorted(set(ranges) - fields)
    if unknown:
        are = "is not a field" if len(unknown) == 1 else "are not fields"
        raise ValueError(f"model_family: {', '.join(unknown)} {are} of {acc.name!r} ({type(acc).__name__})")
    names = list(ranges)
    out = []
    for values in itertools.product(*(list(ranges[k]) for k in names)):
        label = ", ".join(f"{k}={v}" for k, v in zip(names, values))
        out.append(dataclasses.replace(acc, name=f"{acc.name}[{label}]", **dict(zip(names, values))))
    return out


def _describe(accumulator: Any, members: list[Accumulator]) -> str:
    if isinstance(accumulator, str) and accumulator in FAMILIES:
        return f"{accumulator} ({len(members)} models)"
    if len(members) == 1:
        return members[0].name
    return f"{len(members)} models ({', '.join(m.name for m in members[:3])}{', ...' if len(members) > 3 else ''})"


def model_interval(a, b, c=None, *, accumulator, inputs, out: str = "fp32", order: str = "model",
                   layout: str = "gemm") -> ModelInterval:  # fmt: skip
    """The interval of every output element of ``A @ B + C`` (``layout="gemm"``: A (M, K), B (K, N))
    or of the dot products over the last axis (``layout="dot"``: a, b (..., K), c (...)), as
    :func:`fpemu.gemm` / :func:`fpemu.dot` take them: a and b rounded (RNE) to ``inputs``, c to
    fp32 (fp16 for fp16 output). ``order="any"`` bounds every order of the products (and of the
    blocks they fall in) instead of the model's own."""
    if order not in ("model", "any"):
        raise ValueError(f"order must be 'model' or 'any', got {order!r}")
    if layout not in ("gemm", "dot"):
        raise ValueError(f"layout must be 'gemm' or 'dot', got {layout!r}")
    out = get_format(out).name
    if out not in ("fp32", "fp16", "bf16"):
        raise ValueError(f"out must be fp32, fp16 or bf16, got {out!r}")
    fa, fb = one_or_pair(inputs, get_format, (str, Format), "inputs", "a format name")
    members = members_of(accumulator, (fa, fb))
    A, B = (np.asarray(quantize(_values(x), f), dtype=np.float64) for x, f in ((a, fa), (b, fb)))
    if layout == "gemm":
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
            raise ValueError(f"gemm layout needs A (M, K) and B (K, N), got shapes {A.shape} and {B.shape}")
        shape = (A.shape[0], B.shape[1])
    elif A.ndim == 0 or A.shape != B.shape:
        raise ValueError(f"dot layout needs a and b of one shape (..., K), got {A.shape} and {B.shape}")
    else:
        shape = A.shape[:-1]
    C = np.zeros(shape) if c is None else np.broadcast_to(_values(c), shape)
    C = np.asarray(quantize(C, "fp16" if out == "fp16" else "fp32"), dtype=np.float64)
    lo, hi, wild = np.full(shape, np.inf), np.full(shape, -np.inf), np.zeros(shape, dtype=bool)
    for rows, a2, b2 in _pieces(A, B, layout):
        # The model's own order is one of "any": its bound joins the any-order bound, so the
        # interval of every order holds the model's (two over-approximations need not nest).
        for acc, o in itertools.product(members, ("model", "any") if order == "any" else ("model",)):
            l, h, w = bound(a2, b2, C[rows].reshape(-1), acc, fa, fb, out, o)
            lo[rows] = np.minimum(lo[rows], l.reshape(lo[rows].shape))
            hi[rows] = np.maximum(hi[rows], h.reshape(hi[rows].shape))
            wild[rows] |= w.reshape(wild[rows].shape)
    return ModelInterval(lo, hi, wild, out, tuple(m.name for m in members))


def _pieces(A: np.ndarray, B: np.ndarray, layout: str):
    """(index of the output rows, a, b) with a, b (R, K) the pairs of each dot product."""
    if layout == "dot":
        K = A.shape[-1]
        yield (Ellipsis, A.reshape(-1, K), B.reshape(-1, K))
        return
    (M, K), N = A.shape, B.shape[1]
    step = max(1, _ROWS // max(1, N * K))
    for i in range(0, M, step):
        m = min(step, M - i)
        yield (slice(i, i + m), np.repeat(A[i : i + m], N, axis=0), np.tile(B.T, (m, 1)))


def _ulp(x: np.ndarray, out: str) -> np.ndarray:
    """The spacing of ``out``'s values at |x| (its subnormal spacing below the normals)."""
    f = get_format(out)
    return pow2(np.maximum(exponent(np.where(np.isfinite(x), x, 0.0)), f.emin) - f.mantissa_bits)


def assert_within_model(got, a, b, c=None, *, accumulator, inputs, out: str = "fp32", order: str = "model",
                        layout: str = "gemm", err_msg: str = "") -> None:  # fmt: skip
    """Assert that every element of ``got`` is an output the model (or family) can give for
    these operands (see :func:`model_interval`); the message names each element outside, its
    interval and by how much (in ulps of ``out`` and in value) it misses."""
    iv = model_interval(a, b, c, accumulator=accumulator, inputs=inputs, out=out, order=order, layout=layout)
    g = _values(got)
    if g.shape != iv.lo.shape:
        raise AssertionError(f"shapes differ: got {g.shape}, the product has {iv.lo.shape}")
    bad = ~iv.contains(g)
    if not bad.any():
        return
    fa_fb = one_or_pair(inputs, get_format, (str, Format), "inputs", "a format name")
    head = (f"{int(bad.sum())} of {g.size} elements outside what {_describe(accumulator, members_of(accumulator, fa_fb))} "
            f"can produce ({iv.out} output, {order} order)")  # fmt: skip
    lines = [f"{err_msg}: {head}" if err_msg else head]
    for where in np.argwhere(bad)[:_SHOWN]:
        w = tuple(int(i) for i in where)
        x, lo, hi = float(g[w]), float(iv.lo[w]), float(iv.hi[w])
        if np.isnan(x):
            miss = "a NaN, where none can come"
        else:
            end, side = (hi, "above") if x > hi else (lo, "below")
            miss = f"{abs(x - end) / float(_ulp(np.array(end), iv.out)):g} ulps {side} (by {abs(x - end)!r})"
        lines.append(f"  {list(w)}: got {x!r}, allowed [{lo!r}, {hi!r}]: {miss}")
    if bad.sum() > _SHOWN:
        lines.append(f"  ... and {int(bad.sum()) - _SHOWN} more")
    raise AssertionError("\n".join(lines))
