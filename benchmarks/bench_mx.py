"""Throughput of fpemu.mx quantize/dequantize on 10M float32 randn elements.

Run: FPEMU_WORKERS=1 python benchmarks/bench_mx.py [--n 10000000] [--repeat 3] [--convention C]
Prints Melem/s (best of --repeat runs) for mxfp8_e4m3, mxfp6_e2m3, mxfp4 and nvfp4 (FPEMU_WORKERS=1:
one thread, as the issue-17 comparison with torchao); --convention times a library's MX rule
(``mx.quantize(..., convention=C)``) on the MX formats it offers.

Beside fpemu, torchao's CPU casts where it is installed: ``to_mx`` (eager, its default FLOOR
scale; torch on one thread under FPEMU_WORKERS=1, ``torch.set_num_threads(1)``) for the MX
formats it has, ``nvfp4_quantize`` for NVFP4, timed in the same run, with the ratio
fpemu / torchao (> 1: fpemu is faster).

Then (issue 11) a block-scaled GEMM, MXFP8 E4M3 512x512x4096 by default (``--gemm M,N,K``,
``--gemm 0`` to skip), through each block-scaled accumulator model of ``fpemu.gemm``
(target for "b200": under 10 s on 2 cores), against numpy's float64 matmul of the dequantized
operands in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import fpemu
from bench_codec import best_seconds  # (this folder is on the path: run as a script)
from fpemu import mx

try:
    import torch
except ImportError:
    torch = None


def torchao_casts() -> dict:
    """fpemu format -> a callable(float32 torch tensor) with torchao's CPU cast; {} without
    torchao (or where it does not import)."""
    import logging
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)  # its CUDA-only extensions complain on import
            from torchao.prototype.mx_formats.mx_tensor import to_mx
            from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize
    except Exception:  # noqa: BLE001  (not installed, or built for another torch)
        return {}
    finally:
        logging.disable(logging.NOTSET)
    casts = {"mxfp8_e4m3": torch.float8_e4m3fn, "mxfp8_e5m2": torch.float8_e5m2, "mxfp6_e2m3": "fp6_e2m3",
             "mxfp6_e3m2": "fp6_e3m2", "mxfp4": torch.float4_e2m1fn_x2}
    out = {name: (lambda t, d=dtype: to_mx(t, d, 32)) for name, dtype in casts.items()}
    out["nvfp4"] = lambda t: nvfp4_quantize(t.reshape(-1, 16 * 64), block_size=16)
    return out


def torchao_seconds(name: str, n: int, threads: int | None, repeat: int, rounds: int = 3,
                    processes: int = 3) -> float | None:
    """Best seconds of torchao's CPU cast of ``n`` float32 standard normals (seed 0) into
    ``name`` on ``threads`` threads (None: torch's default), each of ``processes`` fresh
    processes timing ``rounds * repeat`` calls after ten of warm-up: None where torchao has no
    such cast or does not import. One thread is timed in that thread's CPU time, more in wall
    time.

    Why fresh processes, and several: in one that has run fpemu first, torchao's to_mx measured
    3x slower (197 against 550-630 Melem/s on one thread, MXFP8, 4M values; its intermediates
    page-faulted in afresh each call), and from one fresh process to the next its best varied
    from 379 to 640: the peer gets its best of them."""
    code = f"""
import json, logging, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import numpy as np
import torch
from bench_mx import torchao_casts
cast = torchao_casts().get({name!r})
if cast is None:
    print("null"); raise SystemExit
threads = {threads!r}
if threads is not None:
    torch.set_num_threads(threads)
clock = time.thread_time if threads == 1 else time.perf_counter
x = torch.from_numpy(np.random.default_rng(0).standard_normal({n}).astype(np.float32))
for _ in range(10):
    cast(x)
best = float("inf")
for _ in range({rounds * repeat}):
    start = clock(); cast(x); best = min(best, clock() - start)
print(json.dumps(best))
"""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    best = []
    for _ in range(processes):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        seconds = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
        if seconds is None:
            return None
        best.append(seconds)
    return min(best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default="mxfp8_e4m3,mxfp6_e2m3,mxfp4,nvfp4")
    parser.add_argument("--convention", default=None, help="an mx.CONVENTION_NAMES entry (MX formats)")
    parser.add_argument("--gemm", default="512,512,4096", help="M,N,K of the block-scaled GEMM (0: skip)")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n, dtype=np.float32)
    casts = torchao_casts() if torch is not None else {}
    if casts and os.environ.get("FPEMU_WORKERS") == "1":
        torch.set_num_threads(1)
    t = torch.from_numpy(x) if casts else None
    print(f"{args.n / 1e6:.0f}M float32 randn, best of {args.repeat}; torchao "
          + (f"on {torch.get_num_threads()} thread(s)" if casts else "not installed"))
    print(f"{'format':<12} {'quantize Melem/s':>17} {'dequantize Melem/s':>19} {'torchao Melem/s':>16} {'ratio':>6}")
    for fmt in args.formats.split(","):
        kw = {} if args.convention is None or fmt == "nvfp4" else {"convention": args.convention}
        mx.quantize(x[:4096], fmt, **kw)  # build the codec's tables outside the timing
        q = mx.quantize(x, fmt, **kw)
        tq = best_seconds(lambda: mx.quantize(x, fmt, **kw), args.repeat)
        td = best_seconds(lambda: q.dequantize(), args.repeat)
        peer = casts.get(fmt)
        if peer is not None:
            peer(t)  # (warm-up)
            tp = best_seconds(lambda: peer(t), args.repeat)
            versus = f"{args.n / tp / 1e6:>16.1f} {tp / tq:>6.2f}"
        else:
            versus = f"{'-':>16} {'-':>6}"
        print(f"{fmt:<12} {args.n / tq / 1e6:>17.1f} {args.n / td / 1e6:>19.1f} {versus}")
    if args.gemm != "0":
        bench_block_gemm(*(int(v) for v in args.gemm.split(",")), repeat=args.repeat)


def bench_block_gemm(m: int, n: int, k: int, repeat: int, fmt: str = "mxfp8_e4m3") -> None:
    """Seconds of one block-scaled GEMM per model (best of ``repeat``), and numpy's matmul."""
    rng = np.random.default_rng(1)
    a = mx.quantize(rng.standard_normal((m, k), dtype=np.float32), fmt)
    b = mx.quantize(rng.standard_normal((k, n), dtype=np.float32), fmt, axis=0)
    da, db = a.dequantize(np.float64), b.dequantize(np.float64)
    ref = best_seconds(lambda: da @ db, repeat)
    print(f"\nblock-scaled GEMM {fmt} {m}x{n}x{k} (numpy float64 matmul: {ref * 1e3:.1f} ms)")
    for acc in ("exact", "b200", "mmasim-blackwell"):
        t = best_seconds(lambda: fpemu.gemm(a, b, accumulator=acc), repeat)
        print(f"  {acc:<18} {t:7.2f} s {m * n * k / t / 1e6:8.1f} M products/s {t / ref:8.0f}x numpy")


if __name__ == "__main__":
    main()
