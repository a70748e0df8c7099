"""Other libraries' MX rules by name: the ``convention=`` of :func:`~fpemu.mx.quantize`.

A library that departs from the OCP MX v1.0 rules (SPEC.md section 3) does so in a few places:
the scale of a block holding Inf, the element divisor of a block whose scale code is 0 (or
0xFE), how the scale exponent is found, and whether a NaN makes a NaN block. An
:class:`MXRule` names those choices; a convention maps each scale rounding its library offers
to one rule. ``docs/mx.md`` ("Matching another library") gives each rule's source lines and
the test that checks it.

>>> mx_rule("torchao-0.18", None, None, "nearest_even", "mxfp8_e4m3")
(MXRule(scale='floor', inf='exponent', nan='block', code0='min_normal', code254='exact'), 'floor')
>>> mx_rule("torchao-0.18", "rceil", None, "nearest_even", "mxfp4")[0].scale
'rceil_log2'
>>> mx_rule(None, None, "saturate", "nearest_even", "mxfp4")
(MXRule(scale='floor', inf='saturate', nan='block', code0='exact', code254='exact'), 'floor')
"""

from __future__ import annotations

from dataclasses import dataclass

from .mx_scales import SCALE_ROUNDINGS


@dataclass(frozen=True)
class MXRule:
    """How one library computes an MX block, beyond the block format.

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
class Convention:
    """One library's MX quantization: the formats it offers and its rule per scale rounding."""

    name: str
    formats: tuple[str, ...]
    default: str
    rules: dict[str, MXRule]
    source: str


_FP8 = ("mxfp8_e4m3", "mxfp8_e5m2")
_TORCHAO_FORMATS = _FP8 + ("mxfp6_e3m2", "mxfp6_e2m3", "mxfp4")

CONVENTIONS: dict[str, Convention] = {
    "torchao-0.18": Convention(
        "torchao-0.18", _TORCHAO_FORMATS, "floor",
        {"floor": MXRule("floor", "exponent", code0="min_normal"),
         "ceil": MXRule("ceil", "exponent", code0="min_normal"),
         "even": MXRule("even", "exponent", code0="min_normal"),
         "rceil": MXRule("rceil_log2", "saturate", code0="one")},
        "torchao 0.18.0 to_mx, eager (torchao/prototype/mx_formats/mx_tensor.py)"),
    "torchao-0.18-triton": Convention(
        "torchao-0.18-triton", ("mxfp8_e4m3",), "rceil",
        {"rceil": MXRule("rceil", "saturate", code0="one")},
        "torchao 0.18.0 triton_to_mxfp8_dim0/dim1, PTX path (torchao/prototype/mx_formats/kernels.py)"),
    "transformer-engine-2.12": Convention(
        "transformer-engine-2.12", _FP8, "rceil",
        {"rceil": MXRule("rceil", "saturate", nan="ignore", code0="one", code254="zero")},
        "TransformerEngine 2.6-2.12 MXFP8 cast (common/util/ptx.cuh exp2f_rcp)"),
    "transformer-engine-2.13": Convention(
        "transformer-engine-2.13", _FP8, "rceil",
        {"rceil": MXRule("rceil", "saturate", nan="ignore")},
        "TransformerEngine 2.13-2.18 MXFP8 cast (common/util/ptx.cuh exp2f_rcp)"),
}  # fmt: skip
#: The names ``convention=`` accepts (None, or "ocp", is the OCP MX v1.0 rule).
CONVENTION_NAMES = ("ocp",) + tuple(CONVENTIONS)

#: NVFP4's per-tensor arithmetic (``variant=``) of the libraries ``convention=`` names for it
#: (docs/mx.md, "NVFP4": TransformerEngine 2.13-2.18, torchao 0.18.0 nvfp4_tensor.py).
NVFP4_VARIANTS = {"transformer-engine-2.13": "te", "torchao-0.18": "torchao"}


def nvfp4_variant(convention: str | None, variant: str | None) -> str:
    """The NVFP4 variant that ``convention`` (a library) or ``variant`` names; both given,
    they must agree; neither: TransformerEngine's (``"te"``).

    >>> nvfp4_variant("torchao-0.18", None), nvfp4_variant(None, None)
    ('torchao', 'te')
    >>> nvfp4_variant("torchao-0.18", "te")
    Traceback (most recent call last):
    ...
    ValueError: convention 'torchao-0.18' is NVFP4's variant 'torchao', not variant='te'
    """
    if convention is None:
        return variant or "te"
    if convention not in NVFP4_VARIANTS:
        raise ValueError(f"convention {convention!r} has no NVFP4 rule; NVFP4 takes "
                         f"{', '.join(NVFP4_VARIANTS)} (or variant= 'te' or 'torchao')")
    named = NVFP4_VARIANTS[convention]
    if variant is not None and variant != named:
        raise ValueError(f"convention {convention!r} is NVFP4's variant {named!r}, not variant={variant!r}")
    return named


def mx_rule(
    convention: str | None, scale_rounding: str | None, inf: str | None, rounding: str, fmt: str
) -> tuple[MXRule, str]:
    """(rule, scale rounding) for one MX quantize call: the OCP rule with the caller's options,
    or a library's, which fixes what the caller may not change (an option it contradicts is
    an error, never silently overridden); the scale rounding defaults to the library's own.

    >>> mx_rule("transformer-engine-2.12", "floor", None, "nearest_even", "mxfp8_e4m3")
    Traceback (most recent call last):
    ...
    ValueError: convention 'transformer-engine-2.12' offers scale_rounding 'rceil', not 'floor'
    """
    if scale_rounding is not None and scale_rounding not in SCALE_ROUNDINGS:
        raise ValueError(
            f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
        )
    if inf is not None and inf not in ("nan", "saturate"):
        raise ValueError(f"inf must be 'nan' or 'saturate', got {inf!r}")
    if convention is None or convention == "ocp":
        return MXRule(scale_rounding or "floor", inf or "nan"), scale_rounding or "floor"
    conv = CONVENTIONS.get(convention) if isinstance(convention, str) else None
    if conv is None:
        raise ValueError(f"unknown convention {convention!r}; choose one of {', '.join(CONVENTION_NAMES)}")
    if fmt not in conv.formats:
        raise ValueError(f"convention {conv.name!r} quantizes {', '.join(conv.formats)}, not {fmt}")
    scale_rounding = scale_rounding or conv.default
    rule = conv.rules.get(scale_rounding)
    if rule is None:
        raise ValueError(f"convention {conv.name!r} offers scale_rounding "
                         f"{', '.join(repr(s) for s in conv.rules)}, not {scale_rounding!r}")
    if inf is not None:
        raise ValueError(f"convention {conv.name!r} fixes how a block holding Inf is scaled; leave inf= out")
    if rounding != "nearest_even":
        raise ValueError(f"convention {conv.name!r} rounds elements to nearest even; leave rounding= out")
    return rule, scale_rounding
