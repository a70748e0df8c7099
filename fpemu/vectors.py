"""Golden test vectors: fpemu's answers written to a file, for testing other kernels against.

Three kinds of vector files, each as ``.npz``, ``.csv`` or ``.json``:

* casts (:func:`cast_vectors`): input bit patterns (float32, or float64 with
  ``source="f64"``), the expected code and the expected decoded value, for one format and one
  set of codec options;
* block formats (:func:`block_vectors`, MX and NVFP4): one block per row: input bits, the
  expected scale code, element codes and dequantized values;
* dot products (:func:`dot_vectors`): rows of ``a``, ``b`` (fp32 bit patterns of values in the
  input format), ``c`` and the expected ``d`` for a named accumulator, in the layout of the
  hardware dumps (so ``fpemu fit`` reads them too).

Every file carries its metadata (what produced it, with which options), and
:func:`verify_vectors` reads a file back, re-runs fpemu and counts identical results:

>>> import tempfile, os
>>> v = cast_vectors("e4m3", kind="edge", overflow="saturate")
>>> path = os.path.join(tempfile.mkdtemp(), "e4m3.csv")
>>> write_vectors(v, path)
>>> n, same = verify_vectors(path); n == same == len(v["input_bits"])
True
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .codec import decode, encode
from .formats import get_format

if TYPE_CHECKING:
    from .accumulator import Accumulator

__all__ = ["cast_vectors", "block_vectors", "dot_vectors", "write_vectors", "read_vectors", "verify_vectors", "register_cli"]

_KINDS = ("edge", "random", "exhaustive")
_UINT = {"f32": np.uint32, "f64": np.uint64}
_FLOAT = {"f32": np.float32, "f64": np.float64}
_LOW_HALVES = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)


def _version() -> str:
    from . import __version__

    return __version__


def exhaustive_inputs() -> np.ndarray:
    """Every float32 top half (2**16) with the low halves 0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF.

    For any format with at most 7 mantissa bits (every 8-bit format, bf16), a float32's
    rounding depends only on its top 16 bits, the round bit (bit 15) and whether the bits
    below it are non-zero; these 393,216 patterns hit every combination, so they are an
    exhaustive test of a float32 -> format cast in every rounding mode but stochastic.

    >>> exhaustive_inputs().size
    393216
    """
    top = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    return (top[:, None] | _LOW_HALVES[None, :]).ravel().view(np.float32)


def cast_vectors(
    fmt: str,
    kind: str = "edge",
    n: int = 10000,
    *,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    nan: str | None = None,
    source: str = "f32",
    seed: int = 0,
) -> dict[str, Any]:
    """Inputs and fpemu's expected codes and values for a cast into ``fmt``.

    ``kind``: ``edge`` (ties, neighbours of every value and tie, subnormal and overflow
    boundaries, zeros, Infs, NaNs: see :func:`fpemu.crosscheck.edge_cases`), ``random``
    (``n`` random bit patterns and values) or ``exhaustive`` (:func:`exhaustive_inputs`,
    float32 only). NaN inputs are left out when the options make fpemu raise on them.

    >>> v = cast_vectors("e2m1", "edge")
    >>> v["meta"]["format"], v["code"].dtype, len(v["code"]) == len(v["value"])
    ('e2m1', dtype('uint8'), True)
    """
    from .crosscheck import edge_cases, random_cases

    f = get_format(fmt)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if source not in _FLOAT:
        raise ValueError(f"source must be 'f32' or 'f64', got {source!r}")
    if kind == "exhaustive":
        if source != "f32":
            raise ValueError("exhaustive vectors are float32 inputs")
        x = exhaustive_inputs()
    elif kind == "edge":
        x, _ = edge_cases(f, _FLOAT[source])
    else:
        if n < 1:
            raise ValueError(f"n must be positive, got {n}")
        x, _ = random_cases(f, _FLOAT[source], n, seed)
    if not f.has_nan and nan in (None, "raise"):
        x = x[~np.isnan(x)]  # fpemu raises on these by default: no expected code to give
    with np.errstate(invalid="ignore", over="ignore"):
        codes = encode(x, f, rounding=rounding, overflow=overflow, nan=nan)
        values = decode(codes, f)
    meta = dict(type="cast", format=f.name, kind=kind, rounding=rounding, overflow=overflow, nan=nan,
                source=source, seed=seed, n=int(x.size), fpemu=_version())  # fmt: skip
    return {"meta": meta, "input_bits": x.view(_UINT[source]), "code": codes, "value": values}


def block_vectors(fmt: str, kind: str = "random", n: int = 64, *, scale_rounding: str = "floor", seed: int = 0) -> dict[str, Any]:
    """MX / NVFP4 vectors: ``n`` blocks (one a row) of float32 inputs with the expected scale
    code per block, element codes and dequantized values; NVFP4 treats the whole array as one
    tensor (its per-tensor scale goes into the metadata).

    ``kind``: ``random`` (values over several binades, one block in eight all zero, a few
    with a value near a power of two) or ``edge`` (the SPEC section 3/4 example blocks and
    blocks around every power-of-two amax of the element format).

    >>> v = block_vectors("mxfp4", n=4)
    >>> v["input_bits"].shape, v["scale"].shape, v["code"].shape
    ((4, 32), (4,), (4, 32))
    """
    from . import mx

    bf = mx.get_block_format(fmt)
    k = bf.block_size
    rng = np.random.default_rng(seed)
    if kind == "random":
        x = rng.standard_normal((n, k)) * np.exp2(rng.integers(-20, 20, size=(n, 1)))
        x[:: 8] = 0.0
        x[3::8, 0] = np.exp2(rng.integers(-10, 10, size=x[3::8].shape[0])) * (1 - 2.0**-24)
    elif kind == "edge":
        rows = [[500.0, -3.0, 0.1, 0.001, 1.0], [7.0, 3.0, 1.0, 0.4, -0.24, 0.26, 5.0], [150.0, 1.0], [0.0],
                [100.0, -37.0, 5.0], [0.001, -0.0004]]  # fmt: skip
        top = bf.max_value
        for e in range(-8, 9):
            for m in (1.0, 1.5, 1 - 2.0**-24):
                rows.append([top * m * 2.0**e, -top * 2.0**e / 3, top * 2.0**e / 1000])
        x = np.zeros((len(rows), k))
        for i, r in enumerate(rows):
            x[i, : len(r)] = r
    else:
        raise ValueError("block vectors come in kinds 'random' and 'edge'")
    x = x.astype(np.float32)
    sr = scale_rounding if not bf.is_nvfp4 else "floor"
    q = mx.quantize(x, bf, axis=-1, scale_rounding=sr)
    meta = dict(type="block", format=bf.name, kind=kind, scale_rounding=None if bf.is_nvfp4 else sr, seed=seed,
                n=int(x.shape[0]), fpemu=_version(),
                global_scale=None if q.global_scale is None else float(q.global_scale))  # fmt: skip
    return {
        "meta": meta,
        "input_bits": x.view(np.uint32),
        "scale": q.scales.reshape(-1),
        "code": q.codes,
        "value": q.dequantize(np.float32),
    }


def dot_vectors(inputs: str, accumulator: "str | Accumulator", k: int | None = None, n: int = 1000, *, out: str = "fp32",
                seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Dot products ``d = a . b + c`` of a named accumulator, in the hwdata layout (fp32 bit
    patterns ``a``, ``b`` (n, K), ``c`` (n,), ``d_fp32`` or ``d_fp16`` (n,)).

    K defaults to two blocks of the model (so the recursive accumulation is covered); inputs
    spread over about 2**-8..2**8, random signs; c random (fp16-rounded for fp16 output).

    >>> v = dot_vectors("fp16", "v100", n=3)
    >>> v["a"].shape, v["meta"]["accumulator"], v["meta"]["model"]["frac_bits"]
    ((3, 8), 'v100/fp16', 23)
    """
    from .accumulator import dot, get_accumulator
    from .codec import quantize
    from .crosscheck import matmul_inputs

    acc = get_accumulator(accumulator, inputs)
    K = k if k is not None else 2 * (acc.block or 16)
    if K < 1 or n < 1:
        raise ValueError("k and n must be positive")
    a, bt = matmul_inputs(inputs, n, K, n, seed)
    b = bt.T.copy()
    rng = np.random.default_rng(seed + 1)
    c = quantize(rng.standard_normal(n) * np.exp2(rng.integers(-6, 6, size=n)), "fp16" if out == "fp16" else "fp32")
    c[::5] = 0.0
    d = dot(a, b, c, inputs=inputs, accumulator=acc, out=out)
    as_bits = lambda v: np.asarray(v, dtype=np.float32).view(np.uint32)  # noqa: E731
    # The model's parameters go into the file too, so a file made with a custom Accumulator
    # (or with a preset that later changes) can still be re-checked.
    meta = dict(type="dot", inputs=get_format(inputs).name, accumulator=acc.name, model=dataclasses.asdict(acc),
                out=out, k=K, seed=seed, n=n, fpemu=_version())  # fmt: skip
    return {"meta": meta, "a": as_bits(a), "b": as_bits(b), "c": as_bits(c), f"d_{out}": as_bits(d)}


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------
def _hexes(arr: np.ndarray) -> list:
    width = arr.dtype.itemsize * 2
    return [f"{int(v):0{width}X}" for v in np.asarray(arr).ravel()]


