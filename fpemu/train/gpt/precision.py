"""The transformer's precision policies: which GEMM class each linear layer uses, and in which
format the attention GEMMs and the activations between them are kept.

* ``fp32``: everything in FP32.
* ``fp16``, ``bf16``: ``torch.autocast``: every linear layer and the attention GEMMs in the low
  format (FP32 sums), GELU's output rounded to it; layer norm, softmax, the loss and the
  residual stream in FP32.
* ``fp8``: TransformerEngine's FP8 ``Linear`` in every block (delayed or current scaling).
* ``mxfp8``: TE's ``MXFP8BlockScaling`` in every block.
* ``nvfp4``: NVFP4 in every block but the last ``bf16_last`` ones (:class:`NVFP4Recipe`).
* ``fp8_block``: DeepSeek-V3's blockwise FP8 in every block (TE's ``Float8BlockScaling``:
  :mod:`~fpemu.train.blockwise_fp8`; power-of-two or FP32 scales, ``fp8_block_recipe``), each
  128 of K through the accumulator model when one is given (promotion every 128 products).

For the FP8 and FP4 policies the output layer and the attention GEMMs run in BF16, and the
activations between GEMMs stay in FP32, as in the published recipes (TE applies FP8 to its
``Linear`` layers; NVIDIA's NVFP4 and DeepSeek-V3's FP8 recipes keep the embeddings, the output
layer and attention in higher precision).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...formats import Format, get_format
from ..accumulate import accumulator_matmul
from ..block_linears import LinearBlock, NVFP4Recipe, parse_recipe
from ..blockwise_fp8 import BlockwiseFP8Recipe, LinearBlockwiseFP8, blockwise_accumulator, parse_blockwise_recipe
from ..checks import check_int
from ..linears import Linear, LinearFP8, LinearFP32, LinearLow
from ..recipes import CurrentScaling, DelayedScaling, as_fp8_recipe, recipe_name
from ..rounders import rounder

GPT_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "fp8_block")
LINEARS = ("qkv", "proj", "fc1", "fc2")


@dataclass
class GPTPrecision:
    """One run's linear layers (:class:`~fpemu.train.linears.Linear`): ``blocks[i][name]`` for
    those of block ``i``, ``head`` for the tied output layer; ``attn`` rounds the attention
    GEMMs' operands and outputs (None: FP32), ``act`` the activations between GEMMs (None:
    FP32)."""

    name: str
    variant: str | None
    low: Format | None
    blocks: list[dict[str, Linear]]
    head: Linear
    attn: Callable[[np.ndarray], np.ndarray] | None = None
    act: Callable[[np.ndarray], np.ndarray] | None = None
    linears: list[Linear] = field(default_factory=list)

    def end_step(self) -> None:
        for lin in self.linears:
            lin.end_step()


def make_gpt_precision(
    precision: str,
    n_layer: int,
    *,
    fp8_recipe: DelayedScaling | CurrentScaling | str | None = None,
    nvfp4_recipe: NVFP4Recipe | str | None = None,
    fp8_block_recipe: BlockwiseFP8Recipe | str | None = None,
    accumulator: str | None = None,
    promote: int | None = None,
    seed: int = 0,
) -> GPTPrecision:
    """The policy of a precision name for a transformer of ``n_layer`` blocks.

    ``accumulator`` (a model of :mod:`fpemu.accumulator`, with ``promote``: DeepSeek-V3's FP32
    promotion every that many products) applies to the fp16, bf16, fp8 and fp8_block GEMMs
    (fp8_block promotes every 128 products by construction).

    >>> p = make_gpt_precision("nvfp4", 3)
    >>> p.variant, [type(b["fc1"]).__name__ for b in p.blocks], p.head.name
    ('2d+sr+rht+last1', ['LinearBlock', 'LinearBlock', 'LinearLow'], 'bf16')
    """
    if not isinstance(precision, str) or precision.strip().lower() not in GPT_PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(GPT_PRECISIONS)}")
    p = precision.strip().lower()
    n_layer = check_int("n_layer", n_layer, 1)
    seed = check_int("seed", seed, 0)
    recipe = as_fp8_recipe(fp8_recipe)
    nv = parse_recipe(nvfp4_recipe) if isinstance(nvfp4_recipe, str) else (nvfp4_recipe or NVFP4Recipe())
    if not isinstance(nv, NVFP4Recipe):
        raise TypeError(f"nvfp4_recipe must be an NVFP4Recipe or a string, got {nvfp4_recipe!r}")
    if accumulator is None and promote is not None:
        raise ValueError("promote applies to a GEMM through an accumulator model: give accumulator too")
    if accumulator is not None and p not in ("fp16", "bf16", "fp8", "fp8_block"):
        raise ValueError(f"--accumulator applies to fp16, bf16, fp8 and fp8_block, not {p}")
    block_recipe = parse_blockwise_recipe(fp8_block_recipe)
    block_mm = blockwise_accumulator(accumulator, promote) if (p == "fp8_block" and accumulator) else None
    if nv.bf16_last > n_layer:
        raise ValueError(f"the NVFP4 recipe keeps the last {nv.bf16_last} blocks in bf16, but there are {n_layer}")

    def make(i: int):
        if p == "fp32":
            return LinearFP32()
        if p in ("fp16", "bf16"):
            mm = accumulator_matmul(accumulator, get_format(p), promote=promote) if accumulator else None
            return LinearLow(p, mm)
        if p == "fp8":
            fmts = (get_format(recipe.fwd_format), get_format(recipe.bwd_format))
            return LinearFP8(recipe, accumulator_matmul(accumulator, *fmts, promote=promote) if accumulator else None)
        if p == "fp8_block":
            return LinearBlockwiseFP8(block_recipe, block_mm)
        if p == "nvfp4" and i >= n_layer - nv.bf16_last:
            return LinearLow("bf16")
        return LinearBlock(p, nv, seed=seed * 1000 + i)

    blocks = [{name: make(i) for name in LINEARS} for i in range(n_layer)]
    high = p in ("fp8", "mxfp8", "nvfp4", "fp8_block")
    head = LinearLow("bf16") if high else make(-1)
    attn_fmt = "bf16" if high else (None if p == "fp32" else p)
    variant = {"fp8": recipe_name(recipe),
               "nvfp4": nv.label, "fp8_block": block_recipe.label}.get(p)
    if p in ("fp16", "bf16", "fp8") and accumulator:
        variant = ((variant + ",") if variant else "") + accumulator + (f"+promote{promote}" if promote else "")
    if p == "fp8_block" and accumulator:
        variant += f",{accumulator}+promote128"
    low = None if p == "fp32" else blocks[0]["qkv"].low
    return GPTPrecision(
        name=p, variant=variant, low=low, blocks=blocks, head=head,
        attn=rounder(get_format(attn_fmt)) if attn_fmt else None,
        act=rounder(get_format(p)) if p in ("fp16", "bf16") else None,
        linears=[lin for b in blocks for lin in b.values()] + [head],
    )
