"""The ``fpemu train`` command: its arguments, the checks of its output paths before training,
the table, the JSON file and the plots."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from ..progress import wanted
from .blas import single_threaded_blas
from .files import _check_json_file, _finite_or_null
from .gpt.cli import gpt_setups, register_infer
from .gpt.loop import DEFAULT_GPT_STEPS
from .gpt.loop import _train as train_gpt_setup
from .loop import COMPARE_RUNS, DEFAULT_STEPS, _compare_setups, _setup, _train
from .plots import _plot_directory, _pyplot, plot
from .policies import PRECISIONS
from .report import summary_table
from .scalers import LOSS_SCALES


def _progress_bar(stream) -> Callable[[str, int, int], None]:
    """A bar over one run's steps, rewritten in place on ``stream`` and cleared when it ends."""

    def show(label: str, i: int, n: int) -> None:
        if i % 10 and i != n:
            return
        width = 30
        filled = int(width * i / n)
        line = f"{label:<14} [{'#' * filled}{'.' * (width - filled)}] {i}/{n}"
        stream.write("\r" + line + ("\r" + " " * len(line) + "\r" if i == n else ""))
        stream.flush()

    return show


def _announce(quiet: bool) -> Callable[[object, int, int], None] | None:
    """Where stdout is not a terminal (a pipe, a log), a line per run as it finishes, so that a
    comparison of minutes is not silent; None on a terminal (the bar shows) or with --quiet."""
    if quiet or sys.stdout.isatty():
        return None

    def done(history, k: int, n: int) -> None:
        print(f"trained {history.label} ({k}/{n}) in {history.time_s:.1f} s", flush=True)

    return done


def cmd_train(args: argparse.Namespace) -> int:
    """``fpemu train``: one run, or the comparison (the default with no arguments).

    Everything that can fail is checked before training (it takes ~30 s): the arguments, and
    that the ``--json`` file and the ``--plot`` directory can be written.
    """
    setups, train = _cli_setups(args)
    _check_outputs(args)
    announce = _announce(args.quiet)
    histories = []
    with single_threaded_blas():
        for setup in setups:
            histories.append(train(setup))
            if announce is not None:
                announce(histories[-1], len(histories), len(setups))
    print(summary_table(histories))
    if args.json:
        payload = {"task": args.task, "steps": histories[0].steps, "seed": args.seed,
                   "runs": [h.to_dict() for h in histories]}
        # Strict JSON has no NaN or Infinity: a diverged run's values are written as null.
        Path(args.json).write_text(json.dumps(_finite_or_null(payload), indent=1, allow_nan=False))
    if args.plot:
        for path in plot(histories, args.plot):
            print(f"wrote {path}")
    return 0


def _cli_setups(args: argparse.Namespace) -> tuple[list, Callable]:
    """The checked runs the command line asks for (ValueError/TypeError: a usage error), and
    the function that trains one of them into a History."""
    if args.precision is None and args.loss_scale is not None:
        raise ValueError("--loss-scale sets the loss scaling of a single run: give --precision too")
    if args.compare and args.precision is not None:
        raise ValueError("--compare runs the default comparison: leave out --precision")
    if args.promote is not None and args.accumulator is None:
        raise ValueError("--promote applies to GEMMs through an accumulator model: give --accumulator too")
    progress = _progress_bar(sys.stderr) if wanted(args.quiet) else None
    if args.task == "gpt":
        return gpt_setups(args, progress), lambda setup: train_gpt_setup(setup)[0]
    for option, value in (("--nvfp4-recipe", args.nvfp4_recipe), ("--promote", args.promote)):
        if value is not None:
            raise ValueError(f"{option} applies to --task gpt")
    steps = DEFAULT_STEPS if args.steps is None else args.steps
    kw = dict(init_scale=args.init_scale, growth_interval=args.growth_interval, fp8_recipe=args.fp8_recipe)
    if args.precision is None:
        return _compare_setups(steps, args.seed, args.accumulator, COMPARE_RUNS, progress, **kw), _train
    ls = args.loss_scale or ("dynamic" if args.precision == "fp16" else "none")
    cb = None if progress is None else (lambda i, n: progress(args.precision, i, n))
    return [_setup(args.precision, ls, steps, args.seed, args.accumulator, progress=cb, **kw)], _train


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail now, naming the path, if --json or --plot could not be written after training."""
    from ..errors import RunError

    if args.plot:
        try:
            _pyplot()
        except ValueError as exc:  # matplotlib missing: the user can install it
            raise RunError(str(exc)) from None
    for option, path, check in (("--json", args.json, _check_json_file), ("--plot", args.plot, _plot_directory)):
        if not path:
            continue
        try:
            check(path)
        except OSError as exc:
            where = exc.filename if exc.filename is not None else path
            raise RunError(f"cannot write {option} {where}: {exc.strerror or exc}") from None


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` and ``infer`` subcommands."""
    p = subparsers.add_parser(
        "train",
        help="train a small network in emulated mixed precision (default: compare policies)",
        description="Train a deep narrow MLP (--task mlp, the default) or a small transformer "
        "(--task gpt) on a generated task with emulated precision. Without --precision the MLP "
        "compares fp32, fp16 without and with dynamic loss scaling, bf16 and fp8; the transformer "
        "fp32, fp16 (dynamic scaling), bf16, fp8 (delayed and current scaling), mxfp8 and nvfp4 "
        "(with and without NVIDIA's recipe).",
    )
    p.add_argument("--task", choices=("mlp", "gpt"), default="mlp", help="the network (default mlp)")
    p.add_argument("--precision", "-p", choices=PRECISIONS, default=None, help="one run in this precision")
    p.add_argument("--loss-scale", choices=LOSS_SCALES, default=None,
                   help="loss scaling of a single run (default: dynamic for fp16, else none)")
    p.add_argument("--steps", type=int, default=None,
                   help=f"training steps (default {DEFAULT_STEPS} for mlp, {DEFAULT_GPT_STEPS} for gpt)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data, initialisation and batches")
    p.add_argument("--accumulator", default=None, help="GEMM accumulator model of fpemu.accumulator")
    p.add_argument("--init-scale", type=float, default=None,
                   help="static loss scale (default 1024) or initial dynamic scale (default 65536)")
    p.add_argument("--growth-interval", type=int, default=2000, help="GradScaler growth interval")
    p.add_argument("--fp8-recipe", choices=("delayed", "current"), default="delayed",
                   help="fp8 per-tensor scaling recipe (default delayed)")
    p.add_argument("--nvfp4-recipe", default=None, metavar="ELEMENTS",
                   help="gpt: NVIDIA's NVFP4 recipe elements, 'all' (default), 'none' or a comma list of "
                   "2d (16x16 weight tiles), sr (stochastic rounding of gradients), rht (random Hadamard "
                   "transform on wgrad), last or lastN (the last N blocks in bf16)")
    p.add_argument("--promote", type=int, default=None, metavar="N",
                   help="gpt with --accumulator: promote partial sums to fp32 every N products (DeepSeek-V3)")
    p.add_argument("--compare", action="store_true", help="compare the policies (the default)")
    p.add_argument("--json", metavar="FILE", help="write the summaries and per-step histories")
    p.add_argument("--plot", metavar="DIR",
                   help="write lesson.png (excess loss, loss scale, underflow per kind), loss, "
                   "loss-scale and gradient-histogram PNGs")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress: neither the bar (stderr, only on a terminal) nor the line per "
                   "finished run (when stdout is not a terminal)")
    p.set_defaults(func=cmd_train)
    register_infer(subparsers)
