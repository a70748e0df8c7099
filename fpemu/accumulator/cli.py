"""The ``fpemu gemm-error`` and ``fpemu accumulators`` commands (registered by :mod:`fpemu.cli`
through :func:`register_cli`)."""

from __future__ import annotations

import argparse
import json

from ..arguments import option_name, whole_number
from ..parallel import dask_scheduler
from ..progress import progress
from .error import gemm_error


def cmd_gemm_error(args: argparse.Namespace) -> int:
    """Print the relative error of an emulated GEMM against the exact product."""
    inputs = tuple(args.inputs.split(",")) if "," in args.inputs else args.inputs
    with dask_scheduler(args.scheduler), progress(2 * args.m, "gemm-error",
                                                   enabled=None if not args.quiet else False) as step:
        r = gemm_error(
            inputs, args.accumulator, args.k, m=args.m, n=args.n, promote=args.promote,
            seed=args.seed, distribution=args.distribution, step=step,
        )
    if args.json:
        print(json.dumps({**r, "k": args.k, "promote": args.promote, "distribution": args.distribution,
                          "seed": args.seed}, indent=1, default=float))
        return 0
    how = f"promoted to fp32 every {args.promote}" if args.promote else "no promotion"
    print(
        f"{r['accumulator']}: {r['shape'][0]}x{args.k} @ {args.k}x{r['shape'][1]} {r['inputs']} "
        f"({args.distribution} inputs, {how})"
    )
    print(f"relative error vs exact: max {r['max']:.3e} ({100 * r['max']:.3f}%), mean {r['mean']:.3e}")
    print(f"normwise ||C - C_exact||_F / ||C_exact||_F: {r['normwise']:.3e}")
    return 0


def cmd_accumulators(args: argparse.Namespace) -> int:
    """List the matrix-unit (accumulator) names that --accumulator and fpemu.gemm take."""
    from .lookup import accumulator_names

    dense, block = accumulator_names(block_scaled=False), accumulator_names(block_scaled=True)
    if args.json:
        print(json.dumps({"dense": dense, "block_scaled": block}, indent=1))
        return 0
    print("dense, plain operands (a GPU also takes /FAMILY, e.g. h100/e4m3):")
    print(_wrapped(dense))
    print("block-scaled (MX and NVFP4 operands):")
    print(_wrapped(block))
    return 0


def _wrapped(names: list[str], width: int = 78) -> str:
    """Names separated by spaces, in lines of at most ``width`` characters, indented by two."""
    lines, line = [], ""
    for name in names:
        if line and len(line) + 1 + len(name) > width - 2:
            lines.append(line)
            line = ""
        line = f"{line} {name}" if line else name
    return "\n".join("  " + text for text in [*lines, line])


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fpemu gemm-error`` and ``fpemu accumulators``."""
    p = subparsers.add_parser("gemm-error", help="relative error of an emulated GEMM vs the exact product")
    p.add_argument("--inputs", default="e4m3", help="input format, or two for A,B: e4m3,e5m2 (default e4m3)")
    p.add_argument("--accumulator", default="h100", help="accumulator model (default h100)")
    p.add_argument("--k", type=whole_number(1), default=4096, help="inner dimension K (default 4096)")
    p.add_argument("--m", type=whole_number(1), default=64, help="rows of A (default 64)")
    p.add_argument("--n", type=whole_number(1), default=64, help="columns of B (default 64)")
    p.add_argument("--promote", type=whole_number(1), default=None, help="promote to an fp32 accumulator every N products")
    p.add_argument("--seed", type=whole_number(0), default=0, help="random seed (default 0)")
    p.add_argument("--distribution", default="uniform", type=option_name, choices=("uniform", "normal"),
                   help="input distribution")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the emulated GEMM on a Dask scheduler (tcp://host:8786; needs fpemu[dask])")
    p.set_defaults(func=cmd_gemm_error)

    p = subparsers.add_parser("accumulators", help="the matrix-unit names --accumulator takes (dense and block-scaled)")
    p.add_argument("--json", action="store_true", help="print the names as JSON")
    p.set_defaults(func=cmd_accumulators)
