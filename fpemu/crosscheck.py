"""Cross-check fpemu against other implementations: ml_dtypes, numpy, torch (CPU and CUDA).

For every backend that is installed and every format it implements, three operations are
compared code for code:

* ``decode``: every code of the format (all of them up to 16 bits) read by the backend and by
  :func:`fpemu.decode`;
* ``cast f32`` / ``cast f64``: float32 / float64 values cast by the backend and encoded by
  :func:`fpemu.encode`. The values are the format's edge cases (every representable value and
  the float neighbours around it, every tie and the neighbours of every tie, the subnormal and
  overflow boundaries, +-0, +-Inf, quiet, signalling and payload NaNs) plus random data
  (random bit patterns and random values across the format's range).

When fpemu's default options do not reproduce the backend, a small set of option combinations
(overflow, NaN policy, ties away, and "cast through float32 first" for float64 sources) is
searched and the simplest one that reproduces every case is reported, e.g. ``torch saturates:
overflow='saturate'``. When none does, the closest one is reported with what is left.

The torch backend also compares CPU matrix products (fp32, bf16, fp16, FP8 through
``torch._scaled_mm``) with fpemu's IEEE fp32 loop. With CUDA, ``torch-cuda`` repeats the casts
on the GPU and compares GPU matrix products (fp16, bf16, tf32 and FP8 through
``torch._scaled_mm``) with the matching accumulator preset.

>>> rows = run_crosscheck(["numpy"], n_random=200)
>>> [(r.operation, r.format, r.status) for r in rows]
[('decode', 'fp16', 'identical'), ('cast f32', 'fp16', 'reproduced'), ('cast f64', 'fp16', 'reproduced'), ('cast f64', 'fp32', 'reproduced')]
>>> rows[1].reproduced_by.split(": ")[0]  # then nan='payload' (numpy's own rule) or 'quiet_payload' (F16C builds)
'numpy keeps NaN payload bits'

Which option reproduces a backend is a fact about that backend's build (and, for matrix
products, the CPU and thread count), so the report states it and the tests assert only what
holds for every build.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .codec import decode, encode
from .formats import Format, get_format

__all__ = [
    "Row",
    "BACKENDS",
    "edge_cases",
    "random_cases",
    "compare_cast",
    "compare_decode",
    "run_crosscheck",
    "format_table",
    "register_cli",
]


# ---------------------------------------------------------------------------------------------
# Result rows
# ---------------------------------------------------------------------------------------------
@dataclass
class Row:
    """One line of the cross-check table.

    ``status`` is ``"identical"`` (default options match every case), ``"reproduced"`` (the
    option in ``reproduced_by`` matches every case), ``"differs"`` (no searched option does;
    ``note`` says what is left), ``"skipped"`` (backend not installed) or ``"unsupported"``
    (the backend lacks this operation).
    """

    operation: str
    format: str
    backend: str
    cases: int = 0
    identical: int = 0
    first_mismatch: str = ""
    reproduced_by: str = ""
    status: str = "identical"
    note: str = ""
    mismatches_by_kind: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Test values
# ---------------------------------------------------------------------------------------------
_SOURCE_TYPES = {"f32": np.float32, "f64": np.float64}
_UINT_OF = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def _magnitude_codes(fmt: Format) -> np.ndarray:
    """Non-negative finite magnitude codes to build edge cases from (right-aligned).

    Every code for formats of up to 16 bits; for wider ones (fp32, tf32) the codes with the
    smallest and largest few fractions in every binade, and a sprinkle in between.
    """
    mag_bits = fmt.exponent_bits + fmt.mantissa_bits
    if fmt.bits <= 16:
        codes = np.arange(fmt.max_code + 1, dtype=np.int64)
    else:
        m = fmt.mantissa_bits
        fracs = np.array([0, 1, 2, 3, (1 << (m - 1)) - 1, 1 << (m - 1), (1 << m) - 3, (1 << m) - 2, (1 << m) - 1])
        exps = np.arange(1 << fmt.exponent_bits, dtype=np.int64)
        codes = (exps[:, None] << m | fracs[None, :]).ravel()
        codes = np.unique(codes[codes <= fmt.max_code])
    assert mag_bits < 63
    return codes


def _code_values(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """float64 values of right-aligned magnitude codes."""
    container = (codes << fmt.code_shift).astype(fmt.code_dtype)
    return decode(container, fmt)


def _tagged(parts: list[tuple[np.ndarray, str]], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    values = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v, _ in parts])
    tags = np.concatenate([np.full(np.size(v), t, dtype=object) for v, t in parts])
    with np.errstate(over="ignore"):
        cast = values.astype(dtype)
    return cast, tags


def _neighbours(v: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The next float of ``dtype`` below and above each value (values cast to dtype first)."""
    with np.errstate(over="ignore"):  # dtype's largest value steps on to Inf: dropped by the callers
        x = v.astype(dtype)
        return np.nextafter(x, dtype.type(-np.inf)), np.nextafter(x, dtype.type(np.inf))


