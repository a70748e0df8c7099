"""Throughput of fpemu's encode/decode against ml_dtypes, in one run.

    python benchmarks/bench_codec.py [--n 10000000] [--repeat 5]

Input: n float32 values from a standard normal distribution. Prints Melem/s (best of
`repeat`) for fpemu and for ml_dtypes' `astype`, and their ratio (> 1: fpemu is faster).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fpemu

try:
    import ml_dtypes
except ImportError:  # the comparison needs it; fpemu alone does not
    ml_dtypes = None

FORMATS = {"bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e2m1": "float4_e2m1fn"}


def best_seconds(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    mega = args.n / 1e6
    print(f"{args.n} float32 randn elements, best of {args.repeat}; Melem/s")
    print(f"{'op':<8}{'format':<7}{'fpemu':>10}{'ml_dtypes':>11}{'ratio':>8}")
    for name, md_name in FORMATS.items():
        codes = fpemu.encode(x, name)
        enc = best_seconds(lambda: fpemu.encode(x, name), args.repeat)
        dec = best_seconds(lambda: fpemu.decode(codes, name, dtype=np.float32), args.repeat)
        if ml_dtypes is not None:
            dtype = getattr(ml_dtypes, md_name)
            assert np.array_equal(x.astype(dtype).view(codes.dtype), codes), "codes differ from ml_dtypes"
            cast = x.astype(dtype)
            enc_ref = best_seconds(lambda: x.astype(dtype), args.repeat)
            dec_ref = best_seconds(lambda: cast.astype(np.float32), args.repeat)
        else:
            enc_ref = dec_ref = float("nan")
        for op, ours, ref in (("encode", enc, enc_ref), ("decode", dec, dec_ref)):
            print(f"{op:<8}{name:<7}{mega / ours:>10.0f}{mega / ref:>11.0f}{ref / ours:>8.2f}")


if __name__ == "__main__":
    main()
