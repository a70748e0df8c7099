"""``fpemu crosscheck``: the table printed, or its rows as JSON (``--json``; ``--json-file``
writes them to a file)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Sequence

from ..arguments import whole_number
from ..backends import BACKENDS
from ..formats import get_format
from .run import MAX_RANDOM, run_crosscheck
from .table import format_table, summary


def cmd_crosscheck(args: argparse.Namespace) -> int:
    """Print the cross-check table, or its rows as JSON (--json); --json-file writes them."""
    from ..outputs import atomic_output, check_output_path

    backends = _names("--backend", args.backend)
    formats = _names("--formats", args.formats) if args.formats is not None else None
    if formats == []:
        raise ValueError("--formats names no format")
    if args.json_file:
        check_output_path(args.json_file)  # before a run of seconds, not after it
    _check_formats_exist(backends, formats)
    rows = run_crosscheck(backends, formats, args.n, args.seed, quiet=args.quiet)
    text = json.dumps([asdict(r) for r in rows], indent=1)
    if args.json:
        print(text)
    else:
        print(format_table(rows))
        print(f"\n{summary(rows)}")
    if formats:
        absent = [f for f in formats if get_format(f).name not in {r.format for r in rows}]
        if absent:  # a note: on stderr where stdout holds the JSON alone
            print(f"no row for {', '.join(absent)}: no installed backend of those asked for implements it",
                  file=sys.stderr if args.json else sys.stdout)
    if args.json_file:
        with atomic_output(args.json_file) as tmp:
            tmp.write_text(text)
    return 0


def _names(option: str, text: str) -> list[str]:
    """A comma list of names; an empty field ("a,,b", "a,") is refused, not dropped."""
    fields = text.split(",")
    names = [f.strip() for f in fields if f.strip()]
    empty = next((i for i, f in enumerate(fields, 1) if not f.strip()), None)
    if names and empty is not None:  # no name at all is the caller's error to word
        raise ValueError(f"{option}: field {empty} of {text!r} is empty")
    return names


def _check_formats_exist(backends: Sequence[str], formats: Sequence[str] | None) -> None:
    """Refuse --formats that no backend asked for implements, when every one of them is
    installed (an empty table would look like a clean run)."""
    names = list(BACKENDS) if "all" in backends else [b for b in backends if b in BACKENDS]
    if not formats or len(names) != len(backends) and "all" not in backends:
        return  # unknown backend names: run_crosscheck says so
    present = [BACKENDS[n]() for n in names]
    if any(b.missing() for b in present):
        return  # a skipped backend might have had them
    have = {get_format(f).name for b in present for f in b.dtypes()}
    absent = [f for f in formats if get_format(f).name not in have]
    if absent:
        raise ValueError(f"{', '.join(absent)}: not implemented by {', '.join(names)}, so there is nothing to compare")


def register_cli(subparsers: Any) -> None:
    """Add ``crosscheck``."""
    p = subparsers.add_parser("crosscheck", help="compare fpemu with ml_dtypes, numpy and torch (CPU/CUDA)")
    p.add_argument("--backend", default="all", help="ml_dtypes, numpy, torch, torch-cuda or all (comma-separated)")
    p.add_argument("--formats", default=None, help="only these formats (comma-separated)")
    p.add_argument("--n", type=whole_number(0, MAX_RANDOM), default=20000, help=f"random cases per cast (default 20000; 0: edge cases only; at most {MAX_RANDOM:,})")
    p.add_argument("--seed", type=whole_number(0), default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    p.add_argument("--json-file", default=None, metavar="FILE", help="also write the rows (JSON) to FILE")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.set_defaults(func=cmd_crosscheck)
