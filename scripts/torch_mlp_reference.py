"""The default MLP task trained in real PyTorch mixed precision, to check fpemu's claims.

Usage: python scripts/torch_mlp_reference.py [--seeds 0 1 2 3] [--steps 300]

The network, data, initial weights and batch order are fpemu's (``fpemu.train.make_task``,
``init_params`` and the loop's batch order); the arithmetic is torch's on the CPU:
``torch.autocast("cpu", dtype=torch.float16)`` around the forward pass (every ``nn.Linear``
casts its input, weight and bias to FP16, sums in FP32 and rounds its output to FP16; the
loss is computed in FP32 from the FP16 logits, as autocast does for
``binary_cross_entropy_with_logits``), FP32 master weights, ``torch.optim.SGD`` and, for
dynamic scaling, ``torch.amp.GradScaler``.

Underflow is counted as fpemu counts it: a value underflows when its exact (FP32) value is
non-zero and its FP16 value is 0. torch does not show the FP32 value of a GEMM it rounds to
FP16, so backward hooks recompute it in FP32 from the same FP16 operands (the sum order may
differ from torch's in the last bit, which decides a tie at FP16's smallest subnormal at most).
Kinds: the loss gradient (w.r.t. the logits), the activation gradients entering each backward
GEMM (after the ReLU mask), the weight and the bias gradients.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def train_torch(seed: int = 0, precision: str = "fp16", loss_scale: str = "dynamic", steps: int = 300,
                task=None) -> dict:
    """One run in torch; returns its per-step losses, final loss and underflow counts per kind."""
    import torch

    from fpemu import train as T

    task = task or T.make_task(seed)
    torch.set_num_threads(1)
    params = T.init_params(task.widths, seed)
    layers = []
    for l in range(len(params) // 2):
        lin = torch.nn.Linear(*params[2 * l].shape)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(params[2 * l].T.copy()))
            lin.bias.copy_(torch.from_numpy(params[2 * l + 1]))
        layers.append(lin)
    model = torch.nn.ModuleList(layers)
    if task.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=task.lr, momentum=task.momentum)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=task.lr)
    low = precision in ("fp16", "bf16")
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    scaler = torch.amp.GradScaler("cpu", enabled=low and loss_scale == "dynamic")
    counts = {k: np.zeros(2, np.int64) for k in ("loss", "act", "weight", "bias")}
    rng = np.random.default_rng([seed, 0xBA7C])
    order, cursor = rng.permutation(len(task.x_train)), 0
    losses = []
    for _ in range(steps):
        if cursor + task.batch_size > len(task.x_train):
            order, cursor = rng.permutation(len(task.x_train)), 0
        idx = order[cursor : cursor + task.batch_size]
        cursor += task.batch_size
        x, y = torch.from_numpy(task.x_train[idx]), torch.from_numpy(task.y_train[idx])
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=dtype, enabled=low):
            acts, outs = [x], []
            for l, lin in enumerate(model):
                z = lin(acts[-1])
                outs.append(z)
                if l < len(model) - 1:
                    acts.append(torch.relu(z))
        logits32 = outs[-1].float()  # what autocast does inside binary_cross_entropy_with_logits
        for t in (logits32, *outs):
            t.retain_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits32, y)
        losses.append(float(loss.detach()))
        scaler.scale(loss).backward()
        if low:  # before the scaler's step unscales the gradients in place
            _count(counts, model, acts, outs, logits32)
        scaler.step(opt)
        scaler.update()
    n_eval = min(len(task.x_train), 4096)
    with torch.no_grad(), torch.autocast("cpu", dtype=dtype, enabled=low):
        a = torch.from_numpy(task.x_train[:n_eval])
        for l, lin in enumerate(model):
            a = lin(a)
            if l < len(model) - 1:
                a = torch.relu(a)
        final = float(torch.nn.functional.binary_cross_entropy_with_logits(
            a.float(), torch.from_numpy(task.y_train[:n_eval])))
    return {"loss": losses, "final_loss": final, "counts": counts,
            "underflow": _fraction(sum(counts.values())),
            "underflow_by_kind": {k: _fraction(c) for k, c in counts.items()}}


def _fraction(c: np.ndarray) -> float:
    return int(c[1]) / int(c[0]) if c[0] else 0.0


def _add(counts: np.ndarray, exact, rounded) -> None:
    nz = exact != 0
    counts += (int(nz.sum()), int((nz & (rounded == 0)).sum()))


def _count(counts: dict, model, acts, outs, logits32) -> None:
    """Underflow of one step's gradients: each low-precision value against its FP32 value,
    recomputed from the same low-precision operands."""
    import torch

    with torch.no_grad():
        _add(counts["loss"], logits32.grad, outs[-1].grad)
        for l, lin in enumerate(model):
            dy = outs[l].grad.float()
            if l + 1 < len(model):
                w_next = model[l + 1].weight.to(outs[l].dtype).float()
                _add(counts["act"], (outs[l + 1].grad.float() @ w_next) * (outs[l] > 0), outs[l].grad)
            x = acts[l].to(outs[l].dtype).float()
            _add(counts["weight"], dy.T @ x, lin.weight.grad)
            _add(counts["bias"], dy.sum(0), lin.bias.grad)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args(argv)
    for seed in args.seeds:
        fp32 = train_torch(seed, "fp32", "none", args.steps)
        for ls in ("none", "dynamic"):
            r = train_torch(seed, "fp16", ls, args.steps)
            kinds = ", ".join(f"{k} {100 * v:.2f}%" for k, v in r["underflow_by_kind"].items())
            print(f"seed {seed} fp16+{ls:8s} excess {100 * (r['final_loss'] / fp32['final_loss'] - 1):+6.1f}%  "
                  f"underflow {100 * r['underflow']:.2f}% ({kinds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
