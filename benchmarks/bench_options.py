"""Every option at speed? ``fpemu.encode`` of every built-in format under every rounding mode,
overflow rule, NaN policy and ``like()`` convention, on float32 and float64 normals, with each
option's ratio to the same format's default path (same input dtype).

    python benchmarks/bench_options.py [--n 1048576] [--repeat 5] [--formats bf16,e4m3] [--json out.json]

Timed on one worker (``workers=1``, ``FPEMU_WORKERS=1``), best of ``--repeat`` calls by the
thread's CPU time (``time.thread_time``), so that a shared machine slows every cell alike (as
``compare.py`` does); each option is timed in turn with its format's default path, so that
both see the same state of the machine, and its ratio is taken to those default calls. An
option a format refuses (``sat_none`` where it has no Inf, a convention that does not cover
it) is left out. Printed: per format and dtype the default's
best Melem/s, then every option's Melem/s and ratio; last the cells below 0.5x, worst first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("FPEMU_WORKERS", "1")

import numpy as np  # noqa: E402

import fpemu  # noqa: E402
from bench_codec import best_seconds  # noqa: E402  (this folder is on the path: run as a script)
from fpemu.codec.conventions import CONVENTIONS  # noqa: E402
from fpemu.codec.options import NAN_POLICIES_WITH_NAN, NAN_POLICIES_WITHOUT_NAN, OVERFLOW_MODES  # noqa: E402
from fpemu.formats import FORMATS  # noqa: E402

GOAL = 0.5  # the floor: every option at half its format's default speed or more


def options(fmt: str, n: int) -> dict[str, dict]:
    """Option name -> encode keywords, for fmt (the ones it refuses are dropped later)."""
    opts: dict[str, dict] = {"default": {}}
    for mode in ("toward_zero", "up", "down", "nearest_away", "odd"):
        opts[mode] = {"rounding": mode}
    opts["stochastic"] = {"rounding": "stochastic", "rng": 0}
    for mode in ("stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd"):
        opts[f"{mode} N=8"] = {"rounding": mode, "sr_bits": 8, "rng": 0}
    given = np.random.default_rng(2).integers(0, 1 << 8, n, dtype=np.uint8)
    opts["stochastic_a N=8 given"] = {"rounding": "stochastic_a", "sr_bits": 8, "random_bits": given}
    for rule in OVERFLOW_MODES:
        opts[f"overflow={rule}"] = {"overflow": rule}
    for policy in NAN_POLICIES_WITH_NAN + NAN_POLICIES_WITHOUT_NAN:
        opts[f"nan={policy}"] = {"nan": policy}
    for convention in CONVENTIONS:
        try:
            opts[f"like({convention})"] = dict(fpemu.like(convention, fmt))
        except (ValueError, TypeError):
            pass
    return opts


def paired_seconds(default, option, repeat: int) -> tuple[float, float]:
    """Best thread CPU seconds of the default call and of the option's, timed in turn
    (default, option, default, ...) after one call of each that builds the tables, plans
    and caches: the two see the same state of the machine and of the memory allocator, whose
    fresh pages otherwise move one path's speed by 2x from cell to cell (fp64 from float32
    through numpy's cast: 291 and 660 Melem/s, the same path)."""
    default(), option()
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((default, option)):
            best[i] = min(best[i], best_seconds(fn, 1, time.thread_time))
    return best[0], best[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20, help="elements per call")
    parser.add_argument("--repeat", type=int, default=5, help="calls per cell (best kept)")
    parser.add_argument("--formats", default=None, help="comma-separated (default: every built-in format)")
    parser.add_argument("--options", default=None, help="only options whose name contains one of these (comma-separated)")
    parser.add_argument("--json", default=None, help="also write the cells here")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x64 = rng.standard_normal(args.n)
    inputs = {"f32": x64.astype(np.float32), "f64": x64}
    formats = args.formats.split(",") if args.formats else list(FORMATS)
    wanted = args.options.split(",") if args.options else None
    cells = []
    print(f"encode of {args.n} normals, workers=1, best of {args.repeat} by thread CPU time; "
          f"Melem/s and ratio to the format's default path (same input dtype)")
    for fmt in formats:
        for dtype, x in inputs.items():
            rates, ratios = {}, {}
            default = lambda: fpemu.encode(x, fmt, workers=1)  # noqa: E731
            for name, kw in options(fmt, args.n).items():
                if name == "default" or wanted and not any(w in name for w in wanted):
                    continue
                try:
                    base_s, seconds = paired_seconds(default, lambda kw=kw: fpemu.encode(x, fmt, workers=1, **kw),
                                                     args.repeat)
                except (ValueError, TypeError, ArithmeticError):
                    continue  # refused for this format (or NaN-free data under raise: none here)
                rates[name], ratios[name] = args.n / seconds / 1e6, base_s / seconds
                rates["default"] = max(rates.get("default", 0.0), args.n / base_s / 1e6)
            ratios["default"] = 1.0
            line = " ".join(f"{name} {rate:.0f} ({ratios[name]:.2f})" for name, rate in rates.items() if name != "default")
            print(f"{fmt} {dtype}: default {rates.get('default', float('nan')):.0f} | {line}", flush=True)
            cells += [{"format": fmt, "dtype": dtype, "option": name, "melem_s": rate, "ratio": ratios[name]}
                      for name, rate in rates.items()]
    low = sorted((c for c in cells if c["ratio"] < GOAL), key=lambda c: c["ratio"])
    print(f"\n{len(low)} of {len(cells)} cells below {GOAL}x their default path:")
    for c in low:
        print(f"  {c['format']:<20}{c['dtype']:<5}{c['option']:<28}{c['melem_s']:>8.1f} Melem/s {c['ratio']:>6.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(cells, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
