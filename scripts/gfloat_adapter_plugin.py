"""A pytest plugin that runs gfloat's own test suite through fpemu's public API.

Loaded by ``scripts/run_gfloat_suite.py`` (``pytest -p gfloat_adapter_plugin``) into a run of
gfloat's tests. Before the test modules are imported it replaces gfloat's conversion functions
(``round_float``, ``round_ndarray``, ``encode_float``, ``encode_ndarray``, ``decode_float``,
``decode_ndarray``: every name a gfloat module binds them to, so the block functions
``encode_block``/``decode_block``/``quantize_block`` call them too) with versions that
translate gfloat's ``FormatInfo`` into an :class:`fpemu.Format` and its ``RoundMode``,
``sat``, ``srbits`` and ``srnumbits`` into an :class:`fpemu.Conversion`, then call
:func:`fpemu.quantize`, :func:`fpemu.encode` and :func:`fpemu.decode`. gfloat's format
descriptors (``FormatInfo`` and its properties: ``max``, ``code_of_nan``, ...) stay gfloat's,
so its tests compare fpemu's codes and values with gfloat's own description of each format.

The translation:

* A ``FormatInfo`` named ``p3109_kKpP{s|u}{e|f}`` (gfloat's ``format_info_p3109``) is
  ``fpemu.formats.p3109(K, P, signed=..., domain=...)``. Where fpemu refuses it (signed P = K,
  which IEEE P3109's interim report v4.0, section 3.1, rules out) the test is skipped with the
  reason ``not expressible: <fpemu's message>``, counted apart. Every other ``FormatInfo`` is
  a plain ``fpemu.Format`` of the same widths, bias and special codes (checked against the
  P3109 constructor for the P3109 ones too).
* ``round_float``/``round_ndarray``: rounding TiesToEven ``nearest_even``, TiesToAway
  ``nearest_away``, TowardZero ``toward_zero``, TowardPositive ``up``, TowardNegative ``down``,
  Stochastic ``stochastic_c``, StochasticFast ``stochastic_b``, StochasticFastest
  ``stochastic_a``, StochasticOdd ``stochastic_odd`` (ToOdd, in gfloat after 0.5.2, ``odd``);
  ``srnumbits``/``srbits`` are ``sr_bits``/``random_bits``; ``sat=True`` is
  ``overflow="saturate"``, ``sat=False`` the format's default overflow with
  ``directed_overflow="p3109"`` (round-to-odd overflows to Inf) where it has Inf or NaN.
* ``encode_float``/``encode_ndarray`` (truncation; a value outside [min, max] is Inf, else
  NaN, else max): ``rounding="toward_zero"``, ``directed_overflow="outside_range"`` where the
  format has Inf or NaN, and ``nan="all_ones"`` where its NaNs are on top (gfloat's
  ``code_of_nan`` is then the all-ones code).
* ``decode_float``/``decode_ndarray``: ``fpemu.decode``; the fields of gfloat's
  ``FloatValue`` besides the value (sign bit, exponent field, significand, class) are read off
  the code with the fpemu format's widths and bias.

Tensors of other array libraries (torch, JAX, array-API ones) go through NumPy and come back
in their own type. fpemu is NumPy code, so under ``torch.compile`` the fpemu call is left out
of the graph (``torch.compiler.disable``), and a JAX array (also a tracer under ``jax.jit``)
is rounded through ``jax.pure_callback``, which hands fpemu the concrete values.

At the end of the session the outcome counts and the number of calls made to each
replacement are written as JSON to the file named by ``$GFLOAT_ADAPTER_RESULT``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest

import fpemu
from fpemu.formats import Format, p3109

NOT_EXPRESSIBLE = "not expressible: "

#: gfloat's RoundMode member names and fpemu's rounding names.
ROUNDING = {
    "TiesToEven": "nearest_even",
    "TiesToAway": "nearest_away",
    "TowardZero": "toward_zero",
    "TowardPositive": "up",
    "TowardNegative": "down",
    "Stochastic": "stochastic_c",
    "StochasticFast": "stochastic_b",
    "StochasticFastest": "stochastic_a",
    "StochasticOdd": "stochastic_odd",
    "ToOdd": "odd",
}
STOCHASTIC = {"Stochastic", "StochasticFast", "StochasticFastest", "StochasticOdd"}

_P3109_NAME = re.compile(r"^p3109_k(\d+)p(\d+)([su])([ef])$")

CALLS: Counter = Counter()
RESULTS: dict[str, str] = {}  # test id -> passed, failed, not_expressible, skipped
NOT_EXPRESSIBLE_TESTS: dict[str, str] = {}
_FORMATS: dict[tuple, Any] = {}  # FormatInfo fields -> Format, or the refusal message


# ---- FormatInfo -> fpemu.Format ----------------------------------------------------------------
def _key(fi: Any) -> tuple:
    return (fi.name, fi.k, fi.precision, fi.bias, fi.is_signed, fi.domain.name, fi.has_nz,
            fi.num_high_nans, fi.has_subnormals, fi.is_twos_complement)


def _plain_format(fi: Any) -> Format:
    """The fpemu.Format with gfloat's widths, bias and special codes (raises ValueError where
    fpemu refuses those fields, NotImplementedError where no fpemu field says the same)."""
    signed, extended = bool(fi.is_signed), fi.domain.name == "Extended"
    mantissa = fi.precision - 1
    exponent = fi.k - mantissa - (1 if signed else 0)
    high = fi.num_high_nans
    if fi.is_twos_complement:
        if extended or high or fi.has_nz:
            raise NotImplementedError(f"{fi.name}: two's complement with Inf, NaN or -0")
        inf, nan = "none", "none"
    elif high == 1:  # one NaN, on the top code (with one mantissa bit, IEEE's layout too)
        if signed and not fi.has_nz:
            raise NotImplementedError(f"{fi.name}: a NaN on top and another at -0")
        inf, nan = ("below_nan" if extended else "none"), "top"
    elif mantissa >= 1 and high == (1 << mantissa) - 1:  # IEEE: exponent all ones is special
        if not (extended and fi.has_nz):
            raise NotImplementedError(f"{fi.name}: IEEE-style NaNs without Inf or without -0")
        inf, nan = "ieee", "ieee"
    elif high == 0:
        inf = "top" if extended else "none"
        nan = "neg_zero" if signed and not fi.has_nz else "none"
    else:
        raise NotImplementedError(f"{fi.name}: {high} NaNs on the top codes")
    return Format(fi.name, exponent_bits=exponent, mantissa_bits=mantissa, bias=fi.bias, signed=signed,
                  inf=inf, nan=nan, subnormals=bool(fi.has_subnormals), twos_complement=bool(fi.is_twos_complement))


def _same_format(a: Format, b: Format) -> bool:
    fields = ("exponent_bits", "mantissa_bits", "bias", "signed", "inf", "nan", "subnormals", "twos_complement")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def fpemu_format(fi: Any) -> Format:
    """fpemu's twin of a gfloat FormatInfo; skips the test (``not expressible: ...``) where
    fpemu refuses the format."""
    key = _key(fi)
    if key not in _FORMATS:
        _FORMATS[key] = _translate(fi)
    found = _FORMATS[key]
    if isinstance(found, str):
        pytest.skip(NOT_EXPRESSIBLE + found)
    return found


def _translate(fi: Any) -> Format | str:
    match = _P3109_NAME.match(fi.name)
    if match and (int(match[1]), int(match[2])) == (fi.k, fi.precision):
        signed, domain = match[3] == "s", "extended" if match[4] == "e" else "finite"
        if signed != bool(fi.is_signed) or (domain == "extended") != (fi.domain.name == "Extended"):
            raise NotImplementedError(f"{fi.name}: its fields contradict its name")
        try:
            fmt = p3109(fi.k, fi.precision, signed=signed, domain=domain)
        except ValueError as refusal:
            return str(refusal)
        plain = _plain_format(fi)
        if not _same_format(fmt, plain):
            raise AssertionError(f"adapter: p3109({fi.k}, {fi.precision}) is {fmt!r}, gfloat's fields say {plain!r}")
        return fmt
    try:
        return _plain_format(fi)
    except ValueError as refusal:
        return str(refusal)


# ---- the conversions ------------------------------------------------------------------------------
def _overflows(fmt: Format) -> bool:
    return fmt.has_inf or fmt.has_nan


def round_conversion(fmt: Format, rnd: Any, sat: bool, srbits: Any, srnumbits: int) -> fpemu.Conversion:
    """gfloat's round_float/round_ndarray options as an fpemu Conversion."""
    name = rnd.name
    if name not in ROUNDING:
        raise NotImplementedError(f"gfloat RoundMode.{name} has no fpemu rounding in this adapter")
    options: dict[str, Any] = {"rounding": ROUNDING[name]}
    if sat:
        options["overflow"] = "saturate"
    elif _overflows(fmt):
        options["directed_overflow"] = "p3109"
    if name in STOCHASTIC:
        if srbits is None:
            raise ValueError("stochastic rounding needs srbits")
        options["sr_bits"] = int(srnumbits)
        options["random_bits"] = _numpy(srbits).astype(np.int64)
    return fpemu.Conversion(**options)


