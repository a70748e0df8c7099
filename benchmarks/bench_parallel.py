"""Every core and Dask, side by side in one run (issue 12): threads against one thread, fpemu
against ml_dtypes' and torch's own casts, Dask against memory, and the memory a big GEMM takes.

    python benchmarks/bench_parallel.py            # GEMM 1024^3, 10M-element casts, Dask
    python benchmarks/bench_parallel.py --quick    # smaller sizes
    python benchmarks/bench_parallel.py --big      # also a 4096^3 GEMM: time and peak memory

Every parallel result is checked to be the same bits as the one-thread result before it is
timed. Times are the best of --repeat rounds; within a round the contenders take turns.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fpemu  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def best_alternating(fns: dict, repeat: int) -> dict:
    """The best time of each callable over ``repeat`` rounds, the callables taking turns
    within each round: a busy spell on a shared machine then slows them alike, instead of
    landing on one contender and making a ratio of noise."""
    times = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            times[name] = min(times[name], best(fn, 1))
    return times


def bench_gemm(n: int, repeat: int, workers: int) -> None:
    rng = np.random.default_rng(0)
    a = fpemu.quantize(rng.standard_normal((n, n)), "fp16")
    b = fpemu.quantize(rng.standard_normal((n, n)), "fp16")
    one = fpemu.gemm(a, b, inputs="fp16", accumulator="a100", workers=1)
    assert np.array_equal(fpemu.gemm(a, b, inputs="fp16", accumulator="a100", workers=workers), one)
    times = best_alternating({w: lambda w=w: fpemu.gemm(a, b, inputs="fp16", accumulator="a100", workers=w)
                              for w in (1, workers)}, repeat)
    t1, tw = times[1], times[workers]
    macs = n**3 / 1e6
    print(f"gemm {n}^3 fp16 'a100'      1 worker {t1:7.3f} s ({macs / t1:6.0f} M MAC/s)   "
          f"{workers} workers {tw:7.3f} s ({macs / tw:6.0f} M MAC/s)   speedup {t1 / tw:4.2f}x")


def bench_casts(n: int, repeat: int, workers: int) -> None:
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    mega = n / 1e6
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    try:
        import torch

        torch.set_num_threads(1)
        tx = torch.from_numpy(x)
    except ImportError:
        torch = None
    theirs = {"e4m3": ("float8_e4m3fn", "float8_e4m3fn"), "bf16": ("bfloat16", "bfloat16"),
              "e5m2": ("float8_e5m2", "float8_e5m2")}  # fmt: skip
    print(f"encode of {n} float32 randn, Melem/s: fpemu 1 worker, fpemu {workers} workers, "
          "ml_dtypes astype (1 thread), torch .to() (1 thread)")
    for name, (md, tn) in theirs.items():
        one = fpemu.encode(x, name, workers=1)
        assert np.array_equal(fpemu.encode(x, name, workers=workers), one)
        fns = {"1": lambda: fpemu.encode(x, name, workers=1), "w": lambda: fpemu.encode(x, name, workers=workers)}
        if ml_dtypes:
            fns["ml_dtypes"] = lambda: x.astype(getattr(ml_dtypes, md))
        if torch:
            fns["torch"] = lambda: tx.to(getattr(torch, tn))
        times = best_alternating(fns, repeat)
        t1, tw = times["1"], times["w"]
        tm, tt = times.get("ml_dtypes", float("nan")), times.get("torch", float("nan"))
        print(f"  {name:<5} {mega / t1:8.0f} {mega / tw:8.0f} ({t1 / tw:4.2f}x) {mega / tm:10.0f} "
              f"{mega / tt:10.0f}   fpemu 1 worker / torch {tt / t1:4.2f}, fpemu {workers} workers / "
              f"ml_dtypes {tm / tw:4.2f}")


def bench_dask(n: int, gemm_n: int) -> None:
    try:
        import dask.array as da
        import distributed
    except ImportError:
        print("dask: not installed (pip install fpemu[dask])")
        return
    x = np.random.default_rng(2).standard_normal((n // 1000, 1000)).astype(np.float32)
    a = np.random.default_rng(3).standard_normal((gemm_n, gemm_n))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        with distributed.Client(cl) as client:
            dx = client.persist(da.from_array(x, chunks=(x.shape[0] // 8, 1000)))
            da_ = client.persist(da.from_array(a, chunks=(gemm_n // 4, gemm_n)))
            for label, lazy, eager, tasks in (
                ("encode e4m3", lambda: fpemu.encode(dx, "e4m3", rounding="stochastic", rng=1),
                 lambda: fpemu.encode(x, "e4m3", rounding="stochastic", rng=1, workers=1), 8),
                (f"gemm {gemm_n}^3 fp16 a100", lambda: fpemu.gemm(da_, a, inputs="fp16", accumulator="a100"),
                 lambda: fpemu.gemm(a, a, inputs="fp16", accumulator="a100", workers=1), 4),
            ):
                start = time.perf_counter()
                got = client.compute(lazy()).result()
                td = time.perf_counter() - start
                start = time.perf_counter()
                want = eager()
                tm = time.perf_counter() - start
                same = np.array_equal(got, want, equal_nan=True)
                print(f"dask LocalCluster (2 processes) {label:<22} {td:7.3f} s vs in memory (1 thread) "
                      f"{tm:7.3f} s; same bits: {same}; {tasks} tasks")


def bench_tile(k: int, rows: int, cols: int) -> None:
    """One Dask GEMM task's work at production K (a rows x cols tile with all of K), and what
    it says about a k^3 golden GEMM."""
    rng = np.random.default_rng(4)
    a = fpemu.quantize(rng.standard_normal((rows, k)), "fp16")
    b = fpemu.quantize(rng.standard_normal((k, cols)), "fp16")
    t = best(lambda: fpemu.gemm(a, b, inputs="fp16", accumulator="a100", workers=1), 1)
    rate = rows * cols * k / t
    core_hours = k**3 / rate / 3600
    print(f"tile {rows}x{cols} with K={k} fp16 'a100', 1 core: {t:.2f} s ({rate / 1e6:.0f} M MAC/s); "
          f"a {k}^3 GEMM is {(k // rows) * (k // cols)} such tiles = {core_hours:.2f} core-hours: "
          f"{core_hours * 60 / 64:.0f} min on 64 cores, {core_hours * 60 / 256:.0f} min on 256")


def bench_task_overhead(tasks: int) -> None:
    """Seconds Dask adds per task: many tiny encode tasks on a LocalCluster against the same
    work in memory."""
    try:
        import dask.array as da
        import distributed
    except ImportError:
        return
    x = np.random.default_rng(5).standard_normal(tasks * 256).astype(np.float32)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        with distributed.Client(cl) as client:
            dx = client.persist(da.from_array(x, chunks=256))
            client.compute(fpemu.encode(dx, "e4m3")).result()  # warm the workers' imports
            start = time.perf_counter()
            client.compute(fpemu.encode(dx, "e4m3")).result()
            td = time.perf_counter() - start
    tm = best(lambda: fpemu.encode(x, "e4m3", workers=1), 3)
    print(f"dask overhead: {tasks} tasks of 256 elements on 2 worker processes {td:.3f} s against "
          f"{tm * 1e3:.1f} ms in memory: about {(td - tm / 2) / tasks * 2 * 1e3:.2f} ms per task per worker")


def _child(code: str, env: dict[str, str]) -> list[str]:
    """Run code in a fresh Python with this environment; its printed words."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout.split()


