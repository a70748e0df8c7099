"""The ``fpemu`` command line.

Each subcommand is a small function ``cmd_<name>(args) -> int`` registered in
:func:`build_parser`. The command line never shows a traceback: every error is one line
``fpemu: error: ...`` on stderr, and the exit status says what kind it was (:data:`EXIT_RULE`,
``fpemu --help`` and docs/cli.md say the same):

* 2, a usage error: no command, an unknown option or a bad value (argparse's errors, and the
  ``ValueError``/``TypeError`` with which the library refuses bad arguments: a file whose
  contents are not what the command reads among them), a path given that does not exist or
  is the wrong kind (:data:`fpemu.errors.MISSING_PATH`);
* 1, a failed run: a file that exists but cannot be read or written (any other ``OSError``),
  an optional package that is not installed (``ImportError``), a :class:`RunError` raised by
  a command (a check that fails, a port in use), or an unexpected internal error
  (``FPEMU_TRACEBACK=1`` shows it whole);
* 130, interrupted (Ctrl-C).

Negative numbers are values, not options: ``fpemu show -3e-5 -f e4m3`` works.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Callable, NoReturn, Sequence

from . import codec
from .arguments import option_name, whole_number
from .codec import (NAN_POLICIES_WITH_NAN, NAN_POLICIES_WITHOUT_NAN, OVERFLOW_ALIASES, OVERFLOW_MODES, STOCHASTIC,
                    STOCHASTIC_WITH_BITS)
from .errors import MISSING_PATH, RunError
from .outputs import json_number
from .version import __version__

# The choices the core commands list in --help (rounding modes without their aliases; the
# overflow rules with P3109's names).
_ROUNDINGS = sorted(set(codec.ROUNDING_MODES.values()))
_OVERFLOWS = list(OVERFLOW_MODES) + list(OVERFLOW_ALIASES)
_NANS = list(NAN_POLICIES_WITH_NAN) + list(NAN_POLICIES_WITHOUT_NAN)


# ---- core commands (issue 2) ----------------------------------------------------------------
def cmd_formats(args: argparse.Namespace) -> int:
    """Print the table of every registered format."""
    from .formats import FORMATS
    from .tables import format_table

    if args.json:
        print(json.dumps([_format_record(f) for f in FORMATS.values()], indent=1))
    else:
        print(format_table(markdown=args.markdown))
    return 0


def _format_record(fmt) -> dict:
    fields = {k: getattr(fmt, k) for k in ("name", "exponent_bits", "mantissa_bits", "bias", "signed", "inf",
                                            "nan", "subnormals", "container_bits", "twos_complement")}
    derived = {k: json_number(getattr(fmt, k)) for k in ("max", "min_normal", "min_subnormal", "eps")}
    return fields | {"bits": fmt.bits} | derived


def cmd_show(args: argparse.Namespace) -> int:
    """Explain how one value is encoded: the value as typed, exactly (a decimal is not read as
    the float64 nearest it first), with the error value - input and error / |input| and the
    rules that fired (tie, underflow, overflow ...: :func:`fpemu.explain`, as the page)."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and not args.no_color
    _check_random_flags(args.rounding, args.seed, args.sr_bits)
    options = dict(rounding=args.rounding, overflow=args.overflow, nan=args.nan, sr_bits=args.sr_bits)
    if args.seed is not None:
        options["rng"] = args.seed
    text = codec.explain(args.value, args.format, color=color and not args.json, **options)
    if args.json:
        print(json.dumps(_show_record(args.value, args.format, options, text), indent=1))
    else:
        print(text)
    return 0


def _check_random_flags(rounding: str, seed: int | None, sr_bits: int | None) -> None:
    """--seed and --sr-bits where -r uses them, in range: the library's own checks name its
    parameters (rng, sr_bits); the command line names its flags."""
    rounding = codec.ROUNDING_MODES[rounding]
    if seed is not None and rounding not in STOCHASTIC:
        raise ValueError(f"--seed applies to the stochastic roundings (-r {', '.join(STOCHASTIC)}), not -r {rounding}")
    if sr_bits is not None and rounding not in STOCHASTIC_WITH_BITS:
        raise ValueError(f"--sr-bits applies to -r {', '.join(STOCHASTIC_WITH_BITS)}, not -r {rounding}")
    if rounding in STOCHASTIC_WITH_BITS and sr_bits is None:
        raise ValueError(f"-r {rounding} needs --sr-bits N, the number of random bits per value (1..32)")


