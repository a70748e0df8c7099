"""The three public functions of :mod:`fpemu.torch`: :func:`emulate`, :func:`emulating` and
:func:`report` (the package's ``__init__`` hands calls here, so ``import fpemu.torch`` needs no
torch).

>>> import torch
>>> from torch import nn
>>> model = emulate(nn.Sequential(nn.Linear(32, 8), nn.ReLU(), nn.Linear(8, 2)), inputs="mxfp8", stats=True)
>>> model[0]
EmulatedLinear(in_features=32, out_features=8, bias=True, fpemu=mxfp8)
>>> y = model(torch.ones(4, 32))
>>> [r["layer"] for r in report(model).rows], report(model).rows[0]["x"]["flushed"]
(['0', '2'], 0.0)
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..train.checks import check_bool, check_int
from .mode import Emulating
from .modules import classify, emulate_module, warn_unhandled
from .precisions import make_precision
from .sites import Emulation
from .statistics import Report, site_row

_ATTR = "_fpemu_emulations"  # the emulations of a model, in the order they were applied


def _flag(name: str, value: Any) -> bool:
    check_bool(name, value)
    return bool(value)


def _emulation(inputs: Any, accumulator: Any, recipe: Any, exclude: Any, backward: Any, seed: Any,
               stats: Any) -> Emulation:
    if isinstance(exclude, str):
        exclude = (exclude,)
    try:
        patterns = tuple(exclude)
    except TypeError:
        raise TypeError(f"exclude is a module-name pattern or a sequence of them, got {exclude!r}") from None
    if not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"exclude patterns are strings (fnmatch patterns of module names), got {exclude!r}")
    return Emulation(make_precision(inputs, recipe, accumulator), backward=_flag("backward", backward),
                     seed=check_int("seed", seed, 0), stats=_flag("stats", stats), exclude=patterns)


def _check_patterns(module: nn.Module, patterns: tuple[str, ...]) -> None:
    """Every ``exclude`` pattern names some module (a typo would exclude nothing, in silence)."""
    from .modules import excluded

    names = [n for n, _ in module.named_modules()]
    for p in patterns:
        if not any(excluded(n, (p,)) for n in names):
            raise ValueError(f"exclude pattern {p!r} matches no module name; the names are those of "
                             f"model.named_modules(), e.g. {', '.join(repr(n) for n in names[1:6])}")


def _attach(module: nn.Module, emulation: Emulation) -> None:
    module.__dict__.setdefault(_ATTR, []).append(emulation)


class _EndStep:
    """The model's forward pre-hook: a forward pass is a step (delayed scaling's update). An
    object, not a closure, so that a deep copy of the model steps its own copy of the state."""

    def __init__(self, emulation: Emulation) -> None:
        self.emulation = emulation

    def __call__(self, module: nn.Module, args: Any) -> None:
        self.emulation.end_step()


def emulate(module: nn.Module, *, inputs: str, accumulator: Any = None, recipe: Any = None, exclude: Any = (),
            backward: bool = True, seed: int = 0, stats: bool = False) -> nn.Module:
    """Run every ``nn.Linear`` of ``module`` through fpemu (in place; the module is returned).

    Args:
        inputs: the operands' format: ``"bf16"``, ``"fp16"``, ``"e4m3"``, ``"e5m2"``,
            ``"e4m3fnuz"``, ``"e5m2fnuz"`` (per-tensor scaling), ``"mxfp8"`` (= ``"mxfp8_e4m3"``),
            ``"mxfp8_e5m2"``, ``"mxfp6"`` (= ``"mxfp6_e3m2"``), ``"mxfp6_e2m3"``, ``"mxfp4"``,
            ``"nvfp4"`` (blocks along each GEMM's K). docs/torch.md has the table of what each does.
        accumulator: None (formats only: the dequantized operands multiplied by torch in
            float32) or a matrix unit (a preset name such as ``"h100"``, ``"b200"``,
            ``"mi300x"``, or an Accumulator / BlockScaledAccumulator) through :func:`fpemu.gemm`.
        recipe: BF16/FP16: None (the operands rounded) or ``"autocast"`` (the output, bias and
            gradients too); FP8: ``"current"`` (default), ``"delayed"``, ``"unscaled"`` or a recipe object of
            :mod:`fpemu.train`; NVFP4: an :class:`~fpemu.train.NVFP4Recipe` or ``"2d,sr,rht"``
            (default: all three); MX: a scale rounding, a convention of :func:`fpemu.mx.quantize`
            or a dict of them (default: ``rceil`` for MXFP8, OCP for MXFP6/MXFP4).
        exclude: fnmatch patterns of module names (``named_modules()``) left in float32 with
            their submodules.
        backward: False: gradients of the float32 product (straight-through).
        seed: seeds stochastic rounding and the random Hadamard transform (per layer).
        stats: collect what :func:`report` shows (costs a float32 product per GEMM).
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"emulate takes an nn.Module, got {type(module).__name__}")
    emulation = _emulation(inputs, accumulator, recipe, exclude, backward, seed, stats)
    _check_patterns(module, emulation.exclude)
    module = emulate_module(module, emulation)
    _attach(module, emulation)
    module.register_forward_pre_hook(_EndStep(emulation))
    return module