def encode_conversion(fmt: Format) -> fpemu.Conversion:
    """gfloat's encode_float/encode_ndarray (truncation, outside [min, max]: Inf, NaN, max)."""
    options: dict[str, Any] = {"rounding": "toward_zero"}
    if _overflows(fmt):
        options["directed_overflow"] = "outside_range"
    if fmt.nan in ("ieee", "top"):
        options["nan"] = "all_ones"
    return fpemu.Conversion(**options)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _numpy(x: Any) -> np.ndarray:
    if _is_torch(x):
        return x.detach().cpu().numpy()
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return np.asarray(x)
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        return np.from_dlpack(x)


def _round_numpy(fi: Any, v: Any, rnd: Any, sat: bool, srbits: Any, srnumbits: int) -> np.ndarray:
    fmt = fpemu_format(fi)
    arr = _numpy(v)
    if arr.dtype.kind not in "f":
        arr = arr.astype(np.float64)
    return fpemu.quantize(arr, fmt, conversion=round_conversion(fmt, rnd, sat, srbits, srnumbits))


_ROUND_TORCH = None


def _round_torch(fi: Any, v: Any, rnd: Any, sat: bool, srbits: Any, srnumbits: int) -> Any:
    """round_ndarray of a torch tensor: fpemu on its NumPy copy, out of any compiled graph."""
    global _ROUND_TORCH
    if _ROUND_TORCH is None:
        import torch

        def eager(fi: Any, v: Any, rnd: Any, sat: bool, srbits: Any, srnumbits: int) -> Any:
            out = _round_numpy(fi, v, rnd, sat, srbits, srnumbits)
            return torch.as_tensor(out, device=v.device).to(v.dtype)

        _ROUND_TORCH = torch.compiler.disable(eager)
    return _ROUND_TORCH(fi, v, rnd, sat, srbits, srnumbits)