def _show_record(value: str, fmt: str, options: dict, text: str) -> dict:
    """show --json: the input as typed and as the float64 nearest it, the options as applied
    (defaults resolved), the code, the value (also as its exact decimal), the error
    value - input and error / |input| (floats, "inf" past float64's range; None where not
    finite; ``error_exact``: the error's whole decimal, or p/q), the rules that fired (the
    explorer's page lists the same) and the explanation's lines."""
    from .codec import decimal_text, exact_decimal, explain_facts, fraction_float

    facts = explain_facts(value, fmt, **options)
    exact, err, rel = facts["exact_input"], facts["error"], facts["relative_error"]
    out = {"input": facts["input"], "input_value": json_number(fraction_float(exact))}  # (the float64 nearest)
    out |= {k: facts[k] for k in ("format", "rounding", "overflow", "nan", "directed_overflow", "code")}
    out |= {"code_hex": f"0x{facts['code']:X}", "value": json_number(facts["value"]),
            "value_exact": exact_decimal(facts["value"]), "class": facts["class"],
            "error": None if err is None else json_number(fraction_float(err)),
            "relative_error": None if rel is None else json_number(fraction_float(rel)),
            "error_exact": None if err is None else decimal_text(err, max_digits=60),
            "rules": facts["rules"], "explanation": text.splitlines()}
    return out


def cmd_table(args: argparse.Namespace) -> int:
    """Print every code of a format of at most 8 bits."""
    from .tables import code_table

    text = code_table(args.format)
    if args.json:
        rows = [line.split() for line in text.splitlines()[2:]]
        print(json.dumps([{"code": int(r[0], 16), "bits": " ".join(r[1:-2]), "value": json_number(float(r[-2])),
                           "class": r[-1]} for r in rows], indent=1))
    else:
        print(text)
    return 0


# ---- errors and the parser ---------------------------------------------------------------------
# A token that starts like a negative number ("-3e-5", "-.5", "-inf", "-nan", "-0x1p3", "-1/3",
# "-3,1") is a value: no option of fpemu starts with a digit, a dot, "inf" or "nan".
_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors and negative numbers read as values."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]  # "fpemu show" -> "show"
        print(f"fpemu: error: {command + ': ' if command else ''}{message}", file=sys.stderr)
        raise SystemExit(2)

    def _parse_optional(self, arg_string):  # argparse's hook that tells options from values
        if _NEGATIVE_VALUE.match(arg_string):
            return None
        return super()._parse_optional(arg_string)


#: The exit statuses, as ``fpemu --help`` ends.
EXIT_RULE = ("exit status: 0 done; 2 a usage error (no command, a bad option or value, a file or directory given "
             "that does not exist, is the wrong kind or is not what the command reads); 1 a failed run (a file "
             "that cannot be read or written, a missing optional package, a port in use, a check that fails); "
             "130 interrupted. Every error is one line on stderr.")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="fpemu",
        description="Bit-exact emulation of the floating-point formats machine learning runs on.",
        epilog=f"An error is value - input everywhere (show, mx, the explorer). {EXIT_RULE} "
               "The documentation: fpemu docs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    parser.add_argument("--version", action="version", version=f"fpemu {__version__}")

    p = sub.add_parser("formats", help="table of every format (bits, bias, range, Inf/NaN)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print the formats as JSON")
    p.set_defaults(func=cmd_formats)

    p = sub.add_parser("show", help="explain how one value is encoded in a format")
    p.add_argument("value", help="a number, read exactly: 1.5, -3e-5, -inf, nan, 0x1.8p3 or 1/3")
    p.add_argument("--format", "-f", required=True, help="format name, e.g. e4m3")
    p.add_argument("--rounding", "-r", default="nearest_even", choices=sorted(codec.ROUNDING_MODES),
                   type=option_name, metavar="ROUNDING", help=f"rounding mode: {', '.join(_ROUNDINGS)} (or an alias such as "
                                            "rne, rz; default nearest_even)")
    p.add_argument("--overflow", "-o", default=None, choices=_OVERFLOWS, type=option_name, metavar="OVERFLOW",
                   help=f"overflow rule: {', '.join(_OVERFLOWS)} (default: the format's)")
    p.add_argument("--nan", default=None, choices=_NANS, type=option_name, metavar="NAN",
                   help=f"the code of NaN results: {', '.join(_NANS)} (default: sign, or raise without NaN)")
    p.add_argument("--seed", type=whole_number(0), default=None,
                   help="seed of stochastic rounding (-r stochastic...): the same seed, the same result")
    p.add_argument("--sr-bits", type=whole_number(1, 32), default=None, metavar="N",
                   help="random bits per value (1..32) that stochastic_a, _b, _c and _odd need")
    p.add_argument("--no-color", action="store_true", help="never colour the bit fields")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("table", help="every code of a format of at most 8 bits")
    p.add_argument("format", help="format name, e.g. e2m1")
    p.add_argument("--json", action="store_true", help="print the codes as JSON")
    p.set_defaults(func=cmd_table)

    # Further subcommands register themselves here (one block per feature).
    for register in _EXTRA_COMMANDS:
        register(sub)
    return parser