def _clean_env() -> dict[str, str]:
    """This process's environment without what a Dask LocalCluster put into it: its nannies
    export MALLOC_TRIM_THRESHOLD_=65536 (distributed.nanny.pre-spawn-environ) through
    os.environ, and a child started after them would inherit it."""
    return {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}


def bench_malloc_trim(n: int) -> None:
    """A GEMM in a process with Dask's worker malloc setting and without it."""
    code = (f"import numpy as np, time, fpemu; rng = np.random.default_rng(0); a = rng.standard_normal((256, {n})); "
            f"b = rng.standard_normal(({n}, {n})); t = time.perf_counter(); "
            f"fpemu.gemm(a, b, inputs='fp16', accumulator='a100', workers=1); print(time.perf_counter() - t)")
    plain = float(_child(code, _clean_env())[0])
    dask = float(_child(code, dict(_clean_env(), MALLOC_TRIM_THRESHOLD_="65536"))[0])
    print(f"gemm 256x{n}x{n} fp16 'a100', 1 worker: {plain:.2f} s; with Dask's worker setting "
          f"MALLOC_TRIM_THRESHOLD_=65536: {dask:.2f} s ({dask / plain:.1f}x slower)")


def _sines(calls: int) -> float:
    """Seconds for ``calls`` np.sin calls on 2**16 float64 (no GIL in the way in a process)."""
    a, b = np.ones(1 << 16), np.empty(1 << 16)
    start = time.perf_counter()
    for _ in range(calls):
        np.sin(a, out=b)
    return time.perf_counter() - start


