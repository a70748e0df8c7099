"""A linear layer's forward GEMM in a precision named by one word, formats only or through a
matrix-unit model: the one meaning of ``"bf16"``, ``"e4m3"``, ``"mxfp4"`` ... that a model run
for inference (:mod:`fpemu.train.bert`) and any other forward-only user share, built from the
training layers of :mod:`.linears` and :mod:`.block_linears` (no second copy of a precision).

* ``fp32``: the reference, plain FP32 arithmetic (:class:`~.linears.LinearFP32`);
* ``bf16``, ``fp16``: input and weight rounded (RNE) to the format, their FP32 product plus the
  FP32 bias, not rounded again (:class:`~.linears.LinearLow` with ``round_output=False``);
* ``e4m3``: TransformerEngine's FP8 forward with per-tensor current scaling: input and weight
  each scaled by ``448 / amax`` of the tensor, cast with saturation, the product of the codes'
  values times both inverse scales (:class:`~.linears.LinearFP8` with
  :class:`~.recipes.CurrentScaling`); the scale covers the whole input tensor, so it depends
  on what is batched together, as on a GPU;
* ``mxfp8`` (``mxfp8_e4m3``), ``mxfp6`` (``mxfp6_e3m2``), ``mxfp4``, ``nvfp4``: blocks along K
  (:class:`~.block_linears.LinearBlock`: MXFP8 with NVIDIA's ``rceil`` scales, MXFP6/MXFP4 with
  the OCP rule, NVFP4 in 1-D blocks of 16 with TransformerEngine's two-level scales, whose
  FP32 tensor scale again covers the whole input tensor);
* ``nvfp4_4o6mae``, ``nvfp4_4o6mse``: NVFP4 with Four Over Six on the weights and the input
  (:func:`fpemu.mx.quantize`'s ``four_over_six=``, TransformerEngine's rule: each block's scale
  maps its amax to 4 or 6, whichever gives the smaller sum of absolute or squared errors, under
  TE's tensor bound of 256);
* ``fp8_block``: DeepSeek-V3's blockwise FP8 (TE's ``Float8BlockScaling``,
  :class:`~.blockwise_fp8.LinearBlockwiseFP8`): the input in 1x128 tiles, the weight in 128x128
  blocks, E4M3 with power-of-two scales; through a unit, each 128 of K summed by it (promoted
  to FP32 every 128 products) and scaled in FP32.

``accumulator=None`` multiplies the operands' values in FP32 (formats only, what torchao and
microxcaling emulate); a preset name or model (``"h100"``, ``"b200"``, an
:class:`~fpemu.accumulator.Accumulator`, a :class:`~fpemu.accumulator.BlockScaledAccumulator`) runs the
GEMM through :func:`fpemu.gemm` as that unit sums it, bit for bit. A unit without an MMA for
the format fails here, before any work.

>>> x, w = np.float32([[1 + 2**-10]]), np.float32([[1.0]])
>>> forward_linear("bf16").fwd(x, w, None)[0].tolist(), forward_linear("fp16", "h100").fwd(x, w, None)[0].tolist()
([[1.0]], [[1.0009765625]])
>>> forward_linear("mxfp4", "h100")
Traceback (most recent call last):
...
ValueError: h100 (hopper) has no block-scaled MMA: block arrays take exact, b200, rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell
"""

from __future__ import annotations

import dataclasses

import numpy as np  # noqa: F401  (the examples above use np)

from ..formats import get_format
from .accumulate import accumulator_matmul, block_matmul
from .block_linears import BLOCK_PRECISIONS, LinearBlock, NVFP4Recipe
from .blockwise_fp8 import LinearBlockwiseFP8, blockwise_accumulator
from .checks import check_int
from .linears import Linear, LinearFP8, LinearFP32, LinearLow
from .recipes import CurrentScaling

__all__ = ["GEMM_PRECISIONS", "gemm_precision", "forward_linear", "precision_label", "block_format"]

