"""Throughput of fpemu.mx quantize/dequantize on 10M float32 randn elements.

Run: FPEMU_WORKERS=1 python benchmarks/bench_mx.py [--n 10000000] [--repeat 3] [--convention C]
Prints Melem/s (best of --repeat runs) for mxfp8_e4m3, mxfp6_e2m3, mxfp4 and nvfp4 (FPEMU_WORKERS=1:
one thread, as the issue-17 comparison with torchao); --convention times a library's MX rule
(``mx.quantize(..., convention=C)``) on the MX formats it offers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fpemu import mx


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default="mxfp8_e4m3,mxfp6_e2m3,mxfp4,nvfp4")
    parser.add_argument("--convention", default=None, help="an mx.CONVENTION_NAMES entry (MX formats)")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n, dtype=np.float32)
    print(f"{args.n / 1e6:.0f}M float32 randn, best of {args.repeat}")
    print(f"{'format':<12} {'quantize Melem/s':>17} {'dequantize Melem/s':>19}")
    for fmt in args.formats.split(","):
        kw = {} if args.convention is None or fmt == "nvfp4" else {"convention": args.convention}
        mx.quantize(x[:4096], fmt, **kw)  # build the codec's tables outside the timing
        q = mx.quantize(x, fmt, **kw)
        tq = best_time(lambda: mx.quantize(x, fmt, **kw), args.repeat)
        td = best_time(lambda: q.dequantize(), args.repeat)
        print(f"{fmt:<12} {args.n / tq / 1e6:>17.1f} {args.n / td / 1e6:>19.1f}")


if __name__ == "__main__":
    main()