def emulating(module: nn.Module | None = None, *, inputs: str | None = None, accumulator: Any = None,
              recipe: Any = None, exclude: Any = (), backward: bool = True, seed: int = 0,
              stats: bool = False) -> Emulating:
    """A context manager under which ``torch.matmul``, ``@``, ``torch.bmm``, ``torch.mm`` and
    ``F.linear`` run through fpemu (see :mod:`fpemu.torch.mode`).

    ``emulating(model)`` takes the precision ``emulate()`` gave ``model``; ``emulating(model,
    inputs=...)`` or ``emulating(inputs=...)`` (no model: sites named by call order) set their own,
    with the options of :func:`emulate`.
    """
    if module is not None and not isinstance(module, nn.Module):
        raise TypeError(f"emulating takes an nn.Module (or None), got {type(module).__name__}")
    if inputs is None:
        emulations = getattr(module, _ATTR, None) if module is not None else None
        if not emulations:
            raise ValueError("emulating needs inputs= (a format), or a model that emulate() has prepared")
        given = {"accumulator": accumulator, "recipe": recipe, "exclude": exclude or None, "stats": stats or None,
                 "seed": seed or None, "backward": None if backward is True else backward}
        if any(v is not None for v in given.values()):
            raise ValueError("emulating(model) takes the options emulate() gave the model; pass inputs= to set others")
        return Emulating(emulations[0], module)
    emulation = _emulation(inputs, accumulator, recipe, exclude, backward, seed, stats)
    if module is not None:
        _check_patterns(module, emulation.exclude)
        _, emulation.skipped, unhandled = classify(module, emulation.exclude)
        warn_unhandled(unhandled, stacklevel=2)
        _attach(module, emulation)
    return Emulating(emulation, module)


def report(target: nn.Module | Emulating, *, json: bool = False) -> Report | str:
    """Per emulated GEMM since :func:`emulate` (or the ``emulating`` block was made): the SQNR of
    its output, its operands' amax, flushed and saturated fractions and scales
    (:mod:`fpemu.torch.statistics`). A :class:`~.statistics.Report` (its ``str`` is the table),
    or with ``json=True`` its JSON text."""
    if isinstance(target, Emulating):
        emulations = [target.emulation]
    elif isinstance(target, nn.Module):
        emulations = getattr(target, _ATTR, [])
    else:
        raise TypeError(f"report takes a model prepared by emulate() or an emulating block, got {type(target).__name__}")
    if not emulations:
        raise ValueError("this model has no emulated layers: call fpemu.torch.emulate(model, ..., stats=True) first")
    if not any(e.stats for e in emulations):
        raise ValueError("no statistics were collected: pass stats=True to emulate() or emulating()")
    rows = [site_row(s) for e in emulations if e.stats for s in e.sites.values() if s.stats.calls]
    out = Report(rows)
    return out.to_json() if _flag("json", json) else out