def _is_jax(x: Any) -> bool:
    """A JAX array, concrete or a tracer under ``jax.jit`` (both are ``jax.Array``)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def _round_jax(fi: Any, v: Any, rnd: Any, sat: bool, srbits: Any, srnumbits: int) -> Any:
    """round_ndarray of a JAX array: fpemu on its NumPy copy through ``jax.pure_callback``, so
    that under ``jax.jit`` the NumPy code runs on the concrete values, not on the tracer."""
    import jax

    def host(x: Any, *bits: Any) -> np.ndarray:
        out = _round_numpy(fi, np.asarray(x), rnd, sat, np.asarray(bits[0]) if bits else None, srnumbits)
        return np.asarray(out, dtype=x.dtype)

    args = (v,) if srbits is None else (v, srbits)
    return jax.pure_callback(host, jax.ShapeDtypeStruct(v.shape, v.dtype), *args, vmap_method="sequential")


def _default_round_mode() -> Any:
    from gfloat import RoundMode

    return RoundMode.TiesToEven


def round_float(fi: Any, v: float, rnd: Any = None, sat: bool = False, srbits: int = -1,
                srnumbits: int = 0) -> float:
    """gfloat.round_float through fpemu.quantize."""
    CALLS["round_float"] += 1
    rnd = _default_round_mode() if rnd is None else rnd
    bits = np.array([srbits]) if rnd.name in STOCHASTIC else None
    return float(_round_numpy(fi, np.array([v], dtype=np.float64), rnd, sat, bits, srnumbits)[0])


def round_ndarray(fi: Any, v: Any, rnd: Any = None, sat: bool = False, srbits: Any = None,
                  srnumbits: int = 0) -> Any:
    """gfloat.round_ndarray through fpemu.quantize, in the input's array type."""
    CALLS["round_ndarray"] += 1
    rnd = _default_round_mode() if rnd is None else rnd
    if _is_torch(v):
        return _round_torch(fi, v, rnd, sat, srbits, srnumbits)
    if _is_jax(v):
        return _round_jax(fi, v, rnd, sat, srbits, srnumbits)
    out = _round_numpy(fi, v, rnd, sat, srbits, srnumbits)
    if isinstance(v, np.ndarray) or np.isscalar(v):
        return out
    import array_api_compat  # another array library: back into its own type

    return array_api_compat.array_namespace(v).asarray(out)


