"""``fpemu fit``: every output column of a dump fitted and reported."""

from __future__ import annotations

import argparse

from ..formats import get_format
from .dumps import DumpError, load_dump
from .reporting import report
from .search import fit


def cmd_fit(args: argparse.Namespace) -> int:
    """Fit every output column (or --out's) and print what reproduces it; a column no model
    reproduces makes the run fail (exit status 1) after the report."""
    from ..errors import RunError

    if args.inputs is not None:
        get_format(args.inputs)  # an unknown name is a usage error, before the file is read
    try:
        dump = load_dump(args.dump, args.inputs)
    except DumpError as exc:
        raise RunError(str(exc)) from None
    if args.out and args.out not in dump.d:
        raise ValueError(f"{args.dump} has no d_{args.out} column (it has {', '.join('d_' + k for k in dump.d)})")
    outs = [args.out] if args.out else list(dump.d)
    unfit = []
    for i, out in enumerate(outs):
        result = fit(dump, out)
        print(("\n" if i else "") + report(result), flush=True)
        if not result.fits:
            unfit.append(f"d_{out}")
    if unfit:
        raise RunError(f"{args.dump}: no model in the search space reproduces every row of {' and '.join(unfit)}")
    return 0


def register_cli(subparsers) -> None:
    """Add ``fit``."""
    p = subparsers.add_parser("fit", help="find the accumulator models that reproduce a dump of block FMAs")
    p.add_argument("dump", help="an .npz in the hwdata layout (uint32 bit patterns a, b, c, d_fp32 and/or d_fp16), "
                                "or a file of fpemu vectors --accumulator")  # fmt: skip
    p.add_argument("--inputs", default=None, help="input format (default: the file's metadata, else its name)")
    p.add_argument("--out", default=None, choices=("fp32", "fp16"), help="output column (default: every one present)")
    p.set_defaults(func=cmd_fit)
