"""Infer a matrix unit's accumulator: fit recorded dumps, or probe a live device.

:func:`fit` searches the block-FMA parameter space of :class:`fpemu.accumulator.Accumulator`
(products per block, fraction bits ``F`` kept below the largest exponent, how terms lose their
low bits, output rounding and fraction bits, the exponent a zero accumulator aligns with, and
the CDNA3 grouping variants) for every model that reproduces every row of a dump in the
``hwdata`` layout (``a``, ``b``, ``c`` as fp32 bit patterns, ``d_fp32``/``d_fp16`` results).
Candidates are screened on a few rows first, so the search of a few thousand models takes
seconds. Every named preset is also tried as it is (pairwise and exact models included).

:func:`probe` runs feature tests (built from SPEC section 5's published experiments) through
a ``run_dot(a, b, inputs)`` callable and reads the answers as parameters: products per block,
``F`` (alignment bits), output fraction bits and rounding, and subnormal input support. A fake
device built from fpemu's own presets must be inferred exactly:

>>> found = probe(fake_device("v100"), "fp16")
>>> (found.model.block, found.model.frac_bits, found.model.out_rounding), found.nearest
((4, 23, 'rz'), ['v100', 'volta'])
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import itertools
import json
import re
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from .accumulator import Accumulator, _exponent, _pow2, accumulator_names, dot, get_accumulator
from .codec import integers_to_float64, quantize
from .formats import get_format

__all__ = ["Dump", "DumpError", "load_dump", "FitResult", "fit", "ProbeResult", "probe", "fake_device", "register_cli"]

# Input formats a dump file name may carry (hwdata names files <gpu>_<inputs>.npz).
_INPUT_NAMES = ("fp16", "bf16", "tf32", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "fp32")


# ---------------------------------------------------------------------------------------------
# Dumps
# ---------------------------------------------------------------------------------------------
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
    _check_inputs(dump, str(path), source)
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


def _check_inputs(dump: Dump, where: str, source: str = "--inputs") -> None:
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


# ---------------------------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------------------------
# Ways the terms of a block are grouped and cut: NVIDIA (all terms with c, truncated), the same
# with floor, CDNA3 (products first, then c; optionally even/odd lanes apart).
_GROUPINGS = {
    "nvidia": dict(term_rounding="rz", late_c=False, even_odd=False),
    "floor": dict(term_rounding="rd", late_c=False, even_odd=False),
    "late c": dict(term_rounding="rd", late_c=True, even_odd=False),
    "late c, even/odd": dict(term_rounding="rd", late_c=True, even_odd=True),
}
# A zero accumulator aligns at 2^-126, at 2^-149, or takes no part: _ZERO_C_NO_PART lies far
# below every product (>= 2^-252) and c, and 2^(F - _ZERO_C_NO_PART) stays a normal float64.
_ZERO_C_NO_PART = -900
_ZERO_C = (-126, -149, _ZERO_C_NO_PART)
_FRAC_BITS = range(8, 49)  # up to 48: as many as fpemu.accumulator keeps exactly


def _used_fraction_bits(d_bits: np.ndarray) -> int:
    """Most fraction bits any normal non-zero fp32 result uses (its lowest set bit's place)."""
    exp = (d_bits >> 23) & 0xFF
    frac = d_bits & 0x7FFFFF
    normal = (exp > 0) & (exp < 255) & (frac != 0)
    if not normal.any():
        return 1
    f = frac[normal].astype(np.int64)
    low = f & -f  # lowest set bit
    return int(23 - np.log2(low).astype(int).min())


def candidate_models(K: int, out: str, used_bits: int = 23) -> Iterator[Accumulator]:
    """Every block model of the search space for K products per row.

    Blocks of K or more products behave alike on K-product rows, so block sizes stop at K.
    Output fraction bits: the most any result uses, or 23.
    """
    blocks = sorted({min(1 << i, K) for i in range(0, 7)})
    outs = [("rne", 23)] if out == "fp16" else [(r, p) for r in ("rz", "rne") for p in sorted({used_bits, 23})]
    for block, (grouping, g), (orr, ofb), F, zc in itertools.product(blocks, _GROUPINGS.items(), outs, _FRAC_BITS, _ZERO_C):
        if g["even_odd"] and block < 2:  # no odd lane in a one-product block
            continue
        yield Accumulator(
            f"block {block}, F {F}, {grouping}", "block", block=block, frac_bits=F, out_rounding=orr,
            out_frac_bits=ofb, zero_c_exponent=zc, **g,
        )


# ---------------------------------------------------------------------------------------------
# A batched block-FMA kernel for the search
# ---------------------------------------------------------------------------------------------
# fpemu.accumulator.dot takes one Accumulator per call; the search tries thousands. This kernel
# computes the same block model (tests check it against dot on the dumps) for many parameter
# sets at once: the experiment rows are repeated once per (F, zero-c exponent, output
# rounding, output bits) set and those parameters become per-row arrays.
# The exponent and power-of-two helpers are the accumulator's own, so both agree on zeros.
def _p2(e: np.ndarray) -> np.ndarray:
    """2.0**e, clamped to float64's normal exponents."""
    return _pow2(np.clip(e, -1022, 1023))


def _aligned_total(vals: list, exps: list, F: np.ndarray, cut: str) -> tuple[np.ndarray, np.ndarray]:
    """Terms aligned to their largest exponent E with F fraction bits, each cut toward zero
    ("rz") or down ("rd"), added exactly: (sum * 2**(E-F) as float64, E)."""
    E = np.max(np.stack(exps), axis=0)
    scale = _p2(F - E)
    total = np.zeros(E.shape, dtype=np.int64)
    for v in vals:
        x = v * scale
        i = x.astype(np.int64)
        if cut == "rd":
            i -= i > x
        total += i
    return integers_to_float64(total) * _p2(E - F), E


def _round_rows(v: np.ndarray, prec: np.ndarray, rne: np.ndarray, out: str) -> np.ndarray:
    """Round exact float64 values to the output format with prec-bit significands (per row),
    RNE or RZ, with the codec (one call per distinct (prec, rounding) pair); IEEE overflow."""
    base = get_format(out)
    key = np.broadcast_to(np.asarray(prec, dtype=np.int64) * 2 + np.asarray(rne, dtype=np.int64), v.shape)
    r = np.empty_like(v)
    for k in np.unique(key).tolist():
        rows = key == k
        fmt = dataclasses.replace(base, name=f"{base.name}_p{k // 2}", mantissa_bits=k // 2 - 1)
        r[rows] = quantize(v[rows], fmt, rounding="nearest_even" if k % 2 else "toward_zero")
    return r + 0.0


def _products(a: np.ndarray, b: np.ndarray, inputs: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact products and their model exponents e_a + e_b (a subnormal at its format's emin)."""
    fmt = get_format(inputs)
    return a * b, _exponent(a, fmt.emin) + _exponent(b, fmt.emin)


def _batch_model(p, ep, c, out: str, block: int, cut: str, late_c: bool, even_odd: bool,
                 F, zc, rne, prec) -> np.ndarray:  # fmt: skip
    """The block model for rows of products p (exponents ep) and accumulators c, with per-row
    F, zero-c exponent, RNE flag and output precision (bits with the hidden one); float32
    results in the output format."""
    c_emin = get_format(out).emin
    K = p.shape[1]
    for s in range(0, K, block):
        ks = range(s, min(s + block, K))
        ec = np.where(c == 0, zc, _exponent(c, c_emin))
        # A block result that overflowed (fp16 output, F bits cut short of the sum) stays
        # +-Inf: the products are finite, so c + products is c, as fpemu.accumulator has it.
        finite = np.isfinite(c)
        fc = np.where(finite, c, 0.0)
        if not late_c:
            total, _ = _aligned_total([fc] + [p[:, k] for k in ks], [ec] + [ep[:, k] for k in ks], F, cut)
        else:
            groups = [ks[0::2], ks[1::2]] if even_odd else [ks]
            vals, exps = [fc], [ec]
            for g in groups:
                if len(g):
                    v, _ = _aligned_total([p[:, k] for k in g], [ep[:, k] for k in g], F, cut)
                    vals.append(v)
                    exps.append(_exponent(v, -100000))
            total, _ = _aligned_total(vals, exps, F, cut)
        c = np.where(finite, _round_rows(total, prec, rne, out), c)
    return c.astype(np.float32)


def _presets(inputs: str) -> dict[str, Accumulator]:
    """Every named accumulator that takes these inputs (GPU names and architectures)."""
    found = {}
    for name in accumulator_names():
        try:
            found[name] = get_accumulator(name, inputs)
        except ValueError:
            continue
    return found


def _key(acc: Accumulator, K: int, out: str) -> tuple:
    """The parameters a K-product dump can tell apart."""
    block = None if acc.block is None else min(acc.block, K)
    fields = [acc.kind, block, acc.frac_bits, acc.term_rounding, acc.zero_c_exponent, acc.late_c, acc.even_odd,
              acc.flush_subnormals, acc.acc_format, acc.acc_rounding]  # fmt: skip
    if out == "fp32":
        fields += [acc.out_rounding, acc.out_frac_bits]
    if acc.kind != "block":
        fields = [acc.kind, block, acc.flush_subnormals, acc.acc_format, acc.acc_rounding]
    return tuple(fields)


@dataclass
class FitResult:
    """What :func:`fit` found for one dump and output column."""

    dump: str
    inputs: str
    out: str
    rows: int
    K: int
    c_mode: str = "as recorded"
    models: list = field(default_factory=list)  # Accumulators reproducing every row
    presets: list = field(default_factory=list)  # names of presets among them
    best: Accumulator | None = None  # closest model when none fits
    best_rows: int = 0
    searched: int = 0
    seconds: float = 0.0

    @property
    def fits(self) -> bool:
        return bool(self.models)


def _batch_matches(dump: Dump, c: np.ndarray, out: str, models: list[Accumulator], rows: slice) -> np.ndarray:
    """(len(models), n_rows) bool: which rows each block model reproduces. Models that share
    their structure (block, grouping) run in one batched call."""
    from .codec import quantize

    p, ep = _products(dump.a[rows], dump.b[rows], dump.inputs)
    cq = quantize(c[rows], "fp16" if out == "fp16" else "fp32")
    want = dump.d[out][rows]
    R = p.shape[0]
    result = np.zeros((len(models), R), dtype=bool)
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(models):
        groups.setdefault((m.block, m.term_rounding, m.late_c, m.even_odd), []).append(i)
    # Models per batched call: the tiled products stay near _BATCH_VALUES, whatever the
    # number of rows, K or models.
    per_call = max(1, _BATCH_VALUES // max(1, R * p.shape[1]))
    for (block, cut, late_c, even_odd), all_idx in groups.items():
        for start in range(0, len(all_idx), per_call):
            idx = all_idx[start : start + per_call]
            result[idx] = _batch_group(p, ep, cq, want, out, (block, cut, late_c, even_odd), [models[i] for i in idx])
    return result


#: Products held at once by one batched call of the search (float64 and int arrays of this size).
_BATCH_VALUES = 1 << 21


def _batch_group(p, ep, cq, want, out: str, structure: tuple, ms: list[Accumulator]) -> np.ndarray:
    """(len(ms), R) bool: which rows each model of one structure (block, cut, late c,
    even/odd) reproduces, in one batched call."""
    block, cut, late_c, even_odd = structure
    R, n = p.shape[0], len(ms)
    per_row = lambda values: np.repeat(np.array(values), R)  # noqa: E731
    got = _batch_model(
        np.tile(p, (n, 1)), np.tile(ep, (n, 1)), np.tile(cq, n), out, block, cut, late_c, even_odd,
        F=per_row([m.frac_bits for m in ms]), zc=per_row([m.zero_c_exponent for m in ms]),
        rne=per_row([out == "fp16" or m.out_rounding == "rne" for m in ms]),
        prec=per_row([11 if out == "fp16" else m.out_frac_bits + 1 for m in ms]),
    )
    return (got.view(np.uint32) == np.tile(want, n)).reshape(n, R)


def _model_matches(dump: Dump, c: np.ndarray, out: str, acc: Accumulator, rows: slice) -> np.ndarray:
    """Rows one (named) model reproduces, through fpemu.accumulator.dot itself."""
    d = dot(dump.a[rows], dump.b[rows], c[rows], inputs=dump.inputs, accumulator=acc, out=out)
    return d.astype(np.float32).view(np.uint32) == dump.d[out][rows]


def fit(dump: Dump, out: str = "fp32", screen: Sequence[int] = (64, 500)) -> FitResult:
    """Every model of the search space (and every preset) that reproduces every row.

    Candidates are tested on the first ``screen[0]`` rows, the survivors on ``screen[1]``,
    then on all rows. The search space runs through a batched kernel; models that fit, and
    every named preset, are confirmed with :func:`fpemu.accumulator.dot` itself. When no
    model fits with the recorded ``c``, the search is repeated with ``c = 0`` (the H100 FP8
    dumps ran with a zero accumulator) and the result says so.
    """
    if out not in dump.d:
        raise ValueError(f"{dump.name} has no d_{out} column (it has: {', '.join('d_' + k for k in dump.d)})")
    if dump.a.ndim != 2 or dump.rows < 1 or dump.K < 1:
        raise ValueError(f"{dump.name}: a dump needs at least one row of at least one product, got a {dump.a.shape}")
    _check_inputs(dump, dump.name)  # values outside the input format would be re-rounded by the model code
    start = time.perf_counter()
    result = FitResult(dump.name, dump.inputs, out, dump.rows, dump.K)
    c_modes = [("as recorded", dump.c)]
    if np.any(dump.c != 0):
        c_modes.append(("ignored (c = 0)", np.zeros_like(dump.c)))
    presets = _presets(dump.inputs)
    used = _used_fraction_bits(dump.d[out]) if out == "fp32" else 23
    space = list(candidate_models(dump.K, out, used))
    best: tuple[int, Accumulator | None, str] = (-1, None, "")
    for c_mode, c in c_modes:
        result.searched += len(space) + len(presets)
        first = slice(0, screen[0])
        scores = _batch_matches(dump, c, out, space, first).sum(axis=1)
        alive = [m for m, s in zip(space, scores) if s == min(screen[0], dump.rows)]
        for n in list(screen[1:]) + [dump.rows]:
            if alive:
                ok = _batch_matches(dump, c, out, alive, slice(0, n)).all(axis=1)
                alive = [m for m, keep in zip(alive, ok) if keep]
        # Confirm a spread of the survivors with the real model code (the batched kernel is
        # tested against it; a disagreement here is a bug, not a misfit), and try every
        # preset as it is.
        for m in alive[:: max(1, len(alive) // 8)]:
            if not _model_matches(dump, c, out, m, slice(None)).all():
                raise RuntimeError(f"fit's batched kernel disagrees with fpemu.accumulator.dot on {m} (a bug in fit)")
        fitting = list(alive)
        fitting += [a for a in presets.values() if _model_matches(dump, c, out, a, slice(None)).all()]
        if fitting:
            result.c_mode, result.models = c_mode, _dedupe(fitting, dump.K, out)
            keys = {_key(m, dump.K, out) for m in fitting}
            result.presets = [n for n, a in presets.items() if _key(a, dump.K, out) in keys]
            break
        # Nothing fits: remember the closest (best on the screen, then on all rows).
        order = np.argsort(-scores, kind="stable")[:16]
        top = [space[i] for i in order]
        counts = _batch_matches(dump, c, out, top, slice(None)).sum(axis=1)
        for acc in presets.values():
            n_ok = int(_model_matches(dump, c, out, acc, slice(None)).sum())
            if n_ok > best[0]:
                best = (n_ok, acc, c_mode)
        for acc, n_ok in zip(top, counts):
            if n_ok > best[0]:
                best = (int(n_ok), acc, c_mode)
    if not result.fits:
        result.best_rows, result.best, result.c_mode = best
    result.seconds = time.perf_counter() - start
    return result


def _dedupe(models: list[Accumulator], K: int, out: str) -> list[Accumulator]:
    seen, unique = set(), []
    for m in models:
        k = _key(m, K, out)
        if k not in seen:
            seen.add(k)
            unique.append(m)
    return unique


def describe_model(acc: Accumulator, K: int | None = None, out: str = "fp32") -> str:
    """One line of parameters.

    >>> describe_model(get_accumulator("h100", "e4m3"), K=32)
    'block >= 32, F = 13, terms rz, out rz to 13 fraction bits, zero c aligns at 2^-126'
    """
    if acc.kind != "block":
        return f"{acc.kind} ({acc.name})"
    block = f"block >= {acc.block}" if K is not None and acc.block >= K else f"block {acc.block}"
    grouping = next((g for g, v in _GROUPINGS.items() if all(getattr(acc, k) == x for k, x in v.items())), "custom")
    terms = {"nvidia": "terms rz", "floor": "terms rd"}.get(grouping, f"{grouping}, terms {acc.term_rounding}")
    outs = "out fp16 rne" if out == "fp16" else f"out {acc.out_rounding} to {acc.out_frac_bits} fraction bits"
    zc = "zero c takes no part" if acc.zero_c_exponent <= _ZERO_C_NO_PART else f"zero c aligns at 2^{acc.zero_c_exponent}"
    return f"{block}, F = {acc.frac_bits}, {terms}, {outs}, {zc}"


def _ranges(values: Sequence[int]) -> str:
    """Compact integer sets: [22, 23, 24, 26] -> '22..24, 26'.

    >>> _ranges([22, 23, 24, 26])
    '22..24, 26'
    """
    vs = sorted(set(values))
    parts, i = [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        parts.append(f"{vs[i]}..{vs[j]}" if j > i else str(vs[i]))
        i = j + 1
    return ", ".join(parts)


def summarize_models(models: Sequence[Accumulator], K: int, out: str) -> list[str]:
    """One line per model family: block models that differ only in F and the zero-c exponent
    are merged (``F = 22..32``); other models (exact, sequential, pairwise) by name."""
    lines, families = [], {}
    for m in models:
        if m.kind != "block":
            lines.append(f"{m.kind} ({m.name})")
            continue
        base = dataclasses.replace(m, name="", frac_bits=0, zero_c_exponent=0, source="")
        fam = families.setdefault(_key(base, K, out), (m, [], []))
        fam[1].append(m.frac_bits)
        fam[2].append(m.zero_c_exponent)
    for m, fs, zcs in families.values():
        text = describe_model(m, K, out)
        text = re.sub(r"F = \d+", f"F = {_ranges(fs)}", text)
        zset = sorted(set(zcs), reverse=True)
        zc = "zero c: " + ", ".join("takes no part" if z <= _ZERO_C_NO_PART else f"2^{z}" for z in zset)
        lines.append(re.sub(r"zero c (aligns at 2\^-?\d+|takes no part)", zc, text))
    return lines


def report(result: FitResult) -> str:
    """The text `fpemu fit` prints."""
    lines = [
        f"{result.dump}: {result.rows} rows, K = {result.K}, inputs {result.inputs}, output {result.out}",
        f"searched {result.searched} models in {result.seconds:.1f} s",
    ]
    if result.fits:
        lines.append(f"models reproducing all {result.rows} rows (c {result.c_mode}):")
        lines += [f"  {text}" for text in summarize_models(result.models, result.K, result.out)]
        names = ", ".join(result.presets) if result.presets else "none (a new model)"
        lines.append(f"matching presets: {names}")
        if len(result.models) > 12:
            lines.append("  (many models fit: this column does not pin the parameters down)")
    else:
        lines.append(f"NO model in the search space reproduces all {result.rows} rows.")
        if result.best is not None:
            lines.append(
                f"closest: {describe_model(result.best, result.K, result.out)} "
                f"(c {result.c_mode}) reproduces {result.best_rows}/{result.rows} rows"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Probing a device
# ---------------------------------------------------------------------------------------------
RunDot = Callable[[np.ndarray, np.ndarray, str], np.ndarray]


def fake_device(preset: str | Accumulator) -> RunDot:
    """A stand-in device: ``run_dot(a, b, inputs)`` computed by an fpemu accumulator preset
    (fp32 output, zero accumulator), for testing :func:`probe` without a GPU.

    >>> run = fake_device("a100")
    >>> run(np.array([[1.0, 2.0**-24]]), np.array([[1.0, 1.0]]), "fp16").tolist()
    [1.0]
    """

    def run(a: np.ndarray, b: np.ndarray, inputs: str) -> np.ndarray:
        return dot(a, b, None, inputs=inputs, accumulator=get_accumulator(preset, inputs))

    return run


def _pow2_pair(e: int, fmt) -> tuple[float, float] | None:
    """Two values of fmt whose product is 2**e (as balanced as possible), or None."""
    lo, hi = fmt.emin - fmt.mantissa_bits, fmt.emax
    first, last = max(lo, e - hi), min(hi, e - lo)
    if first > last:
        return None
    ea = min(max((e + 1) // 2, first), last)
    return float(2.0**ea), float(2.0 ** (e - ea))


class _Experiments:
    """Builds rows of power-of-two products and runs them in one batch per question.

    Every experiment is written relative to a shift ``s``: the device sees every product
    multiplied by 2**s, which changes nothing in an fp32 result that stays normal, and lets
    formats with a narrow range (FP8 products lie in 2**-18..2**16 for E4M3) ask about
    bits far below the leading one.
    """

    def __init__(self, run: RunDot, inputs: str):
        self.run, self.inputs, self.fmt = run, inputs, get_format(inputs)
        f = self.fmt
        self.lo = 2 * (f.emin - f.mantissa_bits)  # smallest power-of-two product
        self.hi = 2 * f.emax  # largest
        self.calls = 0

    def shift_for(self, low: int, high: int) -> int | None:
        """A shift s with every exponent in [low + s, high + s] a product, or None."""
        if high - low > self.hi - self.lo:
            return None
        return min(max(0, self.lo - low), self.hi - high)

    def term(self, pos: int, e: int, sign: float = 1.0) -> tuple[int, float, float]:
        pa, pb = _pow2_pair(e, self.fmt)
        return pos, sign * pa, pb

    def ask(self, rows: list[list[tuple[int, float, float]]], K: int) -> np.ndarray:
        """rows: lists of (position, a, b); returns the device's results (float64)."""
        a = np.zeros((len(rows), K))
        b = np.zeros((len(rows), K))
        for i, row in enumerate(rows):
            for pos, x, y in row:
                a[i, pos], b[i, pos] = x, y
        self.calls += 1
        got = np.asarray(self.run(a, b, self.inputs), dtype=np.float64).reshape(-1)
        if got.size != len(rows):
            raise RuntimeError(f"the device returned {got.size} results for {len(rows)} experiments")
        return got


def _kept_bits(ex: _Experiments, top: int = 24) -> int:
    """min(F, p): 2^s and 2^(s-k) add up exactly while k <= both the alignment bits F and
    the output fraction bits p."""
    rows, ks = [], []
    for k in range(1, top + 1):
        s = ex.shift_for(-k, 0)
        if s is not None:
            rows.append([ex.term(0, s), ex.term(1, s - k)])
            ks.append((k, s))
    got = ex.ask(rows, 2)
    kept = [k for (k, s), v in zip(ks, got) if v == 2.0**s * (1 + 2.0**-k)]
    return max(kept) if kept else 0


def _frac_bits(ex: _Experiments, m1: int) -> int:
    """F: products 2^j, -2^j, 1 and 2^-k (all times 2^s) keep the 2^-k exactly when j + k <= F
    (the two 2^j set the alignment and cancel); k <= min(F, p) so the result can hold it."""
    rows, fs = [], []
    for f in range(48, 0, -1):
        k = min(f, max(m1, 1))
        j = f - k
        s = ex.shift_for(-k, j)
        if s is None:
            continue
        rows.append([ex.term(0, j + s), ex.term(1, j + s, -1.0), ex.term(2, s), ex.term(3, s - k)])
        fs.append((f, k, s))
    got = ex.ask(rows, 4)
    kept = [f for (f, k, s), v in zip(fs, got) if v == 2.0**s * (1 + 2.0**-k)]
    return max(kept) if kept else 0


def _out_bits(ex: _Experiments, F: int, m1: int) -> tuple[int, str]:
    """Output fraction bits p. When F > min(F, p) it is p. Otherwise p >= F, and a result
    carries at most F + 1 significant bits: 1 + 1 + 2^-F tells p = F from p > F (then the
    usual 23 is assumed: more bits than F + 1 can never show)."""
    if F > m1:
        return m1, ""
    s = ex.shift_for(-F, 0)
    if s is None:
        return F, "output bits beyond F not testable with these inputs"
    v = ex.ask([[ex.term(0, s), ex.term(1, s), ex.term(2, s - F)]], 3)[0]
    if v == 2.0**s * (2 + 2.0**-F):
        return 23, f"output keeps more than F = {F} bits; 23 assumed (the rest cannot show)"
    return F, ""


def _block_size(ex: _Experiments, F: int, p: int, max_k: int = 64) -> tuple[int, str]:
    """Products per block: m ones, a small t right after them and another t at position j.

    With t = 2^(q-p-1) (half an output ulp at the sum 2^q), both t's add up to a whole ulp
    when they share the ones' block; in a later block each is lost to rounding.
    """
    q = max(0, p + 1 - F)  # the ones' sum 2^q lets t survive the alignment to the ones
    m = 1 << q
    t = q - p - 1
    s = ex.shift_for(t, 0)
    if s is None:
        return 0, f"2^{t} is not a product of {ex.inputs} values"
    base = [ex.term(i, s) for i in range(m)] + [ex.term(m, s + t)]
    js = list(range(m + 1, max_k))
    got = ex.ask([base + [ex.term(j, s + t)] for j in js], max_k)
    whole = 2.0**s * (2.0**q + 2.0 ** (q - p))
    split = [j for j, v in zip(js, got) if v != whole]
    if not split:
        return max_k, f"no block boundary below {max_k} products"
    if split[0] == m + 1:
        return m + 1, f"at most {m + 1} (the test needs {m + 1} products in the first block)"
    return split[0], ""


def _out_rounding(ex: _Experiments, F: int, p: int, n: int) -> tuple[str, str]:
    """RZ or RNE for fp32 output: a sum with three quarters of an output ulp below it."""
    if F >= p + 2 and (s := ex.shift_for(-(p + 2), 0)) is not None:
        row = [ex.term(0, s), ex.term(1, s - p - 1), ex.term(2, s - p - 2)]
        high = 2.0**s * (1 + 2.0**-p)
    elif n >= 7 and (s := ex.shift_for(-F, 0)) is not None:  # 4 ones, three 2^-F: 0.75 ulp if F == p
        row = [ex.term(i, s) for i in range(4)] + [ex.term(4 + i, s - F) for i in range(3)]
        high = 2.0**s * (4 + 2.0 ** (2 - p))
    else:
        return "rz", "not observable with these parameters (rz assumed)"
    v = ex.ask([row], 8)[0]
    return ("rne" if v == high else "rz"), ""


def _subnormals(ex: _Experiments) -> bool:
    """The smallest subnormal input times 2^emax: zero when the unit flushes subnormal inputs."""
    fmt = ex.fmt
    a = fmt.min_subnormal
    b = float(2.0**fmt.emax)
    return bool(ex.ask([[(0, a, b)]], 1)[0] != 0)


@dataclass
class ProbeResult:
    """What :func:`probe` inferred for one input format."""

    inputs: str
    model: Accumulator
    extra_alignment_bits: int
    subnormal_inputs: bool
    nearest: list
    distance: int
    notes: list = field(default_factory=list)
    calls: int = 0


def _distance(a: Accumulator, b: Accumulator) -> int:
    return sum(
        getattr(a, f) != getattr(b, f)
        for f in ("kind", "block", "frac_bits", "out_rounding", "out_frac_bits", "term_rounding", "late_c")
    )


def probe(run: RunDot, inputs: str, max_k: int = 64) -> ProbeResult:
    """Infer an NVIDIA-style block model from a device's answers to feature tests.

    ``run(a, b, inputs)`` must return the device's fp32 results of ``sum(a * b, axis=1)`` (a
    zero accumulator; rows of up to ``max_k`` products, in order). Order of the questions: F
    (alignment, independent of the output precision), output fraction bits, products per
    block, output rounding, subnormal inputs.
    """
    fmt = get_format(inputs)
    if isinstance(max_k, bool) or not isinstance(max_k, (int, np.integer)) or not 8 <= max_k <= 1024:
        raise ValueError(f"max_k must be an integer in 8..1024 (the block question asks max_k rows of max_k), got {max_k!r}")
    ex = _Experiments(run, fmt.name)
    notes = []
    m1 = _kept_bits(ex)
    F = _frac_bits(ex, m1)
    widest = max(f for f in range(1, 49) if ex.shift_for(-min(f, max(m1, 1)), f - min(f, max(m1, 1))) is not None)
    if F >= widest:
        notes.append(f"alignment: F >= {F}, the widest these inputs can test (the products span 2^{ex.lo}..2^{ex.hi})")
    p, note = _out_bits(ex, F, m1)
    if note:
        notes.append(f"output: {note}")
    n, note = _block_size(ex, F, p, max_k)
    if note:
        notes.append(f"block: {note}")
    if n < 4:  # the F question puts 4 products in one block
        notes.append("fewer than 4 products per block: F and the rounding read here are unreliable")
    rounding, note = _out_rounding(ex, F, p, n)
    if note:
        notes.append(f"rounding: {note}")
    sub = _subnormals(ex)
    model = Accumulator("probed", "block", block=max(n, 1), frac_bits=max(F, 0), out_rounding=rounding,
                        out_frac_bits=max(min(p, 23), 1), flush_subnormals=not sub)  # fmt: skip
    presets = {k: v for k, v in _presets(fmt.name).items() if v.kind == "block"}
    dist = {k: _distance(model, v) for k, v in presets.items()}
    best = min(dist.values()) if dist else 0
    nearest = [k for k, d in dist.items() if d == best]
    return ProbeResult(fmt.name, model, F - p, sub, nearest, best, notes, ex.calls)


def probe_report(r: ProbeResult) -> str:
    m = r.model
    lines = [
        f"{r.inputs}: products per block {m.block}, F = {m.frac_bits} "
        f"({r.extra_alignment_bits:+d} alignment bits beyond the output's {m.out_frac_bits}), "
        f"fp32 output {m.out_rounding}, subnormal inputs {'kept' if r.subnormal_inputs else 'flushed'}",
        f"  Accumulator(kind='block', block={m.block}, frac_bits={m.frac_bits}, out_rounding={m.out_rounding!r}, "
        f"out_frac_bits={m.out_frac_bits}, flush_subnormals={m.flush_subnormals})",
        f"  nearest preset: {', '.join(r.nearest) or 'none'}"
        + (" (identical parameters)" if r.distance == 0 else f" ({r.distance} parameter(s) differ)"),
    ]
    lines += [f"  note: {n}" for n in r.notes]
    return "\n".join(lines)


def torch_device(device: str = "cuda") -> RunDot:
    """run_dot through torch on a GPU: the R experiments of one question become one
    (R x K) @ (K x R) matrix product whose diagonal holds the R dot products (fp16/bf16 with
    fp32 output, tf32 fp32 matmul, FP8 through ``torch._scaled_mm``); sizes are padded with
    zeros to multiples of 16, and zero products take no part in the sums."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device here")
    from . import crosscheck

    mm = crosscheck._torch_matmul(device)

    def run(a: np.ndarray, b: np.ndarray, inputs: str) -> np.ndarray:
        R, K = a.shape
        Rp, Kp = -(-R // 16) * 16, -(-K // 16) * 16
        A = np.zeros((Rp, Kp))
        B = np.zeros((Kp, Rp))
        A[:R, :K] = a
        B[:K, :R] = b.T
        return np.diagonal(mm(A, B, inputs))[:R].astype(np.float64)

    return run


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def cmd_fit(args: argparse.Namespace) -> int:
    """Fit every output column (or --out's) and print what reproduces it; a column no model
    reproduces makes the run fail (exit status 1) after the report."""
    from .cli import RunError

    if args.inputs is not None:
        get_format(args.inputs)  # an unknown name is a usage error, before the file is read
    try:
        dump = load_dump(args.dump, args.inputs)
    except DumpError as exc:
        raise RunError(str(exc)) from None
    if args.out and args.out not in dump.d:
        raise ValueError(f"{args.dump} has no d_{args.out} column (it has {', '.join('d_' + k for k in dump.d)})")
    outs = [args.out] if args.out else list(dump.d)
    unfit = []
    for i, out in enumerate(outs):
        result = fit(dump, out)
        print(("\n" if i else "") + report(result), flush=True)
        if not result.fits:
            unfit.append(f"d_{out}")
    if unfit:
        raise RunError(f"{args.dump}: no model in the search space reproduces every row of {' and '.join(unfit)}")
    return 0


#: Input formats `fpemu probe` can run through torch.
PROBE_INPUTS = ("fp16", "bf16", "tf32", "e4m3", "e5m2")


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
    from .cli import RunError

    if args.device != "cuda":
        raise ValueError(f"only --device cuda is supported, got {args.device!r}")
    inputs = _probe_inputs(args.inputs)
    try:
        import torch
    except ImportError:
        raise RunError("probing needs torch with a CUDA GPU, and torch is not installed") from None
    if not torch.cuda.is_available():
        raise RunError("no CUDA device is available here (torch.cuda.is_available() is False); "
                       "run fpemu probe on a machine with an NVIDIA GPU")  # fmt: skip
    print(f"probing {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))})")
    run = torch_device("cuda")
    for name in inputs:
        try:
            print(probe_report(probe(run, name)))
        except (RuntimeError, TypeError, AttributeError) as exc:
            print(f"{name}: not available on this GPU/torch ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    return 0


def register_cli(subparsers) -> None:
    """Add ``fit`` and ``probe``."""
    p = subparsers.add_parser("fit", help="find the accumulator models that reproduce a dump of block FMAs")
    p.add_argument("dump", help="an .npz in the hwdata layout (uint32 bit patterns a, b, c, d_fp32 and/or d_fp16), "
                                "or a file of fpemu vectors --accumulator")  # fmt: skip
    p.add_argument("--inputs", default=None, help="input format (default: the file's metadata, else its name)")
    p.add_argument("--out", default=None, choices=("fp32", "fp16"), help="output column (default: every one present)")
    p.set_defaults(func=cmd_fit)

    p = subparsers.add_parser("probe", help="infer the accumulator of a GPU with feature tests through torch")
    p.add_argument("--device", default="cuda", help="only cuda")
    p.add_argument("--inputs", default=",".join(PROBE_INPUTS), help="input formats to probe (comma-separated)")
    p.set_defaults(func=cmd_probe)
