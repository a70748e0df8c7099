"""Other libraries' MX and NVFP4 rules as ``convention=`` of :func:`~fpemu.mx.quantize`: the
codec's one conventions table (:mod:`fpemu.codec.conventions`, where each library release's
element conversion and block rules stand side by side) resolved for one quantize call, with
the caller's options checked against what the library fixes.

A library that departs from the OCP MX v1.0 rules (SPEC.md section 3) does so in a few places:
the scale of a block holding Inf, the element divisor of a block whose scale code is 0 (or
0xFE), how the scale exponent is found, and whether a NaN makes a NaN block; an
:class:`~fpemu.codec.MXRule` names those choices, one per scale rounding the library offers.
``docs/mx.md`` ("Matching another library") gives each rule's source lines and the test that
checks it. Names are spelled as for :func:`fpemu.like`: ``torchao-0.18``,
``transformer_engine-2.13``, or a plain ``torchao`` for the installed release.

>>> mx_rule("torchao-0.18", None, None, "nearest_even", "mxfp8_e4m3")
(MXRule(scale='floor', inf='exponent', nan='block', code0='min_normal', code254='exact'), 'floor')
>>> mx_rule("torchao-0.18", "rceil", None, "nearest_even", "mxfp4")[0].scale
'rceil_log2'
>>> mx_rule(None, None, "saturate", "nearest_even", "mxfp4")
(MXRule(scale='floor', inf='saturate', nan='block', code0='exact', code254='exact'), 'floor')
"""

from __future__ import annotations

from ..codec import MXRule, convention_rules, names_with
from .mx_scales import SCALE_ROUNDINGS

#: The names ``convention=`` accepts ("ocp", like None, is the OCP MX v1.0 rule), plain and
#: release-qualified.
CONVENTION_NAMES = ("ocp",) + tuple(dict.fromkeys(names_with("mx") + names_with("nvfp4")))


def nvfp4_variant(convention: str | None, variant: str | None) -> str:
    """The NVFP4 variant that ``convention`` (a library) or ``variant`` names; both given,
    they must agree; neither: TransformerEngine's (``"te"``).

    >>> nvfp4_variant("torchao-0.18", None), nvfp4_variant(None, None), nvfp4_variant("transformer_engine", None)
    ('torchao', 'te', 'te')
    >>> nvfp4_variant("torchao-0.18", "te")
    Traceback (most recent call last):
    ...
    ValueError: convention 'torchao-0.18' is NVFP4's variant 'torchao', not variant='te'
    """
    if convention is None:
        return variant or "te"
    name, rules = convention_rules(convention, "nvfp4")
    if variant is not None and variant != rules.nvfp4:
        raise ValueError(f"convention {name!r} is NVFP4's variant {rules.nvfp4!r}, not variant={variant!r}")
    return rules.nvfp4


def mx_rule(
    convention: str | None, scale_rounding: str | None, inf: str | None, rounding: str, fmt: str
) -> tuple[MXRule, str]:
    """(rule, scale rounding) for one MX quantize call: the OCP rule with the caller's options,
    or a library's, which fixes what the caller may not change (an option it contradicts is
    an error, never silently overridden); the scale rounding defaults to the library's own.

    >>> mx_rule("transformer_engine-2.12", "floor", None, "nearest_even", "mxfp8_e4m3")
    Traceback (most recent call last):
    ...
    ValueError: convention 'transformer_engine-2.12' offers scale_rounding 'rceil', not 'floor'
    """
    if scale_rounding is not None and scale_rounding not in SCALE_ROUNDINGS:
        raise ValueError(
            f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
        )
    if inf is not None and inf not in ("nan", "saturate"):
        raise ValueError(f"inf must be 'nan' or 'saturate', got {inf!r}")
    if convention is None or convention == "ocp":
        return MXRule(scale_rounding or "floor", inf or "nan"), scale_rounding or "floor"
    name, rules = convention_rules(convention, "mx")
    blocks = rules.mx
    if fmt not in blocks.formats:
        raise ValueError(f"convention {name!r} quantizes {', '.join(blocks.formats)}, not {fmt}")
    scale_rounding = scale_rounding or blocks.default
    rule = blocks.rules.get(scale_rounding)
    if rule is None:
        raise ValueError(f"convention {name!r} offers scale_rounding "
                         f"{', '.join(repr(s) for s in blocks.rules)}, not {scale_rounding!r}")
    if inf is not None:
        raise ValueError(f"convention {name!r} fixes how a block holding Inf is scaled; leave inf= out")
    if rounding != "nearest_even":
        raise ValueError(f"convention {name!r} rounds elements to nearest even; leave rounding= out")
    return rule, scale_rounding
