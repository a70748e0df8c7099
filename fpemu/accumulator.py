"""Simulated matrix-multiply accumulators: how tensor cores (and plain loops) add products.

A matrix-multiply unit does not add ``a[0]*b[0] + ... + a[K-1]*b[K-1] + c`` the way an IEEE
loop does. NVIDIA tensor cores take a block of ``n`` exact products and the accumulator ``c``,
align them all to the largest exponent ``E`` with ``F`` fraction bits, truncate every term
toward zero, add the truncated terms exactly and round the sum once (toward zero for fp32
output). Longer dot products repeat this block by block (the rounded result is the next
block's ``c``). :class:`Accumulator` holds the parameters of such a model; the named presets of
:func:`get_accumulator` come from the published parameters of each architecture (see
``docs/accumulator.md``), and reproduce real GPU dumps bit for bit.

>>> acc = get_accumulator("v100", "fp16")
>>> acc.block, acc.frac_bits, acc.out_rounding
(4, 23, 'rz')
>>> float(dot([1.0], [1.0], -(1 - 2**-24), inputs="fp16", accumulator="v100")[()]) == 2**-23
True
>>> float(dot([1.0], [1.0], -(1 - 2**-24), inputs="fp16", accumulator="a100")[()]) == 2**-24
True

How the numbers are kept exact: every input of these formats is an fp32 value, so a product
is exact in float64 (at most 48 significant bits, exponent within +-300). Scaling it by
``2**(F-E)`` is exact, the float-to-int64 cast truncates it toward zero, and the int64 terms add
exactly, so the block model has no rounding error of its own; it is vectorised over all output
elements and loops only over k. The IEEE models use an error-free two-sum and round-to-odd
(53 >= 24 + 2 bits, so the one rounding that follows is correct); the exact model uses a long
fixed-point accumulator in int64 limbs.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

import numpy as np

from .codec import quantize
from .formats import Format, get_format

__all__ = [
    "Accumulator",
    "get_accumulator",
    "accumulator_names",
    "dot",
    "gemm",
    "gemm_error",
    "register_cli",
]

Kind = Literal["block", "exact", "sequential", "pairwise"]
TermRounding = Literal["rz", "rd"]
OutRounding = Literal["rz", "rne"]

# A zero or non-finite input gets this exponent so that its (zero) product never sets E.
_NO_EXPONENT = -4000


# ---------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Accumulator:
    """Parameters of one accumulation model.

    Attributes:
        name: label used in messages and docs.
        kind: the algorithm.
            ``"block"``: the tensor-core block FMA (fields ``block`` to ``zero_c_exponent``).
            ``"exact"``: the exact sum of all products and ``c``, rounded once (RNE) to ``out``.
            ``"sequential"``: ``acc = round(acc + a[k]*b[k])`` for k = 0, 1, ... starting from
            ``acc = c``, exact products, one rounding per step in ``acc_format``/``acc_rounding``.
            ``"pairwise"``: products (exact) summed as a balanced binary tree, every addition
            rounded in ``acc_format``; ``block`` products per tree (None: all of K), each tree's
            sum then added to the running accumulator (recursive over K).
        block: products fused per block FMA (``n``); for ``"pairwise"`` the tree size.
        frac_bits: ``F``, fraction bits kept below the block's largest exponent ``E``.
        term_rounding: how each aligned term loses its low bits: ``"rz"`` truncates the
            magnitude (sign-magnitude hardware; what NVIDIA does), ``"rd"`` floors the two's
            complement value.
        out_rounding: rounding of the block sum to fp32 output: ``"rz"`` or ``"rne"``.
        out_frac_bits: fraction bits of that fp32 result (23; 13 for FP8 on Ada/Hopper, whose
            fp32 result keeps only 13). fp16 output is always rounded RNE to fp16.
        zero_c_exponent: the exponent a zero accumulator takes part in the alignment with.
        late_c: CDNA3 style: the products of a block are aligned and summed without ``c``;
            that partial sum and ``c`` are then aligned (``F`` bits, ``term_rounding``), added
            and rounded.
        even_odd: CDNA3 FP8 style (with ``late_c``): even- and odd-indexed products of a block
            are aligned and summed separately, then combined with ``c``.
        flush_subnormals: inputs below their format's smallest normal are read as zero (DAZ)
            and subnormal results are flushed to zero (FTZ), as AMD CDNA2 does.
        acc_format: the running sum's format for ``"sequential"``/``"pairwise"`` (fp32, fp16,
            bf16); block models keep their result in the output format.
        acc_rounding: rounding of every step of ``"sequential"``/``"pairwise"``.
        promote: DeepSeek-V3's fix: every ``promote`` products, the unit's partial result
            (computed from a zero accumulator) is added to an fp32 accumulator with RNE, as
            the CUDA cores do. None: no promotion.
        source: where the parameters come from.

    >>> Accumulator("mine", "block", block=8, frac_bits=24).out_rounding
    'rz'
    """

    name: str
    kind: Kind = "block"
    block: int | None = 1
    frac_bits: int = 24
    term_rounding: TermRounding = "rz"
    out_rounding: OutRounding = "rz"
    out_frac_bits: int = 23
    zero_c_exponent: int = -126
    late_c: bool = False
    even_odd: bool = False
    flush_subnormals: bool = False
    acc_format: str = "fp32"
    acc_rounding: OutRounding = "rne"
    promote: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        # Types first: the value checks compare and shift the fields.
        problems = self._type_problems() or self._value_problems()
        if problems:
            raise ValueError(f"invalid accumulator {self.name!r}: " + "; ".join(problems))

    def _type_problems(self) -> list[str]:
        """Fields of the wrong type (a bool is not an integer here: True would read as 1)."""
        problems = []
        if not isinstance(self.name, str):
            problems.append(f"name must be a string, got {self.name!r}")
        for field in ("frac_bits", "out_frac_bits", "zero_c_exponent"):
            if not _is_int(getattr(self, field)):
                problems.append(f"{field} must be an integer, got {getattr(self, field)!r}")
        for field in ("block", "promote"):
            value = getattr(self, field)
            if value is not None and not _is_int(value):
                problems.append(f"{field} must be a positive integer or None, got {value!r}")
        for field in ("late_c", "even_odd", "flush_subnormals"):
            if not isinstance(getattr(self, field), (bool, np.bool_)):
                problems.append(f"{field} must be True or False, got {getattr(self, field)!r}")
        if not isinstance(self.acc_format, (str, Format)):
            problems.append(f"acc_format must be a format name, got {self.acc_format!r}")
        return problems

    def _value_problems(self) -> list[str]:
        problems = []
        if self.kind not in ("block", "exact", "sequential", "pairwise"):
            problems.append(f"kind must be block, exact, sequential or pairwise, got {self.kind!r}")
        if self.block is not None and self.block < 1:
            problems.append(f"block must be a positive integer or None, got {self.block!r}")
        if self.kind == "block" and self.block is None:
            problems.append("a block model needs a block size")
        if not 0 <= self.frac_bits <= 48:
            problems.append(f"frac_bits must be in 0..48 (float64 keeps it exact), got {self.frac_bits}")
        elif self.block is not None and (self.block + 3) << (self.frac_bits + 2) >= 1 << 63:
            problems.append("block << (frac_bits + 2) must fit in int64: fewer products or fewer bits")
        if self.term_rounding not in ("rz", "rd"):
            problems.append(f"term_rounding must be 'rz' or 'rd', got {self.term_rounding!r}")
        if self.out_rounding not in ("rz", "rne") or self.acc_rounding not in ("rz", "rne"):
            problems.append("out_rounding and acc_rounding must be 'rz' or 'rne'")
        if not 1 <= self.out_frac_bits <= 23:
            problems.append(f"out_frac_bits must be in 1..23, got {self.out_frac_bits}")
        # The alignment exponent E is kept in int32 and 2**(F - E) must be a normal float64.
        if not -1022 <= self.zero_c_exponent <= 1023:
            problems.append(f"zero_c_exponent must be in -1022..1023, got {self.zero_c_exponent}")
        if self.even_odd and not self.late_c:
            problems.append("even_odd needs late_c")
        if self.promote is not None and self.promote < 1:
            problems.append(f"promote must be a positive integer or None, got {self.promote!r}")
        if get_format(self.acc_format).name not in ("fp32", "fp16", "bf16"):
            problems.append(f"acc_format must be fp32, fp16 or bf16, got {self.acc_format!r}")
        return problems


def _is_int(value: object) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


_FAMILY = {  # input format -> the parameter family a GPU table is keyed by
    "fp16": "fp16",
    "bf16": "fp16",
    "tf32": "tf32",
    "fp32": "fp32",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "e4m3fnuz": "fp8fnuz",
    "e5m2fnuz": "fp8fnuz",
}

_FH = "Fasi, Higham, Mikaitis, Pranesh 2021 (PeerJ CS 7:e330)"
_KM = "Khattak and Mikaitis 2025 (tensor-core models, hwdata dumps)"
_MMA = "MMA-Sim 2025"


def _nv(block: int, frac_bits: int, out_frac_bits: int = 23, source: str = _KM) -> dict:
    return dict(kind="block", block=block, frac_bits=frac_bits, out_frac_bits=out_frac_bits, source=source)


# Architecture -> input family -> parameters (SPEC section 5 table). Nothing here is fitted to
# a dump: the dumps are the test.
_ARCH: dict[str, dict[str, dict]] = {
    "volta": {"fp16": _nv(4, 23, source=_FH)},
    "turing": {"fp16": _nv(8, 24, source=_FH)},
    "ampere": {"fp16": _nv(8, 24, source=_FH), "tf32": _nv(4, 24, source=_FH)},
    "ada": {"fp16": _nv(8, 24), "tf32": _nv(4, 24), "fp8": _nv(16, 13, 13)},
    "hopper": {"fp16": _nv(16, 25), "tf32": _nv(8, 25), "fp8": _nv(32, 13, 13)},
    "blackwell": {
        "fp16": _nv(16, 25),
        "tf32": _nv(8, 25),
        # Open (SPEC): B200 FP8 "behaves like an (almost) exact sum then RNE". We take the
        # description literally: 32 products, F = 48 (exact for FP8 products of any practical
        # spread), RNE.
        "fp8": dict(_nv(32, 48), out_rounding="rne", source=_KM + "; open, approximate"),
    },
    "cdna2": {
        # Pairs summed in fp32 with RNE, subnormals flushed. Tree of 4 products per MFMA step
        # (4 fp16/bf16 values per lane) is our assumption; fp32 inputs one product per step.
        "fp16": dict(kind="pairwise", block=4, flush_subnormals=True, source=_MMA + "; Khattak"),
        "fp32": dict(kind="pairwise", block=1, flush_subnormals=True, source=_MMA + "; Khattak"),
    },
    "cdna3": {
        # Products aligned without c (F = 24), the product sum and c floored separately, added,
        # rounded RNE. Block sizes (4 for 16-bit, 2 for xf32, 8 for FP8) are our assumption.
        "fp16": dict(kind="block", block=4, frac_bits=24, term_rounding="rd", out_rounding="rne", late_c=True, source=_MMA),
        "tf32": dict(kind="block", block=2, frac_bits=24, term_rounding="rd", out_rounding="rne", late_c=True, source=_MMA),
        "fp8fnuz": dict(
            kind="block", block=8, frac_bits=24, term_rounding="rd", out_rounding="rne",
            late_c=True, even_odd=True, source=_MMA,
        ),
    },
}

# Input formats each architecture's matrix unit takes (the ones we have parameters for).
_SUPPORTS = {
    "volta": ("fp16",),
    "turing": ("fp16",),
    "ampere": ("fp16", "bf16", "tf32"),
    "ada": ("fp16", "bf16", "tf32", "e4m3", "e5m2"),
    "hopper": ("fp16", "bf16", "tf32", "e4m3", "e5m2"),
    "blackwell": ("fp16", "bf16", "tf32", "e4m3", "e5m2"),
    "cdna2": ("fp16", "bf16", "fp32"),
    "cdna3": ("fp16", "bf16", "tf32", "e4m3fnuz", "e5m2fnuz"),
}

_GPUS = {
    "v100": "volta",
    "t4": "turing",
    "a100": "ampere",
    "a30": "ampere",
    "a2": "ampere",
    "l40s": "ada",
    "rtx4090": "ada",
    "h100": "hopper",
    "h200": "hopper",
    "h800": "hopper",
    "b200": "blackwell",
    "mi210": "cdna2",
    "mi250": "cdna2",
    "mi250x": "cdna2",
    "mi300": "cdna3",
    "mi300x": "cdna3",
}

_IEEE = {
    "exact": dict(kind="exact", source="exact rational sum, one RNE rounding"),
    "fp32": dict(kind="sequential", acc_format="fp32", source="IEEE 754 loop, exact products (FMA)"),
    "fp16": dict(kind="sequential", acc_format="fp16", source="IEEE 754 loop, exact products (FMA)"),
    "bf16": dict(kind="sequential", acc_format="bf16", source="IEEE 754 loop, exact products (FMA)"),
    "pairwise_fp32": dict(kind="pairwise", block=None, acc_format="fp32", source="pairwise summation"),
}


def accumulator_names() -> list[str]:
    """Every name :func:`get_accumulator` knows.

    >>> "h100" in accumulator_names() and "hopper" in accumulator_names()
    True
    """
    return list(_IEEE) + list(_GPUS) + [a for a in _ARCH if a not in _GPUS]


def _input_formats(inputs: str | Format | Sequence[str | Format]) -> tuple[Format, Format]:
    if isinstance(inputs, (str, Format)):
        fmt = get_format(inputs)
        return fmt, fmt
    try:
        first, second = inputs
    except (TypeError, ValueError):
        raise TypeError(f"inputs must be a format name or a pair of them, got {inputs!r}") from None
    return get_format(first), get_format(second)


def get_accumulator(name: str | Accumulator, inputs: str | Format | Sequence[str | Format] = "fp32") -> Accumulator:
    """The named accumulation model for these input formats.

    ``name`` is an IEEE model ("exact", "fp32", "fp16", "bf16", "pairwise_fp32"), a GPU
    ("v100", "t4", "a100", "a30", "a2", "ada", "l40s", "h100", "h200", "h800", "b200",
    "mi250", "mi300", ...) or an architecture ("volta", "turing", "ampere", "ada", "hopper",
    "blackwell", "cdna2", "cdna3"). GPU parameters depend on the inputs (H100 fp16 fuses 16
    products with F = 25, H100 e4m3 32 products with F = 13). An Accumulator passes through.

    >>> get_accumulator("h100", "e4m3").block, get_accumulator("h100", "fp16").block
    (32, 16)
    >>> get_accumulator("v100", "bf16")
    Traceback (most recent call last):
    ...
    ValueError: v100 (volta) has no bf16 inputs in its matrix unit; it takes: fp16
    """
    if isinstance(name, Accumulator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"an accumulator is a name or an Accumulator, got {type(name).__name__}")
    key = name.strip().lower()
    if key in _IEEE:
        return Accumulator(key, **_IEEE[key])
    arch = _GPUS.get(key, key)
    if arch not in _ARCH:
        raise ValueError(f"unknown accumulator {name!r}; known: {', '.join(accumulator_names())}")
    fa, fb = _input_formats(inputs)
    takes = _SUPPORTS[arch]
    label = key if key == arch else f"{key} ({arch})"
    for fmt in (fa, fb):
        if fmt.name not in takes:
            raise ValueError(f"{label} has no {fmt.name} inputs in its matrix unit; it takes: {', '.join(takes)}")
    if fa != fb and not (_FAMILY[fa.name].startswith("fp8") and _FAMILY[fa.name] == _FAMILY[fb.name]):
        raise ValueError(f"{label} does not multiply {fa.name} by {fb.name}")
    fam_a = _FAMILY[fa.name]
    return Accumulator(f"{key}/{fa.name}" if fa == fb else f"{key}/{fa.name}x{fb.name}", **_ARCH[arch][fam_a])


# ---------------------------------------------------------------------------------------------
# Exact float64 kernels
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Target:
    """A rounding target: the format results are rounded to (fp32 with fewer fraction bits
    is a Format of its own), the rounding mode ("rz" or "rne"), and whether subnormal results
    flush to zero."""

    format: Format
    mode: str
    flush: bool = False

    @property
    def emin(self) -> int:
        return self.format.emin


def _target(fmt: str | Format, mode: str, frac_bits: int | None = None, flush: bool = False) -> _Target:
    f = get_format(fmt)
    if frac_bits is not None and frac_bits != f.mantissa_bits:
        f = dataclasses.replace(f, name=f"{f.name}_{frac_bits}bit", mantissa_bits=frac_bits)
    return _Target(f, mode, flush)


def _pow2(e: np.ndarray) -> np.ndarray:
    """2.0**e for integer arrays with -1022 <= e <= 1023, built from the float64 bit pattern."""
    return ((np.asarray(e, dtype=np.int64) + 1023) << 52).view(np.float64)


def _exponent(v: np.ndarray, emin: int) -> np.ndarray:
    """floor(log2|v|) clamped below at emin (a subnormal uses its format's emin); zero and
    non-finite values get _NO_EXPONENT. int32."""
    _, e = np.frexp(v)
    ex = np.maximum(e.astype(np.int32) - 1, emin)
    return np.where(np.isfinite(v) & (v != 0), ex, _NO_EXPONENT).astype(np.int32)


_ROUNDING_NAMES = {"rz": "toward_zero", "rne": "nearest_even"}


def _round(v: np.ndarray, t: _Target) -> np.ndarray:
    """Round float64 values (exact inputs) to the target with the codec; IEEE overflow
    (RNE -> Inf, RZ -> largest finite); a zero keeps its sign.

    >>> _round(np.array([1 + 2**-23 + 2**-24, -3.0]), _target("fp16", "rne")).tolist()
    [1.0, -3.0]
    """
    r = quantize(np.asarray(v, dtype=np.float64), t.format, rounding=_ROUNDING_NAMES[t.mode])
    if t.flush:
        r = np.where(np.abs(r) < np.ldexp(1.0, t.emin), np.copysign(0.0, v), r)
    return np.where(np.isfinite(v), r, v)


def _round_to_odd_sum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y rounded to odd at float64 precision (53 bits), from an error-free two-sum.

    Round-to-odd keeps a sticky bit in the last place, so a later rounding to at most 51 bits
    equals the correct rounding of the exact sum.
    """
    with np.errstate(invalid="ignore", over="ignore"):  # Inf partial sums are passed through
        s = x + y
        yy = s - x
        err = (x - (s - yy)) + (y - yy)
    bits = s.view(np.int64)
    inexact = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    # Move one float64 ulp toward the exact value: up in magnitude when err has s's sign.
    step = np.where((err > 0) == (s > 0), 1, -1)
    return np.where(inexact, (bits + step).view(np.float64), s)


def _add(x: np.ndarray, y: np.ndarray, t: _Target) -> np.ndarray:
    """round(x + y) to the target, exactly (x, y exact float64 values)."""
    return _round(_round_to_odd_sum(x, y), t)


def _flush_inputs(v: np.ndarray, fmt: Format) -> np.ndarray:
    return np.where(np.abs(v) < fmt.min_normal, np.copysign(0.0, v), v)


# ---------------------------------------------------------------------------------------------
# Products: a source of (value, exponent) blocks for every output element
# ---------------------------------------------------------------------------------------------
class _Products:
    """Exact products for R output elements, handed out one k at a time.

    ``value(k)`` is the float64 product for every element (exact; non-finite products are
    replaced by 0 and handled by ``special``), ``exponent(k)`` its model exponent e_a + e_b
    (int16; _NO_EXPONENT for zero products). Both are computed on demand, so a GEMM never
    holds more than a few (R,) arrays: R is kept cache-sized by the caller.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, fa: Format, fb: Format, outer: bool, flush: bool):
        # gemm: a (M, K), b (K, N), element (i, j) uses a[i, k] * b[k, j];
        # dot: a, b (R, K), element r uses a[r, k] * b[r, k].
        if flush:
            a, b = _flush_inputs(a, fa), _flush_inputs(b, fb)
        self.outer = outer
        self.nonfinite = not (np.isfinite(a).all() and np.isfinite(b).all())
        # k-major copies: one k is a contiguous row.
        self.a_raw = np.ascontiguousarray(a.T)
        self.b_raw = np.ascontiguousarray(b if outer else b.T)
        self.a = np.where(np.isfinite(self.a_raw), self.a_raw, 0.0) if self.nonfinite else self.a_raw
        self.b = np.where(np.isfinite(self.b_raw), self.b_raw, 0.0) if self.nonfinite else self.b_raw
        self.ea = _exponent(self.a_raw, fa.emin).astype(np.int16)
        self.eb = _exponent(self.b_raw, fb.emin).astype(np.int16)
        self.K = self.a.shape[0]
        self.R = a.shape[0] * b.shape[1] if outer else a.shape[0]

    def _pair(self, x: np.ndarray, y: np.ndarray, k: int, op) -> np.ndarray:
        if self.outer:
            return op(x[k][:, None], y[k][None, :]).reshape(-1)
        return op(x[k], y[k])

    def value(self, k: int) -> np.ndarray:
        return self._pair(self.a, self.b, k, np.multiply)

    def exponent(self, k: int) -> np.ndarray:
        return self._pair(self.ea, self.eb, k, np.add)

    def values(self, k0: int, k1: int) -> np.ndarray:
        """Products k0..k1-1 stacked, shape (k1 - k0, R)."""
        return np.stack([self.value(k) for k in range(k0, k1)]) if k1 > k0 else np.zeros((0, self.R))

    def special(self, k0: int, k1: int) -> np.ndarray:
        total = np.zeros(self.R)
        with np.errstate(invalid="ignore"):
            for k in range(k0, k1):
                total += self._pair(self.a_raw, self.b_raw, k, np.multiply)
        return total


# ---------------------------------------------------------------------------------------------
# The models
# ---------------------------------------------------------------------------------------------
def _with_specials(prods: _Products, k0: int, k1: int, c: np.ndarray, result: np.ndarray) -> np.ndarray:
    """Where a product or c is Inf/NaN, the answer is their float64 sum (NaN for NaN inputs,
    Inf*0 and Inf-Inf; otherwise the Inf)."""
    bad_c = ~np.isfinite(c)
    if not (prods.nonfinite or bad_c.any()):
        return result
    with np.errstate(invalid="ignore"):
        s = prods.special(k0, k1) + c
    return np.where(np.isfinite(s), result, s)


def _cut(x: np.ndarray, rounding: str) -> np.ndarray:
    """Integer part of x (|x| < 2**53) as int64: toward zero ("rz") or down ("rd")."""
    i = x.astype(np.int64)  # the float -> int cast truncates toward zero
    if rounding == "rd":
        i -= i > x
    return i


def _grid_sum(values: Iterable[np.ndarray], exps: Iterable[np.ndarray], F: int, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """Align terms to the largest of their exponents E, keep F fraction bits below E (each
    term cut on its own), add exactly. Returns (the sum as a float64, E).

    Both arguments may be generators: the exponents are consumed first (to find E), then the
    values, one (R,) array at a time. Each cut term is below 2**(F+2) and exact in float64;
    the int64 total is exact too. When it may exceed 2**53 the float64 result is the sum
    rounded to odd, which the final rounding (to at most 24 bits) turns into the right answer.
    """
    exps = iter(exps)
    E = next(exps).astype(np.int32)
    for e in exps:
        np.maximum(E, e, out=E)
    scale = _pow2(np.clip(F - E, -1022, 1023))
    total = np.zeros(E.shape, dtype=np.int64)
    count = 0
    for v in values:
        total += _cut(v * scale, rounding)
        count += 1
    unit = _pow2(np.clip(E - F, -1022, 1023))
    if count << (F + 2) <= 1 << 53:
        return total.astype(np.float64) * unit, E
    high = total >> 26  # both halves are exact in float64; add them with one odd rounding
    low = total - (high << 26)
    return _round_to_odd_sum(high.astype(np.float64) * (unit * 2.0**26), low.astype(np.float64) * unit), E


def _block_step(prods: _Products, s: int, e: int, c: np.ndarray, ec: np.ndarray, acc: Accumulator, t: _Target) -> np.ndarray:
    """One block FMA on products s..e-1 and accumulator c (exponent ec)."""
    F = acc.frac_bits
    if not acc.late_c:
        ks = range(s, e)
        total, _ = _grid_sum(
            itertools.chain([c], (prods.value(k) for k in ks)),
            itertools.chain([ec], (prods.exponent(k) for k in ks)),
            F,
            acc.term_rounding,
        )
        return _round(total, t) + 0.0  # -0 -> +0
    # CDNA3: products first (even and odd lanes separately for FP8), c joins afterwards.
    groups = [range(s, e, 2), range(s + 1, e, 2)] if acc.even_odd else [range(s, e)]
    vals, exps = [c], [ec]
    for ks in groups:
        if len(ks) == 0:
            continue
        v, _ = _grid_sum((prods.value(k) for k in ks), (prods.exponent(k) for k in ks), F, acc.term_rounding)
        vals.append(v)
        exps.append(_exponent(v, -100000))
    total, _ = _grid_sum(vals, exps, F, acc.term_rounding)
    return _round(total, t) + 0.0


def _run_block(prods: _Products, k0: int, k1: int, c: np.ndarray, acc: Accumulator, t: _Target, c_emin: int) -> np.ndarray:
    n = acc.block
    # No products (K = 0): c alone goes through one block FMA, exactly as it does when K is
    # zero-padded (zero products are dropped), so it is rounded as the unit rounds (-0 -> +0).
    starts = range(k0, k1, n) if k1 > k0 else range(k0, k0 + 1)
    for s in starts:
        e = min(s + n, k1)
        ec = np.where(c == 0, acc.zero_c_exponent, _exponent(c, c_emin))
        finite_c = np.where(np.isfinite(c), c, 0.0)
        c = _with_specials(prods, s, e, c, _block_step(prods, s, e, finite_c, ec, acc, t))
    return c


def _run_sequential(prods: _Products, k0: int, k1: int, c: np.ndarray, t: _Target) -> np.ndarray:
    acc = _round(c, t)
    for k in range(k0, k1):
        finite = np.where(np.isfinite(acc), acc, 0.0)
        acc = _with_specials(prods, k, k + 1, acc, _add(finite, prods.value(k), t))
    return acc


def _tree(values: np.ndarray, t: _Target) -> np.ndarray:
    """Pairwise sum over axis 0, every addition rounded to the target."""
    while values.shape[0] > 1:
        half = values.shape[0] // 2
        summed = _add(values[0 : 2 * half : 2], values[1 : 2 * half : 2], t)
        values = np.concatenate([summed, values[2 * half :]]) if values.shape[0] % 2 else summed
    return values[0]


def _run_pairwise(prods: _Products, k0: int, k1: int, c: np.ndarray, acc: Accumulator, t: _Target) -> np.ndarray:
    n = acc.block or (k1 - k0)
    out = _round(c, t)
    for s in range(k0, k1, max(n, 1)):
        e = min(s + n, k1)
        finite = np.where(np.isfinite(out), out, 0.0)
        out = _with_specials(prods, s, e, out, _add(finite, _tree(prods.values(s, e), t), t))
    return out


_LIMB = 30  # bits per limb of the long accumulator


def _exact_sum(prods: _Products, k0: int, k1: int, c: np.ndarray) -> np.ndarray:
    """The exact sum of the products and c, rounded to odd at 53 bits (float64).

    A Kulisch-style long accumulator: every term (a float64, 53-bit integer significand m at
    weight 2**q) is added into int64 limbs of 30 bits, vectorised over the R elements; carries
    are propagated once at the end. The limb range is taken from the data.
    """
    R = prods.R
    c = np.where(np.isfinite(c), c, 0.0)
    lo_q, hi_q = _term_range(prods, c)
    base = lo_q - 2 * _LIMB  # two empty limbs below the lowest bit keep the read-out simple
    n_limbs = (hi_q + (k1 - k0 + 2).bit_length() + 2 - base) // _LIMB + 4
    limbs = np.zeros((R, n_limbs), dtype=np.int64)
    rows = np.arange(R) * n_limbs

    def add(v: np.ndarray) -> None:
        mant, e = np.frexp(np.abs(v))
        m = np.ldexp(mant, 53).astype(np.int64)
        offset = np.maximum(e.astype(np.int64) - 53 - base, 0)
        i, sh = offset // _LIMB, offset % _LIMB
        sign = np.where(v < 0, -1, 1)
        low = (m & ((np.int64(1) << (_LIMB - sh)) - 1)) << sh
        rest = m >> (_LIMB - sh)
        flat = limbs.reshape(-1)
        for j, part in enumerate((low, rest & ((1 << _LIMB) - 1), rest >> _LIMB)):
            flat[rows + np.minimum(i + j, n_limbs - 1)] += sign * part

    add(c)
    for k in range(k0, k1):
        add(prods.value(k))
    return _read_limbs(limbs, base)


def _term_range(prods: _Products, c: np.ndarray) -> tuple[int, int]:
    """Lowest bit weight and highest exponent any term can have (float64 frexp terms)."""

    def span(v: np.ndarray) -> tuple[int, int]:
        nz = v[(v != 0) & np.isfinite(v)]
        if nz.size == 0:
            return 0, 0
        _, e = np.frexp(nz)
        return int(e.min()) - 53, int(e.max())

    la, ha = span(prods.a)
    lb, hb = span(prods.b)
    lc, hc = span(c)
    return min(la + lb, lc), max(ha + hb, hc)


def _read_limbs(limbs: np.ndarray, base: int) -> np.ndarray:
    """Value of signed limb rows as float64, rounded to odd at 53 bits."""
    R, L = limbs.shape
    mask = (1 << _LIMB) - 1

    def normalise(x: np.ndarray) -> np.ndarray:
        x = x.copy()
        for j in range(L - 1):
            carry = x[:, j] >> _LIMB  # floor division: lower limbs end in [0, 2**30)
            x[:, j] &= mask
            x[:, j + 1] += carry
        return x

    x = normalise(limbs)
    negative = x[:, -1] < 0
    x = np.where(negative[:, None], normalise(-x), x)
    nonzero = x != 0
    top = L - 1 - np.argmax(nonzero[:, ::-1], axis=1)  # highest non-zero limb (>= 2 if any)
    top = np.maximum(top, 2)
    pick = lambda j: np.take_along_axis(x, j[:, None], axis=1)[:, 0]  # noqa: E731
    hi = pick(top) * (1 << _LIMB) + pick(top - 1)  # between 2**30 and 2**60
    _, e = np.frexp(hi.astype(np.float64))
    nbits = e - ((hi >> np.maximum(e - 1, 0)) == 0)  # frexp may round up to the next power
    nbits = np.where(hi == 0, 0, nbits)
    # Bring the top to exactly 53 bits: drop low bits (sticky) or pull in bits of limb top-2.
    drop = np.maximum(nbits - 53, 0)
    pull = np.maximum(53 - nbits, 0)
    third = pick(top - 2)
    sticky = (hi & ((np.int64(1) << drop) - 1)) != 0
    sticky |= (third & ((np.int64(1) << np.maximum(_LIMB - pull, 0)) - 1)) != 0
    below = np.cumsum(nonzero, axis=1)
    sticky |= np.take_along_axis(below, np.maximum(top - 3, 0)[:, None], axis=1)[:, 0].astype(bool) & (top >= 3)
    m = np.where(pull > 0, (hi << pull) | (third >> (_LIMB - pull)), hi >> drop)
    m |= sticky.astype(np.int64)  # round to odd
    q = base + _LIMB * (top - 1) + drop - pull
    value = m.astype(np.float64) * _pow2(np.clip(q, -1022, 1023))
    value = np.where(hi == 0, 0.0, value)
    return np.where(negative, -value, value)


def _run(prods: _Products, c: np.ndarray, acc: Accumulator, out: str) -> np.ndarray:
    """The model over all of K; float64 result values in the output format."""
    K = prods.K
    if acc.kind == "exact":
        value = _exact_sum(prods, 0, K, c)
        return _with_specials(prods, 0, K, c, _round(value, _target(out, "rne")) + 0.0)
    if acc.kind == "block":
        t = _target("fp16", "rne") if out == "fp16" else _target("fp32", acc.out_rounding, acc.out_frac_bits)
        c_emin = get_format("fp16" if out == "fp16" else "fp32").emin
        step = lambda k0, k1, c0: _run_block(prods, k0, k1, c0, acc, t, c_emin)  # noqa: E731
    else:
        t = _target(acc.acc_format, acc.acc_rounding, flush=acc.flush_subnormals)
        if acc.kind == "sequential":
            step = lambda k0, k1, c0: _run_sequential(prods, k0, k1, c0, t)  # noqa: E731
        else:
            step = lambda k0, k1, c0: _run_pairwise(prods, k0, k1, c0, acc, t)  # noqa: E731
    if acc.promote is None:
        result = step(0, K, c)
    else:
        # DeepSeek-V3: each interval starts from a zero accumulator in the unit; its result is
        # added to the fp32 register accumulator on the CUDA cores (RNE).
        fp32 = _target("fp32", "rne")
        result = _round(c, fp32)
        for s in range(0, K, acc.promote):
            partial = step(s, min(s + acc.promote, K), np.zeros(prods.R))
            finite = np.where(np.isfinite(result), result, 0.0)
            total = _add(finite, np.where(np.isfinite(partial), partial, 0.0), fp32)
            with np.errstate(invalid="ignore"):
                naive = result + partial
            result = np.where(np.isfinite(naive), total, naive)
    return result


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------
_OUTS = ("fp32", "fp16", "bf16")


def _real_array(x, what: str) -> np.ndarray:
    """x as an ndarray of real numbers (float, integer or ml_dtypes' narrow floats), unchanged."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ValueError(f"{what} is not a rectangular array of numbers ({exc})") from None
    kind = arr.dtype.kind
    narrow_float = kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None
    if kind in "fiu" or narrow_float:
        return arr
    what_kind = {"O": "Python objects (dtype object; convert to float64 or int64 first)",
                 "b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}
    raise TypeError(f"{what} must be an array of real numbers, got {what_kind.get(kind, f'dtype {arr.dtype}')}")


def _prepare(x, fmt: Format, what: str) -> np.ndarray:
    """x rounded (RNE) to the input format, as float64 (exact: these formats fit in fp32).

    The codec rounds integers beyond 2**53 once, from their exact value: a cast to float64
    first would round them twice.
    """
    return np.asarray(quantize(_real_array(x, what), fmt), dtype=np.float64)


def _check_out(out: str) -> str:
    name = get_format(out).name
    if name not in _OUTS:
        raise ValueError(f"out must be one of {', '.join(_OUTS)}, got {out!r}")
    return name


def _prepare_c(c, shape: tuple[int, ...], out: str) -> np.ndarray:
    """c as float64 of the result's shape, in fp32 (fp16 when the output is fp16: the unit's
    accumulator operand has the output's type)."""
    if c is None:
        return np.zeros(shape)
    arr = _real_array(c, "c")
    try:
        arr = np.broadcast_to(arr, shape)
    except ValueError:
        raise ValueError(f"c of shape {arr.shape} does not broadcast to the result shape {shape}") from None
    return np.asarray(quantize(arr, "fp16" if out == "fp16" else "fp32"), dtype=np.float64)


def _finish(result: np.ndarray, acc: Accumulator, out: str) -> np.ndarray:
    """Final conversion to the output format (float32 array holding its values)."""
    if acc.kind in ("sequential", "pairwise") and get_format(acc.acc_format).name != out:
        result = quantize(result, out)
    elif out == "bf16":
        result = quantize(result, "bf16")  # block models: fp32 result, RNE epilogue to bf16
    result = np.where(np.isnan(result), np.nan, result)
    return result.astype(np.float32)


def dot(a, b, c=None, *, inputs, accumulator, out: str = "fp32") -> np.ndarray:
    """Batched dot products over the last axis: d = sum_k a[..., k] * b[..., k] + c.

    a and b (shape (..., K)) are quantized to ``inputs`` with RNE first (a no-op for values
    already in the format); c (shape (...), default 0) is taken in fp32, or in fp16 when
    ``out="fp16"`` (rounded RNE, as the unit's accumulator operand has the output's type).
    Returns float32 values that are exactly in the ``out`` format.

    >>> dot([[1.0, 1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0, 1.0]], [1 + 2**-22 + 2**-23],
    ...     inputs="fp16", accumulator="v100").tolist()
    [5.0]
    """
    fa, fb = _input_formats(inputs)
    acc = get_accumulator(accumulator, (fa, fb))
    out = _check_out(out)
    a_arr, b_arr = _prepare(a, fa, "a"), _prepare(b, fb, "b")
    if a_arr.ndim == 0 or a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must have the same shape (..., K), got {a_arr.shape} and {b_arr.shape}")
    shape = a_arr.shape[:-1]
    K = a_arr.shape[-1]
    R = math.prod(shape)  # explicit: reshape(-1, 0) cannot infer the rows when K = 0
    c_arr = _prepare_c(c, shape, out).reshape(R)
    prods = _Products(a_arr.reshape(R, K), b_arr.reshape(R, K), fa, fb, False, acc.flush_subnormals)
    return _finish(_run(prods, c_arr, acc, out), acc, out).reshape(shape)


def _chunk_rows(acc: Accumulator, K: int, N: int) -> int:
    """Rows of A per pass: about 2**16 output elements (each (R,) array stays in cache), fewer
    when the model holds many products per element at once (pairwise trees, long limbs)."""
    held = 1
    if acc.kind == "pairwise":
        held = max(K if acc.block is None else acc.block, 1)
    elif acc.kind == "exact":
        held = 16  # limbs of the long accumulator
    return max(1, (1 << 16) // max(1, N) // held if held > 1 else (1 << 16) // max(1, N))


def gemm(a, b, c=None, *, inputs, accumulator, out: str = "fp32") -> np.ndarray:
    """C = A @ B (+ C) as the chosen matrix unit computes it.

    A (M, K) and B (K, N) are quantized to ``inputs`` (one format or a pair: format of A,
    format of B) with RNE first; fp32 operands meant as TF32 on hardware are truncated (RZ),
    so quantize them with ``rounding="rz"`` yourself to mimic that. ``c`` broadcasts to
    (M, N). ``accumulator`` is a name (see :func:`get_accumulator`) or an Accumulator;
    ``out`` is "fp32", "fp16" or "bf16" (bf16: the fp32 result rounded RNE, as an epilogue
    would). Returns a float32 (M, N) array of values in the ``out`` format.

    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]]); B = np.array([[0.5, 0.0], [0.25, 1.0]])
    >>> gemm(A, B, inputs="fp16", accumulator="h100").tolist()
    [[1.0, 2.0], [2.5, 4.0]]
    """
    fa, fb = _input_formats(inputs)
    acc = get_accumulator(accumulator, (fa, fb))
    out = _check_out(out)
    A, B = _prepare(a, fa, "a"), _prepare(b, fb, "b")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"gemm needs A (M, K) and B (K, N), got shapes {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    C = _prepare_c(c, (M, N), out)
    result = np.empty((M, N), dtype=np.float32)
    # Rows per chunk: keep one block of products (or all of K for trees) near 2**23 values.
    rows = _chunk_rows(acc, K, N)
    for i in range(0, M, rows):
        prods = _Products(A[i : i + rows], B, fa, fb, True, acc.flush_subnormals)
        part = _finish(_run(prods, C[i : i + rows].reshape(-1), acc, out), acc, out)
        result[i : i + rows] = part.reshape(min(rows, M - i), N)  # not -1: N may be 0
    return result


# ---------------------------------------------------------------------------------------------
# Error of an emulated GEMM (DeepSeek-V3's experiment)
# ---------------------------------------------------------------------------------------------
def gemm_error(
    inputs: str | Sequence[str] = "e4m3",
    accumulator: str | Accumulator = "h100",
    k: int = 4096,
    *,
    m: int = 64,
    n: int = 64,
    promote: int | None = None,
    seed: int = 0,
    distribution: str = "uniform",
) -> dict:
    """Relative error of the emulated GEMM against the exact product, for random matrices.

    A (m, k) and B (k, n) are drawn (``"uniform"`` on [0, 1), so no cancellation hides the
    loss; or ``"normal"``), quantized to ``inputs`` (RNE); the reference is the exact product
    (rounded to odd at float64 precision). Returns the elementwise relative error's max and
    mean (over the entries whose exact value is not zero) and the normwise error
    ||C - C_exact||_F / ||C_exact||_F.

    >>> r = gemm_error("e4m3", "h100", 512, m=4, n=4)
    >>> 0 < r["max"] < 0.01
    True

    The sizes are bounded (:data:`GEMM_ERROR_LIMITS`) because the matrices are drawn from
    them: an absurd ``k`` is refused before anything is allocated.
    """
    _check_gemm_error_sizes(m, k, n)
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if distribution not in ("uniform", "normal"):
        raise ValueError(f"distribution must be 'uniform' or 'normal', got {distribution!r}")
    fa, fb = _input_formats(inputs)
    acc = get_accumulator(accumulator, (fa, fb))
    if promote is not None:
        acc = dataclasses.replace(acc, promote=promote, name=f"{acc.name}+promote{promote}")
    rng = np.random.default_rng(seed)
    draw = rng.random if distribution == "uniform" else rng.standard_normal
    A = quantize(draw((m, k)), fa)
    B = quantize(draw((k, n)), fb)
    got = gemm(A, B, inputs=(fa, fb), accumulator=acc).astype(np.float64)
    exact = np.empty((m, n))
    rows = _chunk_rows(get_accumulator("exact"), k, n)
    for i in range(0, m, rows):
        prods = _Products(A[i : i + rows], B, fa, fb, True, False)
        exact[i : i + rows] = _exact_sum(prods, 0, k, np.zeros(prods.R)).reshape(-1, n)
    nz = exact != 0
    rel = np.abs(got[nz] - exact[nz]) / np.abs(exact[nz])
    return {
        "accumulator": acc.name,
        "inputs": f"{fa.name}" if fa == fb else f"{fa.name}x{fb.name}",
        "k": k,
        "shape": (m, n),
        "promote": promote,
        "max": float(rel.max()) if rel.size else 0.0,
        "mean": float(rel.mean()) if rel.size else 0.0,
        "normwise": _normwise(got, exact),
    }


# Bounds of gemm_error's sizes: each drawn matrix holds at most MAX_ELEMENTS values (float64,
# 512 MiB) and the emulated GEMM at most MAX_PRODUCTS products (about 2**24 per second).
GEMM_ERROR_LIMITS = {"max_elements": 2**26, "max_products": 2**32}


def _check_gemm_error_sizes(m: object, k: object, n: object) -> None:
    """m, k, n positive integers whose matrices and product count stay within the limits."""
    for name, value in (("m", m), ("k", k), ("n", n)):
        if not _is_int(value):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    limit = GEMM_ERROR_LIMITS["max_elements"]
    for what, size in (("A (m x k)", m * k), ("B (k x n)", k * n), ("C (m x n)", m * n)):
        if size > limit:
            raise ValueError(f"{what} would hold {size} values; the limit is {limit} (2**26)")
    if m * n * k > GEMM_ERROR_LIMITS["max_products"]:
        raise ValueError(
            f"m x n x k = {m * n * k} products is too many to emulate; the limit is "
            f"{GEMM_ERROR_LIMITS['max_products']} (2**32, several minutes)"
        )


def _normwise(got: np.ndarray, exact: np.ndarray) -> float:
    """||got - exact||_F / ||exact||_F; Inf when the exact product is zero and got is not."""
    diff = float(np.linalg.norm(got - exact))
    norm = float(np.linalg.norm(exact))
    if norm == 0:
        return 0.0 if diff == 0 else math.inf
    return diff / norm


def cmd_gemm_error(args: argparse.Namespace) -> int:
    """Print the relative error of an emulated GEMM against the exact product."""
    inputs = tuple(args.inputs.split(",")) if "," in args.inputs else args.inputs
    r = gemm_error(
        inputs, args.accumulator, args.k, m=args.m, n=args.n, promote=args.promote,
        seed=args.seed, distribution=args.distribution,
    )
    how = f"promoted to fp32 every {args.promote}" if args.promote else "no promotion"
    print(
        f"{r['accumulator']}: {r['shape'][0]}x{args.k} @ {args.k}x{r['shape'][1]} {r['inputs']} "
        f"({args.distribution} inputs, {how})"
    )
    print(f"relative error vs exact: max {r['max']:.3e} ({100 * r['max']:.3f}%), mean {r['mean']:.3e}")
    print(f"normwise ||C - C_exact||_F / ||C_exact||_F: {r['normwise']:.3e}")
    return 0


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fpemu gemm-error``."""
    p = subparsers.add_parser("gemm-error", help="relative error of an emulated GEMM vs the exact product")
    p.add_argument("--inputs", default="e4m3", help="input format, or two for A,B: e4m3,e5m2 (default e4m3)")
    p.add_argument("--accumulator", default="h100", help="accumulator model (default h100)")
    p.add_argument("--k", type=int, default=4096, help="inner dimension K (default 4096)")
    p.add_argument("--m", type=int, default=64, help="rows of A (default 64)")
    p.add_argument("--n", type=int, default=64, help="columns of B (default 64)")
    p.add_argument("--promote", type=int, default=None, help="promote to an fp32 accumulator every N products")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--distribution", default="uniform", choices=("uniform", "normal"), help="input distribution")
    p.set_defaults(func=cmd_gemm_error)
