"""A linear layer's GEMMs on block-scaled operands (:func:`fpemu.mx.quantize`): MXFP8 as
TransformerEngine's ``MXFP8BlockScaling`` runs it, and NVFP4 with the elements of NVIDIA's
NVFP4 pre-training recipe (arXiv 2509.25149) as switchable options (:class:`NVFP4Recipe`);
the :class:`~.linears.Linear` layers of the MLP and of the transformer alike.

Every operand is quantized along its GEMM's K axis — X and W along ``d_in`` for the forward
GEMM, dY and W along ``d_out`` for dgrad, X and dY along the tokens for wgrad — as TE keeps a
row-wise and a column-wise copy of each tensor. The dequantized operands are multiplied in
FP32; bias gradients come from the unquantized dY.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import mx
from .linears import LinearFP32, OperandView, beyond


@dataclass(frozen=True)
class NVFP4Recipe:
    """Which elements of NVIDIA's NVFP4 training recipe are on (all by default).

    * ``weights_2d``: weights in 16x16 tiles with one scale each, so the forward and the dgrad
      GEMM see the same quantized weight (1-D blocks of 16 along each GEMM's K otherwise);
    * ``stochastic``: gradients (dY) rounded stochastically, unbiased (RNE otherwise);
    * ``hadamard``: a 16x16 random Hadamard transform on both wgrad operands along the tokens,
      which spreads outliers over a block before it is quantized;
    * ``bf16_last``: how many of the last transformer blocks keep BF16 GEMMs;
    * ``four_over_six``: off (None, the default) or a rule of :func:`fpemu.mx.quantize`'s
      ``four_over_six=`` (``"mae"``, TransformerEngine's default metric, ``"mse"``, or either
      with ``_448``) for the weights and activations, TE's ``nvfp4_4over6="all"``; gradients
      keep the plain rule (and their stochastic rounding). TE has no Four Over Six with the
      Hadamard transform, so the two are refused together.

    >>> NVFP4Recipe().label, NVFP4Recipe(hadamard=False, bf16_last=0).label
    ('2d+sr+rht+last1', '2d+sr')
    >>> NVFP4Recipe(hadamard=False, bf16_last=0, four_over_six="mse").label
    '2d+sr+4o6mse'
    """

    weights_2d: bool = True
    stochastic: bool = True
    hadamard: bool = True
    bf16_last: int = 1
    four_over_six: str | None = None

    def __post_init__(self) -> None:
        if self.four_over_six is not None:
            rule = mx.four_over_six_rule(self.four_over_six)  # an unknown name's own error
            object.__setattr__(self, "four_over_six", next(k for k, v in mx.FOUR_OVER_SIX.items() if v == rule))
            if self.hadamard:
                raise ValueError("four_over_six with the Hadamard transform (rht) is not in TransformerEngine's "
                                 "recipe (its 4over6 paths with RHT are not implemented): drop one")

    @property
    def label(self) -> str:
        parts = [n for n, on in (("2d", self.weights_2d), ("sr", self.stochastic), ("rht", self.hadamard)) if on]
        if self.bf16_last:
            parts.append(f"last{self.bf16_last}")
        if self.four_over_six:
            parts.append("4o6" + self.four_over_six.replace("_", ""))
        return "+".join(parts) or "plain"


RECIPE_ELEMENTS = ("2d", "sr", "rht", "last", "4o6")


def parse_recipe(text: str) -> NVFP4Recipe:
    """A recipe from ``"all"``, ``"none"`` or a comma list of :data:`RECIPE_ELEMENTS`
    (``last`` or ``lastN``: the last N blocks in BF16; ``4o6`` Four Over Six by TE's default
    metric, MAE, or ``4o6mse``, ``4o6mae``, ``4o6mse448``, ``4o6mae448``).

    >>> parse_recipe("2d,rht").label, parse_recipe("all").label, parse_recipe("none").label
    ('2d+rht', '2d+sr+rht+last1', 'plain')
    >>> parse_recipe("2d,sr,4o6").four_over_six, parse_recipe("4o6mse448").four_over_six
    ('mae', 'mse_448')
    """
    if not isinstance(text, str):
        raise TypeError(f"an NVFP4 recipe is a string such as 'all', 'none' or '2d,sr', got {text!r}")
    t = text.strip().lower()
    if t == "all":
        return NVFP4Recipe()
    parts = [] if t == "none" else [p.strip() for p in t.replace("+", ",").split(",") if p.strip()]
    last, four_over_six = 0, None
    for p in parts:
        if p.startswith("4o6"):
            rule = p[3:] or "mae"
            rule = rule[:3] + ("_" + rule[3:] if rule[3:] else "")
            if rule not in mx.FOUR_OVER_SIX:
                raise ValueError(f"NVFP4 recipe element {p!r}: write 4o6, 4o6mse, 4o6mae, 4o6mse448 or 4o6mae448")
            four_over_six = rule
        elif p.startswith("last"):
            n = p[4:] or "1"
            if not n.isdigit():
                raise ValueError(f"NVFP4 recipe element {p!r}: write last or lastN, N a number of blocks")
            last = int(n)
        elif p not in RECIPE_ELEMENTS:
            raise ValueError(f"unknown NVFP4 recipe element {p!r}; choose from all, none or {', '.join(RECIPE_ELEMENTS)}")
    return NVFP4Recipe("2d" in parts, "sr" in parts, "rht" in parts, last, four_over_six)


def hadamard_matrix(seed: int, n: int = 16) -> np.ndarray:
    """``H D / sqrt(n)``: Sylvester's Hadamard matrix times random signs, an orthogonal matrix.

    >>> m = hadamard_matrix(0)
    >>> bool(np.allclose(m @ m.T, np.eye(16))), sorted(set(np.abs(m).ravel().tolist()))
    (True, [0.25])
    """
    h = np.ones((1, 1))
    while len(h) < n:
        h = np.block([[h, h], [h, -h]])
    signs = np.random.default_rng([seed, 0x4AD]).choice([-1.0, 1.0], n)
    return (h * signs / np.sqrt(n)).astype(np.float32)


def hadamard_rows(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``m`` applied to every block of ``len(m)`` rows of ``x``; zero rows pad the last block,
    and the result keeps them (they are no longer zero).

    Since ``m`` is orthogonal, ``hadamard_rows(a, m).T @ hadamard_rows(b, m) == a.T @ b`` in
    exact arithmetic: wgrad is unchanged but for the quantization.

    >>> a = np.arange(32.0, dtype=np.float32).reshape(16, 2); m = hadamard_matrix(1)
    >>> bool(np.allclose(hadamard_rows(a, m).T @ hadamard_rows(a, m), a.T @ a))
    True
    """
    k = len(m)
    pad = (-len(x)) % k
    xp = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)]) if pad else x
    return (m @ xp.reshape(-1, k, *x.shape[1:])).reshape(xp.shape)


