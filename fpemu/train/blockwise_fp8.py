"""DeepSeek-V3's blockwise FP8 recipe as TransformerEngine's ``Float8BlockScaling`` runs it:
E4M3 everywhere, activations and gradients in 1x128 tiles along each GEMM's K, weights in
128x128 blocks, one FP32 scale per tile or block; the GEMM's partial sums over each 128 of K
leave the tensor core (promotion, DeepSeek-V3 section 3.3.2) and are scaled and added in FP32.

The cast (TE ``common/recipe/recipe_common.cuh: compute_scale_from_amax`` and
``transpose/quantize_transpose_{vector,square}_blockwise.cu``): a tile's amax by ``fmaxf``
(NaNs skipped); ``scale = 448 / amax`` in float32 (1 for an amax of 0, Inf or NaN; FLT_MAX
where it overflows), by default rounded down to a power of two (its mantissa bits cleared,
``power_2_scale``; TE's ``NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1`` keeps the FP32 quotient);
elements ``e4m3_satfinite(fp32(x * scale))``; the stored ``scale_inv = fp32(1 / scale)``.
That is per-tensor current scaling applied per tile: the rule is :func:`fpemu.scaling.scale_from_amax`
(one implementation) and the cast :func:`fpemu.quantize`.

The GEMM: each 128 of K through ``matmul`` (an accumulator model's, one interval of
``promote=128``, or FP32), its partial times ``fp32(sa * sb)`` added to the FP32 result in K
order, each step rounded (cuBLAS's order is not published; with the default power-of-two
scales every product by a scale is exact, so the order of the scaling does not matter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..codec import quantize
from ..formats import Format, get_format
from ..scaling import scale_from_amax
from .accumulate import accumulator_matmul
from .checks import check_bool
from .linears import LinearFP32, OperandView, beyond

TILE = 128
E4M3 = get_format("e4m3")


@dataclass(frozen=True)
class BlockwiseFP8Recipe:
    """TE's ``Float8BlockScaling``: ``power_2_scale`` (the default, TE's) or FP32 scales.

    >>> BlockwiseFP8Recipe().label, BlockwiseFP8Recipe(power_2_scale=False).label
    ('pow2', 'fp32')
    """

    power_2_scale: bool = True

    def __post_init__(self) -> None:
        check_bool("power_2_scale", self.power_2_scale)

    @property
    def label(self) -> str:
        return "pow2" if self.power_2_scale else "fp32"


def parse_blockwise_recipe(text: str | BlockwiseFP8Recipe | None) -> BlockwiseFP8Recipe:
    """``"pow2"`` (default), ``"fp32"`` or a recipe object.

    >>> parse_blockwise_recipe("FP32").power_2_scale
    False
    """
    if text is None:
        return BlockwiseFP8Recipe()
    if isinstance(text, BlockwiseFP8Recipe):
        return text
    key = text.strip().lower() if isinstance(text, str) else None
    if key not in ("pow2", "fp32"):
        raise ValueError(f"a blockwise FP8 recipe is 'pow2' (power-of-two scales, TE's default) or 'fp32', got {text!r}")
    return BlockwiseFP8Recipe(key == "pow2")


def tile_scales(amax: np.ndarray, power_2_scale: bool) -> np.ndarray:
    """Each tile's float32 scale from its amax (``448 / amax``, see the module)."""
    s = np.asarray(scale_from_amax(amax.astype(np.float32), np.float32(E4M3.max)), np.float32)
    if power_2_scale:
        s = (s.view(np.uint32) & np.uint32(0xFF800000)).view(np.float32)
    return s


@dataclass(frozen=True)
class BlockwiseFP8:
    """A 2-D tensor cast blockwise: ``values`` (the E4M3 codes' values, float32), ``scale``
    and ``scale_inv`` one per tile (shape ``(ceil(rows / t0), ceil(cols / t1))``), the tile."""

    values: np.ndarray
    scale: np.ndarray
    scale_inv: np.ndarray
    tile: tuple[int, int]

    def full(self, per_tile: np.ndarray) -> np.ndarray:
        """A per-tile array repeated over every element."""
        r, c = self.values.shape
        return np.repeat(np.repeat(per_tile, self.tile[0], 0)[:r], self.tile[1], 1)[:, :c]

    def scale_inv_full(self) -> np.ndarray:
        return self.full(self.scale_inv)

    def dequantize(self) -> np.ndarray:
        return self.values * self.scale_inv_full()

    @property
    def T(self) -> "BlockwiseFP8":
        return BlockwiseFP8(self.values.T, self.scale.T, self.scale_inv.T, self.tile[::-1])


