"""Issue 25's table re-measured in one run: each path of fpemu against its peer (ml_dtypes,
torchao, or fpemu's own float32 path), with the ratio and the goal of each row.

    python benchmarks/bench_table.py [--n 4194304] [--repeat 3] [--rounds 5] [--busy]

Input: n standard-normal values (float32, or the row's dtype). Every row is timed best of
``repeat`` calls, best over ``rounds`` rounds in which the contenders alternate (this machine
is shared: a busy spell slows all of them alike). fpemu runs at ``workers=1`` and at its
default; the peers on one thread (``torch.set_num_threads(1)``) and at torch's default.
The one-core columns are timed in this thread's CPU time (``time.thread_time``: fpemu at
workers=1, ml_dtypes and torch on one thread all run in the calling thread; ``--wall`` for
wall time), the defaults in wall time. ``ratio 1`` compares one core with one core (fpemu workers=1 / peer on one thread), ``ratio
all`` the defaults; a ratio > 1 means fpemu is faster. The goal applies to ``ratio 1``.
Rows whose peer is not installed print ``-``. The codes of fpemu's encode are checked equal
to ml_dtypes' before timing. torchao is timed in a fresh process of its own, before the rounds
(:func:`bench_mx.torchao_seconds`: in a process that ran fpemu first it measured up to 3x
slower, its intermediates page-faulting afresh), on one thread in that thread's CPU time and
at torch's default in wall time.

``--busy``: the table twice, idle and then with every other core running a memory-bound
NumPy load (:data:`MEMORY_LOAD`: a triad over arrays eight times the size of any cache,
:func:`memory_load`), which is what a neighbour costs a kernel made of whole-array passes;
printed side by side, one-core ratios, each with its goal. The load's own rate (GB/s) is
printed, so a run shows that the neighbour was there.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fpemu  # noqa: E402
from bench_codec import best_seconds  # noqa: E402
from bench_mx import torchao_casts, torchao_seconds  # noqa: E402
from fpemu import mx  # noqa: E402
from fpemu.parallel import resolve_workers  # noqa: E402

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
try:
    import torch
except ImportError:
    torch = None
TORCHAO = bool(torchao_casts()) if torch is not None else False  # its rows print "-" without it

ML_NAMES = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "bf16": "bfloat16", "e2m1": "float4_e2m1fn",
            "fp16": "float16", "e3m2": "float6_e3m2fn"}


def _data(n: int) -> dict:
    rng = np.random.default_rng(0)
    x64 = rng.standard_normal(n)
    return {"float32": x64.astype(np.float32), "float64": x64, "float16": x64.astype(np.float16),
            "int16": np.round(x64 * 1000).astype(np.int16)}


def _encode_rows(data: dict) -> list:
    """(label, fpemu(workers) callable, peer name, peer(threads) callable or None, goal)."""
    rows = []
    x32 = data["float32"]
    for name, goal in (("e4m3", 2.0), ("e5m2", 2.0), ("bf16", 1.0), ("e2m1", 2.0)):
        dtype = getattr(ml_dtypes, ML_NAMES[name]) if ml_dtypes is not None else None
        if dtype is not None:
            assert np.array_equal(x32.astype(dtype).view(f"u{np.dtype(dtype).itemsize}"), fpemu.encode(x32, name))
        peer = None if dtype is None else (lambda threads, d=dtype: x32.astype(d))
        rows.append((f"encode {name} from float32", lambda w, f=name: fpemu.encode(x32, f, workers=w),
                     "ml_dtypes", peer, goal))
    for name in ("e4m3", "e5m2", "bf16", "e2m1", "e3m2", "fp16"):
        for source in ("float64", "float16", "int16"):
            x = data[source]
            rows.append((f"encode {name} from {source}", lambda w, f=name, x=x: fpemu.encode(x, f, workers=w),
                         "fpemu float32", lambda threads, f=name: fpemu.encode(x32, f, workers=threads), 0.5))
    for name in ("e4m3", "bf16"):
        dtype = getattr(ml_dtypes, ML_NAMES[name]) if ml_dtypes is not None else None
        x64 = data["float64"]
        rows.append((f"encode {name} from float64 (vs ml_dtypes)",
                     lambda w, f=name: fpemu.encode(x64, f, workers=w), "ml_dtypes",
                     None if dtype is None else (lambda threads, d=dtype: x64.astype(d)), None))
    for name, out in (("e4m3", np.float32), ("bf16", np.float32), ("e2m1", np.float32), ("bf16", np.float64)):
        codes = fpemu.encode(x32, name)
        dtype = getattr(ml_dtypes, ML_NAMES[name]) if ml_dtypes is not None else None
        cast = None if dtype is None else codes.view(dtype)
        rows.append((f"decode {name} to {np.dtype(out).name}",
                     lambda w, f=name, c=codes, o=out: fpemu.decode(c, f, dtype=o, workers=w), "ml_dtypes",
                     None if cast is None else (lambda threads, c=cast, o=out: c.astype(o)), 1.0))
    return rows


def import_cost(runs: int = 5) -> str:
    """``import fpemu`` beyond numpy, best of ``runs`` fresh interpreters (bytecode cached,
    as users have it), and the number of fpemu modules it loads."""
    code = ("import time, sys, numpy; t = time.perf_counter(); import fpemu; "
            "print(time.perf_counter() - t, sum(m.split('.')[0] == 'fpemu' for m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    results = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
               .stdout.split() for _ in range(runs + 1)][1:]  # (the first may write the bytecode)
    seconds = min(float(r[0]) for r in results)
    return f"import fpemu: {seconds * 1e3:.0f} ms beyond numpy (best of {runs}), {results[0][1]} fpemu modules"


class FreshProcess:
    """A peer timed in a fresh process of its own (:func:`bench_mx.torchao_seconds`: torchao
    runs up to 3x slower in a process that ran fpemu first), once, not in the rounds."""

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, n

    def seconds(self, threads: int | None, repeat: int, rounds: int) -> float:
        best = torchao_seconds(self.name, self.n, threads, repeat, rounds)
        return float("inf") if best is None else best


def _mx_rows(data: dict) -> list:
    x32 = data["float32"]
    goals = {"mxfp8_e4m3": 1.0, "mxfp4": 2.0, "nvfp4": 2.0}
    return [(f"mx.quantize {name}", lambda w, f=name: mx.quantize(x32, f, workers=w), "torchao",
             FreshProcess(name, x32.size) if TORCHAO else None, goal) for name, goal in goals.items()]


def _torch_rows(data: dict) -> list:
    if torch is None:
        return []
    t = torch.from_numpy(data["float32"])
    return [(f"torch Tensor.to {name} (reference)", None, "torch",
             lambda threads, d=getattr(torch, dt): t.to(d), None)
            for name, dt in (("e4m3", "float8_e4m3fn"), ("bf16", "bfloat16"), ("fp16", "float16"))]


#: The neighbour of ``--busy``: a STREAM-like triad (c = a + 3 b) over three 128 MiB float64
#: arrays, forever; on SIGTERM it prints the GB/s it moved (two reads and one write per
#: element) and exits.
MEMORY_LOAD = """
import signal, sys, time
import numpy as np
n = 1 << 24
a, b, c = np.ones(n), np.full(n, 2.0), np.empty(n)
done, start, passes = [], time.perf_counter(), 0
signal.signal(signal.SIGTERM, lambda *_: done.append(1))
print("ready", flush=True)
while True:  # (at least one pass, so that the rate it prints is one it measured)
    np.multiply(b, 3.0, out=c)
    c += a
    passes += 1
    if done:
        break
