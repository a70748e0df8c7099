"""A/B speed of the working tree against a git ref: the codec, MX and GEMM paths timed in both
trees, alternately, in one run.

    python benchmarks/compare.py --against deac082 [--n 4000000] [--rounds 5] [--suites codec,options,mx,gemm,import]

The ref is checked out into a temporary detached worktree (``git worktree add --detach``;
removed at the end; the main tree's branch, index and files are not touched). Each round runs
one subprocess per tree (``sys.path`` set so that it imports *that* tree's fpemu), in
alternating order, each timing every path best-of-``--repeat`` on one worker
(``workers=1``, ``FPEMU_WORKERS=1``, one BLAS thread) by the thread's CPU time
(``--wall``: wall time). The best over the rounds is kept per path and tree, so
that a busy machine (this one is shared) slows both alike. Printed per path: Melem/s (or
seconds) of each tree and ``ratio = ref time / working-tree time`` (> 1: the working tree is
faster); a path more than 10% slower (ratio < 1/1.1) is flagged ``SLOWER``, and the exit
status is 1 when any is. ``import fpemu`` (suite ``import``) is the wall time of the import
beyond numpy's, once per round and tree, from cached bytecode, in milliseconds. Suite
``options`` is issue 39's grid: bf16, fp16, e4m3 and e2m1 from float32 and float64 under
toward-zero, up, ``overflow="saturate"``, ``like("ptx_cvt_rn")`` and stochastic rounding,
each beside its format's default row (suite ``codec``), held to the same 10%.

``--worker TREE`` is the subprocess's own entry point (prints one JSON line of seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SLOWER = 1 / 1.1  # a ratio below this is flagged

# Path name -> its suite; the code that times each is in _path_functions.
PATHS = {
    "encode e4m3 f32": "codec", "encode e5m2 f32": "codec", "encode bf16 f32": "codec",
    "encode e2m1 f32": "codec", "encode fp16 f32": "codec",
    "encode e4m3 f64": "codec", "encode e5m2 f64": "codec", "encode bf16 f64": "codec",
    "encode e2m1 f64": "codec", "encode e4m3 f16": "codec", "encode bf16 f16": "codec",
    "encode e2m1 f16": "codec", "encode e4m3 int32": "codec",
    "encode e4m3 int16": "codec", "encode bf16 int16": "codec",
    "encode e8m0 f32": "codec", "encode tf32 f32": "codec", "encode fp32 f64": "codec",
    "encode e4m3 f32 x64": "codec",
    "quantize fp16 f32": "codec", "quantize e4m3 f64": "codec", "quantize e4m3 f32": "codec",
    "quantize bf16 f32": "codec",
    "decode e4m3 f32": "codec", "decode bf16 f32": "codec", "decode e2m1 f32": "codec",
    "decode bf16 f64": "codec", "decode e4m3 f64": "codec",
    "mx.quantize mxfp8_e4m3": "mx", "mx.quantize mxfp8_e5m2": "mx", "mx.quantize mxfp6_e3m2": "mx",
    "mx.quantize mxfp4": "mx", "mx.quantize nvfp4": "mx",
    "mx.dequantize mxfp8_e4m3": "mx", "mx.dequantize mxfp4": "mx",
    "gemm a100 fp16 128^3": "gemm", "gemm h100 e4m3 128x128x1024": "gemm",
    "gemm b200 mxfp8 128x128x1024": "gemm", "gemm exact mxfp8 128x128x1024": "gemm",
    "gemm mmasim-blackwell mxfp8 128x128x1024": "gemm", "gemm b200 nvfp4 128x128x1024": "gemm",
    "gemm mmasim-blackwell nvfp4 128x128x1024": "gemm", "gemm exact nvfp4 128x128x1024": "gemm",
    "gemm exact fp16 128^3": "gemm", "gemm mi300x bf16 128^3": "gemm", "gemm mi250 bf16 128^3": "gemm",
    "dot b200 mxfp8 1024x1024": "gemm",
    "gemm h100 bf16 128x384x1536": "gemm", "gemm h100 fp16 128x384x1536": "gemm",
    "gemm b200 e4m3 128x384x1536": "gemm",
    "import fpemu": "import",
}  # fmt: skip
#: The option grid (issue 39): encode under each option, beside the same format's default
#: row; ``like:NAME`` is the conversion ``fpemu.like(NAME, fmt)`` of the tree being timed.
OPTIONS = {"rz": {"rounding": "toward_zero"}, "up": {"rounding": "up"}, "saturate": {"overflow": "saturate"},
           "like:ptx_cvt_rn": "ptx_cvt_rn", "sr": {"rounding": "stochastic", "rng": 0}}
for _fmt in ("bf16", "fp16", "e4m3", "e2m1"):
    for _dtype in ("f32", "f64"):
        PATHS.setdefault(f"encode {_fmt} {_dtype}", "codec")
        PATHS.update({f"encode {_fmt} {_dtype} {_option}": "options" for _option in OPTIONS})
#: Paths timed once per process, in milliseconds (their "elements" are this marker).
ONCE = 0


def _path_functions(n: int) -> dict:
    """Path name -> (zero-argument callable, elements it handles); built inside a worker,
    after the tree's fpemu is importable."""
    import numpy as np

    import fpemu
    from fpemu import mx

    rng = np.random.default_rng(0)
    x64 = rng.standard_normal(n)
    x32 = x64.astype(np.float32)
    inputs = {"f32": x32, "f64": x64, "f16": x32.astype(np.float16),
              "int32": (x64 * 100).astype(np.int32), "int16": (x64 * 1000).astype(np.int16)}
    fns: dict = {}
    for name in PATHS:
        words = name.split()
        if words[0] == "encode" and len(words) == 4 and words[3] in OPTIONS:  # the option grid
            option = OPTIONS[words[3]]
            kw = dict(fpemu.like(option, words[1])) if isinstance(option, str) else option
            fns[name] = ((lambda x=inputs[words[2]], f=words[1], kw=kw: fpemu.encode(x, f, workers=1, **kw)), n)
        elif words[0] == "encode" and len(words) == 4:  # many small calls: what each call costs beside its elements
            small = [inputs[words[2]][i * 64:(i + 1) * 64] for i in range(1000)]
            fns[name] = ((lambda xs=small, f=words[1]: [fpemu.encode(x, f, workers=1) for x in xs]), 64 * 1000)
        elif words[0] in ("encode", "quantize"):
            x, fn = inputs[words[2]], getattr(fpemu, words[0])
            fns[name] = ((lambda x=x, f=words[1], fn=fn: fn(x, f, workers=1)), n)
        elif words[0] == "decode":
            codes = fpemu.encode(x32, words[1], workers=1)
            dtype = {"f32": np.float32, "f64": np.float64}[words[2]]
            fns[name] = ((lambda c=codes, f=words[1], d=dtype: fpemu.decode(c, f, dtype=d, workers=1)), n)
        elif words[0] == "mx.quantize":
            fns[name] = ((lambda f=words[1]: mx.quantize(x32, f)), n)
        elif words[0] == "mx.dequantize":
            q = mx.quantize(x32, words[1])
            fns[name] = ((lambda q=q: q.dequantize()), n)
    g = np.random.default_rng(1)
    a16 = fpemu.quantize(g.standard_normal((128, 128)), "fp16")
    fns["gemm a100 fp16 128^3"] = (lambda: fpemu.gemm(a16, a16, inputs="fp16", accumulator="a100"), 128**3)
    a8 = fpemu.quantize(g.standard_normal((128, 1024)), "e4m3")
    b8 = fpemu.quantize(g.standard_normal((1024, 128)), "e4m3")
    fns["gemm h100 e4m3 128x128x1024"] = (lambda: fpemu.gemm(a8, b8, inputs="e4m3", accumulator="h100"),
                                          128 * 128 * 1024)
    qa = mx.quantize(g.standard_normal((128, 1024), dtype=np.float32), "mxfp8_e4m3")
    qb = mx.quantize(g.standard_normal((1024, 128), dtype=np.float32), "mxfp8_e4m3", axis=0)
    # Block arrays through fpemu.gemm/dot: the one API, which the refs since 4b47625 take too.
    for fmt in ("mxfp8", "nvfp4"):
        qa = mx.quantize(g.standard_normal((128, 1024), dtype=np.float32), fmt.replace("mxfp8", "mxfp8_e4m3"))
        qb = mx.quantize(g.standard_normal((1024, 128), dtype=np.float32), fmt.replace("mxfp8", "mxfp8_e4m3"), axis=0)
        for acc in ("b200", "exact", "mmasim-blackwell"):
            fns[f"gemm {acc} {fmt} 128x128x1024"] = (lambda qa=qa, qb=qb, acc=acc: fpemu.gemm(qa, qb, accumulator=acc),
                                                      128 * 128 * 1024)
    ab16 = fpemu.quantize(g.standard_normal((128, 128)), "bf16")
    fns["gemm exact fp16 128^3"] = (lambda: fpemu.gemm(a16, a16, inputs="fp16"), 128**3)
    for acc in ("mi300x", "mi250"):
        fns[f"gemm {acc} bf16 128^3"] = (lambda acc=acc: fpemu.gemm(ab16, ab16, inputs="bf16", accumulator=acc), 128**3)
    da = mx.quantize(g.standard_normal((1024, 1024), dtype=np.float32), "mxfp8_e4m3")
    db = mx.quantize(g.standard_normal((1024, 1024), dtype=np.float32), "mxfp8_e4m3")
    dot = getattr(mx, "dot", None) or fpemu.dot  # (a ref before issue 37 has mx.dot for block arrays)
    fns["dot b200 mxfp8 1024x1024"] = (lambda: dot(da, db, accumulator="b200"), 1024 * 1024)
    # MiniLM's widest linear layer (K 384, N 1536; 128 of its 757 tokens) through the dense units.
    for unit, fmt in (("h100", "bf16"), ("h100", "fp16"), ("b200", "e4m3")):
        xa = fpemu.quantize(g.standard_normal((128, 384)), fmt)
        xb = fpemu.quantize(g.standard_normal((384, 1536)) * 0.05, fmt)
        fns[f"gemm {unit} {fmt} 128x384x1536"] = (
            (lambda xa=xa, xb=xb, unit=unit, fmt=fmt: fpemu.gemm(xa, xb, inputs=fmt, accumulator=unit)), 128 * 384 * 1536)
    return fns


