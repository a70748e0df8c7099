"""Vector files: written as .npz, .csv, .json, .bin (raw arrays after a JSON header line, for
C++ and CUDA tests: :mod:`.binary`) or .h (a C header: :mod:`.cheader`), all at once (a failure
leaves no partial file), read back bit for bit, and re-checked against fpemu."""

from __future__ import annotations

import csv
import errno
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..codec import encode
from ..outputs import atomic_output
from .binary import read_binary, write_binary
from .cheader import read_c_header, write_c_header
from .make import FLOAT

_EXTS = (".npz", ".csv", ".json", ".bin", ".h")

# What each type of vector file holds: the metadata keys and the arrays its re-check reads.
_NEEDS = {
    "cast": (("format", "rounding", "overflow", "nan", "source", "seed"), ("input_bits", "code")),
    "block": (("format", "scale_rounding"), ("input_bits", "scale", "code")),
    "dot": (("inputs", "model", "out"), ("a", "b", "c")),
    "block_gemm": (("format", "model", "shape", "block_size", "global_amax", "variant"),
                   ("a_data", "a_scale", "b_data", "b_scale", "c", "d")),
}


class VectorFileError(ValueError):
    """A file that is not a vector file of fpemu (or a damaged one): the message names the
    file and what is missing or wrong."""


def _hexes(arr: np.ndarray) -> list:
    width = arr.dtype.itemsize * 2
    return [f"{int(v):0{width}X}" for v in np.asarray(arr).ravel()]


def file_type(path: str | Path) -> str:
    """The file type from the suffix, case-insensitive (``V.NPZ`` is an .npz file)."""
    ext = Path(path).suffix.lower()
    if ext not in _EXTS:
        raise ValueError(f"vector files are .npz, .csv, .json, .bin or .h (any case), got {Path(path).name!r}")
    return ext


def write_vectors_file(vectors: dict[str, Any], path: Path, ext: str, target: str | Path | None = None) -> None:
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
    ext = file_type(path)
    with atomic_output(path) as tmp:
        write_vectors_file(vectors, tmp, ext, target=path)


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


def read(path: Path, ext: str) -> dict[str, Any]:
    if ext == ".bin":
        return read_binary(path)
    if ext == ".h":
        return read_c_header(path)
    if ext == ".npz":
        with open(path, "rb") as fh:  # numpy reads a file without the zip signature as a pickle
            head = fh.read(4)
        if not head.startswith(b"PK"):
            what = "empty" if not head else "not an .npz archive (no zip signature)"
            raise VectorFileError(f"{path}: {what}; .npz vector files are zip archives that fpemu vectors wrote")
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise VectorFileError(f"{path}: one .npy array, not an .npz archive of vectors and their 'meta'")
        with z:
            if "meta" not in z.files:
                raise VectorFileError(f"{path}: no 'meta' array (its arrays: {', '.join(z.files) or 'none'}): not a "
                                      "vector file of fpemu vectors (a hardware dump is read by fpemu fit)")  # fmt: skip
            out = {k: z[k] for k in z.files if k != "meta"}
            out["meta"] = json.loads(str(z["meta"]))
        return out
    if ext == ".json":
        doc = json.loads(Path(path).read_text())
        missing = [k for k in ("meta", "arrays") if not isinstance(doc, dict) or k not in doc]
        if missing:
            raise VectorFileError(f"{path}: a .json vector file is an object with 'meta' and 'arrays'; this one has no "
                                  + " and no ".join(repr(k) for k in missing))  # fmt: skip
        for name, a in doc["arrays"].items():
            lacks = [k for k in ("dtype", "shape", "hex") if not isinstance(a, dict) or k not in a]
            if lacks:
                raise VectorFileError(f"{path}: array {name!r} has no {' and no '.join(map(repr, lacks))}")
        out = {k: _from_hex(v["hex"], v["dtype"], tuple(v["shape"])) for k, v in doc["arrays"].items()}
        out["meta"] = doc["meta"]
        return out
    with open(path, newline="") as fh:
        first = fh.readline()
        if not first.strip():
            raise VectorFileError(f"{path}: the file is empty" if not first else f"{path}: no '# {{meta}}' first line")
        if not first.startswith("# "):
            raise VectorFileError(f"{path}: no '# {{meta}}' first line: not a vector file of fpemu vectors")
        meta = json.loads(first[2:])
        second = fh.readline()
        if not second.startswith("# arrays "):
            raise VectorFileError(f"{path}: no '# arrays' second line (the arrays' dtypes and shapes)")
        layout = json.loads(second[len("# arrays "):])
        reader = csv.reader(fh)
        names = next(reader, None)
        if names is None:
            raise VectorFileError(f"{path}: no row of array names after the '# arrays' line")
        cells = list(reader)
    out = {"meta": meta}
    for j, name in enumerate(names):
        dtype, shape = layout[name]
        out[name] = _from_hex([h for row in cells for h in row[j].split()], dtype, tuple(shape))
    return out