seconds = time.perf_counter() - start
print(f"{passes * 5 * 8 * n / seconds / 1e9:.1f}", flush=True)
"""


@contextlib.contextmanager
def memory_load(processes: int) -> Iterator[list]:
    """``processes`` copies of :data:`MEMORY_LOAD` running while the block runs (each started
    and ready before it begins); yields a list that holds each one's GB/s once they stop."""
    procs = [subprocess.Popen([sys.executable, "-c", MEMORY_LOAD], stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    rates: list = []
    try:
        for proc in procs:
            proc.stdout.readline()  # "ready": its arrays are allocated and touched
        yield rates
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            out, _ = proc.communicate(timeout=60)
            rates.append(float(out.split()[-1]) if out.split() else float("nan"))


def _time(fn, repeat: int, threads: int | None, one_core: bool, wall: bool) -> float:
    """Best seconds of fn: for one-core calls (they run in this thread alone) this thread's
    CPU time, which the other processes of a shared machine disturb less, unless ``wall``;
    wall time for the multi-threaded defaults."""
    if torch is not None and threads is not None:
        torch.set_num_threads(threads)
    return best_seconds(fn, repeat, time.thread_time if one_core and not wall else time.perf_counter)


def measure(rows: list, repeat: int, rounds: int, wall: bool = False) -> list:
    """Best seconds per row: fpemu at 1 and all workers, the peer at 1 and all threads."""
    every = resolve_workers(None)
    best = [[float("inf")] * 4 for _ in rows]
    for i, (_, _, _, peer, _) in enumerate(rows):
        if isinstance(peer, FreshProcess):
            best[i][2:] = [peer.seconds(1, repeat, rounds), peer.seconds(None, repeat, rounds)]
    for r in range(rounds):
        for i, (_, mine, _, peer, _) in enumerate(rows):
            timed_here = peer if not isinstance(peer, FreshProcess) else None
            calls = [(0, mine and (lambda m=mine: m(1)), None, True),
                     (1, mine and (lambda m=mine: m(None)), None, False),
                     (2, timed_here and (lambda p=timed_here: p(1)), 1, True),
                     (3, timed_here and (lambda p=timed_here: p(None)), every, False)]
            for slot, fn, threads, one_core in calls if r % 2 == 0 else calls[::-1]:
                if fn is not None:
                    if r == 0:
                        fn()  # tables, plans and caches built outside the timing
                    best[i][slot] = min(best[i][slot], _time(fn, repeat, threads, one_core, wall))
    if torch is not None:
        torch.set_num_threads(every)
    return best


def report(rows: list, best: list, n: int) -> None:
    def rate(seconds: float) -> str:
        return f"{n / seconds / 1e6:8.0f}" if np.isfinite(seconds) else f"{'-':>8}"

    def ratio(a: float, b: float) -> str:
        return f"{b / a:8.2f}" if np.isfinite(a) and np.isfinite(b) else f"{'-':>8}"

    print(f"{'path':<40}{'fpemu 1':>8}{'fpemu':>8}{'peer':>15}{'peer 1':>8}{'peer':>8}"
          f"{'ratio 1':>8}{'ratio':>8}{'goal':>7}  met")
    for (label, _, peer_name, _, goal), (m1, ma, p1, pa) in zip(rows, best):
        met = "" if goal is None or not (np.isfinite(m1) and np.isfinite(p1)) else \
            ("yes" if p1 / m1 >= goal else "NO")
        goal_text = f">={goal:g}x" if goal is not None else ""
        print(f"{label:<40}{rate(m1)}{rate(ma)}{peer_name:>15}{rate(p1)}{rate(pa)}"
              f"{ratio(m1, p1)}{ratio(ma, pa)}{goal_text:>7}  {met}")


def report_busy(rows: list, idle: list, busy: list, n: int, load: str) -> None:
    """The one-core columns idle and busy side by side, each ratio with its goal."""
    def rate(seconds: float) -> str:
        return f"{n / seconds / 1e6:8.0f}" if np.isfinite(seconds) else f"{'-':>8}"

    def ratio(a: float, b: float) -> float:
        return b / a if np.isfinite(a) and np.isfinite(b) else float("nan")

    print(f"one core each (fpemu workers=1, peer on one thread), idle | busy ({load}); Melem/s")
    print(f"{'path':<40}{'fpemu':>8}{'peer':>8}{'ratio':>8}{'fpemu':>9}{'peer':>8}{'ratio':>8}{'goal':>7}  met")
    for (label, _, _, _, goal), (m1, _, p1, _), (b1, _, q1, _) in zip(rows, idle, busy):
        r_idle, r_busy = ratio(m1, p1), ratio(b1, q1)
        met = "" if goal is None or np.isnan(r_idle) or np.isnan(r_busy) else \
            ("yes" if min(r_idle, r_busy) >= goal else "NO")
        goal_text = f">={goal:g}x" if goal is not None else ""
        ratios = "".join(f"{r:8.2f}" if not np.isnan(r) else f"{'-':>8}" for r in (r_idle, r_busy))
        print(f"{label:<40}{rate(m1)}{rate(p1)}{ratios[:8]} {rate(b1)}{rate(q1)}{ratios[8:]}{goal_text:>7}  {met}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--match", default=None, help="only rows whose label contains this")
    parser.add_argument("--wall", action="store_true", help="wall time for the one-core columns too")
    parser.add_argument("--busy", action="store_true",
                        help="also time every row with the other cores running a memory-bound NumPy load")
    args = parser.parse_args()
    data = _data(args.n)
    rows = _encode_rows(data) + _mx_rows(data) + _torch_rows(data)
    if args.match:
        rows = [row for row in rows if args.match in row[0]]
    versions = [f"numpy {np.__version__}"] + [f"{m.__name__} {m.__version__}" for m in (ml_dtypes, torch) if m]
    clock = "wall" if args.wall else "thread CPU"
    print(f"{args.n} standard-normal values; Melem/s, best of {args.repeat} x {args.rounds} alternating "
          f"rounds (one-core columns: {clock} time); fpemu default = {resolve_workers(None)} workers, "
          f"os.cpu_count() = {os.cpu_count()}; " + ", ".join(versions)
          + ("; torchao timed in a fresh process of its own" if TORCHAO else "; torchao not installed"))
    idle = measure(rows, args.repeat, args.rounds, args.wall)
    report(rows, idle, args.n)
    if args.busy:
        neighbours = max(1, (os.cpu_count() or 2) - 1)
        with memory_load(neighbours) as rates:
            busy = measure(rows, args.repeat, args.rounds, args.wall)
        load = f"{neighbours} memory-bound NumPy process(es) beside it, " + \
            ", ".join(f"{r:.1f} GB/s" for r in rates)
        print()
        report_busy(rows, idle, busy, args.n, load)
    print(import_cost())


if __name__ == "__main__":
    main()
