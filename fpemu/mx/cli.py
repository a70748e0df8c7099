"""The ``fpemu mx`` command: read values from a file or the command line, quantize them and
:func:`describe` each block."""

from __future__ import annotations

import argparse
import json
import errno
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..arguments import option_name
from ..codec import decode
from ..outputs import json_number, json_numbers
from .array import BlockArray
from .conventions import CONVENTION_NAMES
from .formats import BLOCK_FORMATS, get_block_format
from .inputs import _as_float_array
from .mx_scales import SCALE_ROUNDINGS
from .quantization import quantize

# ---- command line -------------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"


def _read_values(text: str) -> np.ndarray:
    """Real numbers (flattened) from a file (.npy, or text with numbers separated by
    spaces/commas/newlines) or from a comma/space separated list on the command line.

    A file that cannot be read raises OSError naming it (exit status 1); contents that are not
    real numbers raise the ValueError/TypeError that quantize itself would, naming the file.
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
        arr = _as_float_array(data).reshape(-1)  # the API's own check (complex, strings, ...)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None
    if not arr.size:
        raise ValueError(f"{path}: no values in the file")
    return arr


def _load_npy(path: Path) -> np.ndarray:
    """A .npy array; a truncated or corrupt file is an OSError naming it (it cannot be read),
    an array of Python objects a TypeError (no numbers to quantize)."""
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
            raise OSError(None, f"not a valid .npy file ({exc})", str(path)) from None


def describe(q: BlockArray, x: Any) -> str:
    """Text report: each block's scale, codes and quantization error (1-D arrays).

    >>> print(describe(quantize([7.0, 3.0, 0.4], "mxfp4"), np.array([7.0, 3.0, 0.4])))
    mxfp4: 3 values, 1 block of 32, E8M0 scales (floor)
    block 0: scale 0x7F = 2^0
      codes:  7 5 1
      values: 6 3 0.5
      errors: 1 0 -0.1
      max |error| 1, rms error 0.5802
    """
    if not isinstance(q, BlockArray):
        raise TypeError(f"describe takes a BlockArray, got {type(q).__name__}")
    if q.codes.ndim != 1:
        raise ValueError(f"describe explains 1-D block arrays, got shape {q.shape}")
    x = _as_float_array(x).astype(np.float64)
    if x.shape != q.shape:
        raise ValueError(f"describe needs the {q.shape[0]} quantized values, got shape {x.shape}")
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN inputs give NaN errors
        deq = q.dequantize(np.float64)
        lines = [_describe_head(q)]
        for j in range(q.scales.size):
            lines += _describe_block(q, x, deq, j)
    return "\n".join(lines)


def _describe_head(q: BlockArray) -> str:
    bf, nblocks = q.format, q.scales.size
    head = f"{bf.name}: {q.codes.size} values, {nblocks} block{'s' if nblocks != 1 else ''} of {q.block_size}, "
    if not bf.is_nvfp4:
        return head + f"E8M0 scales ({q.scale_rounding or 'unknown rule'})"
    amax = "unknown" if q.global_amax is None else f"{float(q.global_amax):.6g}"
    return head + (f"UE4M3 scales, {q.variant} arithmetic, global amax {amax}, "
                   f"global decode scale {float(q.global_scale):.6g}")


def _describe_block(q: BlockArray, x: np.ndarray, deq: np.ndarray, j: int) -> list[str]:
    bs, bf = q.block_shape[0], q.format
    sl = slice(j * bs, min((j + 1) * bs, x.size))
    code = int(q.scales[j])
    if bf.is_nvfp4:
        sval = f"{float(decode(code, bf.scale)):.6g}"
    else:
        sval = "NaN" if code == 255 else f"2^{code - 127}"
    width = 1 if bf.bits == 4 else 2
    err = x[sl] - deq[sl]
    lines = [
        f"block {j}: scale 0x{code:02X} = {sval}",
        "  codes:  " + " ".join(f"{int(c):0{width}X}" for c in q.codes[sl]),
        "  values: " + " ".join(f"{v:.6g}" for v in deq[sl]),
        "  errors: " + " ".join(f"{v:.4g}" for v in err),
    ]
    e = np.abs(err[np.isfinite(err)])
    if e.size:
        top = float(e.max())
        # rms scaled by the largest error: squaring errors near 1e300 must not overflow
        rms = top * float(np.sqrt(np.mean((e / top) ** 2))) if top > 0 else 0.0
        lines.append(f"  max |error| {top:.4g}, rms error {rms:.4g}")
    return lines


def describe_json(q: BlockArray, x: Any) -> dict:
    """The report of :func:`describe` as JSON-ready data: the layout, then each block's scale
    code, element codes, values, inputs and errors (Inf and NaN as text).

    >>> r = describe_json(quantize([7.0, 3.0, 0.4], "mxfp4"), [7.0, 3.0, 0.4])
    >>> r["blocks"][0]["scale"], r["blocks"][0]["codes"], r["blocks"][0]["values"]
    (127, [7, 5, 1], [6.0, 3.0, 0.5])
    """
    x = _as_float_array(x).astype(np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        deq = q.dequantize(np.float64).reshape(-1)
    bs, bf = q.block_shape[0], q.format
    head = {"format": bf.name, "n": int(q.codes.size), "block_size": bs, "scale_rounding": q.scale_rounding,
            "variant": q.variant, "global_amax": None if q.global_amax is None else json_number(q.global_amax),
            "global_scale": None if q.global_scale is None else json_number(q.global_scale)}
    blocks = []
    for j in range(q.scales.size):
        sl = slice(j * bs, min((j + 1) * bs, x.size))
        with np.errstate(invalid="ignore"):
            err = x[sl] - deq[sl]
        blocks.append({"scale": int(q.scales[j]), "codes": [int(c) for c in q.codes[sl]],
                       "values": json_numbers(deq[sl]), "inputs": json_numbers(x[sl]), "errors": json_numbers(err)})
    return head | {"blocks": blocks}


def cmd_mx(args: argparse.Namespace) -> int:
    """``fpemu mx``: quantize values into a block format and explain each block."""
    if args.variant is not None and not get_block_format(args.format).is_nvfp4:  # not dropped: refused
        raise ValueError(f"--variant applies to NVFP4's arithmetic, not to {args.format} "
                         "(MX formats have --scale-rounding, --inf and --convention)")
    x = _read_values(args.values)
    q = quantize(
        x,
        args.format,
        block_size=args.block_size,
        scale_rounding=args.scale_rounding,
        inf=args.inf,
        variant=args.variant or "te",
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
    p.add_argument("--block-size", "-b", type=int, default=None,
                   help="elements per block (1 .. 2**31; default: the format's)")
    p.add_argument("--scale-rounding", "-s", default=None, type=option_name, choices=SCALE_ROUNDINGS,
                   help="MX scale rule (default floor, the OCP rule, or the convention's own)")
    p.add_argument("--inf", default=None, type=option_name, choices=("nan", "saturate"),
                   help="scale of an MX block holding Inf: 0xFF (nan, the default) or 0xFE (saturate)")
    p.add_argument("--convention", "-c", default=None, type=option_name, choices=CONVENTION_NAMES,
                   help="reproduce a library's MX rule (default: the OCP spec; see docs/mx.md)")
    p.add_argument("--variant", default=None, type=option_name, choices=("te", "torchao"),
                   help="NVFP4 arithmetic: te (TransformerEngine, the default) or torchao")
    p.add_argument("--json", action="store_true", help="print the blocks as JSON")
    p.set_defaults(func=cmd_mx)