def _text(exc: Exception) -> str:
    """An error of a reader in words."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON where JSON belongs ({exc})"
    if isinstance(exc, zipfile.BadZipFile):
        return f"not an .npz (zip) file ({exc})"
    return f"no {exc}" if isinstance(exc, KeyError) else str(exc)


def _reason(path: str | Path, exc: Exception) -> str:
    """An error of a reader as one sentence naming the file (once)."""
    text = _text(exc)
    return text if str(path) in text else f"{path}: {text}"


def _check_contents(v: dict[str, Any], path: str | Path) -> None:
    """Refuse vectors without the metadata and arrays their re-check reads, naming them."""
    meta = v.get("meta")
    if not isinstance(meta, dict):
        raise VectorFileError(f"{path}: its 'meta' is not a JSON object of metadata")
    if "type" not in meta:
        raise VectorFileError(f"{path}: its metadata has no 'type' (cast, block, dot or block_gemm)")
    if meta["type"] not in _NEEDS:
        raise VectorFileError(f"{path}: unknown vector type {meta['type']!r} (cast, block, dot or block_gemm)")
    keys, arrays = _NEEDS[meta["type"]]
    if meta["type"] == "dot":
        arrays += (f"d_{meta.get('out')}",)
    missing = [f"metadata {k!r}" for k in keys if k not in meta] + [f"array {k!r}" for k in arrays if k not in v]
    if missing:
        raise VectorFileError(f"{path}: a {meta['type']} vector file has no {', no '.join(missing)}")


def read_vectors(path: str | Path) -> dict[str, Any]:
    """Read a file written by :func:`write_vectors` (arrays come back bit for bit). A file
    that is not one raises :class:`VectorFileError` naming it and what is missing; one that
    cannot be read at all, an OSError (a directory: IsADirectoryError)."""
    if Path(path).is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a vector file", str(path))
    ext = file_type(path)
    try:
        v = read(Path(path), ext)
    except VectorFileError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, EOFError, zipfile.BadZipFile) as exc:
        raise VectorFileError(_reason(path, exc)) from None
    _check_contents(v, path)
    return v


def verify_vectors(path: str | Path) -> tuple[int, int]:
    """Re-run fpemu on a vector file's inputs with its recorded options: (cases, identical).

    Cast files compare codes (stochastic ones with the recorded seed, and their
    ``code_down``/``code_up``); block files compare scale and element codes of each block;
    dot and block-scaled GEMM files compare the result bit patterns. A file that is not a
    vector file, or whose contents cannot be re-checked, raises :class:`VectorFileError`
    (a ValueError) naming it.
    """
    v = read_vectors(path)
    try:
        return verify(v)
    except (ValueError, KeyError, TypeError, IndexError) as exc:  # arrays that do not fit their metadata
        raise VectorFileError(f"{path}: its contents cannot be re-checked ({_text(exc)})") from None


def verify(v: dict[str, Any]) -> tuple[int, int]:
    meta = v["meta"]
    if meta["type"] == "cast":
        from ..codec import ROUNDING_MODES, is_stochastic

        x = v["input_bits"].view(FLOAT[meta["source"]])
        opts = dict(overflow=meta["overflow"], nan=meta["nan"], directed_overflow=meta.get("directed_overflow"),
                    no_code=meta.get("no_code"), via=meta.get("via"))
        stochastic = is_stochastic(ROUNDING_MODES.get(str(meta["rounding"]).lower()))
        bits = dict(sr_bits=meta["sr_bits"], random_bits=v["random_bits"]) if "sr_bits" in meta else {}
        rng = meta["seed"] if stochastic and not bits else None
        same = encode(x, meta["format"], rounding=meta["rounding"], rng=rng, **bits, **opts) == v["code"]
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
        from ..accumulator import dot, model_from_dict

        out = meta["out"]
        model = model_from_dict(meta["model"])
        f = lambda k: v[k].view(np.float32).astype(np.float64)  # noqa: E731
        d = dot(f("a"), f("b"), f("c"), inputs=meta["inputs"], accumulator=model, out=out)
        same = d.astype(np.float32).view(np.uint32) == v[f"d_{out}"]
        return int(same.size), int(same.sum())
    if meta["type"] == "block_gemm":
        from .block_gemm import verify_block_gemm

        return verify_block_gemm(v)
    raise ValueError(f"unknown vector type {meta.get('type')!r}")
