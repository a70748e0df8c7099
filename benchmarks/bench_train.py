"""Cost of one emulated training step against a plain FP32 step (target: fp16 <= 5x fp32).

Run: ``python benchmarks/bench_train.py [--steps N]``. Each policy trains the default task's
network for N steps (after a short warm-up) on one BLAS thread; the median step time is printed
with the ratio to FP32.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fpemu import train as T


def step_times(precision: str, loss_scale: str, steps: int, task: T.Task) -> np.ndarray:
    """Seconds per step of ``steps`` training steps (per-step times from the progress hook)."""
    marks: list[float] = []
    T.run(precision, loss_scale, steps, 0, task=task, progress=lambda i, n: marks.append(time.perf_counter()))
    return np.diff(np.array(marks))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--all", action="store_true", help="also bf16, fp8, mxfp8 and nvfp4")
    args = ap.parse_args()
    task = T.make_task(0)
    runs = [("fp32", "none"), ("fp16", "dynamic")]
    if args.all:
        runs += [("fp16", "none"), ("bf16", "none"), ("fp8", "none"), ("mxfp8", "none"), ("nvfp4", "none")]
    b, widths = task.batch_size, task.widths
    print(f"network {widths}, batch {b}, {args.steps} steps each (median step time)")
    base = None
    for precision, ls in runs:
        step_times(precision, ls, 5, task)  # warm-up
        t = float(np.median(step_times(precision, ls, args.steps, task)))
        base = t if base is None else base
        print(f"{precision + '+' + ls:14s} {t * 1e3:8.2f} ms/step   {t / base:5.2f}x fp32")


if __name__ == "__main__":
    main()
