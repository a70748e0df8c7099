"""``with emulating(...)``: the matrix products of forward code (``torch.matmul``, ``@``,
``torch.bmm``, ``torch.mm``, ``F.linear``: attention's QK^T and PV) through fpemu, by a
:class:`~torch.overrides.TorchFunctionMode` that is pushed on entry and popped on exit
(exceptions included), with the module hooks that name each call site.

A call site is named after the innermost module running and the order of the call among that
function's calls in the module's forward: the second ``matmul`` of ``layers.0.attn`` is
``layers.0.attn.matmul.1``
(a plain ``nn.Linear``'s own ``F.linear`` is the Linear's name), so a site keeps its state
(delayed scaling's amax history, NVFP4's random stream) from one forward pass to the next.
Calls inside an excluded module, inside a module the bridge leaves in float32, and fpemu's own
calls pass through unchanged. Functions holding a GEMM that are not emulated (``einsum``,
``baddbmm``, ``F.scaled_dot_product_attention``, convolutions ...) run in float32 and are
named in one warning when the block ends.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.overrides import TorchFunctionMode

from .sites import Emulation, check_tensor, is_internal, run_gemm

# The functions emulated, and the label of their sites.
EMULATED = {torch.matmul: "matmul", torch.Tensor.matmul: "matmul", torch.Tensor.__rmatmul__: "matmul",
            torch.bmm: "bmm", torch.Tensor.bmm: "bmm", torch.mm: "mm", torch.Tensor.mm: "mm", F.linear: "linear"}
# Functions holding a GEMM that run in float32 under the mode (named in the warning).
NOT_EMULATED = {f: n for n, f in (
    ("torch.einsum", torch.einsum), ("torch.tensordot", torch.tensordot), ("torch.baddbmm", torch.baddbmm),
    ("torch.addmm", torch.addmm), ("torch.addbmm", torch.addbmm), ("torch.addmv", torch.addmv),
    ("torch.mv", torch.mv), ("torch.dot", torch.dot), ("torch.inner", torch.inner),
    ("Tensor.baddbmm", torch.Tensor.baddbmm), ("Tensor.addmm", torch.Tensor.addmm), ("Tensor.mv", torch.Tensor.mv),
    ("Tensor.dot", torch.Tensor.dot), ("F.scaled_dot_product_attention", F.scaled_dot_product_attention),
    ("F.bilinear", F.bilinear), ("F.conv1d", F.conv1d), ("F.conv2d", F.conv2d), ("F.conv3d", F.conv3d),
    ("F.conv_transpose1d", F.conv_transpose1d), ("F.conv_transpose2d", F.conv_transpose2d),
    ("F.conv_transpose3d", F.conv_transpose3d))}


def _stacks(op: str, args: tuple, kwargs: dict) -> tuple[torch.Tensor, torch.Tensor, Any, Any]:
    """(a, b, bias, shape): the call's operands as stacks (batch, M, K), (batch, K, N) and the
    shape its result takes, as torch's own function defines it."""
    if kwargs.get("out") is not None:
        raise ValueError(f"fpemu.torch.emulating does not write into out= (torch.{op}): assign the result instead")
    if op == "linear":
        x, w = args[0], args[1]
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        check_tensor(x, "the input of F.linear")
        check_tensor(w, "the weight of F.linear")
        if bias is not None:
            check_tensor(bias, "the bias of F.linear")
        return x.reshape(1, -1, x.shape[-1]), w.t().unsqueeze(0), bias, (*x.shape[:-1], w.shape[0])
    a, b = args[0], args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("mat2"))
    check_tensor(a, f"the first operand of {op}")
    check_tensor(b, f"the second operand of {op}")
    if op in ("mm", "bmm") and (a.dim(), b.dim()) != ((2, 2) if op == "mm" else (3, 3)):
        raise ValueError(f"torch.{op} takes {'2-D' if op == 'mm' else '3-D'} operands, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    if a.dim() == 0 or b.dim() == 0:
        raise ValueError("matmul takes operands of at least one dimension")
    va, vb = a.dim() == 1, b.dim() == 1
    a2 = a.unsqueeze(0) if va else a
    b2 = b.unsqueeze(-1) if vb else b
    if b2.dim() == 2:  # one GEMM: A's leading axes are rows, as torch multiplies them
        shape = (*a2.shape[:-1], b2.shape[-1])
        a3, b3 = a2.reshape(1, -1, a2.shape[-1]), b2.unsqueeze(0)
    else:
        batch = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        shape = (*batch, a2.shape[-2], b2.shape[-1])
        a3 = a2.expand(*batch, *a2.shape[-2:]).reshape(-1, *a2.shape[-2:])
        b3 = b2.expand(*batch, *b2.shape[-2:]).reshape(-1, *b2.shape[-2:])
    if a3.shape[-1] != b3.shape[-2]:
        raise ValueError(f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
    drop = [i for i, v in ((-1, vb), (-2, va)) if v]
    shape = [s for i, s in enumerate(shape) if i - len(shape) not in drop]
    return a3, b3, None, tuple(shape)


class GemmMode(TorchFunctionMode):
    """The mode that sends the emulated functions to :func:`~.sites.run_gemm`."""

    def __init__(self, block: Emulating) -> None:
        super().__init__()
        self.block = block

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op = EMULATED.get(func)
        if is_internal() or (op is None and func not in NOT_EMULATED):
            return func(*args, **kwargs)
        if self.block.skipping():
            return func(*args, **kwargs)
        if op is None:
            self.block.not_emulated[NOT_EMULATED[func]] = self.block.not_emulated.get(NOT_EMULATED[func], 0) + 1
            return func(*args, **kwargs)
        if func is torch.Tensor.__rmatmul__:
            args = (args[1], args[0])
        a, b, bias, shape = _stacks(op, args, kwargs)
        site = self.block.site(op)
        return run_gemm(a, b, bias, site, self.block.recording()).reshape(shape)


class Emulating:
    """The context manager :func:`fpemu.torch.emulating` returns (usable for several blocks;
    :func:`fpemu.torch.report` takes it)."""

    def __init__(self, emulation: Emulation, module: nn.Module | None) -> None:
        self.emulation, self.module = emulation, module
        self.stack: list[nn.Module] = []
        self.counts: dict[tuple[int | None, str], int] = {}
        self.names: dict[int, str] = {}
        self.not_emulated: dict[str, int] = {}
        self._hooks: list = []
        self._mode: GemmMode | None = None

    # ---- call sites ------------------------------------------------------------------------
    def _pre(self, module: nn.Module, args: Any) -> None:
        if self.module is not None and module is self.module:
            self.emulation.end_step()  # a forward of the model is a step
        self.stack.append(module)
        for op in set(EMULATED.values()):
            self.counts.pop((id(module), op), None)

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        if self.stack and self.stack[-1] is module:
            self.stack.pop()

    def skipping(self) -> bool:
        return bool(self.stack) and id(self.stack[-1]) in self.emulation.skipped

    def recording(self) -> bool:
        return self.stack[-1].training if self.stack else True

    def site(self, op: str):
        owner = self.stack[-1] if self.stack else None
        key = (None if owner is None else id(owner), op)
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        base = "" if owner is None else self.names.get(id(owner), type(owner).__name__)
        if op == "linear" and n == 0 and type(owner) is nn.Linear and base:
            name = base
        else:
            name = f"{base}.{op}.{n}" if base else f"{op}.{n}"
        return self.emulation.site(name, op)

    # ---- the block ---------------------------------------------------------------------------
    def __enter__(self) -> Emulating:
        if self._mode is not None:
            raise RuntimeError("this emulating block is already active")
        if self.module is None:
            self.emulation.end_step()  # without a model, each block is a step
        else:
            self.names = {id(m): n for n, m in self.module.named_modules()}
        self.stack, self.counts, self.not_emulated = [], {}, {}
        self._hooks = [register_module_forward_pre_hook(self._pre),
                       register_module_forward_hook(self._post, always_call=True)]
        self._mode = GemmMode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        mode, self._mode = self._mode, None
        try:
            mode.__exit__(*exc)
        finally:
            for h in self._hooks:
                h.remove()
            self._hooks, self.stack = [], []
        if self.not_emulated:
            calls = ", ".join(f"{n} ({c} call{'s' if c > 1 else ''})" for n, c in self.not_emulated.items())
            warnings.warn(f"fpemu.torch.emulating left these GEMMs in float32 (not emulated): {calls}", UserWarning,
                          stacklevel=2)
