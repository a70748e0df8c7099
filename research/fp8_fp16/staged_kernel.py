"""The arithmetic of a :class:`~research.fp8_fp16.staged.Staged` model, vectorized over rows.

Everything is exact in float64: products of inputs of at most 24 bits, power-of-two scalings,
truncation to integers (int64) and sums of at most a few dozen terms of at most 42 bits. An
"exact" stage keeps :data:`EXACT_BITS` fraction bits below its largest term, more than any FP8
or fp16 experiment spans. Results are fp16 values as float64 (a zero result is +0).

>>> from research.fp8_fp16.staged import NAMED
>>> a = b = np.array([[1.0, 0, 2.0**-6, 0]])        # products 1 and 2^-12; c = 2^-11
>>> staged_dot(NAMED["exact-rne"], a, b, [2.0**-11], "e4m3").tolist()   # 1 + 3 * 2^-12: up
[1.0009765625]
>>> staged_dot(NAMED["hopper-fp8-fp16"], a, b, [2.0**-11], "e4m3").tolist()  # 1 (+2^-12 lost), then a tie
[1.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fpemu.arith import NO_EXPONENT, aligned_sum, exponent
from fpemu.formats import get_format

from .staged import MIDS, Staged, order_of

EXACT_BITS = 40


def round_to(v: np.ndarray, mid: str, mode: str) -> np.ndarray:
    """v rounded to a format of :data:`~research.fp8_fp16.staged.MIDS` ("rne" or "rz"), IEEE overflow
    (RNE to +-Inf, RZ to the largest finite value); "exact" leaves v as it is.

    >>> round_to(np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11, 65520.0]), "fp16", "rne").tolist()
    [1.0, 1.001953125, inf]
    """
    if MIDS[mid] is None:
        return v
    bits, emin, top = MIDS[mid]
    _, e = np.frexp(v)
    ulp = np.ldexp(1.0, np.maximum(e - 1, emin) - (bits - 1))
    r = (np.rint if mode == "rne" else np.trunc)(v / ulp) * ulp
    big = np.abs(r) > top
    if big.any():
        r = np.where(big, np.copysign(np.inf if mode == "rne" else top, v), r)
    return r + 0.0  # -0 -> +0


def fused(values: list, exps: list, F, cut: str) -> np.ndarray:
    """One fused sum: (R,) or (R, n) terms aligned to their largest exponent, each cut to F
    (an int or one per row) fraction bits below it toward zero ("rz") or down ("rd"), added
    exactly (:func:`fpemu.arith.aligned_sum`); where a term is Inf or NaN, the IEEE sum of those
    terms (the finite ones cannot change it)."""
    # k-major, one term a contiguous row, as aligned_sum takes them one at a time
    vals = np.concatenate([np.reshape(v, (v.shape[0], -1)).T for v in values])
    ex = np.concatenate([np.reshape(e, (e.shape[0], -1)).T for e in exps])
    special = ~np.isfinite(vals)
    total, _ = aligned_sum(np.where(special, 0.0, vals), ex, F, cut)
    rows = special.any(axis=0)
    if rows.any():  # summed along each row's terms, in the order of the terms
        with np.errstate(invalid="ignore"):
            total[rows] = np.ascontiguousarray(np.where(special[:, rows], vals[:, rows], 0.0).T).sum(axis=1)
    return total


@dataclass(frozen=True)
class Operands:
    """One dump's rows, prepared once: products, their exponents, c (fp16 and as given)."""

    p: np.ndarray  # (R, K) exact products
    ep: np.ndarray  # (R, K) e_a + e_b (NO_EXPONENT for zero products)
    c: dict  # "fp16"/"fp32" -> (R,) c values
    ec: dict  # their exponents

    @property
    def K(self) -> int:
        return self.p.shape[1]


def prepare(a, b, c, inputs: str) -> Operands:
    """Operands of rows a, b (R, K) and c (R,) in the input format ``inputs``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"a and b must be (R, K) arrays of one shape, got {a.shape} and {b.shape}")
    c = np.broadcast_to(np.asarray(c, dtype=np.float64), a.shape[:1])
    emin = get_format(inputs).emin
    p = a * b
    ep = np.where(p == 0, NO_EXPONENT, exponent(a, emin) + exponent(b, emin))
    c16 = round_to(c.astype(np.float16).astype(np.float64), "fp16", "rne")  # numpy's cast is RNE
    cs = {"fp16": c16, "fp32": c.astype(np.float32).astype(np.float64)}
    return Operands(p, ep, cs, {"fp16": exponent(c16, -14), "fp32": exponent(cs["fp32"], -126)})


def _mid_params(mids: list, modes: list, R: int) -> tuple:
    """Per-row (bits, emin, largest finite, RNE?, exact?) for candidates' rounding choices."""
    spec = [MIDS[m] or (53, -1022, np.inf) for m in mids]
    per = lambda xs: np.repeat(np.array(xs), R)  # noqa: E731
    return (per([s[0] for s in spec]), per([s[1] for s in spec]), per([s[2] for s in spec]),
            per([mode == "rne" for mode in modes]), per([MIDS[m] is None for m in mids]))  # fmt: skip


