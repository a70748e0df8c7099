"""Dumps of block-FMA experiments: an .npz in the ``hwdata`` layout (or a file of ``fpemu
vectors --accumulator``) read into a :class:`Dump`, every problem of the file named."""

from __future__ import annotations

import errno
import json
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..codec import quantize
from ..formats import get_format

# Input formats a dump file name may carry (hwdata names files <gpu>_<inputs>.npz).
_INPUT_NAMES = ("fp16", "bf16", "tf32", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "fp32")


@dataclass(frozen=True)
class Dump:
    """One file of block-FMA experiments: d = sum_k a[:, k] * b[:, k] + c, one per row."""

    name: str
    inputs: str
    a: np.ndarray  # (R, K) float64 values
    b: np.ndarray
    c: np.ndarray  # (R,) float64
    d: dict  # "fp32"/"fp16" -> (R,) uint32 fp32 bit patterns of the recorded result

    @property
    def rows(self) -> int:
        return self.a.shape[0]

    @property
    def K(self) -> int:
        return self.a.shape[1]


class DumpError(ValueError):
    """A dump whose contents cannot be fitted (not an .npz, missing arrays, values instead of
    bit patterns, wrong shapes): a problem of the file, not of an argument."""


def infer_inputs(path: str | Path) -> str:
    """The input format named in a dump's file name (``h100_e4m3.npz`` -> ``e4m3``).

    >>> infer_inputs("data/a100_bf16.npz")
    'bf16'
    >>> infer_inputs("dump.npz")
    Traceback (most recent call last):
    ...
    ValueError: cannot tell the input format from the file name 'dump.npz'; pass --inputs
    """
    named = _inputs_in_name(path)
    if named is None:
        raise ValueError(f"cannot tell the input format from the file name {Path(path).name!r}; pass --inputs")
    return named


def _inputs_in_name(path: str | Path) -> str | None:
    for tok in re.split(r"[_.\-/]", Path(path).name.lower()):
        if tok in _INPUT_NAMES:
            return tok
    return None


_DUMP_LAYOUT = "hwdata layout: uint32 arrays a, b (n, K), c (n,), d_fp32 and/or d_fp16 (n,)"
_KIND_WORDS = {"f": "floating-point values", "b": "booleans", "c": "complex numbers", "U": "strings",
               "S": "bytes", "O": "Python objects", "V": "raw records", "M": "dates", "m": "time spans"}  # fmt: skip


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz archive; DumpError for anything that is not one."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(b"\x93NUMPY"):
        raise DumpError(f"{path}: a single .npy array, not an .npz archive ({_DUMP_LAYOUT})")
    if not head:
        raise DumpError(f"{path}: the file is empty")
    if not head.startswith(b"PK"):
        text = path.suffix.lower() in (".csv", ".json")
        hint = "; fit reads .npz files: write the vectors with --out NAME.npz" if text else f"; {_DUMP_LAYOUT}"
        raise DumpError(f"{path}: not an .npz archive (no zip signature{hint})")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: np.asarray(z[k]) for k in z.files}
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except (EOFError, ValueError, OSError, zipfile.BadZipFile, zlib.error, KeyError, TypeError, AttributeError) as exc:
        why = str(exc).split(". ")[0] or type(exc).__name__
        raise DumpError(f"{path}: not a readable .npz archive ({why}; truncated or damaged?)") from None


def _bit_patterns(arrays: dict[str, np.ndarray], key: str, path: Path, inputs: str) -> np.ndarray:
    """arrays[key] as uint32 fp32 bit patterns; DumpError saying what was found otherwise."""
    x = arrays[key]
    if x.dtype.kind in "ui":
        if x.size and (int(x.min()) < 0 or int(x.max()) > 0xFFFFFFFF):
            v = int(x.min()) if int(x.min()) < 0 else int(x.max())
            raise DumpError(f"{path}: {key} holds {x.dtype} integers outside 0..2^32-1 (e.g. {v}); expected the fp32 "
                            f"bit patterns of {inputs} values as uint32")  # fmt: skip
        return x.astype(np.uint32)
    what = _KIND_WORDS.get(x.dtype.kind, f"{x.dtype} data")
    first = f", first {x.flat[0].item()!r}" if x.size and x.dtype.kind in "fbc" else ""
    hint = " (x.astype(np.float32).view(np.uint32) makes them)" if x.dtype.kind == "f" else ""
    raise DumpError(f"{path}: {key} holds {x.dtype} {what}{first}; expected unsigned integer bit patterns: the fp32 "
                    f"bit patterns of {inputs} values as uint32{hint}")  # fmt: skip