def bench_ceiling(workers: int, calls: int = 256) -> None:
    """What the machine itself gives: the same NumPy work in ``workers`` processes at once
    against one, no GIL involved (on a shared or throttled VM this stays well below workers)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_sines, [1] * workers))  # the processes started and warm
        one = min(_sines(calls) for _ in range(3))
        both = best(lambda: list(pool.map(_sines, [calls // workers] * workers)), 3)
    print(f"the machine's own ceiling: np.sin in {workers} processes at once against 1: {one / both:.2f}x")


SPLIT = 1 << 17  # the crossover table's piece size: below its smallest array / 2


def bench_crossover(repeat: int, workers: int) -> None:
    """Where threads start to pay: 1 worker against ``workers`` on growing arrays, with every
    kernel split at SPLIT elements (fpemu.parallel's thresholds switched off), so that the
    table shows what those two thresholds are set from."""
    from fpemu import parallel

    rng = np.random.default_rng(6)
    kernels = {
        "encode e4m3 (light)": lambda x, w: fpemu.encode(x, "e4m3", workers=w),
        "encode bf16 (light)": lambda x, w: fpemu.encode(x, "bf16", workers=w),
        "decode e4m3 (light)": lambda x, w: fpemu.decode(x.view(np.uint8)[: x.size], "e4m3", workers=w),
        "encode e4m3 stochastic": lambda x, w: fpemu.encode(x, "e4m3", rounding="stochastic", rng=1, workers=w),
    }
    sizes = [1 << p for p in range(18, 24)]
    print(f"threads against one thread, {workers} workers / 1 worker (every kernel split at {SPLIT} "
          f"elements here; by default at {parallel.MIN_PIECE}, light kernels at {parallel.LIGHT_MIN_PIECE})")
    print(f"  {'elements':<24}" + "".join(f"{n:>9}" for n in sizes))
    saved = parallel.MIN_PIECE, parallel.LIGHT_MIN_PIECE
    parallel.MIN_PIECE = parallel.LIGHT_MIN_PIECE = SPLIT
    try:
        for label, run in kernels.items():
            ratios = []
            for n in sizes:
                x = rng.standard_normal(n).astype(np.float32)
                times = best_alternating({w: lambda w=w: run(x, w) for w in (1, workers)}, repeat)
                ratios.append(times[1] / times[workers])
            print(f"  {label:<24}" + "".join(f"{r:8.2f}x" for r in ratios))
    finally:
        parallel.MIN_PIECE, parallel.LIGHT_MIN_PIECE = saved


def bench_big(n: int) -> None:
    """A separate process, so its peak RSS is the GEMM's own."""
    code = (f"import numpy as np, resource, time, fpemu; rng = np.random.default_rng(0); "
            f"a = rng.standard_normal(({n}, {n})); b = rng.standard_normal(({n}, {n})); "
            f"t = time.perf_counter(); fpemu.gemm(a, b, inputs='fp16', accumulator='a100'); "
            f"print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = _child(code, _clean_env())
    seconds, rss_kb = float(out[0]), int(out[1])
    print(f"gemm {n}^3 fp16 'a100' ({os.cpu_count()} workers): {seconds:.1f} s, peak RSS "
          f"{rss_kb / 2**20:.2f} GiB (inputs alone: {2 * n * n * 8 / 2**30:.2f} GiB of float64)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--big", action="store_true", help="also a 4096^3 GEMM (minutes)")
    parser.add_argument("--crossover", action="store_true",
                        help="only the table of where threads start to pay, per kernel and size")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    bench_ceiling(args.workers)
    if args.crossover:
        bench_crossover(max(args.repeat, 5), args.workers)
        return
    bench_gemm(256 if args.quick else 1024, args.repeat, args.workers)
    bench_casts(1_000_000 if args.quick else 10_000_000, args.repeat, args.workers)
    bench_dask(1_000_000 if args.quick else 8_000_000, 128 if args.quick else 512)
    bench_task_overhead(100 if args.quick else 400)
    bench_tile(2048 if args.quick else 16384, 64 if args.quick else 128, 64 if args.quick else 128)
    bench_malloc_trim(512 if args.quick else 1024)
    if args.big:
        bench_big(4096)
    print(f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
