"""The ``fpemu train`` command: its arguments (an option that does not apply to the others'
values is refused), the checks of its output paths before training, the table or the JSON
(stdout), the JSON file and the plots (progress and notes on stderr)."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from pathlib import Path
from typing import Callable

from ..arguments import option_name, whole_number
from ..outputs import atomic_output, check_output_path
from ..progress import step_lines, wanted
from .blas import single_threaded_blas
from .checks import check_scale
from .files import check_json_file, finite_or_null
from .gpt.cli import gpt_setups
from .gpt.loop import CLI_GPT_STEPS, train_gpt_setup
from .infer_cli import register_infer
from .loop import COMPARE_RUNS, DEFAULT_STEPS, MAX_STEPS, compare_setups, make_run_setup, train_setup
from .plots import PLOT_FILES, plot_directory, pyplot_agg, plot
from .policies import PRECISIONS
from .report import summary_table, title_line
from .scalers import LOSS_SCALES

DEFAULT_GROWTH_INTERVAL = 2000  # GradScaler's


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
    """Where stderr is not a terminal (a pipe, a log: no bar shows), a line per run on stderr
    as it finishes, so that a comparison of minutes is not silent; None where the bar shows or
    with --quiet. Never on stdout, which holds the table or the JSON alone."""
    if quiet or wanted():
        return None

    def done(history, k: int, n: int) -> None:
        print(f"trained {history.label} ({k}/{n}) in {history.time_s:.1f} s", file=sys.stderr, flush=True)

    return done


def cmd_train(args: argparse.Namespace) -> int:
    """``fpemu train``: one run, or the comparison (the default with no arguments).

    Everything that can fail is checked before training (it takes ~30 s): the arguments, and
    that the ``--json-file`` and the ``--plot`` directory can be written.
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
    text = None
    if args.json or args.json_file:
        payload = {"task": args.task, "steps": histories[0].steps, "seed": args.seed,
                   "runs": [h.to_dict() for h in histories]}
        # Strict JSON has no NaN or Infinity: a diverged run's values are written as null.
        text = json.dumps(finite_or_null(payload), indent=1, allow_nan=False)
    print(text if args.json else summary_table(histories, _title(args, setups)))
    if args.json_file:
        _write_text(args.json_file, text)
    if args.plot:
        for path in plot(histories, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _title(args: argparse.Namespace, setups: list) -> str | None:
    """The table's first line: the task the runs trained on, the steps and the seed."""
    description = getattr(setups[0].task, "description", "")
    if not description:
        return None
    return title_line(description, setups[0].steps, args.seed)


def _write_text(path: str, text: str) -> None:
    """``text`` into ``path``, all at once (a failure leaves no partial file)."""
    with atomic_output(path) as tmp:
        tmp.write_text(text)


def _cli_setups(args: argparse.Namespace) -> tuple[list, Callable]:
    """The checked runs the command line asks for (ValueError/TypeError: a usage error), and
    the function that trains one of them into a History."""
    if args.init_scale is not None:
        check_scale("--init-scale", args.init_scale)  # the flag's name, not the parameter's
    if args.precision is None and args.loss_scale is not None:
        raise ValueError("--loss-scale sets the loss scaling of a single run: give --precision too")
    if args.compare and args.precision is not None:
        raise ValueError("--compare runs the default comparison: leave out --precision")
    if args.promote is not None and args.accumulator is None:
        raise ValueError("--promote applies to GEMMs through an accumulator model: give --accumulator too")
    if args.task != "gpt":
        for option, value in (("--nvfp4-recipe", args.nvfp4_recipe), ("--promote", args.promote),
                              ("--fp8-block-scales", args.fp8_block_scales)):
            if value is not None:
                raise ValueError(f"{option} applies to --task gpt")
    why = _inapplicable(args)
    if why is not None:
        raise ValueError(why)
    # The options left unset take their defaults only now that it is known they apply.
    args = argparse.Namespace(**{**vars(args), "fp8_recipe": args.fp8_recipe or "delayed",
                                 "growth_interval": DEFAULT_GROWTH_INTERVAL if args.growth_interval is None
                                 else args.growth_interval})  # fmt: skip
    progress = None if args.quiet else _progress_bar(sys.stderr) if wanted() else step_lines()
    if args.task == "gpt":
        return gpt_setups(args, progress), lambda setup: train_gpt_setup(setup)[0]
    steps = DEFAULT_STEPS if args.steps is None else args.steps
    kw = dict(init_scale=args.init_scale, growth_interval=args.growth_interval, fp8_recipe=args.fp8_recipe)
    if args.precision is None:
        return compare_setups(steps, args.seed, args.accumulator, COMPARE_RUNS, progress, **kw), train_setup
    ls = args.loss_scale or ("dynamic" if args.precision == "fp16" else "none")
    cb = None if progress is None else (lambda i, n: progress(args.precision, i, n))
    return [make_run_setup(args.precision, ls, steps, args.seed, args.accumulator, progress=cb, **kw)], train_setup


def _inapplicable(args: argparse.Namespace) -> str | None:
    """Why an option the user gave does not apply to the other options' values (None: every
    one applies). The options it reads default to None, so a value given is told from none."""
    p = args.precision
    if p is None:  # the comparison: each option applies to some of its runs, but for one
        if args.fp8_recipe is not None:
            runs = ("with both recipes" if args.task == "gpt"
                    else "with delayed scaling and without per-tensor scaling")  # fmt: skip
            return f"--fp8-recipe does not apply to the {args.task} comparison, which runs fp8 {runs}: give --precision fp8 too"
        return None
    if p == "fp32" and args.loss_scale not in (None, "none"):
        return f"--loss-scale {args.loss_scale} does not apply to --precision fp32: the fp32 baseline is never loss-scaled"
    ls = "none" if p == "fp32" else args.loss_scale or ("dynamic" if p == "fp16" else "none")
    rules = (
        ("--fp8-recipe", args.fp8_recipe, p == "fp8", "--precision fp8"),
        ("--nvfp4-recipe", args.nvfp4_recipe, p == "nvfp4", "--precision nvfp4 (or the comparison)"),
        ("--fp8-block-scales", args.fp8_block_scales, p == "fp8_block", "--precision fp8_block"),
        ("--init-scale", args.init_scale, ls in ("static", "dynamic"), "--loss-scale static or dynamic"),
        ("--growth-interval", args.growth_interval, ls == "dynamic", "--loss-scale dynamic (GradScaler)"),
    )
    for option, value, applies, where in rules:
        if value is not None and not applies:
            return f"{option} applies to {where}; this run is --precision {p} with --loss-scale {ls}"
    return None


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail now, naming the path, if --json-file or --plot could not be written after training."""
    from ..errors import RunError, path_error

    if args.plot:
        try:
            pyplot_agg()
        except ValueError as exc:  # matplotlib missing: the user can install it
            raise RunError(str(exc)) from None
        out = Path(args.plot)
        if not out.exists() and out.suffix.lower() in _IMAGE_SUFFIXES:
            raise ValueError(f"--plot takes a directory (it writes {', '.join(PLOT_FILES)} into it), "
                             f"not an image file: {args.plot}")
    checks = (("--json-file", args.json_file, check_json_file), ("--plot", args.plot, _check_plot_directory))
    for option, path, check in checks:
        if not path:
            continue
        try:
            check(path)
        except OSError as exc:
            raise path_error(option, path, exc) from None


# Names that look like an image file, not a directory of them.
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".tif", ".tiff", ".webp", ".gif")


def _check_plot_directory(path: str) -> None:
    """The --plot directory: an existing one, or a new one in an existing, writable directory
    (as any output file: :func:`fpemu.outputs.check_output_path`; never a tree of missing
    parents). A new one is made only when the plots are written: a run stopped before (Ctrl-C)
    leaves no empty directory behind."""
    if Path(path).exists():
        plot_directory(path)
        return
    parent = check_output_path(path).parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "its directory is not writable", str(path))


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` and ``infer`` subcommands."""
    p = subparsers.add_parser(
        "train",
        help="train a small network in emulated mixed precision (default: compare policies)",
        description="Train a deep narrow MLP (--task mlp, the default) or a small transformer "
        "(--task gpt) on a generated task with emulated precision. Without --precision the MLP "
        "compares fp32, fp16 without and with dynamic loss scaling, bf16, and fp8 with and without per-tensor scaling; the transformer "
        "fp32, fp16 (dynamic scaling), bf16, fp8 (delayed and current scaling), mxfp8 and nvfp4 "
        "(with and without NVIDIA's recipe).",
    )
    p.add_argument("--task", type=option_name, choices=("mlp", "gpt"), default="mlp", help="the network (default mlp)")
    p.add_argument("--precision", "-p", type=option_name, choices=PRECISIONS, default=None,
                   help="one run in this precision")
    p.add_argument("--loss-scale", type=option_name, choices=LOSS_SCALES, default=None,
                   help="loss scaling of a single run (default: dynamic for fp16, else none)")
    p.add_argument("--steps", type=whole_number(1, MAX_STEPS), default=None,
                   help=f"training steps (default {DEFAULT_STEPS} for mlp, {CLI_GPT_STEPS} for gpt; "
                   "the transformer runs of fpemu docs training take 300)")
    p.add_argument("--seed", type=whole_number(0), default=0, help="seed of the data, initialisation and batches")
    p.add_argument("--accumulator", default=None, help="GEMM accumulator model of fpemu.accumulator")
    p.add_argument("--init-scale", type=float, default=None,
                   help="static loss scale (default 1024) or initial dynamic scale (default 65536)")
    p.add_argument("--growth-interval", type=whole_number(1), default=None,
                   help="GradScaler growth interval of --loss-scale dynamic (default 2000)")
    p.add_argument("--fp8-recipe", type=option_name, choices=("delayed", "current", "unscaled"), default=None,
                   help="fp8 per-tensor scaling recipe (default delayed; unscaled: every scale 1)")
    p.add_argument("--nvfp4-recipe", default=None, metavar="ELEMENTS",
                   help="gpt: NVIDIA's NVFP4 recipe elements, 'all' (default), 'none' or a comma list of "
                   "2d (16x16 weight tiles), sr (stochastic rounding of gradients), rht (random Hadamard "
                   "transform on wgrad), last or lastN (the last N blocks in bf16)")
    p.add_argument("--fp8-block-scales", type=option_name, choices=("pow2", "fp32"), default=None,
                   help="gpt --precision fp8_block (DeepSeek-V3's blockwise FP8, TE's Float8BlockScaling): "
                   "power-of-two scales (pow2, TE's default) or fp32")
    p.add_argument("--promote", type=whole_number(1), default=None, metavar="N",
                   help="gpt with --accumulator: promote partial sums to fp32 every N products (DeepSeek-V3)")
    p.add_argument("--compare", action="store_true", help="compare the policies (the default)")
    p.add_argument("--json", action="store_true",
                   help="print the summaries and per-step histories as JSON instead of the table")
    p.add_argument("--json-file", metavar="FILE", help="write the summaries and per-step histories (JSON) to FILE")
    p.add_argument("--plot", metavar="DIR",
                   help="write lesson.png (excess loss, loss scale, underflow per kind), loss, "
                   "loss-scale and gradient-histogram PNGs into DIR (created if its parent exists)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress: neither the bar (stderr, on a terminal) nor the line per "
                   "finished run (stderr, elsewhere)")
    p.set_defaults(func=cmd_train)
    register_infer(subparsers)
