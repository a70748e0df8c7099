"""A model's ``nn.Linear`` layers replaced by :class:`EmulatedLinear` (:func:`emulate_module`),
and what is left in float32: the excluded modules and those holding a GEMM the bridge does not
emulate (named in one warning, never skipped in silence).

The replacement shares the original's parameters (an optimizer made before keeps working, the
state dict keeps its keys) and is an ``nn.Linear`` itself; the model is changed in place.
"""

from __future__ import annotations

import fnmatch
import warnings
from typing import Iterator

import torch
from torch import nn

from .sites import Emulation, Site, check_tensor, run_gemm

# Modules whose forward multiplies matrices without calling an nn.Linear's forward: their GEMMs
# stay in float32. MultiheadAttention (and the Transformer layers around it, whose eval fast
# path bypasses their submodules) reads its projections' weights directly.
NOT_EMULATED = (
    nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
    nn.MultiheadAttention, nn.Bilinear, nn.RNNBase, nn.RNNCellBase,
    nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
)


class EmulatedLinear(nn.Linear):
    """An ``nn.Linear`` whose GEMMs (forward, and dgrad and wgrad on the way back) run through
    fpemu: its :class:`~.sites.Site` holds the precision's layer and its state."""

    def __init__(self, linear: nn.Linear, site: Site) -> None:
        nn.Module.__init__(self)  # not nn.Linear's: the parameters are the original's, not new ones
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.site = site

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        name = self.site.name or "the emulated layer"
        check_tensor(x, f"the input of {name}")
        check_tensor(self.weight, f"the weight of {name}")
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(f"{name} takes inputs of {self.in_features} features, got shape {tuple(x.shape)}")
        y = run_gemm(x.reshape(1, -1, self.in_features), self.weight.t().unsqueeze(0), self.bias, self.site,
                     self.training)
        return y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, fpemu={self.site.label}"


def is_plain_linear(m: nn.Module) -> bool:
    """An ``nn.Linear`` running nn.Linear's own forward (a subclass with its own forward may
    compute anything: it is named, not replaced)."""
    return isinstance(m, nn.Linear) and not isinstance(m, EmulatedLinear) and type(m).forward is nn.Linear.forward


def excluded(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a module's qualified name matches one of the ``exclude`` patterns (fnmatch).

    >>> excluded("encoder.layer.0.attention.query", ("encoder.layer.0.*",)), excluded("head", ("encoder*",))
    (True, False)
    """
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def walk(module: nn.Module, prefix: str = "", parent: nn.Module | None = None,
         attr: str = "") -> Iterator[tuple[str, nn.Module, nn.Module | None, str]]:
    """(qualified name, module, parent, attribute name) of every module, parents first, in the
    order of ``named_modules()`` (a module reached twice is walked twice: each place is one)."""
    yield prefix, module, parent, attr
    for name, child in module.named_children():
        yield from walk(child, f"{prefix}.{name}" if prefix else name, module, name)


Walked = tuple[str, nn.Module, "nn.Module | None", str]


def classify(module: nn.Module, patterns: tuple[str, ...]) -> tuple[list[Walked], set[int], list[str]]:
    """(the plain Linears to replace, the ids of the modules left in float32 with their whole
    subtrees: excluded or not emulated, the names of the not-emulated ones holding a GEMM)."""
    skipped: set[int] = set()
    unhandled: list[str] = []
    replace: list[Walked] = []
    for name, m, parent, attr in walk(module):
        if parent is not None and id(parent) in skipped:
            skipped.add(id(m))
        elif excluded(name, patterns):
            skipped.add(id(m))
        elif is_plain_linear(m):
            replace.append((name, m, parent, attr))
        elif isinstance(m, NOT_EMULATED) or (isinstance(m, nn.Linear) and not isinstance(m, EmulatedLinear)):
            skipped.add(id(m))
            unhandled.append(f"{name or '(the model)'} ({type(m).__name__})")
    return replace, skipped, unhandled


def warn_unhandled(unhandled: list[str], stacklevel: int) -> None:
    if unhandled:
        warnings.warn(f"fpemu.torch left {len(unhandled)} module(s) holding GEMMs in float32 (not emulated): "
                      f"{', '.join(unhandled)}", UserWarning, stacklevel=stacklevel + 1)


def emulate_module(module: nn.Module, emulation: Emulation) -> nn.Module:
    """Replace every plain ``nn.Linear`` of ``module`` (not excluded, not inside a module left in
    float32) by an :class:`EmulatedLinear` of ``emulation``; return the module (a new one where
    ``module`` is itself a Linear). The modules left in float32 with a GEMM are named in one
    warning."""
    replace, skipped, unhandled = classify(module, emulation.exclude)
    for name, m, _, _ in replace:
        for what, t in (("weight", m.weight), ("bias", m.bias)):
            if t is not None:
                check_tensor(t, f"the {what} of {name or 'the Linear'}")
    emulation.skipped |= skipped
    made: dict[int, EmulatedLinear] = {}  # a Linear shared by two parents is one site
    for name, m, parent, attr in replace:
        if id(m) not in made:
            made[id(m)] = EmulatedLinear(m, emulation.site(name, "linear"))
        if parent is None:
            module = made[id(m)]
        else:
            setattr(parent, attr, made[id(m)])
    warn_unhandled(unhandled, stacklevel=3)
    return module