def write_vectors(vectors: dict[str, Any], path: str | Path) -> None:
    """Write vectors as ``.npz`` (arrays and a ``meta`` JSON string), ``.json`` (meta and the
    arrays as lists of hex strings, shapes kept) or ``.csv`` (a ``# meta`` comment line, then
    one row per case; multi-element fields are space-separated hex)."""
    path = Path(path)
    meta = vectors["meta"]
    arrays = {k: np.asarray(v) for k, v in vectors.items() if k != "meta"}
    ext = path.suffix.lower()
    if ext == ".npz":
        np.savez_compressed(path, meta=json.dumps(meta), **arrays)
    elif ext == ".json":
        doc = {"meta": meta, "arrays": {k: {"dtype": _dtype_name(v), "shape": list(v.shape), "hex": _hexes(_as_uint(v))}
                                        for k, v in arrays.items()}}  # fmt: skip
        path.write_text(json.dumps(doc, indent=1))
    elif ext == ".csv":
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
    else:
        raise ValueError(f"vector files are .npz, .csv or .json, got {path.name!r}")


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


def read_vectors(path: str | Path) -> dict[str, Any]:
    """Read a file written by :func:`write_vectors` (arrays come back bit for bit)."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext == ".npz":
        with np.load(path) as z:
            out = {k: z[k] for k in z.files if k != "meta"}
            out["meta"] = json.loads(str(z["meta"]))
        return out
    if ext == ".json":
        doc = json.loads(path.read_text())
        out = {k: _from_hex(v["hex"], v["dtype"], tuple(v["shape"])) for k, v in doc["arrays"].items()}
        out["meta"] = doc["meta"]
        return out
    if ext == ".csv":
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
    raise ValueError(f"vector files are .npz, .csv or .json, got {path.name!r}")


def verify_vectors(path: str | Path) -> tuple[int, int]:
    """Re-run fpemu on a vector file's inputs with its recorded options: (cases, identical).

    Cast files compare codes; block files compare scale and element codes of each block;
    dot files compare the result bit patterns.
    """
    v = read_vectors(path)
    meta = v["meta"]
    if meta["type"] == "cast":
        x = v["input_bits"].view(_FLOAT[meta["source"]])
        with np.errstate(invalid="ignore", over="ignore"):
            codes = encode(x, meta["format"], rounding=meta["rounding"], overflow=meta["overflow"], nan=meta["nan"])
        same = codes == v["code"]
        return int(same.size), int(same.sum())
    if meta["type"] == "block":
        from . import mx

        x = v["input_bits"].view(np.float32)
        q = mx.quantize(x, meta["format"], axis=-1, scale_rounding=meta["scale_rounding"] or "floor")
        same = (q.scales.reshape(-1) == v["scale"]) & (q.codes == v["code"]).all(axis=1)
        return int(same.size), int(same.sum())
    if meta["type"] == "dot":
        from .accumulator import Accumulator, dot

        out = meta["out"]
        model = Accumulator(**meta["model"])
        f = lambda k: v[k].view(np.float32).astype(np.float64)  # noqa: E731
        d = dot(f("a"), f("b"), f("c"), inputs=meta["inputs"], accumulator=model, out=out)
        same = d.astype(np.float32).view(np.uint32) == v[f"d_{out}"]
        return int(same.size), int(same.sum())
    raise ValueError(f"unknown vector type {meta.get('type')!r}")


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def _is_block_format(name: str) -> bool:
    try:
        from . import mx
    except ImportError:
        return False
    try:
        mx.get_block_format(name)
    except ValueError:
        return False
    return True


def cmd_vectors(args: argparse.Namespace) -> int:
    if args.accumulator:
        v = dot_vectors(args.format, args.accumulator, args.k, args.n or 1000, out=args.out_format, seed=args.seed)
    elif _is_block_format(args.format):
        v = block_vectors(args.format, args.kind, args.n or 64, scale_rounding=args.scale_rounding, seed=args.seed)
    else:
        v = cast_vectors(args.format, args.kind, args.n or 10000, rounding=args.rounding, overflow=args.overflow,
                         nan=args.nan, source=args.source, seed=args.seed)  # fmt: skip
    write_vectors(v, args.out)
    n, same = verify_vectors(args.out)
    if same != n:
        raise ValueError(f"{args.out}: read back, {n - same} of {n} cases differ from fpemu (a writer bug)")
    meta = v["meta"]
    print(f"wrote {meta['n']} {meta['type']} vectors ({', '.join(f'{k}={v}' for k, v in meta.items() if k not in ('n', 'type', 'model', 'fpemu'))})"
          f" to {args.out}; read back and re-checked: {same}/{n} identical")  # fmt: skip
    return 0


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("vectors", help="golden test vectors (casts, MX/NVFP4 blocks, dot products) to a file")
    p.add_argument("format", help="element format (e4m3 ...), block format (mxfp8_e4m3, nvfp4 ...), or with "
                                  "--accumulator the dot inputs (fp16 ...)")  # fmt: skip
    p.add_argument("--out", required=True, help="output file: .npz, .csv or .json")
    p.add_argument("--kind", default="edge", choices=_KINDS, help="edge (default), random or exhaustive")
    p.add_argument("--n", type=int, default=None, help="random cases / blocks / dot rows")
    p.add_argument("--rounding", default="nearest_even", help="rounding mode (default RNE)")
    p.add_argument("--overflow", default=None, help="saturate, inf, nan, saturate_propagate (default: the format's)")
    p.add_argument("--nan", default=None, help="NaN policy (see fpemu show --help)")
    p.add_argument("--source", default="f32", choices=("f32", "f64"), help="input type of cast vectors")
    p.add_argument("--scale-rounding", default="floor", help="MX scale rule: floor, rceil, ceil, even")
    p.add_argument("--accumulator", default=None, help="dot-product vectors for this accumulator (h100, a100 ...)")
    p.add_argument("--k", type=int, default=None, help="dot length (default: two blocks)")
    p.add_argument("--out-format", default="fp32", choices=("fp32", "fp16"), help="dot output format")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.set_defaults(func=cmd_vectors)