def _meta_inputs(arrays: dict[str, np.ndarray]) -> str | None:
    """The input format an ``fpemu vectors --accumulator`` file records, if this is one."""
    if "meta" not in arrays or arrays["meta"].dtype.kind != "U":
        return None
    try:
        meta = json.loads(str(arrays["meta"]))
    except ValueError:
        return None
    return meta.get("inputs") if isinstance(meta, dict) and meta.get("type") == "dot" else None


def load_dump(path: str | Path, inputs: str | None = None) -> Dump:
    """Read a dump in the hwdata layout (or a file of ``fpemu vectors --accumulator``).

    ``inputs`` defaults to the format the file's metadata or name gives. Every problem is
    named: a missing file or a directory (OSError), a file that is not an .npz of uint32 bit
    patterns of the right shapes with finite a, b, c (:class:`DumpError`), values that are
    not in the input format (ValueError when ``inputs`` was given: the argument is wrong).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a dump file", str(path))
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "no such dump file", str(path))
    arrays = _read_npz(path)
    missing = sorted({"a", "b", "c"} - set(arrays))
    if missing or not {"d_fp32", "d_fp16"} & set(arrays):
        lacks = missing + ([] if {"d_fp32", "d_fp16"} & set(arrays) else ["d_fp32 or d_fp16"])
        raise DumpError(f"{path}: lacks {', '.join(lacks)} (it has {', '.join(sorted(arrays)) or 'no arrays'}; {_DUMP_LAYOUT})")
    inputs, source = _dump_inputs(path, arrays, inputs)
    bits = {k: _bit_patterns(arrays, k, path, inputs) for k in ("a", "b", "c", "d_fp32", "d_fp16") if k in arrays}
    _check_shapes(bits, path)
    _check_finite(bits, path)
    as_float = lambda k: bits[k].view(np.float32).astype(np.float64)  # noqa: E731
    dump = Dump(path.stem, inputs, as_float("a"), as_float("b"), as_float("c"),
                {k[2:]: bits[k] for k in ("d_fp32", "d_fp16") if k in bits})  # fmt: skip
    check_inputs(dump, str(path), source)
    return dump


def _dump_inputs(path: Path, arrays: dict[str, np.ndarray], inputs: str | None) -> tuple[str, str]:
    """(input format, where it came from): --inputs, else the file's metadata, else its name."""
    if inputs is not None:
        return get_format(inputs).name, "--inputs"
    recorded = _meta_inputs(arrays)
    if recorded is not None:
        try:
            return get_format(recorded).name, "the file's metadata"
        except (ValueError, TypeError):
            raise DumpError(f"{path}: its metadata names inputs {recorded!r}, not a format; pass --inputs") from None
    return infer_inputs(path), "the file name"


def _check_shapes(bits: dict[str, np.ndarray], path: Path) -> None:
    a = bits["a"]
    shapes = ", ".join(f"{k} {v.shape}" for k, v in bits.items())
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1 or bits["b"].shape != a.shape or any(
        bits[k].shape != (a.shape[0],) for k in bits if k not in ("a", "b")
    ):
        raise DumpError(f"{path}: a and b must be (n, K) and c, d_* (n,) with n, K >= 1; got {shapes}")


def _check_finite(bits: dict[str, np.ndarray], path: Path) -> None:
    """a, b and c must be finite: the search space models finite experiments."""
    for k in ("a", "b", "c"):
        special = (bits[k] & 0x7F800000) == 0x7F800000
        if special.any():
            row = int(np.argwhere(special)[0][0])
            raise DumpError(f"{path}: {k} holds Inf or NaN (row {row}); fit models finite experiments: drop such rows")


def check_inputs(dump: Dump, where: str, source: str = "--inputs") -> None:
    """a and b must hold values of the input format: a dump read in another format would be
    silently re-rounded by the model code (ValueError for an --inputs argument, DumpError
    for a format the file named)."""
    fmt = get_format(dump.inputs)
    for key, x in (("a", dump.a), ("b", dump.b)):
        with np.errstate(all="ignore"):
            off = ~(quantize(x, fmt) == x)
        if off.any():
            i, k = (int(v) for v in np.argwhere(off)[0])
            bits = int(np.float32(x[i, k]).view(np.uint32))
            named = _inputs_in_name(where)
            hint = f"; the file name says {named}" if named and named != fmt.name else ""
            error = ValueError if source == "--inputs" else DumpError
            raise error(f"{where}: {key} holds values that are not {fmt.name} ({int(off.sum())} of {x.size}; row {i}, "
                        f"column {k}: 0x{bits:08X} = {float(x[i, k])!r}), the input format {source} gives{hint}; "
                        "pass the format the dump was made with as --inputs")  # fmt: skip