# The feature packages' subcommands, each added by its CLI module's ``register_cli(subparsers)``.
_EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def _register_feature_commands() -> None:
    """Collect the feature packages' subcommand registrations (imported on first use, from the
    modules that define them: no library namespace exports its command line)."""
    from .accumulator.cli import register_cli as accumulator_commands
    from .crosscheck.cli import register_cli as crosscheck_commands
    from .fit.cli import register_cli as fit_commands
    from .mx.cli import register_cli as mx_commands
    from .pages import register_cli as docs_commands
    from .probe.cli import register_cli as probe_commands
    from .teach.cli import register_cli as teach_commands
    from .train.cli import register_cli as train_commands
    from .vectors.cli import register_cli as vectors_commands

    for register in (mx_commands, accumulator_commands, train_commands, crosscheck_commands, fit_commands,
                     probe_commands, vectors_commands, teach_commands, docs_commands):
        if register not in _EXTRA_COMMANDS:
            _EXTRA_COMMANDS.append(register)


def _os_error_text(exc: OSError) -> str:
    """'cannot read/write PATH: reason' from an OSError, naming the file."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{reason}: {exc.filename}"
    return reason


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fpemu`` console script; returns the exit status.

    >>> main(["show", "-inf", "-f", "e4m3", "--no-color"])  # doctest: +ELLIPSIS
    -inf in e4m3 ...
    0
    """
    _register_feature_commands()
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # name the subcommand whose options these are not
            where = f"{args.command}: " if getattr(args, "command", None) else ""
            parser.error(f"{where}unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help (0) or a usage error, already printed on one line
        return int(exc.code or 0)
    if not getattr(args, "func", None):  # no command: a usage error, the help on stderr
        parser.print_help(sys.stderr)
        return 2
    return run_command(args)


def run_command(args: argparse.Namespace, prog: str = "fpemu") -> int:
    """Run a parsed command (``args.func``) and turn what it raises into one line
    ``PROG: error: ...`` and an exit status: 2 for bad input (ValueError, TypeError, a path
    that does not exist or is the wrong kind), 1 for a run that cannot finish (RunError, any
    other OSError, a missing optional package, an unexpected error), 130 for Ctrl-C. Shared
    by every command line of the repository (``research.fp8_fp16`` too)."""
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError) as exc:
        return _fail(str(exc), 2, prog)
    except RunError as exc:
        return _fail(str(exc), 1, prog)
    except BrokenPipeError:
        return 0
    except MISSING_PATH as exc:
        return _fail(_os_error_text(exc), 2, prog)
    except OSError as exc:
        return _fail(_os_error_text(exc), 1, prog)
    except ImportError as exc:  # an optional package (torch, matplotlib ...): its message says which
        return _fail(str(exc), 1, prog)
    except KeyboardInterrupt:
        return _fail("interrupted", 130, prog)
    except Exception as exc:  # a bug: still one line, with the way to see the whole story
        if os.environ.get("FPEMU_TRACEBACK"):
            raise
        return _fail(f"internal error ({type(exc).__name__}: {exc}); please report it, "
                     "FPEMU_TRACEBACK=1 shows the traceback", 1, prog)


def _fail(message: str, status: int, prog: str = "fpemu") -> int:
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    print(f"{prog}: error: {first}", file=sys.stderr)
    return status

