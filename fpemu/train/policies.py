"""The MLP's precision policies: one linear layer of :mod:`.linears` or :mod:`.block_linears`
(the transformer's own) per layer of the network, and :func:`make_policy`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..formats import Format, get_format
from .accumulate import accumulator_matmul
from .block_linears import LinearBlock, NVFP4Recipe
from .blockwise_fp8 import LinearBlockwiseFP8, blockwise_accumulator
from .checks import check_int
from .linears import Linear, LinearFP8, LinearFP32, LinearLow
from .recipes import CurrentScaling, DelayedScaling, NoScaling, as_fp8_recipe, recipe_name

PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "fp8_block")

# The MLP's NVFP4: 1-D blocks for the weights too, no random Hadamard transform and no BF16
# layers, stochastically rounded gradients (the one element of NVIDIA's recipe it keeps).
MLP_NVFP4 = NVFP4Recipe(weights_2d=False, stochastic=True, hadamard=False, bf16_last=0)


@dataclass
class MLPPolicy:
    """One MLP run's precision: the layer ``l`` of the network is ``linear(l)``, made by
    ``make_linear(l)`` on first use (so a policy fits a network of any depth); ``name`` and
    ``low`` are the layers', ``variant`` names the FP8 recipe (the default, delayed, too).

    >>> p = make_policy("fp16")
    >>> p.name, p.low.name, type(p.linear(3)).__name__, p.linear(3) is p.linear(3)
    ('fp16', 'fp16', 'LinearLow', True)
    """

    name: str
    low: Format | None
    make_linear: Callable[[int], Linear]
    variant: str | None = None
    linears: dict[int, Linear] = field(default_factory=dict)

    def linear(self, layer: int) -> Linear:
        if layer not in self.linears:
            self.linears[layer] = self.make_linear(layer)
        return self.linears[layer]

    def end_step(self) -> None:
        for lin in self.linears.values():
            lin.end_step()


def _layer_maker(p: str, accumulator: str | None, recipe: DelayedScaling | CurrentScaling | NoScaling,
                 seed: int) -> Callable[[int], Linear]:
    """``make_linear(l)`` of a checked precision name. An accumulator model is looked up here,
    once for every layer, so a bad name fails before training starts."""
    if p == "fp32":
        return lambda layer: LinearFP32()
    if p in ("fp16", "bf16"):
        mm = accumulator_matmul(accumulator, get_format(p)) if accumulator is not None else None
        # FP32 dX: the ReLU mask comes before the next layer's cast, which counts it.
        return lambda layer: LinearLow(p, mm, round_dx=False)
    if p == "fp8":
        fmts = (get_format(recipe.fwd_format), get_format(recipe.bwd_format))
        mm = accumulator_matmul(accumulator, *fmts) if accumulator is not None else None
        return lambda layer: LinearFP8(recipe, mm)
    if p == "fp8_block":  # DeepSeek-V3's blockwise FP8, TE's default power-of-two scales
        mm = blockwise_accumulator(accumulator) if accumulator is not None else None
        return lambda layer: LinearBlockwiseFP8(matmul=mm)
    # Each layer its own stream of stochastic rounding, seeded as the transformer's blocks.
    return lambda layer: LinearBlock(p, MLP_NVFP4, seed=seed * 1000 + layer)


def make_policy(
    precision: str,
    accumulator: str | None = None,
    fp8_recipe: DelayedScaling | CurrentScaling | NoScaling | str | None = None,
    seed: int = 0,
) -> MLPPolicy:
    """The MLP policy of a precision name (``accumulator``: None for the default FP32 sums, or
    a model of :mod:`fpemu.accumulator`, for fp16, bf16, fp8 and fp8_block; ``fp8_recipe`` as in
    :func:`~fpemu.train.run`; ``seed`` seeds NVFP4's stochastic rounding).

    >>> p = make_policy("fp8", fp8_recipe="current")
    >>> p.name, p.variant, p.low.name, type(p.linear(0)).__name__
    ('fp8', 'current', 'e5m2', 'LinearFP8')
    """
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
    make_linear = _layer_maker(p, accumulator, recipe, seed)
    first = make_linear(0)
    # The run's label names the FP8 recipe, the default (delayed scaling) too: the transformer's
    # labels do, and one recipe has one name (fp8[delayed]+none) in every table.
    variant = recipe_name(recipe) if p == "fp8" else None
    return MLPPolicy(first.name, first.low, make_linear, variant, {0: first})
