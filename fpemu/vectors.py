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
import contextlib
import csv
import dataclasses
import errno
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from .codec import decode, encode
from .formats import Format, get_format

if TYPE_CHECKING:
    from .accumulator import Accumulator

__all__ = ["cast_vectors", "block_vectors", "dot_vectors", "exhaustive_inputs", "write_vectors", "read_vectors",
           "verify_vectors", "atomic_output", "check_output_path", "register_cli"]  # fmt: skip

_KINDS = ("edge", "random", "exhaustive")
_UINT = {"f32": np.uint32, "f64": np.uint64}
_FLOAT = {"f32": np.float32, "f64": np.float64}
_UINT_OF_DTYPE = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
_EXTS = (".npz", ".csv", ".json")

#: Most input values one file may hold (cast inputs, block elements, dot products): the work
#: and memory are proportional to it, so a typo such as ``--n 1000000000000`` is refused
#: up front instead of exhausting memory.
MAX_VALUES = 10_000_000
#: Longest dot product of dot vectors (the models loop over blocks of K).
MAX_K = 1 << 16
#: Widest format exhaustive vectors exist for (about 6 inputs per code).
MAX_EXHAUSTIVE_BITS = 16


def _version() -> str:
    from . import __version__

    return __version__


def _positive_count(name: str, value: int, limit: int, per: int = 1, what: str = "values per file") -> int:
    """value as an int in 1..limit // per, or an error saying why (before any allocation)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    if value * per > limit:
        made = f" (= {value * per:,} {what})" if per > 1 else ""
        raise ValueError(f"{name} = {value:,} is too large{made}: at most {limit:,} {what}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# Exhaustive inputs
# ---------------------------------------------------------------------------------------------
def _anchors(fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """The format's non-negative finite values (0 always included, as the lower end of the
    first interval) and the midpoints between neighbours, as exact float64s; the last
    midpoint is the overflow tie, between the largest value and the next one the exponent
    range would have."""
    from .crosscheck import _code_values, _magnitude_codes

    vals = np.union1d([0.0], _code_values(_magnitude_codes(fmt), fmt))
    ulp_max = np.ldexp(1.0, fmt.emax - fmt.mantissa_bits)
    nxt = np.append(vals[1:], fmt.max + ulp_max)
    return vals, (vals + nxt) / 2  # exact: neighbours differ by at most one binade


def _exhaustive_nans(fmt: Format, dtype: np.dtype) -> np.ndarray:
    """NaN inputs for every outcome of every NaN policy: with IEEE NaNs (where ``payload``
    and ``quiet_payload`` keep the top mantissa-width payload bits), every value of those bits
    with the bits below them zero, one and all ones, both signs; otherwise crosscheck's
    quiet, signalling and payload NaNs."""
    from .crosscheck import _nan_patterns

    if fmt.nan != "ieee":
        return _nan_patterns(dtype)
    nmant = np.finfo(dtype).nmant
    uint = _UINT_OF_DTYPE[dtype]
    drop = nmant - fmt.mantissa_bits
    top = np.arange(1 << fmt.mantissa_bits, dtype=np.uint64) << np.uint64(drop)
    lows = np.array([0, 1, (1 << drop) - 1], dtype=np.uint64)
    frac = np.unique((top[:, None] | lows[None, :]).ravel())
    frac = frac[frac != 0]  # a zero fraction is Inf, not NaN
    exp_all_ones = np.uint64(((1 << (dtype.itemsize * 8 - 1 - nmant)) - 1) << nmant)
    bits = (frac | exp_all_ones).astype(uint)
    sign = uint(1) << uint(dtype.itemsize * 8 - 1)
    return np.concatenate([bits, bits | sign]).view(dtype)


def exhaustive_inputs(fmt: str | Format = "bf16", dtype: Any = np.float32) -> np.ndarray:
    """Inputs that make a cast into ``fmt`` exhaustive: one input at least for every way a
    deterministic rounding (every mode but stochastic, every overflow and NaN option) can
    treat an input of ``dtype``.

    A finite input's result depends only on where it lies among the format's values
    v_0 = 0 < v_1 < ... and the midpoints m_i = (v_i + v_i+1)/2: on one of them, or strictly
    between two neighbouring ones (the last midpoint is the overflow tie, half-way to the
    value after the largest). So the set holds every value, every midpoint, and the ``dtype``
    floats just below and just above each (which lie strictly between), both signs, the
    value after the largest and its neighbours, ``dtype``'s largest finite value, +-0,
    +-Inf, and NaNs covering every payload the format can keep. Formats of at most 16 bits
    only (about 6 inputs per code); ``dtype`` must hold every midpoint exactly.

    >>> exhaustive_inputs("fp16").size, exhaustive_inputs("e4m3").size, exhaustive_inputs("bf16").size
    (387084, 1548, 392448)
    """
    f = get_format(fmt)
    dtype = np.dtype(dtype)
    if dtype not in _UINT_OF_DTYPE:
        raise ValueError(f"exhaustive inputs are float32 or float64, got {dtype}")
    if f.bits > MAX_EXHAUSTIVE_BITS:
        raise ValueError(
            f"exhaustive vectors exist for formats of at most {MAX_EXHAUSTIVE_BITS} bits (every value, midpoint "
            f"and their neighbours); {f.name} has {f.bits} bits, 2^{f.bits} codes: use --kind edge or random")
    vals, mids = _anchors(f)
    core = np.concatenate([vals, mids])  # every value and midpoint, the overflow tie included
    with np.errstate(over="ignore"):
        if not np.array_equal(core.astype(dtype).astype(np.float64), core):
            raise ValueError(f"{dtype} cannot hold every midpoint of {f.name} exactly; exhaustive vectors need it")
        # Past the overflow tie: the value after the largest, and twice the largest (Inf in dtype is dropped).
        a = np.concatenate([core, [2 * mids[-1] - vals[-1], 2 * f.max]]).astype(dtype)
    a = a[np.isfinite(a)]
    finite = np.concatenate([a, np.nextafter(a, dtype.type(-np.inf)), np.nextafter(a, dtype.type(np.inf)),
                             [np.finfo(dtype).max]]).astype(dtype)  # fmt: skip
    finite = finite[np.isfinite(finite) & (finite >= 0)]  # -tiny (below 0) returns as the negation of +tiny
    x = np.concatenate([finite, -finite, np.array([np.inf, -np.inf], dtype=dtype), _exhaustive_nans(f, dtype)])
    uint = _UINT_OF_DTYPE[dtype]
    return np.unique(x.view(uint)).view(dtype)  # sorted by bit pattern, no repeats (+0/-0 both kept)


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
    (``n`` random bit patterns and values, from ``seed``) or ``exhaustive``
    (:func:`exhaustive_inputs`: every input class a deterministic rounding can tell apart;
    formats of at most 16 bits). NaN inputs are left out when the options make fpemu raise on
    them.

    Stochastic rounding (``rounding="sr"``) draws from ``seed`` too, so the file can be
    re-checked; as no kernel shares fpemu's random bits, such files also hold ``code_down``
    and ``code_up`` (rounding down and up): every stochastic code is one of the two.

    >>> v = cast_vectors("e2m1", "edge")
    >>> v["meta"]["format"], v["code"].dtype, len(v["code"]) == len(v["value"])
    ('e2m1', dtype('uint8'), True)
    """
    from .codec import ROUNDING_MODES
    from .crosscheck import edge_cases, random_cases

    f = get_format(fmt)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if source not in _FLOAT:
        raise ValueError(f"source must be 'f32' or 'f64', got {source!r}")
    _check_seed(seed)
    stochastic = isinstance(rounding, str) and ROUNDING_MODES.get(rounding.lower()) == "stochastic"
    encode(np.zeros(1), f, rounding=rounding, overflow=overflow, nan=nan)  # bad options fail before any work
    if kind == "exhaustive":
        if stochastic:
            raise ValueError("stochastic rounding depends on every input bit below the kept ones, so no input set "
                             "is exhaustive for it: use --kind edge or random (with --seed)")  # fmt: skip
        x = exhaustive_inputs(f, _FLOAT[source])
    elif kind == "edge":
        x, _ = edge_cases(f, _FLOAT[source])
    else:
        n = _positive_count("n", n, MAX_VALUES, what="cast inputs per file")
        x, _ = random_cases(f, _FLOAT[source], n, seed)
    if not f.has_nan and nan in (None, "raise"):
        x = x[~np.isnan(x)]  # fpemu raises on these by default: no expected code to give
    codes = encode(x, f, rounding=rounding, overflow=overflow, nan=nan, rng=seed if stochastic else None)
    values = decode(codes, f)
    meta = dict(type="cast", format=f.name, kind=kind, rounding=rounding, overflow=overflow, nan=nan,
                source=source, seed=seed, n=int(x.size), fpemu=_version())  # fmt: skip
    out = {"meta": meta, "input_bits": x.view(_UINT[source]), "code": codes, "value": values}
    if stochastic:
        meta["stochastic"] = "code: one draw of fpemu's stochastic rounding from seed; code_down/code_up: its two choices"
        out["code_down"] = encode(x, f, rounding="down", overflow=overflow, nan=nan)
        out["code_up"] = encode(x, f, rounding="up", overflow=overflow, nan=nan)
    return out


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


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
    if kind not in ("random", "edge"):
        raise ValueError(f"block vectors come in kinds 'random' and 'edge', got {kind!r}")
    _check_seed(seed)
    if kind == "random":
        n = _positive_count("n", n, MAX_VALUES, per=k, what="block elements per file")
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

    if out not in ("fp32", "fp16"):
        raise ValueError(f"dot vectors have fp32 or fp16 results (the hwdata columns d_fp32, d_fp16), got out={out!r}")
    _check_seed(seed)
    acc = get_accumulator(accumulator, inputs)
    K = _positive_count("k", k, MAX_K, what="products per row") if k is not None else 2 * min(acc.block or 16, 1024)
    n = _positive_count("n", n, MAX_VALUES, per=K, what="products per file")
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