#: The block format of each precision name a layer takes: fpemu.train's own (``mxfp8``,
#: ``nvfp4``) and :func:`fpemu.mx.quantize`'s names of the floating-point block formats.
BLOCK_PRECISIONS = {"mxfp8": "mxfp8_e4m3", "mxfp8_e4m3": "mxfp8_e4m3", "mxfp8_e5m2": "mxfp8_e5m2",
                    "mxfp6": "mxfp6_e3m2", "mxfp6_e3m2": "mxfp6_e3m2", "mxfp6_e2m3": "mxfp6_e2m3", "mxfp4": "mxfp4",
                    "nvfp4": "nvfp4"}


def default_options(block: str) -> dict:
    """The :func:`fpemu.mx.quantize` keywords of a block format's default recipe: MXFP8 with
    NVIDIA's ``rceil`` scales (TransformerEngine's ``MXFP8BlockScaling``), MXFP6 and MXFP4 with
    the OCP rule (no TransformerEngine recipe; torchao's and ``fpemu infer``'s default), NVFP4
    with TransformerEngine's arithmetic.

    >>> default_options("mxfp8_e4m3"), default_options("mxfp4"), default_options("nvfp4")
    ({'scale_rounding': 'rceil'}, {}, {})
    """
    return {"scale_rounding": "rceil"} if block.startswith("mxfp8") else {}


def dequantized_matmul(a: mx.BlockArray, b: mx.BlockArray) -> np.ndarray:
    """The default product of two block arrays: their values multiplied in FP32."""
    return np.asarray(a.dequantize(), dtype=np.float32) @ np.asarray(b.dequantize(), dtype=np.float32)


def transposed(q: mx.BlockArray) -> mx.BlockArray:
    """A 2-D block array's transpose: the same codes and scales (views), the blocks turned with
    them, so a weight quantized once serves the forward GEMM and, transposed, dgrad.

    >>> q = mx.quantize(np.arange(64.0).reshape(2, 32), "mxfp8_e4m3")
    >>> t = transposed(q)
    >>> t.axis, t.shape, bool(np.array_equal(t.dequantize(), q.dequantize().T))
    (0, (32, 2), True)
    """
    if len(q.axes) == 1:
        return q.with_layout(q.codes.T, q.scales.T, axis=1 - q.axes[0])
    return q.with_layout(q.codes.T, q.scales.T, axis=(0, 1), block_size=q.block_shape[::-1])


