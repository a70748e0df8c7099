"""Cost of fpemu.torch's formats-only mode against the same casts and product written by hand.

Run: ``python benchmarks/bench_torch_bridge.py [--repeat N] [--units]``.

For each precision (bf16, e4m3 with current scaling, mxfp8) and shape (tokens x d_in -> d_out),
one ``nn.Linear`` forward pass:

* by hand: the operands cast by fpemu's public functions (``fpemu.quantize``,
  ``fpemu.scaled_cast`` and ``fpemu.decode``, ``fpemu.mx.quantize`` and ``dequantize``), torch's
  float32 ``matmul``, the bias: the arithmetic the bridge must reproduce, without the bridge;
* bridge: the layer after ``fpemu.torch.emulate``, the same bits (checked here each time).

Both run with autograd on (a training forward), on one thread (torch's and fpemu's: ``--threads``
sets both), alternately, ``--repeat`` times each after a warm-up, so that other work on the
machine slows both alike; the times are CPU seconds of the process (``time.process_time``),
the medians printed, and the ratio is the median of the pairs' ratios, bridge / by hand: the
bridge's overhead (conversions between tensors and arrays, the autograd function, the layer's
bookkeeping). ``--units`` adds the same forward through a matrix-unit model (bf16 and e4m3 on
h100, mxfp8 on b200), whose cost is fpemu.gemm's.

Memory: the peak of NumPy's allocations (``tracemalloc``; torch's own buffers are not traced)
during inference (``torch.no_grad``) of a stack of 2 and of 8 emulated layers of the largest
shape, over the operands' bytes: the same for both depths, so bounded by one layer's operands
(each layer's casts are freed when it returns).
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
import torch
from torch import nn

import fpemu
import fpemu.torch as ft
from fpemu import mx

SHAPES = ((512, 384, 384), (512, 384, 1536), (2048, 768, 768))
PRECISIONS = ("bf16", "e4m3", "mxfp8")
UNITS = {"bf16": "h100", "e4m3": "h100", "mxfp8": "b200"}
F32 = np.float32


def by_hand(precision: str, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The layer's forward from fpemu's public casts and torch.matmul."""
    xs, ws, bs = x.detach().numpy(), weight.detach().numpy().T, bias.detach().numpy()
    if precision == "bf16":
        q = lambda t: np.asarray(fpemu.quantize(t, "bf16"), F32)  # noqa: E731
        y = torch.matmul(torch.from_numpy(q(xs)), torch.from_numpy(q(ws))).numpy()
        return torch.from_numpy(y + bs)
    if precision == "e4m3":
        tx, tw = fpemu.scaled_cast(xs, "e4m3"), fpemu.scaled_cast(ws, "e4m3")
        xq, wq = (np.asarray(fpemu.decode(t.codes, "e4m3"), F32) for t in (tx, tw))
        y = torch.matmul(torch.from_numpy(xq), torch.from_numpy(wq)).numpy() * tx.scale_inv * tw.scale_inv
        return torch.from_numpy(y + bs)
    qx = mx.quantize(xs, "mxfp8_e4m3", axis=1, scale_rounding="rceil").dequantize()
    qw = mx.quantize(ws, "mxfp8_e4m3", axis=0, scale_rounding="rceil").dequantize()
    y = torch.matmul(torch.from_numpy(np.asarray(qx, F32)), torch.from_numpy(np.asarray(qw, F32))).numpy()
    return torch.from_numpy(y + bs)


def cpu_time(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def paired_times(a, b, repeat: int) -> tuple[float, float, float]:
    """(median of a, median of b, median of b/a), a and b run alternately after a warm-up."""
    a(), b()
    pairs = np.array([(cpu_time(a), cpu_time(b)) for _ in range(repeat)])
    return float(np.median(pairs[:, 0])), float(np.median(pairs[:, 1])), float(np.median(pairs[:, 1] / pairs[:, 0]))


def timings(repeat: int, units: bool) -> None:
    print(f"{'precision':<10} {'tokens x d_in -> d_out':>24} {'by hand ms':>11} {'bridge ms':>10} {'ratio':>6}"
          + (f" {'unit':>5} {'unit ms':>9}" if units else ""))
    for precision in PRECISIONS:
        for tokens, d_in, d_out in SHAPES:
            torch.manual_seed(0)
            plain = nn.Linear(d_in, d_out)
            x = torch.randn(tokens, d_in)
            layer = ft.emulate(nn.Linear(d_in, d_out), inputs=precision)
            layer.load_state_dict(plain.state_dict())
            assert torch.equal(layer(x), by_hand(precision, x, plain.weight, plain.bias)), precision
            hand, bridge, ratio = paired_times(lambda: by_hand(precision, x, plain.weight, plain.bias),
                                               lambda: layer(x), repeat)
            line = (f"{precision:<10} {f'{tokens} x {d_in} -> {d_out}':>24} {1e3 * hand:>11.2f} {1e3 * bridge:>10.2f} "
                    f"{ratio:>6.2f}")
            if units:
                unit = ft.emulate(nn.Linear(d_in, d_out), inputs=precision, accumulator=UNITS[precision])
                unit.load_state_dict(plain.state_dict())
                line += f" {UNITS[precision]:>5} {1e3 * cpu_time(lambda: unit(x)):>9.1f}"
            print(line, flush=True)


def peak_memory(depth: int, precision: str, tokens: int, d: int) -> float:
    """MiB of NumPy allocations at the peak of one inference forward of ``depth`` layers."""
    torch.manual_seed(0)
    model = ft.emulate(nn.Sequential(*[nn.Linear(d, d) for _ in range(depth)]), inputs=precision)
    x = torch.randn(tokens, d)
    with torch.no_grad():
        model(x)  # warm-up: tables and scratch buffers made once
        tracemalloc.start()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        model(x)
        peak = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.stop()
    return peak / 2**20


def memory() -> None:
    tokens, _, d = SHAPES[-1][0], SHAPES[-1][1], SHAPES[-1][2]
    operands = (tokens * d + d * d) * 4 / 2**20
    print(f"\npeak NumPy memory of an inference forward, layers {d} -> {d}, {tokens} tokens "
          f"(one layer's float32 operands: {operands:.1f} MiB)")
    for precision in PRECISIONS:
        peaks = [peak_memory(depth, precision, tokens, d) for depth in (2, 8)]
        print(f"{precision:<10} 2 layers {peaks[0]:7.1f} MiB   8 layers {peaks[1]:7.1f} MiB   "
              f"({peaks[1] / operands:.1f}x one layer's operands)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--units", action="store_true", help="also time the matrix-unit models")
    ap.add_argument("--threads", type=int, default=1, help="torch's threads and fpemu's workers (default 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["FPEMU_WORKERS"] = str(args.threads)
    print(f"torch {torch.__version__}, fpemu {fpemu.__version__}: {args.threads} thread(s); CPU ms per forward")
    timings(args.repeat, args.units)
    memory()


if __name__ == "__main__":
    main()