# NVFP4 in the forward GEMM only: 1-D blocks of 16 along K for the weights too (no 16x16 tiles);
# the recipe's other elements act on gradients.
NVFP4_FORWARD = NVFP4Recipe(weights_2d=False, stochastic=False, hadamard=False, bf16_last=0)
GEMM_PRECISIONS = ("fp32", "bf16", "fp16", "e4m3", "mxfp8", "mxfp6", "mxfp4", "nvfp4", "nvfp4_4o6mae", "nvfp4_4o6mse",
                   "fp8_block")
_ALIASES = {"mxfp8_e4m3": "mxfp8", "mxfp6_e3m2": "mxfp6"}
#: NVFP4 with Four Over Six: each precision's ``four_over_six=`` rule.
FOUR_OVER_SIX_PRECISIONS = {"nvfp4_4o6mae": "mae", "nvfp4_4o6mse": "mse"}


def block_format(precision: str) -> str | None:
    """The :func:`fpemu.mx.quantize` format of a block precision (None for the others).

    >>> block_format("nvfp4_4o6mse"), block_format("mxfp6"), block_format("bf16")
    ('nvfp4', 'mxfp6_e3m2', None)
    """
    p = gemm_precision(precision)
    return "nvfp4" if p in FOUR_OVER_SIX_PRECISIONS else BLOCK_PRECISIONS.get(p)


def gemm_precision(name: object) -> str:
    """The canonical name of a precision (any case; ``mxfp8_e4m3`` and ``mxfp6_e3m2`` are the
    block formats' full names).

    >>> gemm_precision("MXFP6_E3M2"), gemm_precision(" bf16 ")
    ('mxfp6', 'bf16')
    """
    if not isinstance(name, str):
        raise TypeError(f"a precision is a name such as 'bf16' or 'mxfp4', got {name!r}")
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in GEMM_PRECISIONS:
        raise ValueError(f"unknown precision {name!r}; choose from {', '.join(GEMM_PRECISIONS)}")
    return key


def _accumulator_name(accumulator: object) -> str:
    return accumulator if isinstance(accumulator, str) else getattr(accumulator, "name", type(accumulator).__name__)


def precision_label(precision: str, accumulator: object = None) -> str:
    """``"bf16"`` formats only, ``"bf16@h100"`` through a unit's model.

    >>> precision_label("mxfp6_e3m2", "b200")
    'mxfp6@b200'
    """
    p = gemm_precision(precision)
    return p if accumulator is None else f"{p}@{_accumulator_name(accumulator).strip().lower()}"


def forward_linear(precision: str, accumulator: object = None, *, seed: int = 0) -> Linear:
    """The linear layer of ``precision`` (see the module's list), formats only
    (``accumulator=None``) or through ``accumulator``; ``seed`` is the layer's random stream
    (unused by the forward GEMM; kept so that every layer of a model can have its own)."""
    p = gemm_precision(precision)
    seed = check_int("seed", seed, 0)
    if p == "fp32":
        if accumulator is not None:
            raise ValueError("fp32 is the reference (plain FP32 products and sums): an accumulator applies to the "
                             f"low precisions ({', '.join(GEMM_PRECISIONS[1:])})")
        return LinearFP32()
    if p in ("bf16", "fp16"):
        mm = accumulator_matmul(accumulator, get_format(p)) if accumulator is not None else None
        return LinearLow(p, mm, round_output=False)
    if p == "e4m3":
        mm = accumulator_matmul(accumulator, get_format("e4m3")) if accumulator is not None else None
        return LinearFP8(CurrentScaling(), mm)
    if p == "fp8_block":
        return LinearBlockwiseFP8(matmul=blockwise_accumulator(accumulator) if accumulator is not None else None)
    block = block_format(p)
    mm = block_matmul(accumulator, block) if accumulator is not None else None
    if p in FOUR_OVER_SIX_PRECISIONS:
        recipe = dataclasses.replace(NVFP4_FORWARD, four_over_six=FOUR_OVER_SIX_PRECISIONS[p])
        return LinearBlock("nvfp4", recipe, seed=seed, matmul=mm)
    return LinearBlock(p, NVFP4_FORWARD, seed=seed, matmul=mm)
