"""Casts and decodes of a backend compared code for code with fpemu, and the search for the
fpemu options that reproduce the backend (``torch saturates: overflow='saturate'``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..backends import Backend
from ..backends import NumpyBackend  # noqa: F401  (used by the doctests of compare_cast and compare_decode)
from ..cases import UINT_OF, edge_cases, random_cases
from ..codec import decode, encode, like, resolve_convention
from ..formats import Format, get_format
from .table import Row

_SOURCE_TYPES = {"f32": np.float32, "f64": np.float64}


_RAISES = -1  # fpemu's code where it raises (NaN into a format without NaN, nan='raise')


def _fpemu_codes(x: np.ndarray, fmt: Format, options: dict) -> np.ndarray:
    """fpemu's codes (right-aligned, int64) for x under options; -1 where fpemu raises."""
    opts = dict(options)
    with np.errstate(invalid="ignore", over="ignore"):
        return _fpemu_codes_quiet(x, fmt, opts)


def _fpemu_codes_quiet(x: np.ndarray, fmt: Format, opts: dict) -> np.ndarray:
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
    overflows = [None, "saturate", "saturate_propagate", "ml_dtypes_saturate"]
    overflows += ["inf"] if fmt.has_inf else []
    overflows += ["nan"] if fmt.has_nan else []
    ones = ["all_ones", "ones_with_sign", "ones_positive"] if fmt.nan in ("ieee", "top") else []
    nans = [None] + (["positive"] if fmt.has_nan and fmt.signed else []) + ones
    nans += ["payload", "quiet_payload"] if fmt.nan == "ieee" else []
    nans += [] if fmt.has_nan else ["zero", "max", "ml_dtypes"] if fmt.signed else ["zero", "max"]
    nans += ["ml_dtypes"] if fmt.has_nan and not fmt.signed and fmt.subnormals else []
    roundings = ["nearest_even", "nearest_away"]
    roundings += ["ml_dtypes_e8m0"] if fmt.mantissa_bits == 0 and not fmt.subnormals else []
    # Casting float64 through float32 is a real backend behaviour (double rounding) except into
    # fp32 itself, where it would be the cast under test.
    vias = [False, True] if source == "f64" and fmt.name != "fp32" else [False]
    grid = []
    for rounding, overflow, nan, via in itertools.product(roundings, overflows, nans, vias):
        opts = {}
        if rounding != "nearest_even":
            opts["rounding"] = rounding
        if overflow is not None:
            opts["overflow"] = overflow
        if nan is not None:
            opts["nan"] = nan
        if via:
            opts["via"] = "fp32"
        grid.append(opts)
    return sorted(grid, key=len)


_EXPLAIN = {
    ("overflow", "saturate"): "saturates",
    ("overflow", "saturate_propagate"): "saturates finite overflow but keeps Inf",
    ("overflow", "inf"): "overflows to Inf",
    ("overflow", "nan"): "overflows to NaN",
    ("rounding", "nearest_away"): "rounds ties away from zero",
    ("rounding", "ml_dtypes_e8m0"): "rounds E8M0 ties up and (2^-127, 2^-126) to 2^-126",
    ("overflow", "ml_dtypes_saturate"): "saturates finite overflow, Inf to Inf/NaN",
    ("nan", "all_ones"): "gives NaN every bit set",
    ("nan", "ones_with_sign"): "gives NaN every magnitude bit set, with the sign",
    ("nan", "ones_positive"): "gives NaN every magnitude bit set, positive",
    ("nan", "max"): "turns NaN into +max",
    ("nan", "positive"): "drops the NaN sign",
    ("nan", "payload"): "keeps NaN payload bits",
    ("nan", "quiet_payload"): "keeps NaN payload bits and sets the quiet bit",
    ("nan", "zero"): "turns NaN into 0",
    ("nan", "ml_dtypes"): "turns NaN into ml_dtypes' codes",
    ("nan", "ml_dtypes", "unsigned"): "sends every negative input but -0 to NaN",
    ("via", "fp32"): "casts float64 through float32 (double rounding)",
}


def describe_options(backend: str, options: dict, fmt: Format | None = None) -> str:
    """Say what an option set means (for fmt, where the meaning depends on it), e.g.
    "torch saturates: overflow='saturate'".

    >>> describe_options("torch", {"overflow": "saturate"})
    "torch saturates: overflow='saturate'"
    >>> describe_options("ml_dtypes", {"via": "fp32"})
    "ml_dtypes casts float64 through float32 (double rounding): via='fp32'"
    >>> describe_options("ml_dtypes", {"nan": "ml_dtypes"}, get_format("ue5m3"))
    "ml_dtypes sends every negative input but -0 to NaN: nan='ml_dtypes'"
    """
    if not options:
        return "default options"
    unsigned = fmt is not None and not fmt.signed
    what = " and ".join(_EXPLAIN[(k, v, "unsigned") if unsigned and (k, v) == ("nan", "ml_dtypes") else (k, v)]
                        for k, v in options.items())
    args = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return f"{backend} {what}: {args}"


def _hex(value: Any, dtype: np.dtype) -> str:
    width = dtype.itemsize * 2
    return f"0x{int(np.asarray(value, dtype=dtype).view(UINT_OF[dtype])):0{width}X}"


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
    row = Row(f"cast {source}", f.name, backend.label(), cases=int(x.size))
    got = _fpemu_codes(x, f, {})
    same = want == got
    row.identical = int(same.sum())
    _check_convention(row, backend, x, want, f)
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
        row.status, row.reproduced_by = "reproduced", describe_options(backend.name, best, f)
    else:
        row.status = "differs"
        left = int((~best_same).sum())
        kinds = ", ".join(f"{k} {v}" for k, v in _count_kinds(tags, ~best_same).items())
        closest = describe_options(backend.name, best, f).split(": ", 1)[-1]
        row.reproduced_by = "no option reproduces all"
        row.note = f"closest: {closest} leaves {left} ({kinds})"
        negative = int((~best_same & np.signbit(x) & ~np.isnan(x)).sum())
        if negative:
            row.note += f"; {negative} of them negative inputs"
        if best:
            got_best = _fpemu_codes(x, f, best)
            row.note += "; first left: " + _first_mismatch(x, tags, want, got_best, f, backend.name)
    return row


def _check_convention(row: Row, backend: Backend, x: np.ndarray, want: np.ndarray, fmt: Format) -> None:
    """Say in the row whether ``like(backend's convention)``, for the installed release,
    reproduces every case: the claim a user relies on."""
    if backend.convention is None:
        return
    try:
        name = resolve_convention(backend.convention)
        opts = like(name, fmt)
    except ValueError as e:
        row.convention = f"like({backend.convention!r}): {e}"
        return
    if any(k in opts for k in ("sr_bits", "random_bits")):
        return
    left = int((want != _fpemu_codes(x, fmt, opts)).sum())
    row.convention = f"like({name!r}) " + ("reproduces every case" if not left else f"leaves {left} of {row.cases}")


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
    row = Row("decode", f.name, backend.label(), cases=int(codes.size), identical=int(same.sum()))
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        row.status = "differs"
        row.first_mismatch = f"{_code_text(int(codes[i]), f)}: {backend.name} {want[i]!r}, fpemu {got[i]!r}"
        row.reproduced_by = "(no decode options)"
    return row
