"""Other libraries' and instructions' conversion rules, as fpemu options.

Libraries disagree on overflow, NaN codes and ties; fpemu offers each choice as an option
and :func:`like` names the set that reproduces one of them (docs/formats.md, "Matching another
library", says what each one does and which test checks it):

>>> like("gfloat", "e5m2")
{'nan': 'all_ones', 'directed_overflow': 'p3109'}
>>> encode([np.nan, 1e6], "e5m2", **like("gfloat", "e5m2")).tolist()  # gfloat's NaN is 0xFF
[255, 124]
>>> encode([500.0, np.inf], "e4m3", **like("torch", "e4m3")).tolist()  # torch saturates E4M3
[126, 126]
>>> like("ptx_cvt_rs", "e2m1")
{'rounding': 'stochastic_a', 'sr_bits': 8, 'overflow': 'saturate', 'nan': 'max'}

The options are keyword arguments of :func:`~fpemu.encode` and :func:`~fpemu.quantize`;
``rounding`` is included only where the convention fixes it (a later keyword overrides it:
``encode(x, fmt, **{**like("gfloat", fmt), "rounding": "rz"})``).
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the examples above)

from ..formats import Format, get_format
from .encoder import encode  # noqa: F401  (the examples above)

__all__ = ["like", "CONVENTIONS"]


def _e8m0_like(fmt: Format) -> bool:
    return fmt.mantissa_bits == 0 and not fmt.subnormals


def _nan_or_ml_dtypes(fmt: Format) -> dict:
    return {} if fmt.has_nan else {"nan": "ml_dtypes"}


def _ml_dtypes(fmt: Format) -> dict:
    """ml_dtypes' numpy casts (``astype``; C++ ``ConvertFrom<kSaturate=false, kTruncate=false>``):
    RNE (E8M0: ties away, its lowest binade up), non-saturating, NaN sign kept; formats without
    NaN: +NaN -> the -0 code, -NaN -> 0. It converts float64 through float32: pass
    ``x.astype(np.float32)`` to reproduce that double rounding."""
    return ({"rounding": "ml_dtypes_e8m0"} if _e8m0_like(fmt) else {}) | _nan_or_ml_dtypes(fmt)


def _ml_dtypes_saturate(fmt: Format) -> dict:
    """ml_dtypes' C++ ``ConvertFrom<kSaturate=true, kTruncate=false>``: finite overflow, and
    negatives and zero where there is no code (E8M0), saturate; Inf stays Inf (NaN without Inf)."""
    return _ml_dtypes(fmt) | {"overflow": "ml_dtypes_saturate"}


def _ml_dtypes_truncate(fmt: Format) -> dict:
    """ml_dtypes' C++ ``ConvertFrom<kSaturate=false, kTruncate=true>``: truncation on a grid
    unbounded above, so anything beyond the largest value is Inf/NaN, round-to-zero included."""
    return {"rounding": "toward_zero", "directed_overflow": "none"} | _nan_or_ml_dtypes(fmt)


def _gfloat(fmt: Format) -> dict:
    """gfloat's ``round_float(sat=False)`` then ``encode_float``: IEEE-style overflow except that
    round-to-odd overflows too (P3109's rule); every NaN is the all-ones code (0xFF) where the
    format has NaNs on top (P3109's signed NaN, 0x80, stays)."""
    if not fmt.has_nan:
        return {}
    return ({"nan": "all_ones"} if fmt.nan in ("ieee", "top") else {}) | {"directed_overflow": "p3109"}


def _gfloat_sat(fmt: Format) -> dict:
    """gfloat's ``round_float(sat=True)``: saturation, Inf input included."""
    return {"overflow": "saturate"} | ({"nan": "all_ones"} if fmt.nan in ("ieee", "top") else {})


def _torch(fmt: Format) -> dict:
    """PyTorch 2.13 CPU casts from float32 (``tensor.to(dtype)``), read off its headers and
    runs: E4M3 saturates (Inf too), E5M2's NaN is 0x7F/0xFF, fp16 keeps NaN payloads with the
    quiet bit, bf16's NaN is 0xFFFF (from float64: 0x7FC0, ``positive``)."""
    name = fmt.name
    if name == "e4m3":
        return {"overflow": "saturate"}
    if name == "e5m2":
        return {"nan": "ones_with_sign"}
    if name in ("e4m3fnuz", "e5m2fnuz", "fp32"):
        return {}
    if name == "fp16":
        return {"nan": "quiet_payload"}
    if name == "bf16":
        return {"nan": "all_ones"}
    raise ValueError(f"torch's cast to {name} is not an fpemu convention (torch's E8M0 drops the sign "
                     "and maps 0 to 0x00; torch has no cast to FP4/FP6)")


def _microxcaling(fmt: Format) -> dict:
    """microxcaling's element quantization (mx/elemwise_ops.py, defaults): round half away from
    zero ("nearest"), clamp to the largest normal."""
    return {"rounding": "nearest_away", "overflow": "saturate"}


def _transformer_engine(fmt: Format) -> dict:
    """TransformerEngine's casts to FP8 and FP4 (``__nv_cvt_float_to_fp8(..., __NV_SATFINITE)``,
    ``cvt.rn.satfinite.e2m1x2.f32``): RNE and saturation; only the overflow is claimed here."""
    return {"overflow": "saturate"}


def _ptx(fmt: Format, stochastic: bool) -> dict:
    if fmt.name not in ("e4m3", "e5m2", "e2m1", "e2m3", "e3m2", "fp16", "bf16"):
        raise ValueError(f"PTX cvt has no {'.rs ' if stochastic else ''}conversion to {fmt.name}")
    opts: dict = {}
    if stochastic:
        n = 13 if fmt.name == "fp16" else 16 if fmt.name == "bf16" else 8
        opts = {"rounding": "stochastic_a", "sr_bits": n}
    opts["overflow"] = "saturate"
    opts["nan"] = "ones_positive" if fmt.has_nan else "max"
    return opts


def _ptx_cvt_rn(fmt: Format) -> dict:
    """PTX ``cvt.rn.satfinite.{e4m3x2,e5m2x2,e2m1x2,e2m3x2,e3m2x2,f16x2,bf16x2}.f32``: RNE;
    ``.satfinite`` clamps overflow and Inf to +-MAX_NORM; NaN stays NaN (the all-ones
    magnitude, per NVIDIA's ISA text and third-party probes) or is +MAX_NORM in FP4/FP6."""
    return _ptx(fmt, stochastic=False)


def _ptx_cvt_rs(fmt: Format) -> dict:
    """PTX ``cvt.rs.satfinite.{e4m3x4,e5m2x4,e2m1x4,e2m3x4,e3m2x4}.f32`` (sm_100a/sm_103a):
    the random bits are added to the discarded bits and the carry rounds away (P3109's
    StochasticA), 8 random bits per value (13 for f16x2, 16 for bf16x2); saturation and NaN
    as ``ptx_cvt_rn``. Pass the kernel's own bits as ``random_bits``."""
    return _ptx(fmt, stochastic=True)


def _p3109(fmt: Format) -> dict:
    """IEEE P3109's conformance rounding (interim report v4.0, 4.5): NearestTiesToEven with
    SatNone."""
    return {"overflow": "sat_none"}


#: Every convention :func:`like` knows, with the function that gives its options.
CONVENTIONS = {
    "ml_dtypes": _ml_dtypes,
    "ml_dtypes_saturate": _ml_dtypes_saturate,
    "ml_dtypes_truncate": _ml_dtypes_truncate,
    "gfloat": _gfloat,
    "gfloat_sat": _gfloat_sat,
    "torch": _torch,
    "microxcaling": _microxcaling,
    "transformer_engine": _transformer_engine,
    "ptx_cvt_rn": _ptx_cvt_rn,
    "ptx_cvt_rs": _ptx_cvt_rs,
    "p3109": _p3109,
}


def like(convention: str, fmt: str | Format) -> dict:
    """The encode/quantize options that reproduce ``convention``'s conversion into ``fmt``.

    >>> like("ml_dtypes", "e8m0"), like("ml_dtypes", "e2m1")
    ({'rounding': 'ml_dtypes_e8m0'}, {'nan': 'ml_dtypes'})
    >>> like("numpy", "fp16")
    Traceback (most recent call last):
    ...
    ValueError: unknown convention 'numpy'; known: ml_dtypes, ml_dtypes_saturate, ml_dtypes_truncate, gfloat, gfloat_sat, torch, microxcaling, transformer_engine, ptx_cvt_rn, ptx_cvt_rs, p3109
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; known: {', '.join(CONVENTIONS)}")
    return CONVENTIONS[convention](get_format(fmt))
