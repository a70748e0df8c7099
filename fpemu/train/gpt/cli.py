"""The transformer on the command line: the runs of ``fpemu train --task gpt`` and
``fpemu infer --model gpt`` (registered by :mod:`fpemu.train.infer_cli`)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Callable

from ...arguments import whole_number
from ...outputs import atomic_output
from ...progress import progress
from ..blas import single_threaded_blas
from ..loop import MAX_STEPS
from .infer import INFER_FORMATS, inference_table, quantized_inference
from .loop import (
    CLI_GPT_STEPS,
    DEFAULT_GPT_STEPS,
    GPT_RUNS,
    GPTSetup,
    train_gpt_setup,
    compare_setups,
    gpt_setup,
)


def gpt_setups(args: argparse.Namespace, progress: Callable[[str, int, int], None] | None) -> list[GPTSetup]:
    """The checked transformer runs ``fpemu train --task gpt`` asks for."""
    steps = CLI_GPT_STEPS if args.steps is None else args.steps
    kw = dict(init_scale=args.init_scale, growth_interval=args.growth_interval, accumulator=args.accumulator,
              promote=args.promote)
    if args.precision is None:
        if args.accumulator is not None:
            raise ValueError("--accumulator with --task gpt applies to a single run: give --precision fp16, bf16 or fp8")
        runs = GPT_RUNS if args.nvfp4_recipe is None else [
            (p, f, args.nvfp4_recipe if p == "nvfp4" else nv) for p, f, nv in GPT_RUNS]
        return compare_setups(steps, args.seed, runs, progress, **kw)
    cb = None if progress is None else (lambda i, n: progress(args.precision, i, n))
    return [gpt_setup(args.precision, args.loss_scale, steps, args.seed, fp8_recipe=args.fp8_recipe,
                      nvfp4_recipe=args.nvfp4_recipe or "all", fp8_block_recipe=args.fp8_block_scales,
                      progress=cb, **kw)]


def train_setups(setups: list[GPTSetup]) -> list:
    """Train the runs; their histories."""
    return [train_gpt_setup(s)[0] for s in setups]


def cmd_infer(args: argparse.Namespace) -> int:
    """``fpemu infer``: train the transformer in FP32, then run it with FP8/FP4 weights and
    activations and compare with FP32."""
    from ...errors import path_error
    from ..files import check_json_file, finite_or_null

    formats = _formats(args.formats)
    steps = DEFAULT_GPT_STEPS if args.steps is None else args.steps
    setup = gpt_setup("fp32", None, steps, args.seed)  # checks the arguments before any work
    if args.json_file:
        try:
            check_json_file(args.json_file)
        except OSError as exc:
            raise path_error("--json-file", args.json_file, exc) from None
    # One bar (stderr; a line every few seconds where it is not a terminal; off with --quiet):
    # the training steps, then one step per format.
    with single_threaded_blas(), progress(steps + len(formats), "infer", enabled=False if args.quiet else None) as step:
        setup = replace(setup, progress=lambda i, n: step())
        _, params = train_gpt_setup(setup)
        rows = quantized_inference(params, setup.task, formats, seed=setup.seed, progress=lambda i, n: step())
    payload = {"steps": setup.steps, "seed": setup.seed, "rows": rows}
    text = json.dumps(finite_or_null(payload), indent=1, allow_nan=False)  # strict JSON: NaN/Inf as null
    if args.json:
        print(text)
    else:
        print(f"transformer trained in fp32 ({setup.steps} steps, seed {setup.seed}); block linear layers "
              "quantized (weights and activations), embeddings, output layer, attention and layer norm in fp32")
        print(inference_table(rows))
    if args.json_file:
        with atomic_output(args.json_file) as tmp:  # all at once: no partial file
            tmp.write_text(text)
    return 0


def _formats(text: str | None) -> tuple[str, ...]:
    if text is None:
        return INFER_FORMATS
    fields = text.split(",")
    empty = next((i for i, f in enumerate(fields, 1) if not f.strip()), None)
    if empty is not None and text.strip():
        raise ValueError(f"--formats: field {empty} of {text!r} is empty")
    names = tuple(f.strip().lower() for f in fields if f.strip())
    bad = [f for f in names if f not in INFER_FORMATS]
    if bad or not names:
        raise ValueError(f"--formats: unknown format {bad[0] if bad else text!r}; choose from {', '.join(INFER_FORMATS)}")
    return names