def blockwise_cast(t: np.ndarray, tile: tuple[int, int], power_2_scale: bool = True) -> BlockwiseFP8:
    """``t`` (2-D, float32) cast to E4M3 in tiles of ``tile`` (``(1, 128)``, ``(128, 1)`` or
    ``(128, 128)``; the last tiles of an axis may be shorter).

    >>> q = blockwise_cast(np.float32([[1.0, -3.0, 0.5] + [0.0] * 125]), (1, 128))
    >>> float(q.scale_inv[0, 0]), q.values[0, :3].tolist()   # 448/3 rounded down to 128
    (0.0078125, [128.0, -384.0, 64.0])
    """
    t = np.asarray(t, np.float32)
    if t.ndim != 2:
        raise ValueError(f"blockwise FP8 casts 2-D tensors, got shape {t.shape}")
    r, c = t.shape
    t0, t1 = tile
    pr, pc = -(-r // t0) * t0, -(-c // t1) * t1
    padded = np.zeros((pr, pc), np.float32)
    padded[:r, :c] = np.abs(t)
    with np.errstate(invalid="ignore"):
        amax = np.fmax.reduce(np.fmax.reduce(padded.reshape(pr // t0, t0, pc // t1, t1), axis=3), axis=1)
    scale = tile_scales(amax, power_2_scale)
    full = np.repeat(np.repeat(scale, t0, 0)[:r], t1, 1)[:, :c]
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.asarray(quantize(t * full, E4M3, overflow="saturate"), np.float32)
        scale_inv = np.float32(1.0) / scale
    return BlockwiseFP8(values, scale, scale_inv.astype(np.float32), (t0, t1))


def blockwise_accumulator(name: str, promote: int | None = None) -> Callable[..., np.ndarray]:
    """The matmul of each 128 of K through the named unit's E4M3 model (``h100``: DeepSeek-V3's
    Hopper). Each call is one promotion interval of 128, so ``promote`` may only say so (None
    or 128).

    >>> mm = blockwise_accumulator("h100")
    >>> blockwise_matmul(blockwise_cast(np.ones((1, 256)), (1, 128)), blockwise_cast(np.ones((256, 1)), (128, 128)), mm).tolist()
    [[256.0]]
    """
    if promote not in (None, TILE):
        raise ValueError(f"blockwise FP8 promotes every {TILE} products (its K tiles); promote={promote!r} does not apply")
    return accumulator_matmul(name, E4M3, promote=TILE)


def _plain(a: np.ndarray, b: np.ndarray, fa: Format | None = None, fb: Format | None = None) -> np.ndarray:
    return a @ b


def blockwise_matmul(a: BlockwiseFP8, b: BlockwiseFP8,
                     matmul: Callable[..., np.ndarray] | None = None) -> np.ndarray:
    """``a @ b`` of two blockwise casts (K-tiles of 128 on both): each 128 of K through
    ``matmul(a_k, b_k, e4m3, e4m3)`` (FP32 products by default), its partial times
    ``fp32(sa * sb)`` added to the FP32 result in K order."""
    mm = matmul or _plain
    k = a.values.shape[1]
    if b.values.shape[0] != k or a.tile[1] != TILE or b.tile[0] != TILE:
        raise ValueError("blockwise_matmul needs K tiles of 128 on both operands")
    m, n = a.values.shape[0], b.values.shape[1]
    sa = np.repeat(a.scale_inv, a.tile[0], 0)[:m]  # (M, K/128)
    sb = np.repeat(b.scale_inv, b.tile[1], 1)[:, :n]  # (K/128, N)
    out = np.zeros((m, n), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j, k0 in enumerate(range(0, k, TILE)):
            part = np.asarray(mm(a.values[:, k0:k0 + TILE], b.values[k0:k0 + TILE], E4M3, E4M3), np.float32)
            out = out + part * (sa[:, j, None] * sb[None, j, :])
    return out


class LinearBlockwiseFP8(LinearFP32):
    """A linear layer in DeepSeek-V3's blockwise FP8 (TE ``Float8BlockScaling``): X and dY in
    1x128 tiles along each GEMM's K (the wgrad copies along the tokens, cast again from the
    unquantized tensor, as TE does), W in 128x128 blocks (one cast serves forward and dgrad);
    ``matmul`` sums each 128 of K (FP32 by default; an accumulator model, e.g. ``h100``).

    >>> lin = LinearBlockwiseFP8()
    >>> y, _ = lin.fwd(np.ones((2, 128), np.float32), np.ones((128, 3), np.float32), None)
    >>> y.tolist()
    [[128.0, 128.0, 128.0], [128.0, 128.0, 128.0]]
    """

    def __init__(self, recipe: BlockwiseFP8Recipe | None = None,
                 matmul: Callable[..., np.ndarray] | None = None) -> None:
        self.name = "fp8_block"
        self.recipe = recipe or BlockwiseFP8Recipe()
        self.low = E4M3
        self.mm = matmul

    def _cast(self, t: np.ndarray, tile: tuple[int, int]) -> BlockwiseFP8:
        return blockwise_cast(t, tile, self.recipe.power_2_scale)

    def fwd(self, x, w, b, record=True):
        qx, qw = self._cast(x, (1, TILE)), self._cast(w, (TILE, TILE))
        y = blockwise_matmul(qx, qw, self.mm)
        return (y if b is None else y + b), (x, qx, qw)

    def bwd(self, dy, ctx, stats, kind="act", need_dx=True):
        x, _, qw = ctx
        qdy = self._cast(dy, (1, TILE))
        if stats is not None:
            stats.add(dy, qdy.dequantize(), kind=kind)
        dx = blockwise_matmul(qdy, qw.T, self.mm) if need_dx else None
        dw = blockwise_matmul(self._cast(x, (TILE, 1)).T, self._cast(dy, (TILE, 1)), self.mm)
        return dx, dw, self.sum_rows(dy)

    def operands(self, x, w, ctx) -> tuple[OperandView, OperandView]:
        _, qx, qw = ctx
        return tuple(OperandView(q.dequantize(), beyond(np.asarray(t, np.float32), E4M3, q.full(q.scale)),
                                 q.scale_inv_full()) for t, q in ((x, qx), (w, qw)))
