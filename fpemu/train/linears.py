"""A linear layer's three GEMMs — forward ``Y = X W + b``, dgrad ``dX = dY W^T``, wgrad
``dW = X^T dY`` — in FP32, in FP16/BF16 as autocast runs them, and in TransformerEngine's
per-tensor FP8: the one set of layers both networks use (the MLP through
:func:`fpemu.train.make_policy`, the transformer through its precision policy); block-scaled
MXFP8/NVFP4 layers are in :mod:`.block_linears`.

Every class follows :class:`Linear`: :meth:`~Linear.fwd` returns the output and a context the
backward needs. ``stats`` (:class:`fpemu.train.stats.CastStats`, or None) counts every gradient
value rounded to a low format: ``kind`` is ``"loss"`` for the logits' gradient, ``"act"`` for
other activation gradients, and ``"weight"``, ``"bias"`` for what the GEMMs write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from ..formats import Format, get_format
from .recipes import CurrentScaling, DelayedScaling, NoScaling, TensorScale, fp8_cast
from .rounders import rounder


class Linear(Protocol):
    """What a network asks of a linear layer.

    * ``fwd(x, w, b, record)``: ``(Y, ctx)``; ``b`` may be None; ``record=False`` (an
      evaluation pass) leaves scaling state such as FP8's amax history alone;
    * ``bwd(dy, ctx, stats, kind, need_dx)``: ``(dX, dW, db)``, ``kind`` the CastStats kind of
      ``dy``; ``need_dx=False`` skips dgrad (an input layer: dX is None);
    * ``end_step()``: the end of a training step (delayed scaling's update);
    * ``name``, ``low``: the precision's name and the format gradients are cast to (None: FP32).
    """

    name: str
    low: Format | None

    def fwd(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, record: bool = True) -> tuple[np.ndarray, object]: ...

    def bwd(self, dy: np.ndarray, ctx, stats, kind: str = "act",
            need_dx: bool = True) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]: ...

    def end_step(self) -> None: ...


@dataclass(frozen=True)
class OperandView:
    """One operand of a forward GEMM as a layer cast it, for reports: ``values`` (FP32, real
    units: the dequantized operand), ``saturated`` (where the value the cast rounds lay beyond
    the format's range: :func:`beyond`) and ``scale`` (None where the
    cast has no scale; the per-tensor ``scale_inv`` the GEMM multiplies back; the scale of
    each element's block)."""

    values: np.ndarray
    saturated: np.ndarray
    scale: np.ndarray | np.float32 | None = None


def beyond(t: np.ndarray, fmt: Format, scale: np.float32 | None = None) -> np.ndarray:
    """Where ``t`` (times ``scale`` in FP32, as a scaled cast computes it) is finite and rounds
    past ``fmt``'s largest finite magnitude under RNE: beyond the midpoint above it, or on that
    midpoint where the largest value's last bit is 1. A cast saturates these or overflows.

    >>> e4m3 = get_format("e4m3")  # 448, then the midpoint 464 rounds to even: 448
    >>> beyond(np.float32([448.0, 464.0, -465.0, np.inf, np.nan]), e4m3).tolist()
    [False, False, True, False, False]
    >>> beyond(np.float32([7.0, 6.9]), get_format("e2m1")).tolist()  # 6 is odd: 7 rounds to 8
    [True, False]
    """
    t = np.asarray(t, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.abs(t if scale is None else t * scale).astype(np.float64)
    limit = fmt.max + 2.0 ** (fmt.emax - fmt.mantissa_bits - 1)
    return np.isfinite(t) & ((a > limit) | ((a == limit) & bool(fmt.max_code & 1)))


def _plain(a: np.ndarray, b: np.ndarray, fa: Format | None = None, fb: Format | None = None) -> np.ndarray:
    """The default GEMM of operands already in their formats: exact products (they fit in FP32)
    and FP32 sums."""
    return a @ b


class LinearFP32:
    """Plain arithmetic in the inputs' dtype (FP32; FP64 in the gradient tests).

    >>> lin = LinearFP32()
    >>> y, ctx = lin.fwd(np.ones((2, 3)), np.ones((3, 4)), np.zeros(4))
    >>> dx, dw, db = lin.bwd(np.ones((2, 4)), ctx, None)
    >>> y[0].tolist(), dx[0].tolist(), dw.shape, db.tolist()
    ([3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0], (3, 4), [2.0, 2.0, 2.0, 2.0])
    >>> lin.bwd(np.ones((2, 4)), ctx, None, need_dx=False)[0] is None
    True
    """

    name = "fp32"
    low: Format | None = None

    def fwd(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, record: bool = True) -> tuple[np.ndarray, tuple]:
        y = x @ w
        return (y if b is None else y + b), (x, w)

    def bwd(self, dy: np.ndarray, ctx: tuple, stats, kind: str = "act",
            need_dx: bool = True) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        x, w = ctx
        return (dy @ w.T if need_dx else None), x.T @ dy, self.sum_rows(dy)

    @staticmethod
    def sum_rows(t: np.ndarray) -> np.ndarray:
        """The bias gradient's sum over the rows (tokens), in NumPy's order; a layer may be given
        another (the torch bridge sets torch's, the order ``nn.Linear``'s bias gradient has)."""
        return t.sum(axis=0)

    def end_step(self) -> None:
        pass

    def operands(self, x: np.ndarray, w: np.ndarray, ctx) -> tuple[OperandView, OperandView]:
        """The forward GEMM's operands as this layer cast ``x`` and ``w`` (``ctx``: what
        :meth:`fwd` returned with them), for reports (:class:`OperandView`)."""
        return OperandView(x, np.zeros(np.shape(x), bool)), OperandView(w, np.zeros(np.shape(w), bool))


class LinearLow(LinearFP32):
    """FP16/BF16 as ``torch.autocast`` runs ``nn.Linear``: input, weight and bias rounded to the
    low format, exact products and FP32 sums (or an accumulator model), the output rounded
    once; the backward GEMMs take the gradient in the low format and write low-format dW, db
    and (with ``round_dx``, the default) dX.

    ``round_dx=False`` returns dX as the FP32 sums: the MLP's, where a ReLU mask lies between
    this layer's dgrad and the next one's cast, which rounds and counts the activation gradient
    once, on the values the next GEMM takes (rounding commutes with the mask, so only where
    the count is taken changes).

    ``round_output=False`` rounds the GEMMs' operands only, as emulation libraries (torchao,
    microxcaling) define a format: X and W, then dY, rounded; the FP32 products (or the
    accumulator model's FP32 output) plus the FP32 bias, and FP32 dX, dW, and the bias
    gradient summed from the unrounded dY (:mod:`fpemu.torch`'s default for BF16/FP16).

    >>> lin = LinearLow("fp16")
    >>> y, ctx = lin.fwd(np.float32([[1e-8, 1.0]]), np.float32([[1.0], [1.0]]), None)
    >>> y.tolist()
    [[1.0]]
    >>> x, w, dy = np.float32([[1.0]]), np.float32([[2.0**-14]]), np.float32([[2.0**-12]])
    >>> _, ctx = lin.fwd(x, w, None)
    >>> [float(LinearLow("fp16", round_dx=r).bwd(dy, ctx, None)[0][0, 0]) for r in (True, False)]  # 2^-26
    [0.0, 1.4901161193847656e-08]
    >>> w3 = np.float32([[1.0], [2.0**-11]])
    >>> [LinearLow("fp16", round_output=r).fwd(np.float32([[1.0, 1.0]]), w3, None)[0].tolist() for r in (True, False)]
    [[[1.0]], [[1.00048828125]]]
    """

    def __init__(self, fmt: str, matmul: Callable[..., np.ndarray] | None = None, *, round_dx: bool = True,
                 round_output: bool = True) -> None:
        self.low = get_format(fmt)
        self.name = self.low.name
        self.round = rounder(self.low)
        self.mm = matmul or _plain
        self.round_dx = round_dx
        self.round_output = round_output

    def fwd(self, x, w, b, record=True):
        xq, wq = self.round(x), self.round(w)
        y = self.mm(xq, wq, self.low, self.low)
        if not self.round_output:
            return (y if b is None else y + b), (xq, wq)
        return self.round(y if b is None else y + self.round(b)), (xq, wq)

    def _cast(self, y, stats, kind):
        q = self.round(y)
        if stats is not None:
            stats.add(y, q, kind=kind)
        return q

    def bwd(self, dy, ctx, stats, kind="act", need_dx=True):
        xq, wq = ctx
        dyq = self._cast(dy, stats, kind)
        dx = self.mm(dyq, wq.T, self.low, self.low) if need_dx else None
        dw = self.mm(xq.T, dyq, self.low, self.low)
        if not self.round_output:  # the operands only: FP32 results, the bias gradient of dY itself
            return dx, dw, self.sum_rows(dy)
        if dx is not None and self.round_dx:
            dx = self._cast(dx, stats, "act")
        return dx, self._cast(dw, stats, "weight"), self._cast(self.sum_rows(dyq), stats, "bias")

    def operands(self, x, w, ctx):
        return OperandView(ctx[0], beyond(x, self.low)), OperandView(ctx[1], beyond(w, self.low))


class LinearFP8(LinearFP32):
    """TransformerEngine's FP8 ``Linear`` (HYBRID): X and W in E4M3, dY in E5M2, each tensor
    times its own scale (delayed or current scaling, or 1 with :class:`~.recipes.NoScaling`;
    :mod:`fpemu.train.recipes`), saturating casts; FP32 sums (or an accumulator model) times
    both inverse scales; FP32 outputs; the bias gradient from the unquantized dY, as TE's cast
    kernel computes it (``bgrad_quantize``, transformer_engine/pytorch/csrc/extensions/bias.cpp).

    >>> lin = LinearFP8(CurrentScaling())
    >>> y, _ = lin.fwd(np.float32([[1.0, 3.5]]), np.float32([[3.5], [1.0]]), None)  # scales 448/3.5
    >>> y.tolist()
    [[7.0]]
    """

    def __init__(self, recipe: DelayedScaling | CurrentScaling | NoScaling, matmul: Callable[..., np.ndarray] | None = None) -> None:
        self.name = "fp8"
        self.fwd_fmt, self.bwd_fmt = get_format(recipe.fwd_format), get_format(recipe.bwd_format)
        self.low = self.bwd_fmt
        self.scales = {r: TensorScale(f.max, recipe) for r, f in (("x", self.fwd_fmt), ("w", self.fwd_fmt), ("dy", self.bwd_fmt))}
        self.mm = matmul or _plain

    def _quantize(self, role: str, t: np.ndarray, record: bool = True) -> tuple[np.ndarray, np.float32]:
        """One tensor's cast with its slot's scale (scripts/gen_gpt_doc.py reads casts this way)."""
        return fp8_cast(t, self.bwd_fmt if role == "dy" else self.fwd_fmt, self.scales[role].scale_for(t, record))

    def fwd(self, x, w, b, record=True):
        # The scales are kept with the casts: a report compares each element times its scale
        # with the format's maximum, as the cast does (operands()).
        sx, sw = self.scales["x"].scale_for(x, record), self.scales["w"].scale_for(w, record)
        (xq, ix), (wq, iw) = fp8_cast(x, self.fwd_fmt, sx), fp8_cast(w, self.fwd_fmt, sw)
        y = self.mm(xq, wq, self.fwd_fmt, self.fwd_fmt) * ix * iw
        return (y if b is None else y + b), (xq, ix, wq, iw, sx, sw)

    def bwd(self, dy, ctx, stats, kind="act", need_dx=True):
        xq, ix, wq, iw = ctx[:4]
        s = self.scales["dy"].scale_for(dy)
        dyq, idy = fp8_cast(dy, self.bwd_fmt, s)
        if stats is not None:
            stats.add(dy, dyq, overflowed=np.abs(dy * s) > np.float32(self.bwd_fmt.max), kind=kind)
        dx = self.mm(dyq, wq.T, self.bwd_fmt, self.fwd_fmt) * idy * iw if need_dx else None
        dw = self.mm(xq.T, dyq, self.fwd_fmt, self.bwd_fmt) * ix * idy
        return dx, dw, self.sum_rows(dy)

    def end_step(self) -> None:
        for state in self.scales.values():
            state.update()

    def operands(self, x, w, ctx):
        xq, ix, wq, iw, sx, sw = ctx
        return OperandView(xq * ix, beyond(x, self.fwd_fmt, sx), ix), OperandView(wq * iw, beyond(w, self.fwd_fmt, sw), iw)
