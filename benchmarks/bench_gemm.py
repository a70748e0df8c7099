"""Speed of the accumulator models, against numpy's float64 matmul in the same run.

    python benchmarks/bench_gemm.py            # all three cases
    python benchmarks/bench_gemm.py --quick    # smaller sizes

Cases (issue 4): replaying one 5000-row hardware dump (target < 0.1 s); a 512x512x512 fp16 GEMM
with the "a100" model (target < 10 s on 2 cores); a 512x512x4096 e4m3 GEMM with "h100"; the
IEEE loop and the exact sum; and (issue 11) the AMD models: CDNA3's two-stage fused sum (fp16,
FNUZ FP8) and CDNA2's rounded pairwise trees with flushing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fpemu  # noqa: E402
from fpemu.accumulator import dot, gemm  # noqa: E402

HWDATA = Path(__file__).resolve().parents[1].parent / "shared" / "hwdata"


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def report(label: str, seconds: float, reference: float, products: int) -> None:
    print(
        f"{label:<44} {seconds:9.4f} s  {products / seconds / 1e6:8.1f} M products/s  "
        f"{seconds / reference:8.0f}x numpy float64 matmul ({reference * 1e3:.3f} ms)"
    )


def bench_replay(repeat: int) -> None:
    path = HWDATA / "h100_fp16.npz"
    if not path.exists():
        print(f"{path} not found: replay skipped")
        return
    data = np.load(path)
    a, b, c = (data[k].view(np.float32) for k in ("a", "b", "c"))
    seconds = best_of(lambda: dot(a, b, c, inputs="fp16", accumulator="h100"), repeat)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # The same arithmetic in plain numpy: 5000 dot products of length 16.
    reference = best_of(lambda: np.einsum("ij,ij->i", a64, b64) + c, max(repeat, 20))
    report(f"replay h100_fp16.npz ({a.shape[0]} x K={a.shape[1]})", seconds, reference, a.size)


def bench_gemm(m: int, n: int, k: int, inputs: str, acc: str, repeat: int) -> None:
    rng = np.random.default_rng(0)
    A = fpemu.quantize(rng.standard_normal((m, k)), inputs)
    B = fpemu.quantize(rng.standard_normal((k, n)), inputs)
    seconds = best_of(lambda: gemm(A, B, inputs=inputs, accumulator=acc), repeat)
    reference = best_of(lambda: A @ B, 3)
    report(f"gemm {m}x{n}x{k} {inputs} {acc!r}", seconds, reference, m * n * k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller GEMMs")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    size = 128 if args.quick else 512
    bench_replay(max(args.repeat, 5))
    bench_gemm(size, size, size, "fp16", "a100", args.repeat)
    bench_gemm(size, size, 8 * size, "e4m3", "h100", 1 if not args.quick else args.repeat)
    bench_gemm(size // 4, size // 4, size, "fp16", "fp32", 1)
    bench_gemm(size // 4, size // 4, size, "fp16", "exact", 1)
    bench_gemm(size // 2, size // 2, size, "fp16", "mi300x", 1)
    bench_gemm(size // 2, size // 2, size, "e4m3fnuz", "mi300x", 1)
    bench_gemm(size // 2, size // 2, size, "bf16", "mi250", 1)


if __name__ == "__main__":
    main()
