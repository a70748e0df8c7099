"""Precision policies: how a GEMM's operands and outputs are cast in each precision (FP32,
FP16/BF16, TransformerEngine-style FP8, block-scaled MXFP8/NVFP4), and :func:`make_policy`."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..formats import Format, get_format
from .accumulate import accumulator_matmul
from .checks import check_int
from .recipes import CurrentScaling, DelayedScaling, NoScaling, TensorScale, as_fp8_recipe, fp8_cast, recipe_name
from .rounders import rounder
from .stats import CastStats


def _default_matmul(a: np.ndarray, b: np.ndarray, fa: Format | None = None, fb: Format | None = None) -> np.ndarray:
    """FP32 matmul of operands already rounded to the low formats: exact products (they fit in
    FP32) and FP32 sums."""
    return a @ b


def _accumulator_matmul(name: str, *formats: Format) -> Callable[..., np.ndarray]:
    """A GEMM through an accumulator model of :mod:`fpemu.accumulator`."""
    return accumulator_matmul(name, *formats)


class _FP32Policy:
    """Plain FP32: every cast is the identity, every GEMM a float32 matmul."""

    name = "fp32"
    low: Format | None = None

    def __init__(self) -> None:
        self.matmul = _default_matmul

    def cast_fwd(self, x: np.ndarray, slot: tuple, record: bool = True) -> tuple[np.ndarray, None]:
        return x, None

    def cast_grad(self, g: np.ndarray, slot: tuple, stats: CastStats, kind: str = "act") -> tuple[np.ndarray, None]:
        return g, None

    def gemm(self, a: np.ndarray, sa, b: np.ndarray, sb) -> np.ndarray:
        return self.matmul(a, b)

    def bias_grad(self, g: np.ndarray, qd: np.ndarray, sd) -> np.ndarray:
        """The bias gradient from the gradient ``g`` before its cast and ``qd``, ``sd`` after
        it: here the sum of the cast copy (autocast's ``addmm`` sums the FP16 dY)."""
        return qd.sum(axis=0)

    def cast_bias(self, b: np.ndarray) -> np.ndarray:
        return b

    def out_fwd(self, y: np.ndarray) -> np.ndarray:
        return y

    def out_grad(self, y: np.ndarray, stats: CastStats, kind: str = "weight") -> np.ndarray:
        return y

    def end_step(self) -> None:
        pass


class _LowPolicy(_FP32Policy):
    """FP16/BF16 mixed precision: GEMM inputs and outputs in the low format, FP32 elsewhere."""

    def __init__(self, fmt: str, accumulator: str | None = None) -> None:
        self.low = get_format(fmt)
        self.name = self.low.name
        self.round = rounder(self.low)
        self.matmul = _accumulator_matmul(accumulator, self.low) if accumulator is not None else _default_matmul

    def gemm(self, a, sa, b, sb):
        return self.matmul(a, b, self.low, self.low)

    def cast_fwd(self, x, slot, record=True):
        if slot[0] == "x" and slot[1] > 0:
            return x, None  # a hidden activation: out_fwd already rounded it (ReLU keeps that)
        return self.round(x), None

    def cast_grad(self, g, slot, stats, kind="act"):
        q = self.round(g)
        stats.add(g, q, kind=kind)
        return q, None

    def cast_bias(self, b):
        return self.round(b)  # autocast casts the bias too; the GEMM adds it before rounding

    def out_fwd(self, y):
        return self.round(y)

    def out_grad(self, y, stats, kind="weight"):
        q = self.round(y)
        stats.add(y, q, kind=kind)
        return q


class _FP8Policy(_FP32Policy):
    """TransformerEngine-style FP8: scaled, saturating casts of GEMM inputs; FP32 outputs."""

    def __init__(self, recipe: DelayedScaling | CurrentScaling | NoScaling, accumulator: str | None = None) -> None:
        self.name = "fp8"
        self.recipe = recipe
        # The run's label names the recipe where it is not the default (delayed scaling).
        self.variant = None if isinstance(recipe, DelayedScaling) else recipe_name(recipe)
        self.fwd = get_format(recipe.fwd_format)
        self.bwd = get_format(recipe.bwd_format)
        self.low = self.bwd  # the format gradients are cast to
        self.states: dict[tuple, TensorScale] = {}
        # FP8 GEMMs accumulate in FP32 (an accumulator model may replace that).
        self.matmul = (
            _accumulator_matmul(accumulator, self.fwd, self.bwd) if accumulator is not None else _default_matmul
        )

    def _state(self, slot: tuple, fmt: Format) -> TensorScale:
        if slot not in self.states:
            self.states[slot] = TensorScale(fmt.max, self.recipe)
        return self.states[slot]

    def cast_fwd(self, x, slot, record=True):
        q, inv = fp8_cast(x, self.fwd, self._state(slot, self.fwd).scale_for(x, record))
        return q, (inv, self.fwd)

    def cast_grad(self, g, slot, stats, kind="act"):
        s = self._state(slot, self.bwd).scale_for(g)
        q, inv = fp8_cast(g, self.bwd, s)
        stats.add(g, q, overflowed=np.abs(g * s) > np.float32(self.bwd.max), kind=kind)
        return q, (inv, self.bwd)

    def gemm(self, a, sa, b, sb):
        # Dequantize the FP32 accumulator with both inverse scales, as the cuBLASLt FP8 GEMM does.
        return self.matmul(a, b, sa[1], sb[1]) * sa[0] * sb[0]

    def bias_grad(self, g, qd, sd):
        # From the unquantized dY, as TransformerEngine's Linear computes it (bgrad_quantize,
        # transformer_engine/pytorch/csrc/extensions/bias.cpp: dbias summed from the
        # high-precision grad_output by the kernel that casts it to FP8), and as
        # gpt/linears.py's LinearFP8 does.
        return g.sum(axis=0)

    def end_step(self) -> None:
        for state in self.states.values():
            state.update()


class _BlockPolicy(_FP32Policy):
    """Block-scaled GEMM operands (:mod:`fpemu.mx`), each quantized along the GEMM's K axis.

    * ``"mxfp8"``: TransformerEngine's ``MXFP8BlockScaling``: every operand MXFP8 E4M3, blocks of
      32 along K, E8M0 scales with NVIDIA's ``rceil`` rule.
    * ``"nvfp4"``: NVFP4 (E2M1, blocks of 16, UE4M3 block scale and FP32 tensor scale, TE
      arithmetic); gradients stochastically rounded as in TE's recipe. Simplified: 1-D blocks
      for weights too and no random Hadamard transform.

    A tensor used by two GEMMs is quantized twice, once along each K axis (as TE keeps rowwise
    and columnwise copies). The dequantized operands are multiplied in FP32 (products exact).
    """

    def __init__(self, name: str, seed: int = 0) -> None:
        from .. import mx

        self.mx = mx
        self.name = name
        self.block = "mxfp8_e4m3" if name == "mxfp8" else "nvfp4"
        self.low = get_format("e4m3" if name == "mxfp8" else "e2m1")
        self.rng = np.random.default_rng([seed, 0x4F4])
        self.matmul = _default_matmul

    def _fq(self, x: np.ndarray, axis: int, grad: bool) -> np.ndarray:
        kw: dict = {"scale_rounding": "rceil"} if self.name == "mxfp8" else {}
        if grad and self.name == "nvfp4":
            kw.update(rounding="stochastic", rng=self.rng)
        q = self.mx.quantize(x, self.block, axis=axis, **kw)
        return np.asarray(q.dequantize(), dtype=np.float32)

    def cast_fwd(self, x, slot, record=True):
        return x, False  # quantized inside gemm, along the K axis of each use

    def cast_grad(self, g, slot, stats, kind="act"):
        stats.add(g, self._fq(g, 1, True), kind=kind)  # the dgrad copy: where underflow is counted
        return g, True

    def gemm(self, a, sa, b, sb):
        return self._fq(a, 1, sa) @ self._fq(b, 0, sb)


def _mx_available() -> bool:
    try:
        from .. import mx  # noqa: F401
    except ImportError:
        return False
    return True


PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4")


def make_policy(
    precision: str,
    accumulator: str | None = None,
    fp8_recipe: DelayedScaling | CurrentScaling | str | None = None,
    seed: int = 0,
):
    """The policy object of a precision name (``accumulator``: None for the default FP32 sums,
    or a model of :mod:`fpemu.accumulator`; ``fp8_recipe`` as in :func:`run`)."""
    if not isinstance(precision, str):
        raise TypeError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    recipe = as_fp8_recipe(fp8_recipe)
    seed = check_int("seed", seed, 0)
    p = precision.strip().lower()
    if p not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    if accumulator is not None and p in ("fp32", "mxfp8", "nvfp4"):
        raise ValueError(f"--accumulator applies to fp16, bf16 and fp8, not {p}"
                         + (" (block-scaled GEMMs)" if p != "fp32" else ""))
    if p == "fp32":
        return _FP32Policy()
    if p in ("fp16", "bf16"):
        return _LowPolicy(p, accumulator)
    if p == "fp8":
        return _FP8Policy(recipe, accumulator)
    if not _mx_available():
        raise ValueError(f"{p} needs fpemu.mx, which is not available")
    return _BlockPolicy(p, seed)
