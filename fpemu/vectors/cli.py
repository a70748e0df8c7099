"""``fpemu vectors``: the vectors made, written next to the output, read back and re-checked,
and only then moved onto the output path."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from ..arguments import option_name, whole_number
from ..outputs import atomic_output, check_output_path
from ..parallel import dask_scheduler
from ..progress import progress
from .block_gemm import block_gemm_vectors
from .cheader import MAX_HEADER_BYTES
from .files import file_type, read, verify, write_vectors_file
from .make import VECTOR_KINDS, MAX_K, MAX_VALUES, block_vectors, cast_vectors, dot_vectors


def _is_block_format(name: str) -> bool:
    try:
        from .. import mx
    except ImportError:
        return False
    try:
        mx.get_block_format(name)
    except ValueError:
        return False
    return True


def _given(args: argparse.Namespace, *names: str) -> list[str]:
    """The options among ``names`` the user set (they default to None)."""
    return [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is not None]


def _refuse(options: list[str], what: str) -> None:
    if options:
        raise ValueError(f"{', '.join(options)} {'does' if len(options) == 1 else 'do'} not apply to {what}")


def _refuse_large_header(args: argparse.Namespace, rows: int, per_row: int) -> None:
    """Refuse, before the work, a C header of ``rows`` rows of at least ``per_row`` bytes
    that would be over the limit (the writer checks the exact size again)."""
    if file_type(args.out) == ".h" and rows * per_row > MAX_HEADER_BYTES:
        raise ValueError(f"--n {rows:,} makes at least {rows * per_row:,} bytes of arrays, too many for a C header "
                         f"(at most {MAX_HEADER_BYTES:,} bytes): write .bin and read it at run time, or fewer cases")  # fmt: skip


def _is_stochastic(rounding: str | None) -> bool:
    from ..codec import ROUNDING_MODES, is_stochastic

    return isinstance(rounding, str) and is_stochastic(ROUNDING_MODES.get(rounding.lower()))


def _needs_given_bits(rounding: str | None) -> bool:
    from ..codec import ROUNDING_MODES
    from ..codec import STOCHASTIC_WITH_BITS

    return isinstance(rounding, str) and ROUNDING_MODES.get(rounding.lower()) in STOCHASTIC_WITH_BITS


def _vectors_from_args(args: argparse.Namespace) -> Callable[[], dict[str, Any]]:
    """What makes the vectors the command line asks for, once every option is checked: an
    option that would be ignored is refused (before a Dask scheduler is reached)."""
    seed = 0 if args.seed is None else args.seed
    if args.accumulator and _is_block_format(args.format):
        _refuse(_given(args, "rounding", "overflow", "nan", "source", "scale_rounding", "out_format", "scheduler"),
                f"block-scaled GEMM vectors ({args.format} --accumulator)")
        if args.kind not in (None, "random"):
            raise ValueError(f"block-scaled GEMM vectors are random: --kind {args.kind} does not apply")
        if file_type(args.out) == ".csv":
            raise ValueError("a block-scaled GEMM's buffers have different row counts, which CSV cannot hold: "
                             "write .npz, .json, .bin or .h")
        n = 128 if args.n is None else args.n
        _refuse_large_header(args, n * n, 8)  # c and d alone
        return lambda: block_gemm_vectors(args.format, args.accumulator, args.k, n, seed=seed)
    if args.accumulator:
        _refuse(_given(args, "rounding", "overflow", "nan", "source", "scale_rounding"), "dot vectors (--accumulator)")
        if args.kind not in (None, "random"):
            raise ValueError(f"dot vectors are random rows: --kind {args.kind} does not apply")
        n = 1000 if args.n is None else args.n
        _refuse_large_header(args, n, 8 * (args.k or 2))  # a and b: K fp32 values each
        return lambda: dot_vectors(args.format, args.accumulator, args.k, n, out=args.out_format or "fp32", seed=seed)
    _refuse(_given(args, "k", "out_format"), "vectors without --accumulator")
    kind = args.kind or "edge"
    if args.n is not None and kind != "random":
        raise ValueError(f"--n applies to --kind random; {kind} vectors have a fixed set of inputs")
    if args.seed is not None and kind != "random" and not _is_stochastic(args.rounding):
        raise ValueError(f"--seed applies to --kind random and to stochastic rounding (--rounding sr); "
                         f"{kind} vectors have a fixed set of inputs")
    if _is_block_format(args.format):
        from .. import mx

        bf = mx.get_block_format(args.format)
        _refuse(_given(args, "rounding", "overflow", "nan", "source", *(("scale_rounding",) if bf.is_nvfp4 else ())),
                f"block vectors ({args.format})" + (f"; {bf.name} scales are {bf.scale_label}, not an MX scale rule" if bf.is_nvfp4 else ""))
        n = 64 if args.n is None else args.n
        _refuse_large_header(args, n, 4 * bf.block_size)  # the inputs alone
        return lambda: block_vectors(args.format, kind, n, scale_rounding=args.scale_rounding, seed=seed)
    _refuse(_given(args, "scale_rounding"), "cast vectors")
    if _needs_given_bits(args.rounding):
        raise ValueError(f"--rounding {args.rounding} rounds with random bits given per value, which fpemu vectors "
                         "does not take: --rounding stochastic draws them from --seed")
    if kind == "random":
        _refuse_large_header(args, 10000 if args.n is None else args.n, 4 + 1 + 8)  # input, code, value
    return lambda: cast_vectors(args.format, kind, 10000 if args.n is None else args.n,
                                rounding=args.rounding or "nearest_even", overflow=args.overflow, nan=args.nan,
                                source=args.source or "f32", seed=seed)  # fmt: skip


def cmd_vectors(args: argparse.Namespace) -> int:
    """Make the vectors, write them next to the output, read that back and re-check it, and
    only then move it onto the output path."""
    from ..errors import RunError

    check_output_path(args.out)  # before the work, which can take seconds
    ext = file_type(args.out)
    make = _vectors_from_args(args)  # every option checked before a scheduler is reached
    with progress(3, "vectors: make, write, re-check", enabled=None if not args.quiet else False) as step:
        with dask_scheduler(args.scheduler):
            v = make()
        step()
        with atomic_output(args.out) as tmp:
            write_vectors_file(v, tmp, ext, target=args.out)
            step()
            n, same = verify(read(tmp, ext))
            if same != n:
                raise RunError(f"{args.out}: read back, {n - same} of {n} cases differ from fpemu (a writer bug); "
                               "nothing written")
            step()
    meta = v["meta"]
    if args.json:
        print(json.dumps({"path": str(args.out), "cases": n, "identical": same,
                          "meta": {k: x for k, x in meta.items() if k != "model"}}, indent=1, default=str))
        return 0
    shown = ", ".join(f"{k}={_shown(k, x)}" for k, x in meta.items()
                      if k not in ("n", "type", "model", "fpemu", "stochastic") and (x is not None or k in _DEFAULTED))
    print(f"wrote {meta['n']} {meta['type']} vectors ({shown}) to {args.out}; read back and re-checked: {same}/{n} identical")
    return 0


# Options that, not given, mean the format's own rule (the others, None, do not apply).
_DEFAULTED = ("overflow", "nan")


def _shown(key: str, value: Any) -> str:
    """A recorded option as the summary line says it."""
    return "the format's default" if value is None and key in _DEFAULTED else str(value)


def cmd_verify(args: argparse.Namespace) -> int:
    """``fpemu verify FILE``: re-run fpemu on a vector file's inputs with its recorded options
    (a golden file re-checked after an upgrade); status 1 if any case differs."""
    from ..errors import RunError
    from ..version import __version__
    from .files import verify_vectors

    n, same = verify_vectors(args.file)  # VectorFileError (a usage error, 2) names the file
    if args.json:
        print(json.dumps({"path": str(args.file), "cases": n, "identical": same, "fpemu": __version__}, indent=1))
    else:
        print(f"{args.file}: {same}/{n} cases identical to fpemu {__version__}")
    if same != n:
        raise RunError(f"{args.file}: {n - same} of {n} cases differ from fpemu {__version__}")
    return 0


_KIND_HELP = (
    "edge (default): every value, tie and their neighbours, boundaries, specials; "
    "random: --n random bit patterns and values from --seed; "
    "exhaustive (formats of at most 16 bits, any rounding but sr): an input of every class a rounding can "
    "tell apart: each value, each midpoint between neighbours (the overflow tie too), the input floats just "
    "below and above each, +-0, +-Inf, NaNs with every payload the format keeps (every outcome, not every "
    "bit pattern: fpemu docs golden)"
)


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("vectors", help="golden test vectors (casts, MX/NVFP4 blocks, dot products) to a file")
    p.add_argument("format", help="element format (e4m3 ...), block format (mxfp8_e4m3, nvfp4 ...), or with "
                                  "--accumulator the dot inputs (fp16 ...)")  # fmt: skip
    p.add_argument("--out", required=True, help="output file: .npz, .csv, .json, .bin (raw arrays after a JSON header line, "
                                              "for C++/CUDA) or .h (a C header, small sets); suffix in any case")
    p.add_argument("--kind", default=None, type=option_name, choices=VECTOR_KINDS, help=_KIND_HELP)
    p.add_argument("--n", type=whole_number(1), default=None,
                   help=f"--kind random: cases (default 10000), blocks (64) or dot rows (1000); "
                        f"at most {MAX_VALUES:,} values per file")  # fmt: skip
    p.add_argument("--rounding", default=None, type=option_name,
                   help="cast rounding mode (default RNE; sr is drawn from --seed)")
    p.add_argument("--overflow", default=None, type=option_name,
                   help="casts: saturate, inf, nan, saturate_propagate (default: the format's)")
    p.add_argument("--nan", default=None, type=option_name, help="casts: NaN policy (see fpemu show --help)")
    p.add_argument("--source", default=None, type=option_name, choices=("f32", "f64"),
                   help="input type of cast vectors (default f32)")
    p.add_argument("--scale-rounding", default=None, type=option_name,
                   help="MX scale rule: floor (default), rceil, ceil, even")
    p.add_argument("--accumulator", default=None, help="dot-product vectors for this accumulator (h100, a100 ...); "
                   "with a block format: a block-scaled GEMM (--n x --k by --k x --n, default 128 and four "
                   "blocks) in the 128x4 scale layout, for a block-scaled model (b200, mmasim-blackwell, exact)")
    p.add_argument("--k", type=whole_number(1, MAX_K), default=None, help=f"dot length (default: two blocks; at most {MAX_K})")
    p.add_argument("--out-format", default=None, type=option_name, choices=("fp32", "fp16"),
                   help="dot output format (default fp32)")
    p.add_argument("--seed", type=whole_number(0), default=None,
                   help="seed of --kind random inputs, of dot and GEMM inputs, and of stochastic rounding "
                        "(default 0; recorded in the file)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="make the vectors on a Dask scheduler (tcp://host:8786; needs fpemu[dask]): the same file")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.set_defaults(func=cmd_vectors)

    p = subparsers.add_parser("verify", help="re-check a vector file of fpemu vectors against this fpemu")
    p.add_argument("file", metavar="FILE", help="a file fpemu vectors wrote (.npz, .csv, .json, .bin or .h)")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(func=cmd_verify)
