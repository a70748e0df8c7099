"""``fpemu infer --model minilm``: the built-in sentence pairs embedded by all-MiniLM-L6-v2 in
FP32 and in each emulated precision (:mod:`.study`), the table or JSON on stdout, progress on
stderr."""

from __future__ import annotations

import argparse
import json
import time

from ...outputs import atomic_output
from ...progress import progress
from ..blas import single_threaded_blas
from ..files import check_json_file, finite_or_null
from ..gemm_precisions import gemm_precision
from .files import load_bert
from .pairs import PAIRS, first_pairs
from .study import FORMATS, UNITS, run_study, study_rows, study_steps, study_table



def _names(option: str, text: str | None, default: tuple[str, ...], check) -> tuple[str, ...]:
    """A comma list of names, each checked (``none``: the empty list)."""
    if text is None:
        return default
    if text.strip().lower() == "none":
        return ()
    fields = [f.strip() for f in text.split(",")]
    if not all(fields):
        raise ValueError(f"{option}: field {fields.index('') + 1} of {text!r} is empty")
    return tuple(check(f) for f in fields)


def _unit(name: str) -> str:
    """A matrix unit's name: a dense or a block-scaled model of fpemu.accumulator."""
    from ...accumulator import accumulator_names

    key = name.lower()
    if key not in accumulator_names():
        raise ValueError(f"--accumulators: unknown unit {name!r}; `fpemu accumulators` lists them "
                         f"(default {', '.join(UNITS)}; none: formats only)")
    return key


def minilm_rows(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The rows ``--formats`` and ``--accumulators`` ask for (checked)."""
    try:
        formats = _names("--formats", args.formats, FORMATS, gemm_precision)
    except ValueError as exc:
        raise ValueError(str(exc) if str(exc).startswith("--") else f"--formats: {exc}") from None
    units = _names("--accumulators", args.accumulators, UNITS, _unit)
    rows = study_rows(formats, units)
    idle = [u for u in units if not any(unit == u for _, unit in rows)]
    if idle:
        raise ValueError(f"--accumulators: {idle[0]} has no matrix unit for any of {', '.join(formats)}")
    return rows


def cmd_infer_minilm(args: argparse.Namespace) -> int:
    """Embed ``--pairs`` built-in pairs (:func:`.pairs.first_pairs`) in every row and print the table."""
    from ...errors import RunError

    rows = minilm_rows(args)
    n_pairs = len(PAIRS) if args.pairs is None else args.pairs
    if not 2 <= n_pairs <= len(PAIRS):
        raise ValueError(f"--pairs must be in 2..{len(PAIRS)}, got {n_pairs}")
    if args.json_file:
        try:
            check_json_file(args.json_file)
        except OSError as exc:
            raise RunError(f"cannot write --json-file {exc.filename or args.json_file}: {exc.strerror or exc}") from None
    bert = load_bert(args.model_dir)
    pairs = first_pairs(n_pairs)
    start = time.perf_counter()
    quiet = False if args.quiet else None
    with single_threaded_blas(), progress(study_steps(bert, rows, pairs), "minilm", enabled=quiet) as step:
        results = run_study(bert, rows, pairs, step=lambda: step())
    seconds = time.perf_counter() - start
    payload = {"model": "minilm", "source": bert.source, "pairs": n_pairs, "sentences": 2 * n_pairs,
               "time_s": seconds, "rows": results}
    text = json.dumps(finite_or_null(payload), indent=1, allow_nan=False)
    if args.json:
        print(text)
    else:
        print(f"all-MiniLM-L6-v2 ({bert.config.num_hidden_layers} layers, hidden {bert.config.hidden_size}): "
              f"{2 * n_pairs} sentences of {n_pairs} pairs embedded with every linear layer's GEMM operands in each "
              "format (FP32 output; attention, GELU, layer norm in FP32); each row against fp32")
        print(study_table(results))
        print(f"total {seconds:.1f} s")
    if args.json_file:
        with atomic_output(args.json_file) as tmp:
            tmp.write_text(text)
    return 0