def worker(tree: str, names: list[str], n: int, repeat: int, wall: bool = False) -> None:
    """Time each named path with the fpemu of ``tree``; print {name: [seconds, elements]
    or null}.
    Everything runs in this one thread (workers=1, one BLAS thread), so its CPU time
    (``time.thread_time``) measures it, less disturbed by other processes than wall time."""
    clock = time.perf_counter if wall else time.thread_time
    sys.path.insert(0, tree)  # ahead of the editable install's finder
    os.environ["FPEMU_WORKERS"] = "1"
    import numpy  # noqa: F401  (what "import fpemu" costs beyond numpy)

    start = time.perf_counter()  # (wall: an import waits on the disk too)
    import fpemu

    imported = time.perf_counter() - start

    assert Path(fpemu.__file__).resolve().is_relative_to(Path(tree).resolve()), fpemu.__file__
    fns = _path_functions(n)
    result = {}
    for name in names:
        if name == "import fpemu":
            result[name] = [imported, ONCE]
            continue
        fn, count = fns[name]
        try:
            fn()  # tables, plans and caches built outside the timing
        except Exception as err:  # a path the ref does not have
            result[name] = None
            print(f"{name}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        best = float("inf")
        for _ in range(repeat):
            start = clock()
            fn()
            best = min(best, clock() - start)
        result[name] = [best, count]
    print(json.dumps(result))


def _run_worker(tree: Path, names: list[str], n: int, repeat: int, wall: bool) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(tree), "--n", str(n),
           "--repeat", str(repeat), "--paths", json.dumps(names)] + (["--wall"] if wall else [])
    one = {name: "1" for name in ("FPEMU_WORKERS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env = {**os.environ, **one, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # "import fpemu" from cached bytecode, as users have it
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if done.returncode:
        raise SystemExit(f"fpemu: error: the benchmark failed in {tree}:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _worktree(ref: str, where: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(where), ref],
                   check=True, capture_output=True, text=True)


def _remove_worktree(where: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                   capture_output=True, text=True)


def compare(ref: str, names: list[str], n: int, rounds: int, repeat: int, wall: bool = False) -> int:
    """Run the A/B and print its table; the number of paths flagged slower."""
    with tempfile.TemporaryDirectory(prefix="fpemu-compare-") as tmp:
        where = Path(tmp) / "ref"
        try:
            _worktree(ref, where)
        except subprocess.CalledProcessError as err:
            raise SystemExit(f"fpemu: error: cannot check out {ref!r}: {err.stderr.strip()}") from None
        try:
            trees = {"work": REPO, "ref": where}
            best = {side: {name: float("inf") for name in names} for side in trees}
            sizes: dict = {}
            for r in range(rounds):
                order = ["work", "ref"] if r % 2 == 0 else ["ref", "work"]
                for side in order:
                    for name, timed in _run_worker(trees[side], names, n, repeat, wall).items():
                        seconds = float("nan") if timed is None else timed[0]
                        best[side][name] = min(best[side][name], seconds)
                        if sizes.get(name) is None and timed is not None:
                            sizes[name] = timed[1]
        finally:
            _remove_worktree(where)
    return _report(ref, best, sizes, n, rounds, repeat, wall)


def _report(ref: str, best: dict, sizes: dict, n: int, rounds: int, repeat: int, wall: bool) -> int:
    print(f"working tree vs {ref}: {n} elements (GEMMs: their products), workers=1, best of {repeat} "
          f"x {rounds} alternating rounds of {'wall' if wall else 'thread CPU'} time; "
          "M/s = million elements (products) per second")
    print(f"{'path':<36}{'work M/s':>10}{'ref M/s':>10}{'ratio':>8}")
    flagged = 0
    for name in best["work"]:
        work, old = best["work"][name], best["ref"][name]
        ratio = old / work
        slow = ratio < SLOWER
        flagged += slow
        size = sizes.get(name)
        if size == ONCE:  # milliseconds, not a rate
            columns = f"{work * 1e3:>7.1f} ms{old * 1e3:>7.1f} ms"
        else:
            size = size or float("nan")
            columns = f"{size / work / 1e6:>10.1f}{size / old / 1e6:>10.1f}"
        print(f"{name:<36}{columns}{ratio:>8.2f}" + ("  SLOWER" if slow else ""))
    print(f"{flagged} path(s) more than 10% slower than {ref}" if flagged else
          f"no path more than 10% slower than {ref}")
    return flagged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REF", help="a git ref: commit, tag or branch")
    parser.add_argument("--n", type=int, default=4_000_000, help="elements of the codec and MX paths")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds (best kept)")
    parser.add_argument("--repeat", type=int, default=3, help="calls per path in a round (best kept)")
    parser.add_argument("--suites", default="codec,options,mx,gemm,import",
                        help="comma-separated: codec, options (the option grid), mx, gemm, import")
    parser.add_argument("--match", default=None, help="only paths whose name contains this")
    parser.add_argument("--wall", action="store_true", help="wall time instead of the thread's CPU time")
    parser.add_argument("--worker", metavar="TREE", help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, json.loads(args.paths), args.n, args.repeat, args.wall)
        return 0
    if not args.against:
        parser.error("--against REF is required")
    suites = set(args.suites.split(","))
    unknown = suites - set(PATHS.values())
    if unknown:
        parser.error(f"unknown suite(s) {sorted(unknown)}; choose from codec, options, mx, gemm, import")
    names = [name for name, suite in PATHS.items() if suite in suites and (args.match or "") in name]
    if not names:
        parser.error("no path matches")
    return 1 if compare(args.against, names, args.n, args.rounds, args.repeat, args.wall) else 0


if __name__ == "__main__":
    sys.exit(main())
