"""Scaled casts: a tensor cast to FP8 (or any format) with a scale per tensor, row, column or
tile, as TransformerEngine's FP8 recipes and ``torch._scaled_mm`` use them.

The scale is computed in float32 as TransformerEngine does (SPEC section 6): ``scale =
(fmt.max / amax) / 2**margin``; an amax that is zero, Inf or NaN gives scale 1, an infinite
scale becomes FLT_MAX; ``power_of_two`` rounds the scale down to a power of two (exact
dequantization). The cast is ``encode(fp32(x * scale), fmt)`` with saturation, and
``scale_inv = fp32(1 / scale)`` is what a GEMM multiplies back (``torch._scaled_mm``'s
``scale_a``/``scale_b``). Granularity: per tensor, per row (``"row"``: over the last axis),
per column (``"column"``: over the first), or per tile, e.g. ``(1, 128)`` for DeepSeek-V3's
activations and ``(128, 128)`` for its weights. An empty array gets codes and scales of the
shapes a non-empty one of its rank would (a row of no elements still has its scale, 1).

NaN elements take no part in the amax and are encoded by the ``nan`` policy, as
:func:`fpemu.encode` has it: a format without NaN (FP4, FP6) refuses them unless ``nan=``
names the code they get.

>>> t = scaled_cast(np.array([[1.0, -3.0], [100.0, 0.5]]), "e4m3")
>>> float(t.scale), t.dequantize().tolist()
(4.480000019073486, [[1.0044642686843872, -2.9017856121063232], [100.0, 0.5022321343421936]])
>>> scaled_cast(np.array([[1.0, -3.0], [100.0, 0.5]]), "e4m3", granularity="row").scale.ravel().tolist()
[149.3333282470703, 4.480000019073486]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .arguments import as_array, is_whole, option_name
from .codec import Conversion, decode, encode
from .formats import Format, get_format

__all__ = ["ScaledTensor", "scale_from_amax", "scaled_cast"]

_F32 = np.float32
_FLT_MAX = np.finfo(np.float32).max


@dataclass(frozen=True, eq=False)
class ScaledTensor:
    """Codes of ``format`` with the float32 ``scale`` they were multiplied by (one per group,
    shaped to broadcast against the codes) and its inverse ``scale_inv``."""

    codes: np.ndarray
    scale: np.ndarray
    scale_inv: np.ndarray
    format: Format
    granularity: Any

    def dequantize(self) -> np.ndarray:
        """float32 values: decode(codes) * scale_inv."""
        with np.errstate(over="ignore", invalid="ignore"):
            return decode(self.codes, self.format, dtype=np.float32) * self.scale_inv


def scaled_cast(x: Any, fmt: str | Format, *, scale: Any = None, amax: Any = None, margin: int = 0,
                granularity: Any = "tensor", power_of_two: bool = False, conversion: Conversion | None = None,
                rounding: str | None = None, rng: Any = None, nan: str | None = None) -> ScaledTensor:
    """Cast x to fmt with a scale per tensor, row, column or tile (see the module docstring).

    Args:
        scale: the scale to use (delayed scaling: computed from an amax history), one per group.
        amax: the amax to compute the scale from (default: max |x| of each group, NaN ignored).
        margin: TransformerEngine's margin: the scale is divided by 2**margin.
        granularity: ``"tensor"``, ``"row"``, ``"column"`` or a tile shape ``(rows, cols)``.
        power_of_two: round each scale down to a power of two.
        conversion: the cast's :class:`~fpemu.Conversion` (rounding, NaN codes, the random bits
            of P3109's stochastic roundings: ``sr_bits``, ``random_bits`` shaped like x);
            its overflow is saturation, as the recipes cast (another is refused).
        rounding, rng: the element rounding (stochastic rounding for gradients).
        nan: what a NaN element becomes (:func:`fpemu.encode`'s ``nan``): by default the
            format's NaN, or a ``NanInputError`` in a format without NaN.

    >>> try:
    ...     scaled_cast([np.nan, 1.0], "e2m1")
    ... except ValueError as e:
    ...     print(str(e)[:54])
    1 NaN value in the input: format e2m1 has no NaN (pass
    >>> scaled_cast([np.nan, 1.0], "e2m1", nan="zero").codes.tolist()
    [0, 7]
    >>> t = scaled_cast(np.zeros((3, 0)), "e4m3", granularity="row")
    >>> t.codes.shape, t.scale.ravel().tolist()
    ((3, 0), [1.0, 1.0, 1.0])
    >>> sra = Conversion(rounding="stochastic_a", sr_bits=4, random_bits=[[0, 15]])
    >>> scaled_cast([[1.3, 1.3]], "e4m3", scale=1.0, conversion=sra).codes.tolist()  # (given bits)
    [[58, 59]]
    """
    fmt = get_format(fmt)
    conversion = _saturating(Conversion.of(conversion, rounding=rounding, nan=nan))
    granularity = option_name(granularity)  # "Row" is "row", as every name is read in any case
    x32 = as_array(x, "x").astype(np.float32, copy=False)
    groups = _groups(x32.shape, granularity)
    if scale is None:
        if amax is None:
            amax = _group_amax(x32, groups)
        scale = scale_from_amax(amax, fmt.max, margin)
    scale = np.asarray(scale, dtype=np.float32)
    if granularity == "tensor":
        scale = scale.reshape(())  # one scale for the whole tensor
    if power_of_two:
        scale = np.ldexp(_F32(1), np.frexp(scale)[1] - 1).astype(np.float32)
    if np.any(~np.isfinite(scale) | (scale <= 0)):
        raise ValueError("scales must be finite and > 0")
    full = _expand(scale, groups, x32.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = x32 * full  # float32, as the recipes compute it
        inv = (_F32(1) / scale).astype(np.float32)
    codes = encode(scaled, fmt, conversion=conversion, rng=rng)
    return ScaledTensor(codes, scale, _expand(inv, groups, x32.shape, keep=True), fmt, granularity)


def _saturating(conversion: Conversion) -> Conversion:
    """The conversion with the recipes' saturation (a conversion that fixes another overflow
    is refused: the scale is chosen so that saturation is what happens at the top)."""
    if option_name(conversion.overflow) not in (None, "saturate", "sat_finite"):
        raise ValueError(f"scaled_cast saturates, as the FP8 recipes cast: the conversion's "
                         f"overflow={conversion.overflow!r} does not apply")
    return conversion.replace(overflow="saturate")


def scale_from_amax(amax: Any, fmt_max: Any, margin: int = 0) -> np.ndarray:
    """TransformerEngine's FP8 scale rule, in float32: ``(fmt_max / amax) / 2**margin``; 1 where
    amax is 0, negative, Inf or NaN; FLT_MAX where the quotient overflows (one scale per amax).

    The one implementation of the rule: :func:`scaled_cast` and the delayed and current scaling
    of :mod:`fpemu.train` call it.

    >>> scale_from_amax([3.5, 0.0, 1e-45], 448.0).tolist()
    [128.0, 1.0, 3.4028234663852886e+38]
    >>> float(scale_from_amax(3.5, 448.0, margin=1))
    64.0
    """
    amax = np.asarray(amax, dtype=np.float32)
    fmt_max = _F32(fmt_max)
    good = np.isfinite(amax) & (amax > 0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        s = (fmt_max / np.where(good, amax, _F32(1))) / _F32(2.0**margin)
    s = np.where(good, s, _F32(1))
    return np.where(np.isinf(s), _FLT_MAX, s).astype(np.float32)


def _groups(shape: tuple, granularity: Any) -> tuple[int, ...]:
    """The group shape: the extent of one scale along each axis."""
    if granularity == "tensor":
        return tuple(shape)
    if len(shape) < 1:
        raise ValueError("per-row, per-column and tile scaling need an array")
    if granularity == "row":
        return (1,) * (len(shape) - 1) + (shape[-1],)
    if granularity == "column":
        return (shape[0],) + (1,) * (len(shape) - 1)
    tile = tuple(granularity) if isinstance(granularity, (tuple, list)) else None
    if tile is None or len(tile) != 2 or len(shape) != 2 or not all(is_whole(t) and t >= 1 for t in tile):
        raise ValueError(f"granularity must be 'tensor', 'row', 'column' or a tile (rows, cols) of a "
                         f"2-D array, got {granularity!r}")
    return tuple(int(t) for t in tile)


def _count(extent: int, group: int) -> int:
    """Groups along an axis: ceil(extent / group); an empty axis spanned by one group (a
    row, a column or the tensor with no elements) still has that group.

    >>> _count(5, 2), _count(0, 2), _count(0, 0)
    (3, 0, 1)
    """
    return -(-extent // group) if group else 1


def _group_amax(x: np.ndarray, groups: tuple[int, ...]) -> np.ndarray:
    """max |x| over each group (NaN ignored), one per group."""
    a = np.where(np.isnan(x), 0, np.abs(x))
    for axis, g in enumerate(groups):
        n = _count(x.shape[axis], g)
        pad = n * g - x.shape[axis]
        if pad:
            widths = [(0, 0)] * x.ndim
            widths[axis] = (0, pad)
            a = np.pad(a, widths)
        a = a.reshape(a.shape[:axis] + (n, g) + a.shape[axis + 1:]).max(axis=axis + 1, initial=0)
    return a


def _expand(per_group: np.ndarray, groups: tuple[int, ...], shape: tuple, keep: bool = False) -> np.ndarray:
    """Per-group values repeated over each group to the array's shape (keep: as given)."""
    out = np.asarray(per_group, dtype=np.float32)
    if keep and out.ndim == 0:
        return out
    out = np.broadcast_to(out, tuple(_count(s, g) for s, g in zip(shape, groups))) if out.ndim == 0 else out
    for axis, g in enumerate(groups):
        out = np.repeat(out, g, axis=axis)
    return out[tuple(slice(0, s) for s in shape)]