def encode_float(fi: Any, v: float) -> int:
    """gfloat.encode_float through fpemu.encode."""
    CALLS["encode_float"] += 1
    fmt = fpemu_format(fi)
    return int(fpemu.encode(np.array([v], dtype=np.float64), fmt, conversion=encode_conversion(fmt))[0])


def encode_ndarray(fi: Any, v: Any) -> np.ndarray:
    """gfloat.encode_ndarray through fpemu.encode (codes as uint64, as gfloat gives them)."""
    CALLS["encode_ndarray"] += 1
    fmt = fpemu_format(fi)
    arr = _numpy(v)
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    return fpemu.encode(arr, fmt, conversion=encode_conversion(fmt)).astype(np.uint64)


def decode_ndarray(fi: Any, codes: Any, np: Any = np) -> Any:  # (gfloat's signature: np unused)
    """gfloat.decode_ndarray through fpemu.decode (float64 values)."""
    CALLS["decode_ndarray"] += 1
    return fpemu.decode(_numpy(codes), fpemu_format(fi))


def decode_float(fi: Any, i: int) -> Any:
    """gfloat.decode_float through fpemu.decode; the other FloatValue fields read off the code."""
    CALLS["decode_float"] += 1
    from gfloat.types import FloatClass, FloatValue

    fmt = fpemu_format(fi)
    code = int(i)
    given = np.array([code], dtype=np.uint64 if code >= 0 else np.int64)  # (binary64 codes need all 64 bits)
    fval = float(fpemu.decode(given, fmt)[0])  # a code out of range: ValueError
    man, ex = fmt.mantissa_bits, fmt.exponent_bits
    signbit = (code >> (ex + man)) & 1 if fmt.signed else 0
    exp = (code >> man) & ((1 << ex) - 1)
    significand = code & ((1 << man) - 1)
    if fmt.twos_complement and signbit:
        significand = (1 << man) - significand
    low = fmt.subnormals and exp == 0  # zero and subnormals: the binade of emin, no leading 1
    expval = fmt.emin if low else exp - fmt.bias
    fsignificand = significand * 2.0**-man + (0.0 if low else 1.0)
    if np.isnan(fval):
        fclass = FloatClass.NAN
    elif np.isinf(fval):
        fclass = FloatClass.INFINITE
    elif fval == 0:
        fclass = FloatClass.ZERO
    elif abs(fval) >= fmt.min_normal:
        fclass = FloatClass.NORMAL
    else:
        fclass = FloatClass.SUBNORMAL
    return FloatValue(code, fval, exp, expval, significand, fsignificand, signbit, fclass)


REPLACEMENTS = {f.__name__: f for f in (round_float, round_ndarray, encode_float, encode_ndarray,
                                        decode_float, decode_ndarray)}


# ---- pytest hooks ------------------------------------------------------------------------------------
def install() -> list[str]:
    """Replace gfloat's conversion functions wherever a gfloat module binds them; returns the
    places replaced (module.name)."""
    import gfloat

    originals = {getattr(gfloat, name): name for name in REPLACEMENTS}
    replaced = []
    for modname, module in list(sys.modules.items()):
        if module is None or not (modname == "gfloat" or modname.startswith("gfloat.")):
            continue
        for attr, value in list(vars(module).items()):
            name = originals.get(value) if callable(value) else None
            if name is not None:
                setattr(module, attr, REPLACEMENTS[name])
                replaced.append(f"{modname}.{attr}")
    return replaced


_REPLACED: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    _REPLACED.extend(install())


def pytest_report_header(config: pytest.Config) -> str:
    return "gfloat adapter: fpemu " + fpemu.__version__ + " replaces " + ", ".join(sorted(_REPLACED))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:  # a module that does not import is a failure, not a skip
        RESULTS[report.nodeid or "<collection>"] = "failed"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """One outcome a test: failed if any phase failed, else skipped (not expressible, or
    otherwise), else passed."""
    if report.failed:
        RESULTS[report.nodeid] = "failed"
    elif report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(NOT_EXPRESSIBLE):
            RESULTS[report.nodeid] = "not_expressible"
            NOT_EXPRESSIBLE_TESTS[report.nodeid] = reason
        else:
            RESULTS.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        RESULTS.setdefault(report.nodeid, "passed")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("GFLOAT_ADAPTER_RESULT")
    if not path:
        return
    result = {"outcomes": dict(Counter(RESULTS.values())), "calls": dict(CALLS), "replaced": sorted(_REPLACED),
              "not_expressible": NOT_EXPRESSIBLE_TESTS, "exitstatus": int(exitstatus),
              "fpemu": fpemu.__version__}
    with open(path, "w") as out:
        json.dump(result, out, indent=1)
