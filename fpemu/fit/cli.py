"""``fpemu fit``: every output column of a dump fitted and reported. (The FP8 fp16-output
campaign's staged search is research: ``python -m research.fp8_fp16 fit`` from a checkout.)"""

from __future__ import annotations

import argparse
import dataclasses
import json

from ..arguments import option_name
from ..formats import get_format
from ..outputs import json_number
from ..progress import progress
from .dumps import load_dump
from .reporting import report
from .search import fit


def cmd_fit(args: argparse.Namespace) -> int:
    """Fit every output column (or --out's) and print what reproduces it; a column no model
    reproduces makes the run fail (exit status 1) after the report."""
    from ..errors import RunError

    if args.inputs is not None:
        get_format(args.inputs)  # an unknown name is a usage error, before the file is read
    paths = args.dump if isinstance(args.dump, list) else [args.dump]
    unfit, records = [], []
    dumps = [load_dump(path, args.inputs) for path in paths]  # DumpError, a ValueError: usage (2)
    for path, dump in zip(paths, dumps):
        if args.out and args.out not in dump.d:
            raise ValueError(f"{path} has no d_{args.out} column (it has {', '.join('d_' + k for k in dump.d)})")
    columns = [(path, dump, out) for path, dump in zip(paths, dumps) for out in ([args.out] if args.out else dump.d)]
    with progress(len(columns), "fit", enabled=None if not args.quiet else False) as step:
        for n, (path, dump, out) in enumerate(columns):
            result = fit(dump, out)
            step()
            if args.json:
                records.append(_fit_record(result))
            else:
                print(("\n" if n else "") + report(result), flush=True)
                if not result.fits and out == "fp16" and dump.inputs in ("e4m3", "e5m2"):
                    print(f"hint: FP8 with fp16 output runs in stages: python -m research.fp8_fp16 fit {path} "
                          "(from the root of a checkout of the fpemu repository)", flush=True)  # fmt: skip
            if not result.fits:
                unfit.append((path, f"d_{out}"))
    if args.json:
        print(json.dumps(records, indent=1))
    if unfit:
        where = "; ".join(f"{p}: {c}" for p, c in unfit)
        if len(unfit) == 1 or len({p for p, _ in unfit}) == 1:
            cols = " and ".join(c for _, c in unfit)
            where = f"{unfit[0][0]}: no model in the search space reproduces every row of {cols}"
        else:
            where = f"no model in the search space reproduces every row of {where}"
        raise RunError(where)
    return 0


def _fit_record(result) -> dict:
    """One column's fit as JSON-ready data."""
    model = lambda acc: None if acc is None else dataclasses.asdict(acc)  # noqa: E731
    return {"dump": result.dump, "inputs": result.inputs, "out": result.out, "rows": result.rows, "K": result.K,
            "c_mode": result.c_mode, "fits": result.fits, "presets": list(result.presets),
            "models": [model(m) for m in result.models], "best": model(result.best), "best_rows": result.best_rows,
            "searched": result.searched, "seconds": json_number(result.seconds)}


def register_cli(subparsers) -> None:
    """Add ``fit``."""
    p = subparsers.add_parser("fit", help="find the accumulator models that reproduce a dump of block FMAs",
                              description="Find the accumulator models that reproduce a dump of block FMAs. (The FP8 "
                                          "fp16-output staged search is research: python -m research.fp8_fp16 fit, "
                                          "from the root of a checkout of the fpemu repository.)")
    p.add_argument("dump", nargs="+", help="an .npz in the hwdata layout (uint32 bit patterns a, b, c, d_fp32 and/or "
                                           "d_fp16), or a file of fpemu vectors --accumulator; several: each in turn")
    p.add_argument("--inputs", default=None, help="input format (default: the file's metadata, else its name)")
    p.add_argument("--out", default=None, type=option_name, choices=("fp32", "fp16"),
                   help="output column (default: every one present)")
    p.add_argument("--json", action="store_true", help="print the fits as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.set_defaults(func=cmd_fit)
