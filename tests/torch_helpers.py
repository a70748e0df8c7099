"""A small torch model for the fpemu.torch tests (Linear layers, attention whose QK^T and PV go
through ``emulating``, a residual) and each precision's GEMM written out by hand from fpemu's
public functions (``fpemu.quantize``, ``fpemu.scaled_cast``, ``fpemu.mx.quantize``,
``fpemu.gemm``) and torch's float32 ``matmul``: what the bridge must equal bit for bit."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import fpemu
from fpemu import mx

F32 = np.float32
# inputs -> (block format, mx.quantize keywords) of the block precisions (the bridge's defaults)
BLOCKS = {"mxfp8": ("mxfp8_e4m3", {"scale_rounding": "rceil"}), "mxfp8_e5m2": ("mxfp8_e5m2", {"scale_rounding": "rceil"}),
          "mxfp6_e3m2": ("mxfp6_e3m2", {}), "mxfp6_e2m3": ("mxfp6_e2m3", {}), "mxfp4": ("mxfp4", {}),
          "nvfp4": ("nvfp4", {})}  # fmt: skip


class Attention(nn.Module):
    """Multi-head self-attention written with Linear layers and matmuls; the operands and results
    of its two products are kept in ``seen`` for the tests."""

    def __init__(self, d: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.seen: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (u.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for u in self.qkv(x).split(d, dim=-1))
        kt = k.transpose(-1, -2)
        scores = q @ kt
        att = torch.softmax(scores / (d // self.heads) ** 0.5, dim=-1)
        pv = torch.matmul(att, v)
        self.seen = {"q": q, "kt": kt, "scores": scores, "att": att, "v": v, "pv": pv}
        return x + self.out(pv.transpose(1, 2).reshape(b, t, d))  # the residual


class Net(nn.Module):
    def __init__(self, d_in: int = 16, d: int = 32, d_out: int = 4) -> None:
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.attn = Attention(d)
        self.head = nn.Linear(d, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.attn(self.inp(x))))


def net(seed: int = 0, **kw) -> Net:
    torch.manual_seed(seed)
    return Net(**kw)


def inputs(seed: int = 1, shape=(2, 16, 16)) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def t_mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch's float32 product of two arrays."""
    return (torch.from_numpy(np.ascontiguousarray(a, F32)) @ torch.from_numpy(np.ascontiguousarray(b, F32))).numpy()


def deq(q) -> np.ndarray:
    return np.asarray(q.dequantize(), F32)


def gemm_by_hand(precision: str, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                 accumulator: str | None = None, autocast: bool = False) -> np.ndarray:
    """``x @ w (+ b)`` (x (M, K), w (K, N)) in a precision of the bridge, from fpemu's public
    functions: formats only (torch's float32 product) or through ``fpemu.gemm``."""
    x, w = np.asarray(x, F32), np.asarray(w, F32)
    if precision in ("bf16", "fp16"):  # the operands rounded (autocast: the bias and output too)
        q = lambda t: np.asarray(fpemu.quantize(np.asarray(t, F32), precision), F32)  # noqa: E731
        y = t_mm(q(x), q(w)) if accumulator is None else fpemu.gemm(q(x), q(w), inputs=precision, accumulator=accumulator)
        if not autocast:
            return y if b is None else y + b
        return q(y if b is None else y + q(b))
    if precision in ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"):  # current scaling, per tensor (TE's rule)
        tx, tw = fpemu.scaled_cast(x, precision), fpemu.scaled_cast(w, precision)
        xq, wq = (np.asarray(fpemu.decode(t.codes, precision), F32) for t in (tx, tw))
        p = t_mm(xq, wq) if accumulator is None else fpemu.gemm(xq, wq, inputs=precision, accumulator=accumulator)
        y = p * tx.scale_inv * tw.scale_inv
        return y if b is None else y + b
    block, kw = BLOCKS[precision]
    qx = mx.quantize(x, block, axis=1, **kw)
    tiles = {"axis": (0, 1), "block_size": (16, 16)} if precision == "nvfp4" else {"axis": 0}  # NVFP4: 2-D weights
    qw = mx.quantize(w, block, **tiles, **kw)
    y = t_mm(deq(qx), deq(qw)) if accumulator is None else fpemu.gemm(qx, qw, accumulator=accumulator)
    return y if b is None else y + b


def linear_io(model: nn.Module) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Forward hooks recording every Linear's (input flattened to 2-D, output) by name; returns
    the dict they fill (call ``.clear()`` to reuse)."""
    seen: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            def hook(mod, args, out, name=name):
                x = args[0].detach()
                seen[name] = (x.reshape(-1, x.shape[-1]).numpy().copy(), out.detach().reshape(-1, out.shape[-1]).numpy().copy())
            m.register_forward_hook(hook)
    return seen
