"""What ``inputs=``, ``recipe=`` and ``accumulator=`` name: a :class:`Precision`, which makes
the linear layer of :mod:`fpemu.train` that runs each emulated GEMM.

Every precision is fpemu.train's own code (no copy of a recipe here): ``"bf16"``/``"fp16"``
are :class:`~fpemu.train.linears.LinearLow` (the GEMMs' operands rounded; with
``recipe="autocast"`` their outputs, the bias and the gradients too, as ``torch.autocast``
writes them), ``"e4m3"``/``"e5m2"`` are :class:`~fpemu.train.linears.LinearFP8` (a
TransformerEngine recipe: current, delayed or no scaling, E5M2 gradients), the block formats
are :class:`~fpemu.train.block_linears.LinearBlock` (MXFP8/MXFP6/MXFP4; NVFP4 with its
recipe's 2-D weights, stochastic rounding and random Hadamard transform; ``recipe="4o6"`` and
its kin: Four Over Six), and ``"e4m3"`` with ``recipe="blockwise"`` (or ``"blockwise_fp32"``)
is DeepSeek-V3's blockwise FP8, TransformerEngine's ``Float8BlockScaling``
(:class:`~fpemu.train.blockwise_fp8.LinearBlockwiseFP8`: 1x128 activation tiles, 128x128 weight
blocks, each 128 of K promoted; with ``accumulator="h100"`` the unit sums each). What this module adds
is the product they call: torch's float32 ``matmul`` of the dequantized operands (formats only)
or :func:`fpemu.gemm` with a matrix-unit model (the accumulator modes).

>>> p = make_precision("e4m3", None, None)
>>> p.inputs, p.label, type(p.make(0)).__name__
('e4m3', 'e4m3/current', 'LinearFP8')
>>> make_precision("nvfp4", "2d,sr", "b200").label
'nvfp4/2d+sr@b200'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from .. import mx
from ..accumulator import Accumulator, gemm, get_accumulator
from ..arguments import option_name, unknown_name
from ..formats import get_format
from ..train.accumulate import accumulator_matmul
from ..train.block_linears import BLOCK_PRECISIONS, LinearBlock, NVFP4Recipe, parse_recipe
from ..train.blockwise_fp8 import BlockwiseFP8Recipe, LinearBlockwiseFP8, blockwise_accumulator
from ..train.linears import LinearFP8, LinearLow
from ..train.recipes import CurrentScaling, DelayedScaling, NoScaling, as_fp8_recipe, recipe_name

LOW = ("bf16", "fp16")
SCALED = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz")  # FNUZ: AMD MI300's FP8
BLOCKS = tuple(BLOCK_PRECISIONS)
INPUTS = LOW + SCALED + BLOCKS
# The mx.quantize keywords an MX recipe may set (the rest is the layer's: axes, tiles, rounding).
MX_OPTIONS = ("convention", "scale_rounding", "inf")
# e4m3's blockwise recipes (DeepSeek-V3, TE's Float8BlockScaling): power-of-two scales (TE's
# default) or FP32 ones.
_BLOCKWISE = {"blockwise": BlockwiseFP8Recipe(), "blockwise_fp32": BlockwiseFP8Recipe(power_2_scale=False)}


def as_tensor(a: np.ndarray) -> torch.Tensor:
    """A float32 array as a tensor sharing its memory (a read-only array is copied first, as
    torch does not take one)."""
    return torch.from_numpy(a if a.flags.writeable else a.copy())


def torch_product(a: np.ndarray, b: np.ndarray, fa: Any = None, fb: Any = None) -> np.ndarray:
    """``a @ b`` by torch in float32: the formats-only product of operands already cast."""
    return torch.matmul(as_tensor(np.asarray(a, dtype=np.float32)), as_tensor(np.asarray(b, dtype=np.float32))).numpy()


def torch_sum_rows(t: np.ndarray) -> np.ndarray:
    """The sum over the rows by torch (a bias gradient summed in the order torch sums it)."""
    return as_tensor(np.asarray(t, dtype=np.float32)).sum(dim=0).numpy()


def torch_block_product(a: mx.BlockArray, b: mx.BlockArray) -> np.ndarray:
    """Two block arrays' values multiplied by torch in float32 (formats only)."""
    return torch_product(np.asarray(a.dequantize(), dtype=np.float32), np.asarray(b.dequantize(), dtype=np.float32))


