"""The emulated GEMMs: a :class:`Site` per ``nn.Linear`` or functional call site, the
:class:`Emulation` that owns them (one precision, its options, its sites), and
:class:`GemmFunction`, the autograd function that hands a site's operands to its
:mod:`fpemu.train` layer and the gradients back.

A GEMM reaches :class:`GemmFunction` as two stacks ``a`` (batch, M, K) and ``b`` (batch, K, N)
of float32 CPU tensors: one matrix for an ``nn.Linear`` (its input flattened to tokens x
features, ``b`` the weight's transpose), one per matrix of a batched ``matmul``/``bmm``. Each
matrix is one call of the layer's ``fwd`` (so per-tensor scales are per matrix: current
scaling and NVFP4's tensor amax see one matrix, as a grouped GEMM launches them) and, on the
way back, one call of its ``bwd``: dgrad and wgrad along their own K in the recipe's gradient
format. The operands cross as NumPy views of the tensors' memory, not copies.
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from typing import Any, Iterator

import numpy as np
import torch

from .precisions import Precision, as_tensor, torch_product
from .statistics import SiteStats

_STATE = threading.local()


@contextlib.contextmanager
def internal() -> Iterator[None]:
    """fpemu's own torch calls (the formats-only product, reshapes): :mod:`.mode` lets them
    pass, so an emulated GEMM is never emulated twice."""
    _STATE.depth = getattr(_STATE, "depth", 0) + 1
    try:
        yield
    finally:
        _STATE.depth -= 1


def is_internal() -> bool:
    return getattr(_STATE, "depth", 0) > 0


class Site:
    """One emulated GEMM of a model: its name, kind (``"linear"`` or the function's name), the
    :mod:`fpemu.train` layer holding its state (FP8 amax history, NVFP4's random stream) and,
    when statistics are on, its :class:`~.statistics.SiteStats`."""

    def __init__(self, name: str, kind: str, emulation: Emulation) -> None:
        self.name, self.kind, self.emulation = name, kind, emulation
        self.linear = emulation.precision.make(emulation.seed_of(name))
        self.stats = SiteStats() if emulation.stats else None

    @property
    def label(self) -> str:
        return self.emulation.precision.label


class Emulation:
    """One precision applied to a model (or to the code inside one ``emulating`` block): its
    options and its sites by name, in the order they were made."""

    def __init__(self, precision: Precision, *, backward: bool, seed: int, stats: bool,
                 exclude: tuple[str, ...]) -> None:
        self.precision, self.backward, self.seed, self.stats, self.exclude = precision, backward, seed, stats, exclude
        self.sites: dict[str, Site] = {}
        self.skipped: set[int] = set()  # ids of the modules left in float32 (excluded or not handled)

    def seed_of(self, name: str) -> int:
        """A site's seed: the emulation's and its name's, so a site draws the same random bits
        whatever other sites exist."""
        return self.seed * 2**32 + zlib.crc32(name.encode())

    def site(self, name: str, kind: str) -> Site:
        if name not in self.sites:
            self.sites[name] = Site(name, kind, self)
        return self.sites[name]

    def end_step(self) -> None:
        """A training step ends: delayed scaling takes the amaxes recorded since the last one."""
        for site in self.sites.values():
            site.linear.end_step()


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def check_tensor(t: Any, what: str) -> None:
    """A GEMM operand fpemu can take: a float32 tensor on the CPU (one error naming the rest)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} is a {type(t).__name__}, not a tensor")
    if t.device.type != "cpu":
        raise ValueError(f"{what} is on {t.device}; fpemu computes on the CPU: move the model and its inputs there "
                         "(model.cpu(), x.cpu()) before emulating")
    if t.dtype != torch.float32:  # (a ValueError: torch's ``@`` turns a TypeError into "unsupported operand")
        raise ValueError(f"{what} is {t.dtype}; fpemu.torch emulates float32 GEMMs: use a float32 model (model.float()) "
                        "and float32 inputs (the formats' casts start from float32, as a real kernel's do)")


class GemmFunction(torch.autograd.Function):
    """``a @ b (+ bias)`` of stacks (batch, M, K) x (batch, K, N) through a site's layer."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, site: Site,
                record: bool) -> torch.Tensor:
        with internal():
            A, B = _numpy(a), _numpy(b)
            bn = None if bias is None else _numpy(bias)
            outs, saved = [], []
            for i in range(A.shape[0]):
                y, held = site.linear.fwd(A[i], B[i], bn, record)
                y = np.asarray(y, dtype=np.float32)
                if site.stats is not None:
                    ref = torch_product(A[i], B[i])
                    site.stats.add(A[i], B[i], site.linear.operands(A[i], B[i], held), y, ref if bn is None else ref + bn)
                outs.append(y)
                saved.append(held)
            ctx.save_for_backward(a, b)  # torch's in-place check guards the views the layer keeps
            ctx.site, ctx.held = site, saved if site.emulation.backward else None
            return as_tensor(outs[0][None] if len(outs) == 1 else np.stack(outs))

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        a, b = ctx.saved_tensors
        need_a, need_b, need_bias = ctx.needs_input_grad[:3]
        with internal():
            if ctx.held is None:  # backward=False: the gradients of the float32 product
                da = dy @ b.mT if need_a else None
                db = a.mT @ dy if need_b else None
                return da, db, dy.sum(dim=(0, 1)) if need_bias else None, None, None
            D = _numpy(dy.contiguous())
            grads = [ctx.site.linear.bwd(D[i], held, None, "act", need_dx=need_a) for i, held in enumerate(ctx.held)]
            da = as_tensor(np.stack([np.asarray(g[0], np.float32) for g in grads])) if need_a else None
            db = as_tensor(np.stack([np.asarray(g[1], np.float32) for g in grads]))
            dbias = as_tensor(np.asarray(sum(g[2] for g in grads), np.float32)) if need_bias else None
        return da, db, dbias, None, None


def run_gemm(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, site: Site, record: bool) -> torch.Tensor:
    """The stacks' product through ``site`` (see :class:`GemmFunction`)."""
    return GemmFunction.apply(a, b, bias, site, record)