def _round_rows(v: np.ndarray, params: tuple) -> np.ndarray:
    """round_to with per-row parameters (see _mid_params)."""
    bits, emin, top, rne, exact = params
    _, e = np.frexp(v)
    ulp = np.ldexp(1.0, np.maximum(e - 1, emin) - (bits - 1))
    y = v / ulp
    r = np.where(rne, np.rint(y), np.trunc(y)) * ulp
    r = np.where(np.abs(r) > top, np.copysign(np.where(rne, np.inf, top), v), r)
    return np.where(exact, v, r) + 0.0


def evaluate_many(models: list, ops: Operands) -> np.ndarray:
    """(len(models), R) fp16 results. Models that share their structure (order, stage sizes,
    term cut, where c enters and its format) run in one call with their other parameters
    (F, stage rounding, conversion, final rounding) as per-row arrays."""
    R, K = ops.p.shape
    out = np.empty((len(models), R))
    groups: dict = {}
    for i, m in enumerate(models):
        groups.setdefault((m.order, min(m.stage, K), m.term_rounding, m.c_at, m.c_format), []).append(i)
    per_call = max(1, (1 << 20) // max(1, R * K))
    for (order, stage, cut, c_at, c_format), idx in groups.items():
        for s in range(0, len(idx), per_call):
            part = idx[s : s + per_call]
            out[part] = _run(
                [models[i] for i in part], ops, order, stage, cut, c_at, c_format).reshape(len(part), R)
    return out


def _run(ms: list, ops: Operands, order: str, stage: int, cut: str, c_at: str, c_format: str) -> np.ndarray:
    n = len(ms)
    R, K = ops.p.shape
    tile = lambda x: np.tile(x, (n,) + (1,) * (x.ndim - 1))  # noqa: E731
    p, ep = tile(ops.p[:, order_of(order, K)]), tile(ops.ep[:, order_of(order, K)])
    c, ec = tile(ops.c[c_format]), tile(ops.ec[c_format])
    F = np.repeat(np.array([EXACT_BITS if m.frac_bits is None else m.frac_bits for m in ms]), R)
    mid = _mid_params([m.mid for m in ms], [m.mid_rounding for m in ms], R)
    mid_emin = np.where(mid[4], -1022, mid[1])
    acc = np.zeros(n * R)
    starts = list(range(0, K, stage)) or [0]
    for i, s in enumerate(starts):
        vals, exps = [acc, p[:, s : s + stage]], [exponent(acc, mid_emin), ep[:, s : s + stage]]
        if (c_at == "first" and i == 0) or (c_at == "last" and i == len(starts) - 1):
            vals.append(c)
            exps.append(ec)
        acc = _round_rows(fused(vals, exps, F, cut), mid)
    fp16 = lambda modes: _mid_params(["fp16"] * n, modes, R)  # noqa: E731
    if c_at != "after":
        return _round_rows(acc, fp16([m.final for m in ms]))
    conv = _round_rows(acc, fp16([m.convert or "rne" for m in ms]))
    acc = np.where(np.repeat(np.array([m.convert is not None for m in ms]), R), conv, acc)
    with np.errstate(invalid="ignore"):  # Inf + -Inf is NaN, as the hardware has it
        total = acc + c
    epilogue = np.repeat(np.array([m.c_add == "fp32" for m in ms]), R)
    if epilogue.any():
        total = np.where(epilogue, _round_rows(total, _mid_params(["fp32"] * n, ["rne"] * n, R)), total)
    return _round_rows(total, fp16([m.final for m in ms]))


def evaluate(m: Staged, ops: Operands) -> np.ndarray:
    """The model's fp16 results (float64 values) on prepared operands."""
    return evaluate_many([m], ops)[0]


def staged_dot(m: Staged, a, b, c, inputs: str) -> np.ndarray:
    """fp16 results of ``sum_k a[:, k] * b[:, k] + c`` through model ``m`` (float64 values)."""
    return evaluate(m, prepare(a, b, c, inputs))


def fp16_bits_as_fp32(values: np.ndarray) -> np.ndarray:
    """fp16 values as the fp32 bit patterns a dump's d_fp16 column holds."""
    return np.asarray(values, dtype=np.float64).astype(np.float32).view(np.uint32)
