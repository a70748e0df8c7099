"""Cost of one emulated training step against a plain FP32 step: time and memory, per policy.

Run: ``python benchmarks/bench_train.py [--task mlp|gpt|both] [--steps N] [--all]``, or
``python benchmarks/bench_train.py --cli`` for the time of the two commands a newcomer runs,
``fpemu train`` and ``fpemu train --task gpt`` with their defaults: wall-clock seconds, the
CPU seconds of the process (on one BLAS thread: the wall time of an idle machine, whatever the
load) and the load average while they ran (other work on the machine lengthens the wall time).

Each policy trains for N steps (after a short warm-up) on one BLAS thread (the training loop
pins it, and OPENBLAS_NUM_THREADS=1 is set before NumPy loads); the median step time is printed
with its ratio to FP32 of the same task. Memory is the peak of what Python and NumPy allocate
(``tracemalloc``) while a separate 3-step run trains, over what was allocated before it: the
data, the weights, the optimiser state, one step's activations and the emulation's temporaries.

* ``mlp``: the default MLP task of ``fpemu train`` (``--all`` adds fp16 without scaling, bf16,
  fp8, mxfp8 and nvfp4 to fp32 and fp16 with dynamic scaling).
* ``gpt``: the transformer of ``fpemu train --task gpt``, every policy of its comparison
  (``--all`` adds fp8 GEMMs through the H100 accumulator model, with and without promotion
  every 128 products: those run 5 steps).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

from fpemu import train as T  # noqa: E402


def _mlp_runner(task: T.Task, precision: str, loss_scale: str) -> Callable[[int, Callable], object]:
    return lambda steps, hook: T.run(precision, loss_scale, steps, 0, task=task, progress=hook)


def _gpt_runner(task, precision: str, **kw) -> Callable[[int, Callable], object]:
    return lambda steps, hook: T.run_gpt(precision, None, steps, 0, task=task, progress=hook, **kw)


def step_times(runner: Callable[[int, Callable], object], steps: int) -> np.ndarray:
    """Seconds per step (from the progress hook's time stamps)."""
    marks: list[float] = []
    runner(steps, lambda i, n: marks.append(time.perf_counter()))
    return np.diff(np.array(marks))


def peak_memory(runner: Callable[[int, Callable], object], steps: int = 3) -> float:
    """MiB allocated at the peak of a short run, over what was allocated before it."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    runner(steps, None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - before) / 2**20


def bench(name: str, runs: list[tuple[str, Callable]], steps: int, slow: set[str]) -> None:
    print(f"{'policy':34s} {'ms/step':>9s} {'vs fp32':>8s} {'peak MiB':>9s} {'vs fp32':>8s}")
    base_t = base_m = None
    for label, runner in runs:
        n = 5 if label in slow else steps
        step_times(runner, 2)  # warm-up
        t = float(np.median(step_times(runner, n)))
        m = peak_memory(runner)
        base_t, base_m = base_t or t, base_m or m
        print(f"{label:34s} {t * 1e3:9.2f} {t / base_t:7.2f}x {m:9.1f} {m / base_m:7.2f}x", flush=True)


def time_command(argv: list[str]) -> dict:
    """Wall and CPU seconds of ``fpemu <argv>`` run in this process (its table discarded), and
    the 1-minute load average before and after."""
    from fpemu.cli import main as fpemu_main

    load0 = os.getloadavg()[0]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = fpemu_main([*argv, "--quiet"])
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"argv": argv, "rc": rc, "wall_s": wall, "cpu_s": cpu, "load": (load0, os.getloadavg()[0])}


def bench_cli() -> None:
    print(f"{'command':28s} {'wall (s)':>9s} {'CPU (s)':>8s}  load average (1 min) before, after; {os.cpu_count()} CPUs")
    for argv in (["train"], ["train", "--task", "gpt"]):
        r = time_command(argv)
        print(f"{'fpemu ' + ' '.join(argv):28s} {r['wall_s']:9.1f} {r['cpu_s']:8.1f}  {r['load'][0]:.1f}, {r['load'][1]:.1f}"
              + ("" if r["rc"] == 0 else f"  (exit status {r['rc']})"), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=("mlp", "gpt", "both"), default="both")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--all", action="store_true", help="every policy (and the accumulator models for gpt)")
    ap.add_argument("--cli", action="store_true", help="time `fpemu train` and `fpemu train --task gpt` instead")
    args = ap.parse_args()
    if args.cli:
        bench_cli()
        return
    if args.task in ("mlp", "both"):
        task = T.make_task(0)
        pairs = [("fp32", "none"), ("fp16", "dynamic")]
        if args.all:
            pairs += [("fp16", "none"), ("bf16", "none"), ("fp8", "none"), ("mxfp8", "none"), ("nvfp4", "none")]
        print(f"MLP {task.widths}, batch {task.batch_size}, median of {args.steps} steps")
        bench("mlp", [(f"{p}+{ls}", _mlp_runner(task, p, ls)) for p, ls in pairs], args.steps, set())
    if args.task in ("gpt", "both"):
        task = T.make_gpt_task(0)
        runs = []
        for p, fp8, nv in T.gpt.GPT_RUNS:
            label = p + (f"[{fp8}]" if p == "fp8" else f"[{T.gpt.parse_recipe(nv).label}]" if p == "nvfp4" else "")
            runs.append((label, _gpt_runner(task, p, fp8_recipe=fp8, nvfp4_recipe=nv)))
        slow = set()
        if args.all:
            for promote in (None, 128):
                label = "fp8[delayed]+h100" + (f"+promote{promote}" if promote else "")
                runs.append((label, _gpt_runner(task, "fp8", accumulator="h100", promote=promote)))
                slow.add(label)
        cfg = task.config
        print(f"\ntransformer d={cfg.d_model} x {cfg.n_layer} blocks, {task.batch_size} x {cfg.context} tokens "
              f"per step, median of {args.steps} steps (accumulator models: 5)")
        bench("gpt", runs, args.steps, slow)


if __name__ == "__main__":
    main()
