"""Where the time of one encode goes: each NumPy call of fpemu's float32 kernels timed by name,
beside PyTorch's and ml_dtypes' whole casts, in one run.

    python benchmarks/profile_codec.py [--format e4m3] [--n 10000000] [--repeat 5]

The numpy module that the kernel modules see (fpemu.codec.top_half and fpemu.codec.paths) is
swapped for a proxy that times every call by name, on one worker. In-place operators
(``a += b``) are ndarray methods, not numpy functions: they land in "the rest", with Python's
own time between the calls. The report gives ns per element of input for each call, the
kernel's time without the proxy, and the competitors' casts (``torch.set_num_threads(1)``):
how far a kernel made of whole-array NumPy passes stands from a compiled cast, pass by pass.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fpemu  # noqa: E402
from bench_codec import best_seconds  # noqa: E402  (this folder is on the path: run as a script)
from fpemu.codec import paths, top_half  # noqa: E402

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
try:
    import torch
except ImportError:
    torch = None

CASTS = {"bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "fp16": "float16"}


class TimedNumpy:
    """numpy, with every function call timed into ``totals[name]`` (seconds, calls)."""

    def __init__(self, totals: dict) -> None:
        self._totals = totals

    def __getattr__(self, name: str):
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr  # dtypes, constants, classes such as errstate

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                entry = self._totals[name]
                entry[0] += time.perf_counter() - start
                entry[1] += 1

        return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="e4m3", choices=sorted(CASTS))
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    ns = 1e9 / args.n
    encode = lambda: fpemu.encode(x, args.format, workers=1)  # noqa: E731
    encode()  # tables and plans built outside the timing
    kernel = best_seconds(encode, args.repeat)

    totals: dict = defaultdict(lambda: [0.0, 0])
    proxy = TimedNumpy(totals)
    saved = top_half.np, paths.np
    top_half.np = paths.np = proxy
    try:
        start = time.perf_counter()
        encode()
        traced = time.perf_counter() - start
    finally:
        top_half.np, paths.np = saved

    print(f"fpemu.encode({args.n} float32 randn, {args.format!r}, workers=1): {kernel * ns:.2f} ns/element "
          f"({args.n / kernel / 1e6:.0f} Melem/s); traced run {traced * ns:.2f} ns/element")
    print(f"{'numpy call':28s} {'calls':>7s} {'ns/element':>11s}")
    for name, (seconds, calls) in sorted(totals.items(), key=lambda item: -item[1][0]):
        print(f"{name:28s} {calls:7d} {seconds * ns:11.3f}")
    rest = traced - sum(seconds for seconds, _ in totals.values())
    print(f"{'the rest (in-place ops, Python)':28s} {'':7s} {rest * ns:11.3f}")
    calls = sum(count for _, count in totals.values())
    print(f"{calls} numpy calls for {args.n} elements; the timed calls average "
          f"{sum(s for s, _ in totals.values()) / max(calls, 1) * 1e6:.1f} us")

    if ml_dtypes is not None:
        dtype = getattr(ml_dtypes, CASTS[args.format], None) or np.dtype(CASTS[args.format])
        t = best_seconds(lambda: x.astype(dtype), args.repeat)
        print(f"ml_dtypes astype: {t * ns:.2f} ns/element ({args.n / t / 1e6:.0f} Melem/s)")
    if torch is not None:
        torch.set_num_threads(1)
        tensor, tdtype = torch.from_numpy(x), getattr(torch, CASTS[args.format])
        t = best_seconds(lambda: tensor.to(tdtype), args.repeat)
        print(f"torch .to() on 1 thread: {t * ns:.2f} ns/element ({args.n / t / 1e6:.0f} Melem/s); "
              f"fpemu / torch = {t / kernel:.2f}")


if __name__ == "__main__":
    main()