def _ext(path: str | Path) -> str:
    """The file type from the suffix, case-insensitive (``V.NPZ`` is an .npz file)."""
    ext = Path(path).suffix.lower()
    if ext not in _EXTS:
        raise ValueError(f"vector files are .npz, .csv or .json (any case), got {Path(path).name!r}")
    return ext


def _named(exc: OSError, path: Path) -> OSError:
    """The same OSError, naming the file the user gave instead of a temporary one."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def check_output_path(path: str | Path) -> Path:
    """Refuse an output path that cannot be written, before any work is done: a directory,
    a path in a missing directory or under a file, an existing read-only file (OSErrors
    that name the path)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    parent = path.parent
    if not parent.exists():
        raise FileNotFoundError(errno.ENOENT, f"directory {str(parent)!r} does not exist", str(path))
    if not parent.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{str(parent)!r} is not a directory", str(path))
    if path.exists() and not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only", str(path))
    return path


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """A fresh temporary file next to ``path`` to write; when the block ends without an
    error it replaces ``path``, otherwise it is removed: a failed or interrupted run never
    leaves a partial or unverified file (nor clobbers an old one)."""
    path = check_output_path(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.part"
    try:
        with open(tmp, "xb"):  # created with the user's umask, unlike mkstemp's 0600
            pass
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        yield tmp
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _named(exc, path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _write(vectors: dict[str, Any], path: Path, ext: str) -> None:
    """Write vectors to exactly ``path`` in the format ``ext`` names."""
    meta = vectors["meta"]
    arrays = {k: np.asarray(v) for k, v in vectors.items() if k != "meta"}
    if ext == ".npz":
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
    arrays as lists of hex strings, shapes kept) or ``.csv`` (a ``# meta`` comment line, then
    one row per case; multi-element fields are space-separated hex). The suffix is read
    case-insensitively and the file is written at exactly ``path``, all at once: a failure
    leaves no partial file."""
    ext = _ext(path)
    with atomic_output(path) as tmp:
        _write(vectors, tmp, ext)


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
    dot files compare the result bit patterns.
    """
    return _verify(read_vectors(path))


def _verify(v: dict[str, Any]) -> tuple[int, int]:
    meta = v["meta"]
    if meta["type"] == "cast":
        from .codec import ROUNDING_MODES

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


def _given(args: argparse.Namespace, *names: str) -> list[str]:
    """The options among ``names`` the user set (they default to None)."""
    return [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is not None]


def _refuse(options: list[str], what: str) -> None:
    if options:
        raise ValueError(f"{', '.join(options)} {'does' if len(options) == 1 else 'do'} not apply to {what}")


def _vectors_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The vectors the command line asks for; options that would be ignored are refused."""
    if args.accumulator:
        _refuse(_given(args, "rounding", "overflow", "nan", "source", "scale_rounding"), "dot vectors (--accumulator)")
        if args.kind not in (None, "random"):
            raise ValueError(f"dot vectors are random rows: --kind {args.kind} does not apply")
        n = 1000 if args.n is None else args.n
        return dot_vectors(args.format, args.accumulator, args.k, n, out=args.out_format or "fp32", seed=args.seed)
    _refuse(_given(args, "k", "out_format"), "vectors without --accumulator")
    kind = args.kind or "edge"
    if args.n is not None and kind != "random":
        raise ValueError(f"--n applies to --kind random; {kind} vectors have a fixed set of inputs")
    if _is_block_format(args.format):
        _refuse(_given(args, "rounding", "overflow", "nan", "source"), f"block vectors ({args.format})")
        n = 64 if args.n is None else args.n
        return block_vectors(args.format, kind, n, scale_rounding=args.scale_rounding or "floor", seed=args.seed)
    _refuse(_given(args, "scale_rounding"), "cast vectors")
    return cast_vectors(args.format, kind, 10000 if args.n is None else args.n, rounding=args.rounding or "nearest_even",
                        overflow=args.overflow, nan=args.nan, source=args.source or "f32", seed=args.seed)  # fmt: skip


def cmd_vectors(args: argparse.Namespace) -> int:
    """Make the vectors, write them next to the output, read that back and re-check it, and
    only then move it onto the output path."""
    from .cli import RunError

    check_output_path(args.out)  # before the work, which can take seconds
    ext = _ext(args.out)
    v = _vectors_from_args(args)
    with atomic_output(args.out) as tmp:
        _write(v, tmp, ext)
        n, same = _verify(_read(tmp, ext))
        if same != n:
            raise RunError(f"{args.out}: read back, {n - same} of {n} cases differ from fpemu (a writer bug); nothing written")
    meta = v["meta"]
    shown = ", ".join(f"{k}={x}" for k, x in meta.items() if k not in ("n", "type", "model", "fpemu", "stochastic"))
    print(f"wrote {meta['n']} {meta['type']} vectors ({shown}) to {args.out}; read back and re-checked: {same}/{n} identical")
    return 0


_KIND_HELP = (
    "edge (default): every value, tie and their neighbours, boundaries, specials; "
    "random: --n random bit patterns and values from --seed; "
    "exhaustive (formats of at most 16 bits, any rounding but sr): an input of every class a rounding can "
    "tell apart: each value, each midpoint between neighbours (the overflow tie too), the input floats just "
    "below and above each, +-0, +-Inf, NaNs with every payload the format keeps (every outcome, not every "
    "bit pattern: docs/golden.md)"
)


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("vectors", help="golden test vectors (casts, MX/NVFP4 blocks, dot products) to a file")
    p.add_argument("format", help="element format (e4m3 ...), block format (mxfp8_e4m3, nvfp4 ...), or with "
                                  "--accumulator the dot inputs (fp16 ...)")  # fmt: skip
    p.add_argument("--out", required=True, help="output file: .npz, .csv or .json (suffix in any case)")
    p.add_argument("--kind", default=None, choices=_KINDS, help=_KIND_HELP)
    p.add_argument("--n", type=int, default=None,
                   help=f"--kind random: cases (default 10000), blocks (64) or dot rows (1000); "
                        f"at most {MAX_VALUES:,} values per file")  # fmt: skip
    p.add_argument("--rounding", default=None, help="cast rounding mode (default RNE; sr is drawn from --seed)")
    p.add_argument("--overflow", default=None, help="casts: saturate, inf, nan, saturate_propagate (default: the format's)")
    p.add_argument("--nan", default=None, help="casts: NaN policy (see fpemu show --help)")
    p.add_argument("--source", default=None, choices=("f32", "f64"), help="input type of cast vectors (default f32)")
    p.add_argument("--scale-rounding", default=None, help="MX scale rule: floor (default), rceil, ceil, even")
    p.add_argument("--accumulator", default=None, help="dot-product vectors for this accumulator (h100, a100 ...)")
    p.add_argument("--k", type=int, default=None, help=f"dot length (default: two blocks; at most {MAX_K})")
    p.add_argument("--out-format", default=None, choices=("fp32", "fp16"), help="dot output format (default fp32)")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs and stochastic rounding (recorded in the file)")
    p.set_defaults(func=cmd_vectors)