class LinearBlock(LinearFP32):
    """Block-scaled GEMMs: MXFP8 (``"mxfp8"``: E4M3 in blocks of 32, E8M0 scales, NVIDIA's
    ``rceil``), NVFP4 (``"nvfp4"``: E2M1 in blocks of 16, UE4M3 and FP32 scales, TE's
    arithmetic), or any name of :data:`BLOCK_PRECISIONS` (MXFP6, MXFP4: the OCP rule).

    ``options`` replaces the format's :func:`default_options` (e.g. ``{"convention":
    "torchao-0.18", "scale_rounding": "rceil"}`` to quantize as torchao does; ``scale_rounding``
    alone names an MX scale rule); ``matmul(a, b)``
    multiplies two :class:`~fpemu.mx.BlockArray` (default :func:`dequantized_matmul`; a
    block-scaled matrix unit through :func:`fpemu.gemm` otherwise). ``recipe`` applies to NVFP4.

    >>> lin = LinearBlock("nvfp4", NVFP4Recipe(), seed=0)
    >>> y, ctx = lin.fwd(np.ones((16, 32), np.float32), np.ones((32, 16), np.float32), None)
    >>> float(y[0, 0])
    32.0
    """

    def __init__(self, kind: str, recipe: NVFP4Recipe | None = None, seed: int = 0,
                 matmul: Callable[[mx.BlockArray, mx.BlockArray], np.ndarray] | None = None,
                 options: dict | None = None, *, scale_rounding: str | None = None) -> None:
        if kind not in BLOCK_PRECISIONS:
            raise ValueError(f"unknown block precision {kind!r}; choose from {', '.join(BLOCK_PRECISIONS)}")
        self.name, self.block = kind, BLOCK_PRECISIONS[kind]
        nvfp4 = self.block == "nvfp4"
        if nvfp4 and scale_rounding is not None:
            raise ValueError("NVFP4 has its own scale rule; scale_rounding applies to the MX formats")
        self.recipe = (recipe or NVFP4Recipe()) if nvfp4 else NVFP4Recipe(False, False, False, 0)
        self.low = mx.get_block_format(self.block).element
        self.options = default_options(self.block) if options is None else dict(options)
        if scale_rounding is not None:
            self.options["scale_rounding"] = scale_rounding
        self.mm = matmul or dequantized_matmul
        self.rng = np.random.default_rng([seed, 0x5F4])
        self.rht = hadamard_matrix(seed) if self.recipe.hadamard else None

    def _q(self, t: np.ndarray, axis: int, grad: bool = False, tiles: bool = False) -> mx.BlockArray:
        kw = dict(self.options)
        if grad and self.recipe.stochastic:
            kw.update(rounding="stochastic", rng=self.rng)
        if not grad and self.recipe.four_over_six:  # weights and activations (TE's "all")
            kw.update(four_over_six=self.recipe.four_over_six)
        if tiles:
            kw.update(axis=(0, 1), block_size=(16, 16))
        else:
            kw.update(axis=axis)
        return mx.quantize(t, self.block, **kw)

    def fwd(self, x, w, b, record=True):
        qx = self._q(x, 1)
        qw = self._q(w, 0, tiles=self.recipe.weights_2d)
        y = self.mm(qx, qw)
        return (y if b is None else y + b), (x, w, qx, qw)

    def bwd(self, dy, ctx, stats, kind="act", need_dx=True):
        x, w, _, qw = ctx
        # The dgrad copy of dY is where its underflow is counted, so it is made even where
        # dgrad is skipped: an input layer's dY is counted like every other layer's.
        qdy = self._q(dy, 1, grad=True)
        if stats is not None:
            stats.add(dy, np.asarray(qdy.dequantize(), dtype=np.float32), kind=kind)
        dx = self.mm(qdy, transposed(qw if self.recipe.weights_2d else self._q(w, 1))) if need_dx else None
        xt, dyt = (hadamard_rows(x, self.rht), hadamard_rows(dy, self.rht)) if self.rht is not None else (x, dy)
        dw = self.mm(transposed(self._q(xt, 0)), self._q(dyt, 0, grad=True))
        return dx, dw, self.sum_rows(dy)

    def operands(self, x, w, ctx) -> tuple[OperandView, OperandView]:
        _, _, qx, qw = ctx
        return block_view(x, qx), block_view(w, qw)


def block_view(t: np.ndarray, q: mx.BlockArray) -> OperandView:
    """``t`` as the block array ``q`` holds it: its values, where ``t`` divided by its block's
    scale rounds beyond the element format (:func:`~.linears.beyond`; exact for MX's powers of
    two; NVFP4's kernels multiply by a rounded reciprocal instead, so at its boundary this can
    differ from the cast by an ulp), and each element's scale (its block's, times NVFP4's
    per-tensor scale): the value of the code of 1 in every block.

    >>> t = np.float32([0.5, 3.0, 5e-5, 1.0, 7.0] + [0.0] * 11)
    >>> v = block_view(t, mx.quantize(t, "mxfp4"))
    >>> v.values[:5].tolist(), v.saturated[:5].tolist(), float(v.scale[0])
    ([0.5, 3.0, 0.0, 1.0, 6.0], [False, False, False, False, True], 1.0)
    """
    from ..codec import encode

    elem = q.format.element
    ones = q.with_layout(np.full(q.codes.shape, encode(1.0, elem)[()], dtype=q.codes.dtype), q.scales)
    scale = np.asarray(ones.dequantize(), dtype=np.float32)
    t = np.asarray(t, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.divide(t, scale, out=np.zeros_like(t), where=scale > 0)  # a zero scale holds zeros only
    return OperandView(np.asarray(q.dequantize(), dtype=np.float32), beyond(scaled, elem), scale)
