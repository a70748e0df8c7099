"""Vector files: written as .npz, .csv, .json, .bin (raw arrays after a JSON header line, for
C++ and CUDA tests: :mod:`.binary`) or .h (a C header: :mod:`.cheader`), all at once (a failure
leaves no partial file), read back bit for bit, and re-checked against fpemu."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..codec import encode
from ..outputs import atomic_output
from .binary import read_binary, write_binary
from .cheader import read_c_header, write_c_header
from .make import _FLOAT

_EXTS = (".npz", ".csv", ".json", ".bin", ".h")


def _hexes(arr: np.ndarray) -> list:
    width = arr.dtype.itemsize * 2
    return [f"{int(v):0{width}X}" for v in np.asarray(arr).ravel()]


def _ext(path: str | Path) -> str:
    """The file type from the suffix, case-insensitive (``V.NPZ`` is an .npz file)."""
    ext = Path(path).suffix.lower()
    if ext not in _EXTS:
        raise ValueError(f"vector files are .npz, .csv, .json, .bin or .h (any case), got {Path(path).name!r}")
    return ext


def _write(vectors: dict[str, Any], path: Path, ext: str, target: str | Path | None = None) -> None:
    """Write vectors to exactly ``path`` in the format ``ext`` names; ``target`` is the file's
    final name (a C header's identifiers come from it), by default ``path``."""
    meta = vectors["meta"]
    arrays = {k: np.asarray(v) for k, v in vectors.items() if k != "meta"}
    if ext == ".bin":
        write_binary(vectors, path)
    elif ext == ".h":
        write_c_header(vectors, path, Path(target if target is not None else path).stem)
    elif ext == ".npz":
        with open(path, "wb") as fh:  # a file object: numpy would append ".npz" to a name without it
            np.savez_compressed(fh, meta=json.dumps(meta), **arrays)
    elif ext == ".json":
        doc = {"meta": meta, "arrays": {k: {"dtype": _dtype_name(v), "shape": list(v.shape), "hex": _hexes(_as_uint(v))}
                                        for k, v in arrays.items()}}  # fmt: skip
        path.write_text(json.dumps(doc, indent=1))
    else:
        names = list(arrays)
        rows = arrays[names[0]].shape[0]
        with open(path, "w", newline="") as fh:
            fh.write("# " + json.dumps(meta) + "\n")
            fh.write("# arrays " + json.dumps({k: [_dtype_name(v), list(v.shape)] for k, v in arrays.items()}) + "\n")
            w = csv.writer(fh)
            w.writerow(names)
            cols = [_as_uint(arrays[k]).reshape(rows, -1) for k in names]
            for i in range(rows):
                w.writerow([" ".join(_hexes(col[i])) for col in cols])


def write_vectors(vectors: dict[str, Any], path: str | Path) -> None:
    """Write vectors as ``.npz`` (arrays and a ``meta`` JSON string), ``.json`` (meta and the
    arrays as lists of hex strings, shapes kept), ``.csv`` (a ``# meta`` comment line, then
    one row per case; multi-element fields are space-separated hex), ``.bin`` (a magic line, a
    JSON header line, the raw little-endian arrays) or ``.h`` (a C header; names start with
    the file's name, at most :data:`~fpemu.vectors.cheader.MAX_HEADER_BYTES` of arrays). The
    suffix is read case-insensitively and the file is written at exactly ``path``, all at
    once: a failure leaves no partial file (docs/golden.md describes every layout)."""
    ext = _ext(path)
    with atomic_output(path) as tmp:
        _write(vectors, tmp, ext, target=path)


def _dtype_name(arr: np.ndarray) -> str:
    return np.dtype(arr.dtype).name


def _as_uint(arr: np.ndarray) -> np.ndarray:
    """The array's bit patterns as unsigned integers (floats by their bits)."""
    arr = np.asarray(arr)
    return arr.view(f"u{arr.dtype.itemsize}") if arr.dtype.kind in "fi" else arr


def _from_hex(hexes: list, dtype: str, shape: tuple) -> np.ndarray:
    dt = np.dtype(dtype)
    u = np.array([int(h, 16) for h in hexes], dtype=f"u{dt.itemsize}")
    return u.view(dt).reshape(shape)


def _read(path: Path, ext: str) -> dict[str, Any]:
    if ext == ".bin":
        return read_binary(path)
    if ext == ".h":
        return read_c_header(path)
    if ext == ".npz":
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files if k != "meta"}
            out["meta"] = json.loads(str(z["meta"]))
        return out
    if ext == ".json":
        doc = json.loads(Path(path).read_text())
        out = {k: _from_hex(v["hex"], v["dtype"], tuple(v["shape"])) for k, v in doc["arrays"].items()}
        out["meta"] = doc["meta"]
        return out
    with open(path, newline="") as fh:
        meta = json.loads(fh.readline()[2:])
        layout = json.loads(fh.readline()[len("# arrays "):])
        reader = csv.reader(fh)
        names = next(reader)
        cells = list(reader)
    out = {"meta": meta}
    for j, name in enumerate(names):
        dtype, shape = layout[name]
        out[name] = _from_hex([h for row in cells for h in row[j].split()], dtype, tuple(shape))
    return out


def read_vectors(path: str | Path) -> dict[str, Any]:
    """Read a file written by :func:`write_vectors` (arrays come back bit for bit)."""
    return _read(Path(path), _ext(path))


def verify_vectors(path: str | Path) -> tuple[int, int]:
    """Re-run fpemu on a vector file's inputs with its recorded options: (cases, identical).

    Cast files compare codes (stochastic ones with the recorded seed, and their
    ``code_down``/``code_up``); block files compare scale and element codes of each block;
    dot and block-scaled GEMM files compare the result bit patterns.
    """
    return _verify(read_vectors(path))


def _verify(v: dict[str, Any]) -> tuple[int, int]:
    meta = v["meta"]
    if meta["type"] == "cast":
        from ..codec import ROUNDING_MODES

        x = v["input_bits"].view(_FLOAT[meta["source"]])
        opts = dict(overflow=meta["overflow"], nan=meta["nan"])
        stochastic = ROUNDING_MODES.get(str(meta["rounding"]).lower()) == "stochastic"
        same = encode(x, meta["format"], rounding=meta["rounding"], rng=meta["seed"] if stochastic else None, **opts) == v["code"]
        for key, mode in (("code_down", "down"), ("code_up", "up")):
            if key in v:
                same &= encode(x, meta["format"], rounding=mode, **opts) == v[key]
            elif stochastic:  # a stochastic file must carry both neighbours
                same[:] = False
        return int(same.size), int(same.sum())
    if meta["type"] == "block":
        from .. import mx

        x = v["input_bits"].view(np.float32)
        q = mx.quantize(x, meta["format"], axis=-1, scale_rounding=meta["scale_rounding"] or "floor")
        same = (q.scales.reshape(-1) == v["scale"]) & (q.codes == v["code"]).all(axis=1)
        return int(same.size), int(same.sum())
    if meta["type"] == "dot":
        from ..accumulator import Accumulator, dot

        out = meta["out"]
        model = Accumulator(**meta["model"])
        f = lambda k: v[k].view(np.float32).astype(np.float64)  # noqa: E731
        d = dot(f("a"), f("b"), f("c"), inputs=meta["inputs"], accumulator=model, out=out)
        same = d.astype(np.float32).view(np.uint32) == v[f"d_{out}"]
        return int(same.size), int(same.sum())
    if meta["type"] == "block_gemm":
        from .block_gemm import verify_block_gemm

        return verify_block_gemm(v)
    raise ValueError(f"unknown vector type {meta.get('type')!r}")