@dataclass(frozen=True)
class Precision:
    """A checked ``inputs``/``recipe``/``accumulator`` triple; :meth:`make` builds one layer.

    ``recipe`` is the FP8 recipe object (``e4m3``/``e5m2``), the :class:`NVFP4Recipe`
    (``nvfp4``), the dict of :func:`fpemu.mx.quantize` keywords (MX formats) or None.
    """

    inputs: str
    recipe: Any
    accumulator: Any

    @property
    def label(self) -> str:
        """A short name: the inputs, the recipe where it has one, ``@`` the accumulator."""
        text = self.inputs
        if isinstance(self.recipe, (DelayedScaling, CurrentScaling, NoScaling)):
            text += "/" + recipe_name(self.recipe)
        elif isinstance(self.recipe, BlockwiseFP8Recipe):
            text += "/blockwise" + ("" if self.recipe.power_2_scale else "_fp32")
        elif isinstance(self.recipe, NVFP4Recipe):
            text += "/" + self.recipe.label
        elif isinstance(self.recipe, dict):
            text += "/" + ",".join(f"{v}" for v in self.recipe.values())
        elif self.recipe:
            text += "/" + self.recipe
        if self.accumulator is not None:
            text += "@" + (self.accumulator if isinstance(self.accumulator, str) else self.accumulator.name)
        return text

    def make(self, seed: int) -> Any:
        """A new layer of :mod:`fpemu.train` in this precision (its own scaling state and, for
        NVFP4's stochastic rounding, its own random stream from ``seed``), whose bias gradients
        torch sums."""
        if self.inputs in LOW:
            autocast = self.recipe == "autocast"
            layer = LinearLow(self.inputs, self._dense_product(get_format(self.inputs)), round_dx=autocast,
                              round_output=autocast)
        elif isinstance(self.recipe, BlockwiseFP8Recipe):
            mm = torch_product if self.accumulator is None else blockwise_accumulator(self.accumulator)
            layer = LinearBlockwiseFP8(self.recipe, mm)
        elif self.inputs in SCALED:
            fwd, bwd = get_format(self.recipe.fwd_format), get_format(self.recipe.bwd_format)
            layer = LinearFP8(self.recipe, self._dense_product(fwd, bwd))
        else:
            layer = LinearBlock(self.inputs, self.recipe if self.inputs == "nvfp4" else None, seed=seed,
                                matmul=self._block_product(), options=None if self.inputs == "nvfp4" else self.recipe)
        layer.sum_rows = torch_sum_rows
        return layer

    def _dense_product(self, *formats) -> Callable[..., np.ndarray]:
        if self.accumulator is None:
            return torch_product
        return accumulator_matmul(self.accumulator, *formats)

    def _block_product(self) -> Callable[[mx.BlockArray, mx.BlockArray], np.ndarray]:
        if self.accumulator is None:
            return torch_block_product
        acc = self.accumulator
        return lambda a, b: gemm(a, b, accumulator=acc)


def make_precision(inputs: Any, recipe: Any, accumulator: Any) -> Precision:
    """The checked :class:`Precision`: an unknown name, a recipe the format does not take or
    an accumulator that has no unit for the format is one ValueError (TypeError for a wrong
    type), before any layer runs."""
    if not isinstance(inputs, str):
        raise TypeError(f"inputs is a format name ({', '.join(INPUTS)}), got {inputs!r}")
    name = option_name(inputs)
    if name not in INPUTS:
        raise ValueError(unknown_name("inputs format", inputs, INPUTS))
    precision = Precision(name, _recipe(name, recipe), _accumulator(accumulator))
    if precision.accumulator is not None:
        try:  # every lookup made now: a unit without this format fails here, not in a forward pass
            if name in BLOCKS:
                block = BLOCK_PRECISIONS[name]
                get_accumulator(precision.accumulator, (block, block))
            else:
                precision.make(0)
        except ValueError as exc:
            raise ValueError(f"accumulator {_acc_name(accumulator)!r} does not take {name} operands: {exc}") from None
    return precision