def _nan_patterns(dtype: np.dtype) -> np.ndarray:
    """Quiet, signalling and payload NaNs of both signs, as values of dtype."""
    if dtype == np.float32:
        bits = np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FC00001, 0x7FA00000], dtype=np.uint32)
        bits = np.concatenate([bits, bits | np.uint32(0x80000000)])
    else:
        bits = np.array(
            [0x7FF8000000000000, 0x7FF0000000000001, 0x7FFFFFFFFFFFFFFF, 0x7FF8000000000001, 0x7FF4000000000000],
            dtype=np.uint64,
        )
        bits = np.concatenate([bits, bits | np.uint64(1 << 63)])
    return bits.view(dtype)


def edge_cases(fmt: str | Format, dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Edge-case inputs for casts into ``fmt``, as values of ``dtype``, with a tag per value.

    Tags: ``value`` (a representable value), ``near value`` (the next ``dtype`` float on
    either side), ``tie`` (exactly half-way between two neighbours of the format, including
    half-way between 0 and the smallest subnormal), ``near tie``, ``overflow`` (at and
    around the largest finite value, the overflow tie, twice the maximum and dtype's largest),
    ``tiny`` (far below the smallest subnormal), ``zero``, ``inf``, ``nan``. Every case comes
    with both signs, and no value is repeated.

    >>> x, tags = edge_cases("e2m1")
    >>> sorted(set(float(v) for v, t in zip(x, tags) if t == "tie" and v > 0))
    [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    >>> sorted(set(float(v) for v, t in zip(x, tags) if t == "overflow" and v > 0))[:5]
    [6.999999523162842, 7.0, 7.000000476837158, 7.999999523162842, 8.0]
    """
    fmt = get_format(fmt)
    dtype = np.dtype(dtype)
    codes = _magnitude_codes(fmt)
    vals = _code_values(codes, fmt)
    nxt = _code_values(np.minimum(codes + 1, fmt.max_code), fmt)
    # Above the largest finite value, the next "value" is where the exponent would step on.
    ulp_max = np.ldexp(1.0, fmt.emax - fmt.mantissa_bits)
    nxt = np.where(codes == fmt.max_code, fmt.max + ulp_max, nxt)
    ties = (vals + nxt) / 2
    if fmt.subnormals:  # half-way between 0 and the smallest subnormal is in `ties` already
        lowest = [fmt.min_subnormal / 4, fmt.min_subnormal * 0.75]
    else:  # E8M0: no zero; values below the smallest value
        lowest = [fmt.min_normal / 2, fmt.min_normal * 0.75, fmt.min_normal * 0.5001]
    info = np.finfo(dtype)
    top = [fmt.max, fmt.max + ulp_max / 2, fmt.max + ulp_max, 2 * fmt.max, float(info.max)]
    ov_lo, ov_hi = _neighbours(np.array(top[:3]), dtype)
    parts = [
        (vals[vals != 0], "value"),
        (np.concatenate(_neighbours(vals[vals != 0], dtype)), "near value"),
        (ties[:-1], "tie"),
        (np.concatenate(_neighbours(ties[:-1], dtype)), "near tie"),
        (np.concatenate([top, ov_lo, ov_hi]), "overflow"),
        (np.array(lowest + [float(info.smallest_subnormal), float(info.tiny)]), "tiny"),
    ]
    x, tags = _tagged(parts, dtype)
    keep = np.isfinite(x) & (x != 0)
    x, tags = x[keep], tags[keep]
    x = np.concatenate([x, -x])
    tags = np.concatenate([tags, tags])
    specials = np.array([0.0, -0.0, np.inf, -np.inf], dtype=dtype)
    nans = _nan_patterns(dtype)
    x = np.concatenate([x, specials, nans])
    tags = np.concatenate([tags, np.array(["zero", "zero", "inf", "inf"], dtype=object), np.full(nans.size, "nan", dtype=object)])
    # Drop repeats (compare bit patterns so +0/-0 and NaN payloads stay distinct).
    _, first = np.unique(x.view(_UINT_OF[dtype]), return_index=True)
    first.sort()
    return x[first], tags[first]


def random_cases(fmt: str | Format, dtype: Any = np.float32, n: int = 20000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random inputs: half uniformly random bit patterns of ``dtype`` (every class of value,
    NaNs included), half random values spread log-uniformly over the format's range (from a
    quarter of its smallest subnormal to four times its maximum), random signs.

    >>> x, tags = random_cases("e4m3", n=10)
    >>> x.dtype, len(x), sorted(set(tags))
    (dtype('float32'), 10, ['random bits', 'random value'])
    """
    fmt = get_format(fmt)
    dtype = np.dtype(dtype)
    _check_size("n", n, 0)
    rng = np.random.default_rng(seed)
    n_bits = n // 2
    uint = _UINT_OF[dtype]
    bits = rng.integers(0, np.iinfo(uint).max, size=n_bits, dtype=uint, endpoint=True).view(dtype)
    lo = np.log2(fmt.min_subnormal) - 2
    hi = np.log2(fmt.max) + 2
    mags = np.exp2(rng.uniform(lo, hi, size=n - n_bits))
    signs = rng.choice([-1.0, 1.0], size=n - n_bits)
    with np.errstate(over="ignore"):
        values = (mags * signs).astype(dtype)
    x = np.concatenate([bits, values])
    tags = np.array(["random bits"] * n_bits + ["random value"] * (n - n_bits), dtype=object)
    return x, tags


#: Most values one call draws (random cases, matrix elements): beyond it a size is a typo,
#: refused before any allocation.
MAX_VALUES = 1 << 24


def _check_size(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= MAX_VALUES:
        raise ValueError(f"{name} must be in {low}..{MAX_VALUES:,}, got {value:,}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------------------------
class Backend:
    """A reference implementation: which formats it has, how it casts and decodes.

    Subclasses fill in :meth:`dtypes`, :meth:`cast` and :meth:`decode`; :meth:`missing`
    returns why the backend cannot run (None when it can).
    """

    name = "backend"
    sources: tuple[str, ...] = ("f32", "f64")

    def missing(self) -> str | None:
        return None

    def dtypes(self) -> dict[str, Any]:
        """fpemu format name -> the backend's dtype object."""
        raise NotImplementedError

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        """Codes (right-aligned, as in fpemu) of x cast to the format."""
        raise NotImplementedError

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        """float64 values of codes."""
        raise NotImplementedError

    def skip_ops(self, fmt: str) -> dict[str, str]:
        """Operations this backend lacks for fmt (operation -> reason)."""
        return {}


def _uint_for(fmt: Format) -> type:
    return fmt.code_dtype.type


class MlDtypesBackend(Backend):
    """ml_dtypes' scalar types, cast with ``ndarray.astype``."""

    name = "ml_dtypes"
    _NAMES = {
        "bf16": "bfloat16",
        "e4m3": "float8_e4m3fn",
        "e5m2": "float8_e5m2",
        "e4m3fnuz": "float8_e4m3fnuz",
        "e5m2fnuz": "float8_e5m2fnuz",
        "e3m2": "float6_e3m2fn",
        "e2m3": "float6_e2m3fn",
        "e2m1": "float4_e2m1fn",
        "e8m0": "float8_e8m0fnu",
        "float8_e4m3": "float8_e4m3",
        "float8_e3m4": "float8_e3m4",
        "float8_e4m3b11fnuz": "float8_e4m3b11fnuz",
    }

    def missing(self) -> str | None:
        try:
            import ml_dtypes  # noqa: F401
        except ImportError:
            return "ml_dtypes is not installed"
        return None

    def dtypes(self) -> dict[str, Any]:
        import ml_dtypes

        return {f: getattr(ml_dtypes, n) for f, n in self._NAMES.items() if hasattr(ml_dtypes, n)}

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        width = np.dtype(_uint_for(f))
        with np.errstate(all="ignore"):
            out = x.astype(self.dtypes()[fmt]).view(width)
        return out & f.code_dtype.type((1 << f.bits) - 1) if f.bits < 8 else out

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        with np.errstate(invalid="ignore"):
            return codes.astype(f.code_dtype).view(self.dtypes()[fmt]).astype(np.float64)


class NumpyBackend(Backend):
    """numpy's own float16 and float32 casts."""

    name = "numpy"

    def dtypes(self) -> dict[str, Any]:
        return {"fp16": np.float16, "fp32": np.float32}

    def skip_ops(self, fmt: str) -> dict[str, str]:
        # float32 -> float32 is the identity; fp32 has 2**32 codes, too many to decode them all.
        return {"cast f32": "identity", "decode": "2**32 codes"} if fmt == "fp32" else {}

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        with np.errstate(all="ignore"):
            return x.astype(self.dtypes()[fmt]).view(f.code_dtype)

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        f = get_format(fmt)
        with np.errstate(invalid="ignore"):
            return codes.astype(f.code_dtype).view(self.dtypes()[fmt]).astype(np.float64)


class TorchBackend(Backend):
    """torch tensors cast with ``Tensor.to(dtype)`` on a device (CPU or CUDA)."""

    _NAMES = {
        "fp32": "float32",
        "bf16": "bfloat16",
        "fp16": "float16",
        "e4m3": "float8_e4m3fn",
        "e5m2": "float8_e5m2",
        "e4m3fnuz": "float8_e4m3fnuz",
        "e5m2fnuz": "float8_e5m2fnuz",
        "e8m0": "float8_e8m0fnu",
        "e2m1": "float4_e2m1fn_x2",
    }

    def __init__(self, device: str = "cpu"):
        self.device = device
        self.name = "torch" if device == "cpu" else f"torch-{device}"

    def missing(self) -> str | None:
        try:
            import torch
        except ImportError:
            return "torch is not installed"
        if self.device == "cuda" and not torch.cuda.is_available():
            return "torch has no CUDA device here"
        return None

    def dtypes(self) -> dict[str, Any]:
        import torch

        return {f: getattr(torch, n) for f, n in self._NAMES.items() if hasattr(torch, n)}

    def skip_ops(self, fmt: str) -> dict[str, str]:
        if fmt == "fp32":
            return {"cast f32": "identity", "decode": "2**32 codes"}
        if fmt == "e2m1":  # a packed pair type: no element-wise cast or widening in torch
            reason = "torch.float4_e2m1fn_x2 is a packed pair type without casts"
            return {"cast f32": reason, "cast f64": reason, "decode": reason}
        return {}

    def _int_view(self, f: Format):
        import torch

        return {8: torch.uint8, 16: torch.int16, 32: torch.int32}[f.storage_bits]

    def cast(self, x: np.ndarray, fmt: str) -> np.ndarray:
        import torch

        f = get_format(fmt)
        t = torch.from_numpy(np.ascontiguousarray(x)).to(self.device)
        out = t.to(self.dtypes()[fmt]).view(self._int_view(f)).cpu().numpy()
        return out.view(f.code_dtype)

    def decode(self, codes: np.ndarray, fmt: str) -> np.ndarray:
        import torch

        f = get_format(fmt)
        raw = codes.astype(f.code_dtype).view({8: np.uint8, 16: np.int16, 32: np.int32}[f.storage_bits])
        t = torch.from_numpy(np.ascontiguousarray(raw)).to(self.device).view(self.dtypes()[fmt])
        return t.to(torch.float64).cpu().numpy()


#: Backend name -> factory. ``all`` runs every one of them.
BACKENDS: dict[str, Callable[[], Backend]] = {
    "ml_dtypes": MlDtypesBackend,
    "numpy": NumpyBackend,
    "torch": lambda: TorchBackend("cpu"),
    "torch-cuda": lambda: TorchBackend("cuda"),
}


# ---------------------------------------------------------------------------------------------
# fpemu side and the option search
# ---------------------------------------------------------------------------------------------
_RAISES = -1  # fpemu's code where it raises (NaN into a format without NaN, nan='raise')


def _fpemu_codes(x: np.ndarray, fmt: Format, options: dict) -> np.ndarray:
    """fpemu's codes (right-aligned, int64) for x under options; -1 where fpemu raises.

    The pseudo-option ``via_float32`` casts float64 input to float32 first, as backends that
    convert through float32 do.
    """
    opts = dict(options)
    with np.errstate(invalid="ignore", over="ignore"):
        return _fpemu_codes_quiet(x, fmt, opts)


def _fpemu_codes_quiet(x: np.ndarray, fmt: Format, opts: dict) -> np.ndarray:
    if opts.pop("via_float32", False):
        x = x.astype(np.float32)
    try:
        codes = encode(x, fmt, **opts)
    except ValueError:
        if fmt.has_nan or opts.get("nan") not in (None, "raise"):
            raise
        nan = np.isnan(x)
        codes = encode(np.where(nan, 0, x), fmt, **opts)
        return np.where(nan, _RAISES, (codes >> fmt.code_shift).astype(np.int64))
    return (codes >> fmt.code_shift).astype(np.int64)


def _option_grid(fmt: Format, source: str) -> list[dict]:
    """Option combinations to try, simplest first (fewest non-default settings)."""
    overflows = [None, "saturate", "saturate_propagate"]
    overflows += ["inf"] if fmt.has_inf else []
    overflows += ["nan"] if fmt.has_nan else []
    nans = [None] + (["positive", "payload", "quiet_payload"] if fmt.nan == "ieee" else ["positive"] if fmt.has_nan and fmt.signed else [])
    nans += [] if fmt.has_nan else ["zero", "ml_dtypes"] if fmt.signed else ["zero"]
    # Casting float64 through float32 is a real backend behaviour (double rounding) except into
    # fp32 itself, where it would be the cast under test.
    vias = [False, True] if source == "f64" and fmt.name != "fp32" else [False]
    grid = []
    for rounding, overflow, nan, via in itertools.product(["nearest_even", "nearest_away"], overflows, nans, vias):
        opts = {}
        if rounding != "nearest_even":
            opts["rounding"] = rounding
        if overflow is not None:
            opts["overflow"] = overflow
        if nan is not None:
            opts["nan"] = nan
        if via:
            opts["via_float32"] = True
        grid.append(opts)
    return sorted(grid, key=len)


_EXPLAIN = {
    ("overflow", "saturate"): "saturates",
    ("overflow", "saturate_propagate"): "saturates finite overflow but keeps Inf",
    ("overflow", "inf"): "overflows to Inf",
    ("overflow", "nan"): "overflows to NaN",
    ("rounding", "nearest_away"): "rounds ties away from zero",
    ("nan", "positive"): "drops the NaN sign",
    ("nan", "payload"): "keeps NaN payload bits",
    ("nan", "quiet_payload"): "keeps NaN payload bits and sets the quiet bit",
    ("nan", "zero"): "turns NaN into 0",
    ("nan", "ml_dtypes"): "turns NaN into ml_dtypes' codes",
    ("via_float32", True): "casts float64 through float32 (double rounding)",
}


def describe_options(backend: str, options: dict) -> str:
    """Say what an option set means, e.g. "torch saturates: overflow='saturate'".

    >>> describe_options("torch", {"overflow": "saturate"})
    "torch saturates: overflow='saturate'"
    >>> describe_options("ml_dtypes", {"via_float32": True})
    'ml_dtypes casts float64 through float32 (double rounding): encode(x.astype(np.float32))'
    """
    if not options:
        return "default options"
    what = " and ".join(_EXPLAIN[(k, v)] for k, v in options.items())
    args = ", ".join(f"{k}={v!r}" for k, v in options.items() if k != "via_float32")
    if options.get("via_float32"):
        args = f"encode(x.astype(np.float32){', ' + args if args else ''})"
    return f"{backend} {what}: {args}"


def _hex(value: Any, dtype: np.dtype) -> str:
    width = dtype.itemsize * 2
    return f"0x{int(np.asarray(value, dtype=dtype).view(_UINT_OF[dtype])):0{width}X}"


def _code_text(code: int, fmt: Format) -> str:
    if code == _RAISES:
        return "raises"
    return f"0x{int(code):0{max(1, (fmt.bits + 3) // 4)}X}"


def _first_mismatch(x, tags, want, got, fmt: Format, backend: str) -> str:
    bad = np.flatnonzero(want != got)
    if bad.size == 0:
        return ""
    i = int(bad[0])
    return f"{_hex(x[i], x.dtype)} ({tags[i]}): {backend} {_code_text(want[i], fmt)}, fpemu {_code_text(got[i], fmt)}"


def _count_kinds(tags: np.ndarray, mask: np.ndarray) -> dict:
    kinds, counts = np.unique(tags[mask].astype(str), return_counts=True)
    return {str(k): int(c) for k, c in zip(kinds, counts)}


def compare_cast(backend: Backend, fmt: str | Format, source: str = "f32", n_random: int = 20000, seed: int = 0) -> Row:
    """Compare the backend's cast of edge cases and random data into fmt with fpemu.

    >>> row = compare_cast(NumpyBackend(), "fp16", "f32", n_random=100)
    >>> row.status, list(row.mismatches_by_kind)  # only NaN payloads differ from the defaults
    ('reproduced', ['nan'])
    >>> row.reproduced_by.split(": ")[0]
    'numpy keeps NaN payload bits'
    """
    f = get_format(fmt)
    dtype = np.dtype(_SOURCE_TYPES[source])
    ex, et = edge_cases(f, dtype)
    rx, rt = random_cases(f, dtype, n_random, seed)
    x, tags = np.concatenate([ex, rx]), np.concatenate([et, rt])
    want = backend.cast(x, f.name).astype(np.int64)
    row = Row(f"cast {source}", f.name, backend.name, cases=int(x.size))
    got = _fpemu_codes(x, f, {})
    same = want == got
    row.identical = int(same.sum())
    if row.identical == row.cases:
        return row
    row.first_mismatch = _first_mismatch(x, tags, want, got, f, backend.name)
    row.mismatches_by_kind = _count_kinds(tags, ~same)
    best, best_same = {}, same
    for opts in _option_grid(f, source)[1:]:
        try:
            trial = want == _fpemu_codes(x, f, opts)
        except ValueError:
            continue
        if trial.sum() > best_same.sum():
            best, best_same = opts, trial
            if trial.all():
                break
    if best_same.all():
        row.status, row.reproduced_by = "reproduced", describe_options(backend.name, best)
    else:
        row.status = "differs"
        left = int((~best_same).sum())
        kinds = ", ".join(f"{k} {v}" for k, v in _count_kinds(tags, ~best_same).items())
        closest = describe_options(backend.name, best).split(": ", 1)[-1]
        row.reproduced_by = "no option reproduces all"
        row.note = f"closest: {closest} leaves {left} ({kinds})"
        negative = int((~best_same & np.signbit(x) & ~np.isnan(x)).sum())
        if negative:
            row.note += f"; {negative} of them negative inputs"
        if best:
            got_best = _fpemu_codes(x, f, best)
            row.note += "; first left: " + _first_mismatch(x, tags, want, got_best, f, backend.name)
    return row


def _all_codes(fmt: Format) -> np.ndarray:
    return (np.arange(1 << fmt.bits, dtype=np.int64) << fmt.code_shift).astype(fmt.code_dtype)


def compare_decode(backend: Backend, fmt: str | Format) -> Row:
    """Compare the backend's value of every code of fmt with :func:`fpemu.decode`.

    Values must agree bit for bit (so -0 differs from +0); any NaN matches any NaN.

    >>> compare_decode(NumpyBackend(), "fp16").identical
    65536
    """
    f = get_format(fmt)
    codes = _all_codes(f)
    want = backend.decode(codes, f.name)
    with np.errstate(invalid="ignore"):
        got = decode(codes, f)
    both_nan = np.isnan(want) & np.isnan(got)
    same = both_nan | (want.view(np.uint64) == got.view(np.uint64))
    row = Row("decode", f.name, backend.name, cases=int(codes.size), identical=int(same.sum()))
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        row.status = "differs"
        row.first_mismatch = f"{_code_text(int(codes[i]), f)}: {backend.name} {want[i]!r}, fpemu {got[i]!r}"
        row.reproduced_by = "(no decode options)"
    return row


# ---------------------------------------------------------------------------------------------
# GPU matrix products (torch-cuda only)
# ---------------------------------------------------------------------------------------------
#: CUDA compute capability (major, minor) -> accumulator preset (an fpemu GPU name).
CAPABILITY_PRESETS = {(7, 0): "v100", (7, 5): "t4", (8, 0): "a100", (8, 6): "ampere", (8, 7): "ampere",
                      (8, 9): "ada", (9, 0): "h100", (10, 0): "b200"}  # fmt: skip


def matmul_inputs(inputs: str, m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random A (m, k) and B (k, n) already in the input format, with exponents spread over
    about 2**-8..2**8 (so the alignment inside a block loses bits) and random signs.

    >>> a, b = matmul_inputs("e4m3", 2, 32, 3)
    >>> a.shape, b.shape, bool((encode(a, "e4m3") == encode(a, "e4m3")).all())
    ((2, 32), (32, 3), True)
    """
    from .codec import quantize

    for name, size in (("m", m), ("k", k), ("n", n)):
        _check_size(name, size, 1)
    _check_size("m * k + k * n", m * k + k * n, 1)  # the matrices drawn
    rng = np.random.default_rng(seed)
    fmt = get_format(inputs)
    span = min(8, fmt.emax - 1)

    def draw(shape):
        v = rng.uniform(1, 2, size=shape) * np.exp2(rng.integers(-span, span + 1, size=shape))
        v *= rng.choice([-1.0, 1.0], size=shape)
        return quantize(v, fmt, rounding="toward_zero" if fmt.name == "tf32" else "nearest_even")

    return draw((m, k)), draw((k, n))


def compare_matmul(
    run_matmul: Callable[[np.ndarray, np.ndarray, str], np.ndarray],
    preset: str,
    inputs: str,
    *,
    k: int,
    m: int = 64,
    n: int = 64,
    out: str = "fp32",
    backend: str = "torch-cuda",
    seed: int = 0,
) -> Row:
    """Compare a device's matrix product with fpemu's :func:`fpemu.accumulator.gemm`.

    ``run_matmul(A, B, inputs)`` returns the device's (m, n) result as float32 values (in
    ``out``'s format); A and B are float64 arrays whose values are in the input format.

    >>> from fpemu.accumulator import gemm
    >>> fake = lambda A, B, inputs: gemm(A, B, inputs=inputs, accumulator="h100")
    >>> compare_matmul(fake, "h100", "fp16", k=16, backend="fake").status
    'identical'
    """
    from .accumulator import gemm, get_accumulator

    _check_size("m * n", m * n, 1)
    A, B = matmul_inputs(inputs, m, k, n, seed)
    with np.errstate(over="ignore", invalid="ignore"):  # a device's float64 beyond fp32 becomes Inf, as on the device
        want = np.asarray(run_matmul(A, B, inputs), dtype=np.float32)
    if want.shape != (m, n):
        raise ValueError(f"{backend} returned a {want.shape} result for a ({m}, {k}) @ ({k}, {n}) product")
    acc = get_accumulator(preset, inputs)
    got = gemm(A, B, inputs=inputs, accumulator=acc, out=out)
    same = want.view(np.uint32) == got.view(np.uint32)
    row = Row(f"matmul K={k} {out}", inputs, backend, cases=int(same.size), identical=int(same.sum()))
    if acc.kind == "block":
        row.note = f"vs accumulator {acc.name} (block {acc.block}, F={acc.frac_bits}, {acc.out_rounding})"
    else:
        row.note = f"vs accumulator {acc.name} ({acc.kind} in {acc.acc_format}, exact products)"
    if not same.all():
        i, j = np.argwhere(~same)[0]
        row.status = "differs"
        row.first_mismatch = f"C[{i},{j}]: {backend} {float(want[i, j])!r}, fpemu {float(got[i, j])!r}"
        row.reproduced_by = "see `fpemu fit` / `fpemu probe` for the device's parameters"
    return row


def _torch_matmul(device: str) -> Callable[[np.ndarray, np.ndarray, str], np.ndarray]:
    """A run_matmul for compare_matmul that multiplies through torch on ``device``.

    CUDA: fp16/bf16 with fp32 output (``torch.mm(..., out_dtype=torch.float32)``), tf32
    (``allow_tf32``), FP8 through ``torch._scaled_mm`` (unit scales, fp32 output). CPU: fp32
    and fp16/bf16 matmuls (output in the input format) and ``torch._scaled_mm`` for FP8.
    """
    import torch

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "e4m3": getattr(torch, "float8_e4m3fn", None),
          "e5m2": getattr(torch, "float8_e5m2", None)}  # fmt: skip

    def run(A: np.ndarray, B: np.ndarray, inputs: str) -> np.ndarray:
        a = torch.from_numpy(A.astype(np.float32)).to(device)
        b = torch.from_numpy(B.astype(np.float32)).to(device)
        if inputs == "tf32":
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return (a @ b).cpu().numpy()
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
        if inputs == "fp32":
            return (a @ b).cpu().numpy()
        if inputs in ("fp16", "bf16") and device == "cpu":
            return (a.to(dt[inputs]) @ b.to(dt[inputs])).float().numpy()
        if inputs in ("fp16", "bf16"):
            # fp32 output straight from the unit (torch >= 2.8 on CUDA); no fp16 epilogue.
            return torch.mm(a.to(dt[inputs]), b.to(dt[inputs]), out_dtype=torch.float32).cpu().numpy()
        one = torch.tensor(1.0, device=device)
        bt = b.to(dt[inputs]).t().contiguous().t()  # _scaled_mm wants B column-major
        return torch._scaled_mm(a.to(dt[inputs]), bt, scale_a=one, scale_b=one, out_dtype=torch.float32).cpu().numpy()

    return run


def cpu_matmul_rows(ks: Sequence[int] = (16, 256, 1024)) -> list[Row]:
    """torch CPU matmuls (fp32, bf16 and fp16 with output in the input format, FP8 through
    ``torch._scaled_mm``) against fpemu's IEEE fp32 loop (exact products, one fp32 rounding
    per addition, then the output rounding)."""
    run = _torch_matmul("cpu")
    build = _torch_cpu_build()
    rows = []
    for inputs, out in (("fp32", "fp32"), ("bf16", "bf16"), ("fp16", "fp16"), ("e4m3", "fp32"), ("e5m2", "fp32")):
        for k in ks:
            try:
                row = compare_matmul(run, "fp32", inputs, k=k, out=out, backend="torch")
            except (RuntimeError, NotImplementedError, TypeError, AttributeError) as exc:
                note = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                row = Row(f"matmul K={k} {out}", inputs, "torch", status="unsupported", note=note)
            row.note = f"{row.note}; {build}" if row.note else build
            rows.append(row)
    return rows


def _torch_cpu_build() -> str:
    """What decides how torch's CPU matmul sums: its version, the vector ISA it dispatches
    to and its thread count (so a row from one machine is not read as true of every one)."""
    import torch

    try:
        isa = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        isa = "unknown ISA"
    return f"torch {torch.__version__} CPU, {isa}, {torch.get_num_threads()} threads"


def gpu_matmul_rows(device: str = "cuda") -> list[Row]:
    """GPU matmul rows: fp16, bf16, tf32, e4m3, e5m2 against this GPU's accumulator preset,
    for one block of K and for four blocks (the recursive accumulation)."""
    import torch

    from .accumulator import get_accumulator

    cap = tuple(torch.cuda.get_device_capability())
    name = torch.cuda.get_device_name()
    preset = CAPABILITY_PRESETS.get(cap)
    if preset is None:
        return [Row("matmul", "-", "torch-cuda", status="unsupported", note=f"{name} sm_{cap[0]}{cap[1]}: no preset")]
    run = _torch_matmul(device)
    rows = []
    for inputs in ("fp16", "bf16", "tf32", "e4m3", "e5m2"):
        try:
            block = get_accumulator(preset, inputs).block
        except ValueError as exc:
            rows.append(Row("matmul", inputs, "torch-cuda", status="unsupported", note=str(exc)))
            continue
        for k in (block, 4 * block):
            try:
                row = compare_matmul(run, preset, inputs, k=k)
            except (RuntimeError, TypeError, AttributeError) as exc:  # op missing on this torch/GPU
                row = Row(f"matmul K={k} fp32", inputs, "torch-cuda", status="unsupported", note=str(exc).splitlines()[0])
            row.note = f"{name}: {row.note}"
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Driver and table
# ---------------------------------------------------------------------------------------------
def backend_rows(backend: Backend, formats: Sequence[str] | None = None, n_random: int = 20000, seed: int = 0) -> list[Row]:
    """Every cross-check row of one (available) backend."""
    rows = []
    for fmt in backend.dtypes():
        if formats and get_format(fmt).name not in {get_format(f).name for f in formats}:
            continue
        skip = backend.skip_ops(fmt)
        ops = ["decode"] + [f"cast {s}" for s in backend.sources]
        for op in ops:
            if op in skip:
                if skip[op] not in ("identity", "2**32 codes"):
                    rows.append(Row(op, fmt, backend.name, status="unsupported", note=skip[op]))
                continue
            try:
                if op == "decode":
                    rows.append(compare_decode(backend, fmt))
                else:
                    rows.append(compare_cast(backend, fmt, op.split()[1], n_random, seed))
            except (RuntimeError, NotImplementedError) as exc:  # the backend's build lacks it (torch raises these)
                note = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                rows.append(Row(op, fmt, backend.name, status="unsupported", note=f"{backend.name} raised: {note}"))
    return rows


def run_crosscheck(
    backends: Sequence[str] = ("all",),
    formats: Sequence[str] | None = None,
    n_random: int = 20000,
    seed: int = 0,
    matmul: bool = True,
) -> list[Row]:
    """Run the cross-check for the named backends ("all" = every one); missing backends give
    one ``skipped`` row each."""
    names = list(BACKENDS) if "all" in backends else list(backends)
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise ValueError(f"unknown backend {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"choose from {', '.join(BACKENDS)} or all")  # fmt: skip
    if formats is not None:
        formats = [get_format(f).name for f in formats]  # an unknown name fails before any work
    _check_n_random(n_random)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rows: list[Row] = []
    for name in names:
        backend = BACKENDS[name]()
        why = backend.missing()
        if why:
            rows.append(Row("-", "-", name, status="skipped", note=why))
            continue
        rows.extend(backend_rows(backend, formats, n_random, seed))
        if name == "torch" and matmul:
            rows.extend(cpu_matmul_rows())
        if name == "torch-cuda" and matmul:
            rows.extend(gpu_matmul_rows("cuda"))
    return rows


#: Most random cases per cast: each is cast by the backend and encoded under up to ~80 option
#: sets, for every format, so the run time is proportional to it.
MAX_RANDOM = 1_000_000


def _check_n_random(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer, got {n!r}")
    if not 0 <= n <= MAX_RANDOM:
        raise ValueError(f"n (random cases per cast) must be in 0..{MAX_RANDOM:,}, got {n:,}")
    return int(n)


_COLUMNS = ("operation", "format", "backend", "cases", "identical", "first mismatch", "fpemu option that reproduces the backend")


def format_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (one line per row; notes go into the last column).

    >>> print(format_table([Row("cast f32", "e4m3", "x", 10, 10)]))
    | operation | format | backend | cases | identical | first mismatch | fpemu option that reproduces the backend |
    |---|---|---|---|---|---|---|
    | cast f32 | e4m3 | x | 10 | 10 |  | identical with default options |
    """
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for r in rows:
        if r.status == "identical":
            last = "identical with default options" + (f" ({r.note})" if r.note else "")
        elif r.status in ("skipped", "unsupported"):
            last = f"{r.status}: {r.note}"
        else:
            last = "; ".join(t for t in (r.reproduced_by, r.note) if t)
        cells = [r.operation, r.format, r.backend, str(r.cases) if r.cases else "-", str(r.identical) if r.cases else "-",
                 r.first_mismatch.replace("|", "/"), last.replace("|", "/")]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: Sequence[Row]) -> str:
    """One line: how many rows are identical, reproduced, different, skipped."""
    counts = {s: sum(r.status == s for r in rows) for s in ("identical", "reproduced", "differs", "skipped", "unsupported")}
    return ", ".join(f"{v} {k}" for k, v in counts.items() if v)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def cmd_crosscheck(args: argparse.Namespace) -> int:
    """Print the cross-check table (and write it as JSON with --json)."""
    from .vectors import atomic_output, check_output_path

    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()] if args.formats is not None else None
    if formats == []:
        raise ValueError("--formats names no format")
    if args.json:
        check_output_path(args.json)  # before a run of seconds, not after it
    _check_formats_exist(backends, formats)
    rows = run_crosscheck(backends, formats, args.n, args.seed)
    print(format_table(rows))
    print(f"\n{summary(rows)}")
    if formats:
        absent = [f for f in formats if get_format(f).name not in {r.format for r in rows}]
        if absent:
            print(f"no row for {', '.join(absent)}: no installed backend of those asked for implements it")
    if args.json:
        with atomic_output(args.json) as tmp:
            tmp.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


def _check_formats_exist(backends: Sequence[str], formats: Sequence[str] | None) -> None:
    """Refuse --formats that no backend asked for implements, when every one of them is
    installed (an empty table would look like a clean run)."""
    names = list(BACKENDS) if "all" in backends else [b for b in backends if b in BACKENDS]
    if not formats or len(names) != len(backends) and "all" not in backends:
        return  # unknown backend names: run_crosscheck says so
    present = [BACKENDS[n]() for n in names]
    if any(b.missing() for b in present):
        return  # a skipped backend might have had them
    have = {get_format(f).name for b in present for f in b.dtypes()}
    absent = [f for f in formats if get_format(f).name not in have]
    if absent:
        raise ValueError(f"{', '.join(absent)}: not implemented by {', '.join(names)}, so there is nothing to compare")


def register_cli(subparsers: Any) -> None:
    """Add ``crosscheck``, ``fit``, ``probe`` and ``vectors``."""
    p = subparsers.add_parser("crosscheck", help="compare fpemu with ml_dtypes, numpy and torch (CPU/CUDA)")
    p.add_argument("--backend", default="all", help="ml_dtypes, numpy, torch, torch-cuda or all (comma-separated)")
    p.add_argument("--formats", default=None, help="only these formats (comma-separated)")
    p.add_argument("--n", type=int, default=20000, help=f"random cases per cast (default 20000; 0: edge cases only; at most {MAX_RANDOM:,})")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON")
    p.set_defaults(func=cmd_crosscheck)

    from . import fit, vectors

    fit.register_cli(subparsers)
    vectors.register_cli(subparsers)
