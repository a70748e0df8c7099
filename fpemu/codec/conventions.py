"""Other libraries' and instructions' rules, in one table: for each release of a library (or
a specification), how it converts real numbers into a format (:func:`like`), how it scales MX
blocks (``fpemu.mx.quantize(convention=...)``) and which NVFP4 arithmetic it follows.

Libraries disagree on overflow, NaN codes, ties and scales; fpemu offers each choice as an
option, and a convention names the set that reproduces one library (docs/formats.md and
docs/mx.md, "Matching another library", say what each one does, which releases were checked
and which test checks it):

>>> like("gfloat", "e5m2")
Conversion(nan='all_ones', directed_overflow='p3109')
>>> encode([np.nan, 1e6], "e5m2", conversion=like("gfloat", "e5m2")).tolist()  # gfloat's NaN is 0xFF
[255, 124]
>>> encode([500.0, np.inf], "e4m3", **like("torch", "e4m3")).tolist()  # torch saturates E4M3
[126, 126]
>>> like("ptx_cvt_rs", "e2m1")
Conversion(rounding='stochastic_a', overflow='saturate', nan='max', sr_bits=8)

One spelling per library and release: the library's import name (``ml_dtypes``,
``transformer_engine``, ``torchao``; a variant of it after an underscore: ``gfloat_sat``,
``torchao_triton``), then ``-`` and the release series (``ml_dtypes-0.6``,
``transformer_engine-2.13``). A plain name follows the installed release, or the newest rules
when the library is not installed (:func:`resolve_convention` says which one a name means,
for element rules, MX rules or NVFP4's alike); a specification (``p3109``, ``ptx_cvt_rn``)
has one rule set and no release. Any other spelling is refused, naming the closest:

>>> like("ml_dtypes-0.6", "e8m0"), like("ml_dtypes-0.7", "e8m0")
(Conversion(rounding='ml_dtypes_e8m0', via='fp32'), Conversion(rounding='nearest_away'))
>>> resolve_convention("transformer-engine-2.13", "mx")
Traceback (most recent call last):
...
ValueError: unknown convention 'transformer-engine-2.13'; did you mean transformer_engine-2.13, transformer_engine-2.12 or transformer_engine? choose one of transformer_engine, torchao, torchao_triton; a library's name takes a release too (transformer_engine-2.13)

like() gives a :class:`~fpemu.Conversion`, which every converting function takes as
``conversion=``; it fixes only what the convention fixes, so a keyword adds the rest
(``encode(x, fmt, conversion=like("gfloat", fmt), rounding="rz")``), and
``like(...).replace(rounding="rz")`` changes a field it fixes. It also reads as the mapping of
those options, so ``encode(x, fmt, **like(...))`` works as when like() returned a dict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np  # noqa: F401  (the examples above)

from ..arguments import option_name, unknown_name
from ..formats import Format, get_format
from .option_names import ROUNDING_MODES
from .encoder import encode  # noqa: F401  (the examples above)
from .library_versions import installed_version, parse_version, pick_series
from .options import Conversion

__all__ = ["like", "resolve_convention", "convention_rules", "names_with", "CONVENTIONS", "Rules", "MXRule", "MXBlocks"]

#: Releases that no rule set reproduces, with the reason (a plain name refuses them).
UNSUPPORTED_RELEASES = {
    ("ml_dtypes", "0.5.0"): "ml_dtypes 0.5.0 rounds E8M0 ties to even, unlike every later release "
                            "(0.5.1 fixed it); install ml_dtypes>=0.5.1",
}


def _via_fp32(fmt: Format) -> dict:
    """The library converts wider input to float32 first (round to nearest even), then rounds
    again; into fp32 itself that first step is the cast."""
    return {} if fmt.name == "fp32" else {"via": "fp32"}


def _e8m0_rounding(fmt: Format, mode: str) -> dict:
    """``rounding=mode`` for formats like E8M0 (no mantissa bits, no zero), else nothing:
    ml_dtypes rounds those apart from its other formats."""
    return {"rounding": mode} if fmt.mantissa_bits == 0 and not fmt.subnormals else {}


def _nan_or_ml_dtypes(fmt: Format) -> dict:
    # ml_dtypes' NaN codes are defined for its signed formats; elsewhere NaN stays refused.
    return {} if fmt.has_nan or not fmt.signed else {"nan": "ml_dtypes"}


def _astype_nan(fmt: Format) -> dict:
    """ml_dtypes 0.7's ``astype`` NaN rules: the codes of formats without NaN, and in unsigned
    formats with NaN and zero (its float8_e5m3fnu, new in 0.7) every negative input but -0 is
    NaN, even one that rounds to zero (fpemu's default gives those +0)."""
    if not fmt.signed and fmt.has_nan and fmt.subnormals:
        return {"nan": "ml_dtypes"}
    return _nan_or_ml_dtypes(fmt)


def _ml_dtypes_05(fmt: Format) -> dict:
    """ml_dtypes 0.5.1 to 0.6 numpy casts (``astype``; C++ ``ConvertFrom<kSaturate=false,
    kTruncate=false>``): RNE (E8M0: ties away, its lowest binade up), non-saturating, NaN sign
    kept; formats without NaN: +NaN -> the -0 code, -NaN -> 0; float64 goes through float32
    (rounded twice)."""
    return _e8m0_rounding(fmt, "ml_dtypes_e8m0") | _nan_or_ml_dtypes(fmt) | _via_fp32(fmt)


def _ml_dtypes_07(fmt: Format) -> dict:
    """ml_dtypes 0.7 numpy casts: as 0.6, but float64 is rounded once, and E8M0 rounds plainly
    to nearest, ties away (the lowest binade no longer goes up); float8_e5m3fnu (new in 0.7)
    sends every negative input but -0 to NaN (``nan="ml_dtypes"``)."""
    return _e8m0_rounding(fmt, "nearest_away") | _astype_nan(fmt)


def _ml_dtypes_saturate(fmt: Format) -> dict:
    """ml_dtypes' C++ ``ConvertFrom<kSaturate=true, kTruncate=false>`` (float8.h, read at
    v0.6.0): finite overflow, and negatives and zero where there is no code (E8M0), saturate;
    Inf stays Inf (NaN without Inf). C++ converts the value it is given: no float32 step."""
    return _e8m0_rounding(fmt, "ml_dtypes_e8m0") | _nan_or_ml_dtypes(fmt) | {
        "overflow": "ml_dtypes_saturate"}


def _ml_dtypes_truncate(fmt: Format) -> dict:
    """ml_dtypes' C++ ``ConvertFrom<kSaturate=false, kTruncate=true>`` (read at v0.6.0):
    truncation on a grid unbounded above, so anything beyond the largest value is Inf/NaN,
    round-to-zero included; formats with neither clamp to their largest value."""
    overflows = fmt.has_inf or fmt.has_nan
    return {"rounding": "toward_zero"} | ({"directed_overflow": "none"} if overflows else {}) | _nan_or_ml_dtypes(fmt)


def _gfloat(fmt: Format) -> dict:
    """gfloat's ``round_float(sat=False)`` then ``encode_float``: IEEE-style overflow except that
    round-to-odd overflows too (P3109's rule); every NaN is the all-ones code (0xFF) where the
    format has NaNs on top (P3109's signed NaN, 0x80, stays)."""
    if not fmt.has_nan:
        return {}
    return ({"nan": "all_ones"} if fmt.nan in ("ieee", "top") else {}) | {"directed_overflow": "p3109"}


def _gfloat_encode(fmt: Format) -> dict:
    """gfloat's ``encode_float`` of a value it is given unrounded: truncation, except that a
    value outside [min, max] is Inf, else NaN, else saturates (so 449 is NaN in E4M3, where
    truncation gives 448); NaN is the all-ones code where the format has NaNs on top."""
    outside = {"directed_overflow": "outside_range"} if fmt.has_nan else {}
    return {"rounding": "toward_zero"} | outside | ({"nan": "all_ones"} if fmt.nan in ("ieee", "top") else {})


def _gfloat_sat(fmt: Format) -> dict:
    """gfloat's ``round_float(sat=True)``: saturation, Inf input included."""
    return {"overflow": "saturate"} | ({"nan": "all_ones"} if fmt.nan in ("ieee", "top") else {})


def _torch(fmt: Format) -> dict:
    """PyTorch 2.13 CPU casts (``tensor.to(dtype)``), read off its headers and runs: E4M3
    saturates (Inf too), E5M2's NaN is 0x7F/0xFF, fp16 keeps NaN payloads with the quiet bit,
    bf16's NaN is 0xFFFF; float64 goes through float32 (rounded twice). One exception no
    option can follow: from float64, bf16 NaNs in the scalar tail of the vectorized loop (the
    last ``n % 16`` elements of the tensor, all of a shorter one) are 0x7FC0."""
    name = fmt.name
    if name == "e4m3":
        opts: dict = {"overflow": "saturate"}
    elif name == "e5m2":
        opts = {"nan": "ones_with_sign"}
    elif name in ("e4m3fnuz", "e5m2fnuz", "fp32"):
        opts = {}
    elif name == "fp16":
        opts = {"nan": "quiet_payload"}
    elif name == "bf16":
        opts = {"nan": "all_ones"}
    else:
        raise ValueError(f"torch's cast to {name} is not an fpemu convention (torch's E8M0 drops the sign "
                         "and maps 0 to 0x00; torch has no cast to FP4/FP6)")
    return opts | _via_fp32(fmt)


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


# CUDA 13.0's host conversions (cuda_fp8.hpp, cuda_fp6.hpp, cuda_fp4.hpp, cuda_bf16.hpp,
# cuda_fp16.hpp, read in CUDA 13.0): per target format, the roundings its intrinsics offer
# (the first is the struct constructors' choice) and whether they take __nv_saturation_t.
_CUDA_ROUNDINGS = {
    "e4m3": ("nearest_even",), "e5m2": ("nearest_even",),
    "e2m3": ("nearest_even", "toward_zero"), "e3m2": ("nearest_even", "toward_zero"),
    "e2m1": ("nearest_even", "toward_zero"),
    "e8m0": ("up", "toward_zero"),
    "bf16": ("nearest_even", "toward_zero", "down", "up"), "fp16": ("nearest_even", "toward_zero", "down", "up"),
}
_CUDA_SATURATES = ("e4m3", "e5m2", "e8m0")
#: The C types a CUDA conversion takes, per target format (``__nv_cvt_<source>_to_*``,
#: ``__float2half_r*``, ``__double2bfloat16``; half into E8M0: the ``__nv_fp8_e8m0(__half)``
#: constructor).
_CUDA_SOURCES = {
    "bf16": ("float", "double"), "fp16": ("float", "double"),
    "e8m0": ("float", "double", "half", "bfloat16"),
}

#: The C type of each NumPy dtype a ``source=`` may name instead.
_CUDA_DTYPES = {"float32": "float", "float64": "double", "float16": "half", "bfloat16": "bfloat16"}


def _cuda_13(fmt: Format, source: str = "float", saturate: bool | None = None, rounding: str | None = None) -> dict:
    """CUDA 13.0's host conversions, as its headers define them (compiled by nvcc without a
    GPU: NVIDIA's software model of ``cvt``). ``source``: the C type converted (``float``,
    ``double``, ``half``, ``bfloat16``, or the NumPy dtype); ``saturate``: ``__NV_SATFINITE`` (True, the
    constructors' choice) or ``__NV_NOSAT`` (False), FP8 and E8M0 only; ``rounding``: the
    ``cudaRoundMode`` or ``_r*`` suffix, in fpemu's names.

    * FP8: RNE. float, half and bfloat16 become a float whose NaN is made +0x7FFFFFFF first,
      so every NaN is 0x7F (``nan="ones_positive_input"`` in E4M3, where an overflow under
      ``__NV_NOSAT`` is 0x7F with the sign: -500 -> 0xFF); from double the NaN keeps its
      sign (E4M3: 0x7F | sign) and E5M2 keeps the top payload bit, quiet (0x7E | m | sign).
      ``__NV_SATFINITE`` clamps overflow and Inf to +-max; ``__NV_NOSAT``: E4M3 NaN, E5M2 Inf.
    * FP6/FP4 (``cudaRoundNearest`` or ``cudaRoundZero``): saturating, NaN -> +max.
    * E8M0 (``cudaRoundZero`` or ``cudaRoundPosInf``): the magnitude |x| is rounded and zero
      (and everything below 2**-127) is 0x00 (``no_code="magnitude"``); NaN is 0xFF;
      ``__NV_SATFINITE`` gives 0xFE for overflow and Inf, ``__NV_NOSAT`` 0xFF.
    * bf16/half (``_rn``, ``_rz``, ``_rd``, ``_ru``; from double: RNE, rounded once): IEEE
      overflow, every NaN 0x7FFF.
    """
    name = fmt.name
    if not isinstance(source, str):  # a NumPy dtype (or ml_dtypes' bfloat16) names the C type
        source = _CUDA_DTYPES.get(np.dtype(source).name, str(source))
    if name not in _CUDA_ROUNDINGS:
        raise ValueError(f"CUDA 13.0 has no host conversion to {name}; it converts to "
                         f"{', '.join(_CUDA_ROUNDINGS)}")
    sources = _CUDA_SOURCES.get(name, ("float", "double", "half", "bfloat16"))
    if source not in sources:
        raise ValueError(f"CUDA 13.0 converts {', '.join(sources)} to {name}, not {source!r}")
    offered = ("nearest_even",) if name in ("bf16", "fp16") and source == "double" else _CUDA_ROUNDINGS[name]
    chosen = offered[0] if rounding is None else ROUNDING_MODES.get(rounding) if isinstance(rounding, str) else None
    if chosen not in offered:
        raise ValueError(f"CUDA 13.0 rounds {source} to {name} by {', '.join(offered)}, not {rounding!r}")
    if saturate is not None and not isinstance(saturate, bool):
        raise TypeError(f"saturate must be True (__NV_SATFINITE) or False (__NV_NOSAT), got {saturate!r}")
    if name not in _CUDA_SATURATES and saturate is not None:
        raise ValueError(f"CUDA 13.0's conversions to {name} take no __nv_saturation_t "
                         f"({'always saturating' if fmt.bits < 8 else 'IEEE overflow'})")
    opts: dict = {"rounding": chosen}
    if name in _CUDA_SATURATES:
        opts |= {"overflow": "saturate"} if saturate is None or saturate else {}
    if name == "e4m3":
        opts["nan"] = "sign" if source == "double" else "ones_positive_input"
    elif name == "e5m2":
        opts["nan"] = "quiet_payload" if source == "double" else "ones_positive"
    elif name == "e8m0":
        opts["no_code"] = "magnitude"
    elif name in ("bf16", "fp16"):
        opts["nan"] = "ones_positive"
    else:  # FP6, FP4
        opts |= {"overflow": "saturate", "nan": "max"}
    return opts


def _p3109(fmt: Format) -> dict:
    """IEEE P3109's conformance rounding (interim report v4.0, 4.5): NearestTiesToEven with
    SatNone."""
    return {"overflow": "sat_none"}


_Rule = Callable[[Format], dict]


# ---- MX blocks ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class MXRule:
    """How one library computes an MX block, beyond the block format (SPEC.md section 3 gives
    the OCP MX v1.0 rule; ``fpemu.mx.quantize`` applies this one).

    Attributes:
        scale: the scale rule: ``floor``, ``ceil``, ``even``, ``rceil`` (see docs/mx.md), or
            ``rceil_log2``: ``ceil(log2(fp32(amax / max_elem)))`` with log2 rounded to float32
            (torchao's eager RCEIL, one code low just above a power of two).
        inf: a block holding Inf (and no NaN): ``nan`` (scale 0xFF, the spec), ``saturate``
            (0xFE, Inf elements at +-max) or ``exponent`` (the scale read off Inf's exponent
            field, ``255 - emax_elem``, Inf elements at +-max: torchao's FLOOR/CEIL/EVEN).
        nan: ``block`` (a NaN makes the block's scale 0xFF) or ``ignore`` (the amax skips
            NaNs, as CUDA's fmaxf does, and each NaN element gets the positive NaN code 0x7F).
        code0: the divisor of a block with scale code 0: ``exact`` (2**-127), ``one`` (1.0:
            the elements are not scaled) or ``min_normal`` (2**-126).
        code254: the divisor of a block with scale code 0xFE: ``exact`` (2**127) or ``zero``
            (the reciprocal is 0, so every element becomes +-0 and Inf becomes NaN).
    """

    scale: str
    inf: str
    nan: str = "block"
    code0: str = "exact"
    code254: str = "exact"

    @property
    def is_spec(self) -> bool:
        """Whether only the OCP options (scale rounding, Inf handling) are in play."""
        return (self.nan, self.code0, self.code254) == ("block", "exact", "exact") and self.inf != "exponent"


@dataclass(frozen=True)
class MXBlocks:
    """One library release's MX quantization: the block formats it offers, its default scale
    rounding, its rule per scale rounding, and where the rules were read."""

    formats: tuple[str, ...]
    default: str
    rules: dict[str, MXRule]
    source: str


_FP8 = ("mxfp8_e4m3", "mxfp8_e5m2")
_TORCHAO_FORMATS = _FP8 + ("mxfp6_e3m2", "mxfp6_e2m3", "mxfp4")

_TORCHAO_MX = MXBlocks(
    _TORCHAO_FORMATS, "floor",
    {"floor": MXRule("floor", "exponent", code0="min_normal"),
     "ceil": MXRule("ceil", "exponent", code0="min_normal"),
     "even": MXRule("even", "exponent", code0="min_normal"),
     "rceil": MXRule("rceil_log2", "saturate", code0="one")},
    "torchao 0.18.0 to_mx, eager (torchao/prototype/mx_formats/mx_tensor.py)")
_TORCHAO_TRITON_MX = MXBlocks(
    ("mxfp8_e4m3",), "rceil", {"rceil": MXRule("rceil", "saturate", code0="one")},
    "torchao 0.18.0 triton_to_mxfp8_dim0/dim1, PTX path (torchao/prototype/mx_formats/kernels.py)")
_TE_212_MX = MXBlocks(
    _FP8, "rceil", {"rceil": MXRule("rceil", "saturate", nan="ignore", code0="one", code254="zero")},
    "TransformerEngine 2.6-2.12 MXFP8 cast (common/util/ptx.cuh exp2f_rcp)")
_TE_213_MX = MXBlocks(
    _FP8, "rceil", {"rceil": MXRule("rceil", "saturate", nan="ignore")},
    "TransformerEngine 2.13-2.18 MXFP8 cast (common/util/ptx.cuh exp2f_rcp)")


# ---- the table ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rules:
    """What fpemu reproduces of one release of a library (or of a specification): its
    element conversion (:func:`like`; a function of the format), its MX block quantization,
    and its NVFP4 arithmetic (``variant=`` of ``fpemu.mx.quantize``: ``te`` or ``torchao``).
    None where fpemu has no rules for that part of it. ``choices``: the keywords its element
    rule takes beyond the format (a library call's own arguments, such as CUDA's
    ``__nv_saturation_t``), passed through :func:`like`."""

    elements: _Rule | None = None
    mx: MXBlocks | None = None
    nvfp4: str | None = None
    choices: tuple[str, ...] = ()

    def has(self, part: str) -> bool:
        """Whether this release has rules for ``part`` (``elements``, ``mx`` or ``nvfp4``)."""
        return getattr(self, part) is not None


#: Every convention: the library whose installed release picks the rules (None: a
#: specification, one rule set) and the rules per release series, oldest first.
CONVENTIONS: dict[str, tuple[str | None, dict[str, Rules]]] = {
    "ml_dtypes": ("ml_dtypes", {"0.5": Rules(_ml_dtypes_05), "0.6": Rules(_ml_dtypes_05), "0.7": Rules(_ml_dtypes_07)}),
    "ml_dtypes_saturate": ("ml_dtypes", {"0.6": Rules(_ml_dtypes_saturate)}),
    "ml_dtypes_truncate": ("ml_dtypes", {"0.6": Rules(_ml_dtypes_truncate)}),
    "gfloat": ("gfloat", {"0.5": Rules(_gfloat)}),
    "gfloat_sat": ("gfloat", {"0.5": Rules(_gfloat_sat)}),
    "gfloat_encode": ("gfloat", {"0.5": Rules(_gfloat_encode)}),
    "torch": ("torch", {"2.13": Rules(_torch)}),
    "microxcaling": ("microxcaling", {"1.1": Rules(_microxcaling)}),
    "transformer_engine": ("transformer_engine", {"2.12": Rules(mx=_TE_212_MX),
                                                  "2.13": Rules(_transformer_engine, _TE_213_MX, "te")}),
    "torchao": ("torchao", {"0.18": Rules(mx=_TORCHAO_MX, nvfp4="torchao")}),
    "torchao_triton": ("torchao", {"0.18": Rules(mx=_TORCHAO_TRITON_MX)}),
    "ptx_cvt_rn": (None, {"": Rules(_ptx_cvt_rn)}),
    "ptx_cvt_rs": (None, {"": Rules(_ptx_cvt_rs)}),
    "p3109": (None, {"": Rules(_p3109)}),
    "cuda": ("cuda", {"13.0": Rules(_cuda_13, choices=("source", "saturate", "rounding"))}),
}  # fmt: skip

#: The parts of a convention, as resolve_convention's ``part`` names them, in words.
PARTS = {"elements": "element conversion", "mx": "MX block", "nvfp4": "NVFP4"}

_RELEASE = re.compile(r"\d+(\.\d+)*")


def names_with(part: str) -> list[str]:
    """The conventions that have rules for ``part`` ("elements", "mx", "nvfp4"), in the
    table's order, plain and release-qualified.

    >>> names_with("nvfp4")
    ['transformer_engine', 'transformer_engine-2.13', 'torchao', 'torchao-0.18']
    """
    names = []
    for name, (library, series) in CONVENTIONS.items():
        releases = [s for s, rules in series.items() if rules.has(part)]
        if releases:
            names += [name] + ([f"{name}-{s}" for s in releases] if library is not None else [])
    return names


def _unknown(convention: str, part: str) -> ValueError:
    """An unknown spelling: the closest known ones (plain or with a release), then every plain
    name that has rules for ``part``."""
    names = names_with(part)
    plain = [n for n in names if "-" not in n]
    library = next((n for n in plain if any(m.startswith(f"{n}-") for m in names)), None)
    example = [n for n in names if n.startswith(f"{library}-")][-1] if library else "ml_dtypes-0.7"
    return ValueError(unknown_name("convention", convention, plain, aliases={n: n for n in names if "-" in n},
                                   note=f"; a library's name takes a release too ({example})"))


def _lacking(convention: str, part: str) -> ValueError:
    """A known convention without rules for ``part``: the ones that have them."""
    plain = [n for n in names_with(part) if "-" not in n]
    return ValueError(f"convention {convention!r} has no {PARTS[part]} rules in fpemu; those with "
                      f"{PARTS[part]} rules: {', '.join(plain)}")


def resolve_convention(convention: str, part: str = "elements") -> str:
    """The release-qualified name of a convention that has rules for ``part`` (``elements``:
    :func:`like`; ``mx``, ``nvfp4``: ``fpemu.mx.quantize(convention=...)``): a plain name
    follows the installed release (the newest rules when the library is absent), among the
    releases with such rules; a qualified one must name a known series.

    >>> resolve_convention("ml_dtypes-0.6.0"), resolve_convention("p3109"), resolve_convention("torchao", "mx")
    ('ml_dtypes-0.6', 'p3109', 'torchao-0.18')
    >>> resolve_convention("ml_dtypes-0.4")
    Traceback (most recent call last):
    ...
    ValueError: fpemu has no rules for ml_dtypes 0.4; known releases: 0.5, 0.6, 0.7
    """
    if not isinstance(convention, str):
        raise TypeError(f"convention must be a name, got {type(convention).__name__}")
    name, _, release = option_name(convention).partition("-")
    if name not in CONVENTIONS:
        raise _unknown(convention, part)
    library, series = CONVENTIONS[name]
    having = [s for s, rules in series.items() if rules.has(part)]
    if library is None:
        if release:
            raise ValueError(f"convention {name!r} is a specification, with no releases to name")
        if not having:
            raise _lacking(name, part)
        return name
    if not release:
        version = installed_version(library)
        if (library, version) in UNSUPPORTED_RELEASES:
            raise ValueError(UNSUPPORTED_RELEASES[library, version])
        if not having:
            raise _lacking(name, part)
        return f"{name}-{pick_series(tuple(having), version)}"
    if not _RELEASE.fullmatch(release):
        raise _unknown(convention, part)
    asked = parse_version(release)
    match = [s for s in series if parse_version(s) == asked[: len(parse_version(s))]]
    if not match or (library, release) in UNSUPPORTED_RELEASES:
        why = UNSUPPORTED_RELEASES.get((library, release), f"fpemu has no rules for {library} {release}")
        raise ValueError(f"{why}; known releases: {', '.join(series)}")
    if not series[match[0]].has(part):
        raise _lacking(f"{name}-{match[0]}", part)
    return f"{name}-{match[0]}"


def convention_rules(convention: str, part: str = "elements") -> tuple[str, Rules]:
    """(the release-qualified name, its :class:`Rules`) of a convention with rules for ``part``
    (see :func:`resolve_convention`).

    >>> name, rules = convention_rules("transformer_engine", "mx")
    >>> name, rules.mx.default, rules.nvfp4
    ('transformer_engine-2.13', 'rceil', 'te')
    """
    resolved = resolve_convention(convention, part)
    name, _, release = resolved.partition("-")
    return resolved, CONVENTIONS[name][1][release]


def like(convention: str, fmt: str | Format, **choices: Any) -> Conversion:
    """The :class:`~fpemu.Conversion` that reproduces ``convention``'s conversion into ``fmt``;
    ``choices``: the arguments of the library's call where it takes some (``cuda-13.0``:
    ``source``, ``saturate``, ``rounding``; docs/formats.md has the table of intrinsics).

    >>> like("ml_dtypes-0.7", "e8m0"), like("ml_dtypes-0.7", "e2m1")
    (Conversion(rounding='nearest_away'), Conversion(nan='ml_dtypes'))
    >>> like("torch", "bf16")
    Conversion(nan='all_ones', via='fp32')
    >>> like("cuda-13.0", "e8m0", saturate=False)  # __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundPosInf)
    Conversion(rounding='up', no_code='magnitude')
    >>> like("numpy", "fp16")
    Traceback (most recent call last):
    ...
    ValueError: unknown convention 'numpy'; choose one of ml_dtypes, ml_dtypes_saturate, ml_dtypes_truncate, gfloat, gfloat_sat, gfloat_encode, torch, microxcaling, transformer_engine, ptx_cvt_rn, ptx_cvt_rs, p3109, cuda; a library's name takes a release too (ml_dtypes-0.7)
    """
    name, rules = convention_rules(convention, "elements")
    unknown = sorted(set(choices) - set(rules.choices))
    if unknown:
        takes = f"it takes {', '.join(rules.choices)}" if rules.choices else "it takes none"
        raise TypeError(f"like({name!r}, ...) got the unknown choice {unknown[0]!r}: {takes}")
    return Conversion(**rules.elements(get_format(fmt), **choices))
