"""``python -m research.fp8_fp16``: the campaign's two commands, ``probe`` (the experiment set
on a device) and ``fit`` (one staged model searched for the columns of several dumps).

Errors are one line ``research.fp8_fp16: error: ...`` on stderr, never a traceback, with the
exit statuses of ``fpemu``'s command line: 2 for a usage error (argparse's, and the
``ValueError``/``TypeError`` a bad argument raises), 1 for a run that cannot finish
(:class:`fpemu.errors.RunError`, an ``OSError``, an unexpected error).

>>> main(["fit", "--space", "nope", "x.npz"])
2
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn, Sequence

from fpemu.arguments import option_name
from fpemu.cli import run_command
from fpemu.errors import RunError
from fpemu.fit.dumps import DumpError, load_dump
from fpemu.formats import get_format
from fpemu.outputs import json_number
from fpemu.progress import progress

PROG = "research.fp8_fp16"


def cmd_probe(args: argparse.Namespace) -> int:
    """Run the experiment set on --device (cuda, cpu or fake:NAME), judge and print it."""
    from .fp8_run import run_fp8_fp16

    if args.device not in ("cuda", "cpu") and not args.device.startswith("fake:"):
        raise ValueError(f"--device: cuda, cpu or fake:NAME, got {args.device!r}")
    inputs = [get_format(t.strip()).name for t in (args.inputs or "e4m3,e5m2").split(",") if t.strip()]
    if args.device in ("cuda", "cpu"):
        try:
            import torch
        except ImportError:
            raise RunError("probing needs torch (with a CUDA GPU for --device cuda), and torch is not installed") from None
        if args.device == "cuda" and not torch.cuda.is_available():
            raise RunError("no CUDA device is available here (torch.cuda.is_available() is False); "
                           f"run python -m {PROG} probe on a machine with an NVIDIA GPU")  # fmt: skip
    run_fp8_fp16(args.device, inputs, args.record, not args.no_search)
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    """One staged model for the columns of every dump, ranked, with residual rows; no model that
    reproduces every row makes the run fail (exit status 1) after the report."""
    from .spaces import load_space
    from .staged_report import space_report
    from .staged_search import search_space

    if args.space == "block":
        raise ValueError(f"--space block is the library's search: fpemu fit {' '.join(args.dump)}")
    if args.inputs is not None:
        get_format(args.inputs)  # an unknown name is a usage error, before any file is read
    spec = load_space(args.space)
    if args.top < 1 or args.residuals < 0:
        raise ValueError("--top must be >= 1 and --residuals >= 0")
    try:
        dumps = [load_dump(p, args.inputs) for p in args.dump]
    except DumpError as exc:
        raise RunError(str(exc)) from None
    with progress(1, f"fit --space {args.space}", enabled=None if not args.quiet else False) as step:
        result = search_space(dumps, args.space, args.out or spec["out"], top=args.top)
        step()
    if args.json:
        print(json.dumps({"space": args.space, "columns": result.columns, "K": result.K, "fits": result.fits,
                          "searched": result.searched, "seconds": json_number(result.seconds),
                          "ranked": [{"model": c.model.as_dict(), "rows": c.rows} for c in result.ranked]},
                         indent=1))  # fmt: skip
    else:
        print(space_report(result, dumps, args.residuals), flush=True)
    if not result.fits:
        raise RunError(f"no model of the search space {args.space} reproduces every row of "
                       + ", ".join(result.columns))  # fmt: skip
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]  # "research.fp8_fp16 fit" -> "fit"
        print(f"{PROG}: error: {command + ': ' if command else ''}{message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The ``probe`` and ``fit`` subcommands."""
    parser = _Parser(prog=PROG, description="The FP8 fp16-output campaign (issue 18): probe a device, fit "
                                            "staged models to dumps. Not part of the installed fpemu.")  # fmt: skip
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("probe", help="the FP8 GEMMs with fp16 output on a device, judged against the hypotheses")
    p.add_argument("--device", default="cuda", help="cuda, cpu (torch's CPU FP8 GEMM) or fake:NAME (a named model)")
    p.add_argument("--inputs", default=None, help="input formats (comma-separated; default e4m3,e5m2)")
    p.add_argument("--record", default=None, metavar="DIR", help="write the raw results and a note to DIR")
    p.add_argument("--no-search", action="store_true", help="skip the staged-model search per path")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("fit", help="one staged model searched for the columns of several dumps")
    p.add_argument("dump", nargs="+", help="an .npz in the hwdata layout (uint32 bit patterns a, b, c, d_fp16)")
    p.add_argument("--space", default="fp8-fp16", help="search space: 'fp8-fp16' (the default) or a .json file of axes")
    p.add_argument("--inputs", default=None, help="input format (default: the file's metadata, else its name)")
    p.add_argument("--out", default=None, type=option_name, choices=("fp32", "fp16"),
                   help="output column (default: the space's)")
    p.add_argument("--top", type=int, default=10, help="candidates listed (default 10)")
    p.add_argument("--residuals", type=int, default=5, help="missed rows decoded per column (default 5)")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.set_defaults(func=cmd_fit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error, already printed on one line
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return run_command(args, PROG)