def _acc_name(accumulator: Any) -> str:
    return accumulator if isinstance(accumulator, str) else getattr(accumulator, "name", repr(accumulator))


def _accumulator(accumulator: Any) -> Any:
    if accumulator is None or isinstance(accumulator, Accumulator):
        return accumulator
    if not isinstance(accumulator, str):
        raise TypeError(f"accumulator is None (formats only), a preset name such as 'h100' or 'b200', or an "
                        f"Accumulator (dense or block-scaled), got {type(accumulator).__name__}")
    return option_name(accumulator)


def _recipe(name: str, recipe: Any) -> Any:
    """The recipe object of a format (its default where ``recipe`` is None)."""
    if name == "e4m3" and (isinstance(recipe, BlockwiseFP8Recipe)
                           or (isinstance(recipe, str) and option_name(recipe) in _BLOCKWISE)):
        return recipe if isinstance(recipe, BlockwiseFP8Recipe) else _BLOCKWISE[option_name(recipe)]
    if name in SCALED:
        # Current scaling by default: a model run once has no amax history for delayed scaling.
        fp8 = as_fp8_recipe("current" if recipe is None else recipe)
        if isinstance(recipe, str) or recipe is None:  # HYBRID: E5M2 (of the same family) for gradients
            return dataclasses.replace(fp8, fwd_format=name, bwd_format="e5m2fnuz" if name.endswith("fnuz") else "e5m2")
        if get_format(fp8.fwd_format).name != get_format(name).name:
            raise ValueError(f"the recipe's fwd_format {fp8.fwd_format!r} is not the inputs format {name!r}")
        return fp8
    if name == "nvfp4":
        nv = NVFP4Recipe(bf16_last=0) if recipe is None else recipe
        if isinstance(recipe, str):  # "all": every element that applies to a layer (not "last")
            nv = parse_recipe(recipe)
            nv = nv if "last" in recipe.lower() else dataclasses.replace(nv, bf16_last=0)
        if not isinstance(nv, NVFP4Recipe):
            raise TypeError(f"an NVFP4 recipe is an NVFP4Recipe or a string such as 'all' or '2d,sr', got {recipe!r}")
        if nv.bf16_last:
            raise ValueError("bf16_last names the transformer's blocks; here keep layers in BF16 with exclude= and a "
                             "second emulate(..., inputs='bf16') (docs/torch.md)")
        return nv
    if name in BLOCKS:
        return _mx_options(name, recipe)
    if recipe is None:
        return None
    if option_name(recipe) == "autocast":
        return "autocast"
    raise ValueError(f"{name}'s recipe is None (the GEMMs' operands rounded) or 'autocast' (their outputs too, as "
                     f"torch.autocast writes them), not {recipe!r}")


def _mx_options(name: str, recipe: Any) -> dict | None:
    """An MX recipe: None (the layer's default), a scale rounding or convention name, or a dict
    of :data:`MX_OPTIONS`; checked by quantizing one block."""
    if recipe is None:
        return None
    if isinstance(recipe, str):
        key = option_name(recipe)
        if key in mx.SCALE_ROUNDINGS:
            options = {"scale_rounding": key}
        elif key in mx.CONVENTION_NAMES:
            options = {"convention": key}
        else:
            raise ValueError(unknown_name("MX recipe", recipe, list(mx.SCALE_ROUNDINGS) + list(mx.CONVENTION_NAMES)))
    elif isinstance(recipe, dict):
        wrong = sorted(set(recipe) - set(MX_OPTIONS))
        if wrong:
            raise ValueError(f"an MX recipe sets {', '.join(MX_OPTIONS)}; not {', '.join(wrong)}")
        options = dict(recipe)
    else:
        raise TypeError(f"an MX recipe is a scale rounding ({', '.join(mx.SCALE_ROUNDINGS)}), a convention "
                        f"({', '.join(mx.CONVENTION_NAMES)}) or a dict of them, got {recipe!r}")
    mx.quantize(np.zeros((1, 1), np.float32), BLOCK_PRECISIONS[name], **options)  # the options' own errors
    return options
