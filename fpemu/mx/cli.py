"""The ``fpemu mx`` command: read values from a file or the command line, quantize them and
:func:`~fpemu.mx.description.describe` each block."""

from __future__ import annotations

import argparse
import json
import errno
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..arguments import option_name, whole_number
from .conventions import CONVENTION_NAMES
from .description import describe, describe_json
from .formats import BLOCK_FORMATS, get_block_format
from .inputs import as_float_array
from .mx_scales import SCALE_ROUNDINGS
from .quantization import quantize

# ---- command line -------------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"


def _read_values(text: str) -> np.ndarray:
    """Real numbers (flattened) from a file (.npy, or text with numbers separated by
    spaces/commas/newlines) or from a comma/space separated list on the command line.

    A file that is not there (or a directory) raises the OSError naming it (exit status 2), one
    that cannot be read (permissions) too (exit status 1); contents that are not real numbers
    raise the ValueError/TypeError that quantize itself would, naming the file (2).
    """
    if not text.strip():  # "" would be the current directory
        raise ValueError("FILE_OR_VALUES: the values are empty: give numbers such as '7,3,1,0.4' or a file")
    path = Path(text)
    if _exists(path) or path.suffix.lower() == ".npy":
        return _read_file(path)
    values = _parse_numbers(text)
    if values is None:
        if path.suffix.lower() in (".txt", ".csv", ".dat", ".npz"):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), text)
        raise ValueError(f"cannot read {text[:40]!r} as numbers or an existing file")
    return values


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # e.g. a list of values too long to be a file name
        return False


def _parse_numbers(text: str, where: str = "") -> np.ndarray | None:
    """float64 numbers from comma/space separated text; None if a token is not a number. An
    empty field between commas ("1,,2", "1,2,") is refused, not dropped (``where``: the file)."""
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        empty = next((j for j, f in enumerate(line.split(","), 1) if not f.strip()), None) if "," in line else None
        if empty is not None:
            at = f"{where}: line {i}: " if where else ("FILE_OR_VALUES: " if len(lines) == 1 else f"line {i}: ")
            shown = line if len(line) <= 60 else line[:57] + "..."
            raise ValueError(f"{at}field {empty} of {shown!r} is empty")
    tokens = text.replace(",", " ").split()
    if not tokens:
        raise ValueError("no values given")
    try:
        return np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError:
        return None


def _read_file(path: Path) -> np.ndarray:
    """The numbers in a .npy or text file, flattened, as an array quantize accepts."""
    with open(path, "rb") as f:  # a missing file or a directory: OSError naming it
        is_npy = f.read(len(_NPY_MAGIC)) == _NPY_MAGIC
    if is_npy or path.suffix.lower() == ".npy":
        data = _load_npy(path)
    else:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            text = None
        if text is not None and not text.split():
            raise ValueError(f"{path}: no values in the file")
        values = None if text is None else _parse_numbers(text, str(path))
        if values is None:
            raise ValueError(f"{path}: neither a .npy file nor text of numbers")
        data = values
    try:
        arr = as_float_array(data).reshape(-1)  # the API's own check (complex, strings, ...)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None
    if not arr.size:
        raise ValueError(f"{path}: no values in the file")
    return arr


def _load_npy(path: Path) -> np.ndarray:
    """A .npy array; a truncated or corrupt file is a ValueError naming it (not a .npy file: a
    usage error, as any file that is not what the command reads), an array of Python objects a
    TypeError (no numbers to quantize)."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            header = {(1, 0): np.lib.format.read_array_header_1_0,
                      (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if header is not None and header(f)[2].hasobject:
                raise TypeError(f"{path}: holds Python objects, not numbers")
            f.seek(0)
            return np.asarray(np.load(f, allow_pickle=False))
        except (ValueError, EOFError) as exc:
            raise ValueError(f"{path}: not a valid .npy file ({exc})") from None


def cmd_mx(args: argparse.Namespace) -> int:
    """``fpemu mx``: quantize values into a block format and explain each block."""
    nvfp4 = get_block_format(args.format).is_nvfp4
    if args.variant is not None and not nvfp4:  # not dropped: refused
        raise ValueError(f"--variant applies to NVFP4's arithmetic, not to {args.format} "
                         "(MX formats have --scale-rounding, --inf and --convention)")
    mx_only = [flag for flag, value in (("--scale-rounding", args.scale_rounding), ("--inf", args.inf)) if value]
    if nvfp4 and mx_only:
        raise ValueError(f"{' and '.join(mx_only)} {'apply' if len(mx_only) > 1 else 'applies'} to MX formats, "
                         f"not to {args.format} (NVFP4 has --variant and --convention)")
    x = _read_values(args.values)
    q = quantize(
        x,
        args.format,
        block_size=args.block_size,
        scale_rounding=args.scale_rounding,
        inf=args.inf,
        variant=args.variant,
        convention=args.convention,
    )
    print(json.dumps(describe_json(q, x), indent=1) if args.json else describe(q, x))
    return 0


def register_cli(subparsers: Any) -> None:
    """Add the ``mx`` subcommand to the ``fpemu`` command line."""
    p = subparsers.add_parser(
        "mx", help="quantize values into an MX/NVFP4 block format and show each block"
    )
    p.add_argument(
        "values",
        metavar="FILE_OR_VALUES",
        help="a .npy or text file, or numbers such as '7,3,1,0.4' (flattened to 1-D)",
    )
    p.add_argument("--format", "-f", default="mxfp8_e4m3", help=f"one of {', '.join(BLOCK_FORMATS)}")
    p.add_argument("--block-size", "-b", type=whole_number(1, 2**31), default=None,
                   help="elements per block (1 .. 2**31; default: the format's)")
    p.add_argument("--scale-rounding", "-s", default=None, type=option_name, choices=SCALE_ROUNDINGS,
                   help="MX scale rule (default floor, the OCP rule, or the convention's own)")
    p.add_argument("--inf", default=None, type=option_name, choices=("nan", "saturate"),
                   help="scale of an MX block holding Inf: 0xFF (nan, the default) or 0xFE (saturate)")
    p.add_argument("--convention", "-c", default=None, type=option_name, choices=CONVENTION_NAMES,
                   help="reproduce a library's MX rule (default: the OCP spec; see fpemu docs mx)")
    p.add_argument("--variant", default=None, type=option_name, choices=("te", "torchao"),
                   help="NVFP4 arithmetic: te (TransformerEngine, the default) or torchao")
    p.add_argument("--json", action="store_true", help="print the blocks as JSON")
    p.set_defaults(func=cmd_mx)
