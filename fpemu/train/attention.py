"""FP8 attention, emulated: ``softmax(Q K^T / sqrt(d)) V`` with Q, K, V and P in FP8 and both
GEMMs through a matrix unit (:func:`fpemu.gemm`).

The recipe is the FP8 forward pass of FlashAttention-3 and TransformerEngine, written for whole
tensors (one query block, all keys at once):

1. Q, K and V are cast to E4M3 with one per-tensor scale each (TransformerEngine's rule,
   ``448 / amax``: :func:`fpemu.scaling.scaled_cast`, saturating).
2. ``S = Q K^T`` on the unit, times both inverse scales and ``1/sqrt(d)`` in float32.
3. ``P = exp(S - rowmax)`` (so ``P <= 1``), computed in float64 and rounded to float32; its row
   sums ``l`` are taken from that float32 P before its cast, as FlashAttention sums them.
4. P is cast to E4M3 with its own per-tensor scale; ``O = P V`` on the unit, times P's and V's
   inverse scales, divided by ``l`` (float32).

``promote=N`` is the two-level accumulation of DeepGEMM and flash-attention PR #2250: every N
products the unit's partial sum (from a zero accumulator) joins an fp32 accumulator with RNE
(:attr:`fpemu.accumulator.DenseModel.promote`). Not modelled: the online softmax's rescaling
across key blocks (a real kernel rescales its running O as the row maximum grows; here the
maximum is known first), and the exp of any particular GPU (float64 here).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> q, k, v = rng.standard_normal((3, 64, 16))
>>> out = fp8_attention(q, k, v, accumulator="h100")
>>> out.shape, out.dtype
((64, 16), dtype('float32'))
>>> ref = attention_reference(q, k, v)
>>> bool(np.abs(out - ref).max() < 0.1)  # E4M3 casts: 3 fraction bits
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..accumulator import Accumulator, gemm, get_accumulator
from ..arguments import as_array
from ..scaling import ScaledTensor, scaled_cast

__all__ = ["fp8_attention", "attention_reference", "scaled_gemm", "unit_for"]


def unit_for(accumulator: str | Accumulator, fmt: str, promote: int | None = None) -> Accumulator:
    """The matrix unit's model for ``fmt`` operands, with promotion every ``promote`` products
    (None: the unit as it is).

    >>> unit_for("h100", "e4m3", promote=128).promote, unit_for("h100", "e4m3").frac_bits
    (128, 13)
    """
    acc = get_accumulator(accumulator, fmt)
    return acc if promote is None else dataclasses.replace(acc, name=f"{acc.name} (promote {promote})", promote=promote)


def scaled_gemm(a: ScaledTensor, b: ScaledTensor, accumulator: Accumulator) -> np.ndarray:
    """``A @ B`` of two scaled casts on the unit, times both inverse scales (float32), as an
    FP8 GEMM's epilogue applies them."""
    fmt = (a.format.name, b.format.name)
    pa, pb = a.dequantize() * a.scale, b.dequantize() * b.scale  # the codes' own values, exactly
    acc = gemm(pa, pb, inputs=fmt, accumulator=accumulator)
    return (acc * (a.scale_inv * b.scale_inv).astype(np.float32)).astype(np.float32)


def _checked(q: Any, k: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v = (as_array(x, name).astype(np.float64) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2:
        raise ValueError(f"q, k and v are 2-D (rows, head dim), got {q.ndim}, {k.ndim} and {v.ndim} dimensions")
    if q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(f"q (Lq, d), k (L, d) and v (L, dv) must agree, got {q.shape}, {k.shape} and {v.shape}")
    if not all(np.isfinite(x).all() for x in (q, k, v)):
        raise ValueError("q, k and v must be finite")
    return q, k, v


def softmax_numerator(s: np.ndarray) -> np.ndarray:
    """``exp(s - rowmax(s))`` in float64, rounded to float32 (each entry in (0, 1])."""
    s = np.asarray(s, dtype=np.float64)
    return np.exp(s - s.max(axis=1, keepdims=True)).astype(np.float32)


def fp8_attention(q: Any, k: Any, v: Any, *, fmt: str = "e4m3", accumulator: str | Accumulator = "h100",
                  promote: int | None = None) -> np.ndarray:  # fmt: skip
    """``softmax(q k^T / sqrt(d)) v`` with q, k, v and P cast to ``fmt`` (per-tensor scales)
    and both GEMMs on ``accumulator`` (a name or a model), promoted to fp32 every ``promote``
    products if given. q (Lq, d), k (L, d), v (L, dv); returns float32 (Lq, dv)."""
    q, k, v = _checked(q, k, v)
    unit = unit_for(accumulator, fmt, promote)
    qs, ks, vs = (scaled_cast(x, fmt) for x in (q, k, v))
    kt = ScaledTensor(ks.codes.T, ks.scale, ks.scale_inv, ks.format, ks.granularity)
    s = scaled_gemm(qs, kt, unit) * np.float32(1 / np.sqrt(q.shape[1]))
    p = softmax_numerator(s)
    rowsum = p.sum(axis=1, dtype=np.float64).astype(np.float32)
    o = scaled_gemm(scaled_cast(p, fmt), vs, unit)
    return (o / rowsum[:, None]).astype(np.float32)


def attention_reference(q: Any, k: Any, v: Any) -> np.ndarray:
    """``softmax(q k^T / sqrt(d)) v`` in float64, nothing quantized."""
    q, k, v = _checked(q, k, v)
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p @ v) / p.sum(axis=1, keepdims=True)
