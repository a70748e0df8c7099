"""``fpemu probe``: the feature tests on a live GPU through torch, reported as text or JSON,
with a progress bar on a terminal. (The FP8 fp16-output experiment is research:
``python -m research.fp8_fp16 probe`` from a checkout.)"""

from __future__ import annotations

import argparse
import dataclasses
import json

from ..backends import torch_device
from ..fit.feature_tests import PROBE_INPUTS, probe, probe_report
from ..formats import get_format
from ..progress import progress


def _probe_inputs(text: str) -> list[str]:
    """--inputs as canonical names, every one probe-able (ValueError otherwise)."""
    names = [get_format(t.strip()).name for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("--inputs names no format")
    bad = [n for n in names if n not in PROBE_INPUTS]
    if bad:
        raise ValueError(f"probe runs {', '.join(PROBE_INPUTS)} through torch; not {', '.join(bad)}")
    return names


def cmd_probe(args: argparse.Namespace) -> int:
    from ..errors import RunError

    if args.device != "cuda":  # the feature tests need a GPU
        raise ValueError(f"only --device cuda is supported, got {args.device!r}")
    inputs = _probe_inputs(args.inputs or ",".join(PROBE_INPUTS))
    try:
        import torch
    except ImportError:
        raise RunError("probing needs torch with a CUDA GPU, and torch is not installed") from None
    if not torch.cuda.is_available():
        raise RunError("no CUDA device is available here (torch.cuda.is_available() is False); "
                       "run fpemu probe on a machine with an NVIDIA GPU")  # fmt: skip
    device = f"{torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))})"
    if not args.json:
        print(f"probing {device}")
    run, records = torch_device("cuda"), []
    with progress(len(inputs), "probe", enabled=None if not args.quiet else False) as step:
        for name in inputs:
            try:
                result = probe(run, name)
                records.append(dataclasses.asdict(result))
                if not args.json:
                    print(probe_report(result))
            except (RuntimeError, TypeError, AttributeError) as exc:
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                records.append({"inputs": name, "error": f"not available on this GPU/torch ({why})"})
                if not args.json:
                    print(f"{name}: {records[-1]['error']}")
            step()
    if args.json:
        print(json.dumps({"device": device, "results": records}, indent=1))
    return 0


def register_cli(subparsers) -> None:
    """Add ``probe``."""
    p = subparsers.add_parser("probe", help="infer the accumulator of a GPU with feature tests through torch",
                              description="Infer the accumulator of a GPU with feature tests through torch. (The FP8 "
                                          "fp16-output experiment is research: python -m research.fp8_fp16 probe, "
                                          "from the root of a checkout of the fpemu repository.)")
    p.add_argument("--device", default="cuda", help="cuda (the only device the feature tests run on)")
    p.add_argument("--inputs", default=None, help="input formats (comma-separated; default: every one probe-able)")
    p.add_argument("--json", action="store_true", help="features: print the inferred models as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.set_defaults(func=cmd_probe)
