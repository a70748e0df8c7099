"""Throughput of fpemu's encode/decode against ml_dtypes and PyTorch's CPU casts, in one run.

    python benchmarks/bench_codec.py [--n 10000000] [--repeat 5] [--rounds 3]

Input: n float32 values from a standard normal distribution. For each format prints Melem/s
(best of ``repeat`` calls, best over ``rounds`` rounds that alternate the contenders, so that
a busy machine slows them alike) for fpemu on one worker and on every core, ml_dtypes'
``astype`` and, where torch is installed, ``Tensor.to`` on one thread
(``torch.set_num_threads(1)``); then the ratios fpemu(1 worker)/ml_dtypes,
fpemu(1 worker)/torch (per core) and fpemu(all cores)/ml_dtypes (> 1: fpemu is faster).
Every contender's codes are checked equal to fpemu's first.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import fpemu
from fpemu.parallel import resolve_workers

try:
    import ml_dtypes
except ImportError:  # the comparison needs it; fpemu alone does not
    ml_dtypes = None
try:
    import torch
except ImportError:
    torch = None

# fpemu name: (ml_dtypes dtype, torch dtype)
FORMATS = {
    "bf16": ("bfloat16", "bfloat16"),
    "e4m3": ("float8_e4m3fn", "float8_e4m3fn"),
    "e5m2": ("float8_e5m2", "float8_e5m2"),
    "e2m1": ("float4_e2m1fn", "float4_e2m1fn_x2"),
}


def best_seconds(fn, repeat: int, clock=time.perf_counter) -> float:
    """The shortest of ``repeat`` calls of fn, by ``clock`` (wall time by default;
    ``time.thread_time`` counts only this thread's CPU time, which a shared machine's other
    processes disturb less: right for work that runs in the calling thread alone)."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def contenders(x: np.ndarray, name: str) -> dict:
    """op -> {contender: callable} for one format, each checked against fpemu's codes."""
    codes = fpemu.encode(x, name, workers=1)
    enc = {"fpemu 1": lambda: fpemu.encode(x, name, workers=1), "fpemu all": lambda: fpemu.encode(x, name)}
    dec = {"fpemu 1": lambda: fpemu.decode(codes, name, dtype=np.float32, workers=1),
           "fpemu all": lambda: fpemu.decode(codes, name, dtype=np.float32)}
    md_name, torch_name = FORMATS[name]
    if ml_dtypes is not None:
        dtype = getattr(ml_dtypes, md_name)
        assert np.array_equal(x.astype(dtype).view(codes.dtype), codes), f"{name}: codes differ from ml_dtypes"
        cast = x.astype(dtype)
        enc["ml_dtypes"] = lambda: x.astype(dtype)
        dec["ml_dtypes"] = lambda: cast.astype(np.float32)
    if torch is not None and name != "e2m1":  # torch casts to float4 only in packed pairs
        t, tdtype = torch.from_numpy(x), getattr(torch, torch_name)
        bits = {1: torch.uint8, 2: torch.uint16}[codes.itemsize]
        assert np.array_equal(t.to(tdtype).view(bits).numpy(), codes), f"{name}: codes differ from torch"
        tcast = t.to(tdtype)
        enc["torch"] = lambda: t.to(tdtype)
        dec["torch"] = lambda: tcast.to(torch.float32)
    return {"encode": enc, "decode": dec}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if torch is not None:
        torch.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    mega = args.n / 1e6
    print(f"{args.n} float32 randn elements, best of {args.repeat} x {args.rounds} rounds; Melem/s; "
          f"fpemu 'all' = {resolve_workers(None)} workers of os.cpu_count() = {os.cpu_count()}; "
          f"torch {'on 1 thread' if torch is not None else 'not installed'}")
    head = ["fpemu 1", "fpemu all", "ml_dtypes", "torch"]
    print(f"{'op':<8}{'format':<7}" + "".join(f"{h:>11}" for h in head)
          + f"{'1/mld':>8}{'1/torch':>8}{'all/mld':>8}")
    for name in FORMATS:
        for op, fns in contenders(x, name).items():
            best = {k: float("inf") for k in fns}
            for _ in range(args.rounds):
                for k, fn in fns.items():
                    best[k] = min(best[k], best_seconds(fn, args.repeat))
            rate = {k: mega / best.get(k, float("nan")) for k in head}
            print(f"{op:<8}{name:<7}" + "".join(f"{rate[k]:>11.0f}" for k in head)
                  + f"{rate['fpemu 1'] / rate['ml_dtypes']:>8.2f}{rate['fpemu 1'] / rate['torch']:>8.2f}"
                  + f"{rate['fpemu all'] / rate['ml_dtypes']:>8.2f}")


if __name__ == "__main__":
    main()
