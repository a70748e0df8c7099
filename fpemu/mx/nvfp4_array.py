"""NVFP4 arrays: :class:`NVFP4Array`, a :class:`~fpemu.mx.array.BlockArray` whose block scales
are UE4M3 (``nvfp4``, with an FP32 per-tensor scale on top) or UE5M3 (``nvfp4_ue5m3``, none)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec import decode
from .array import BlockArray
from .formats import BlockFormat
from .mx_array import refuse_tensor_fields
from .nvfp4_scales import nvfp4_decode_scale, te_amax_is_degenerate


@dataclass(frozen=True, eq=False, repr=False)  # BlockArray's repr
class NVFP4Array(BlockArray):
    """An NVFP4 block array.

    Attributes (``nvfp4`` only; None for ``nvfp4_ue5m3``, which has no per-tensor scale):
        global_scale: the float32 per-tensor *decode* scale (TransformerEngine: ``1/S_enc``
            with ``S_enc = 2688/amax``; torchao: ``amax/2688``). Derived from
            ``global_amax`` when not given.
        global_amax: the float32 tensor amax the scales were computed from (required for
            ``variant="te"``, whose dequantization uses it).
        variant: ``"te"`` (the default) or ``"torchao"``.
        e4m3_max: the bound TransformerEngine's tensor scale maps the amax to (over 6): 448,
            the default, or 256, Four Over Six's (``S_enc = 1536/amax``; TE's
            ``nvfp4_e4m3_max``), which its dequantization and GEMM alpha use.

    >>> q = NVFP4Array(np.array([2, 7], np.uint8), np.array([56], np.uint8), "nvfp4", 0, 16, global_amax=2688.0)
    >>> q.dequantize().tolist(), float(q.global_scale), q.variant, q.scale_rounding
    ([1.0, 6.0], 1.0, 'te', None)
    """

    global_scale: np.float32 | None = None
    global_amax: np.float32 | None = None
    variant: str | None = None
    e4m3_max: int | None = None

    @classmethod
    def holds(cls, bf: BlockFormat) -> bool:
        return bf.is_nvfp4

    scale_rounding = property(lambda self: None, doc="None: NVFP4's scales follow its own rule.")

    def _check_family_fields(self) -> None:
        """NVFP4 needs valid per-tensor fields (deriving a missing decode scale), nvfp4_ue5m3 none."""
        if not self.format.tensor_scale:
            if self.e4m3_max is not None:
                raise ValueError(f"{self.format.name} has no per-tensor scale: e4m3_max applies to nvfp4")
            refuse_tensor_fields(self.format, self.global_scale, self.global_amax, self.variant)
            return
        variant = "te" if self.variant is None else self.variant
        if variant not in ("te", "torchao"):
            raise ValueError(f"variant must be 'te' or 'torchao', got {variant!r}")
        e4m3_max = 448 if self.e4m3_max is None else self.e4m3_max
        if isinstance(e4m3_max, (bool, np.bool_)) or e4m3_max not in (448, 256):
            raise ValueError(f"e4m3_max must be 448 or 256 (TransformerEngine's two bounds), got {self.e4m3_max!r}")
        if e4m3_max != 448 and variant != "te":
            raise ValueError("e4m3_max=256 is TransformerEngine's (Four Over Six); torchao's scale is amax/2688")
        object.__setattr__(self, "e4m3_max", int(e4m3_max))
        amax = _tensor_scalar(self.global_amax, "global_amax", allow_inf=True)
        scale = _tensor_scalar(self.global_scale, "global_scale", allow_inf=False)
        if scale is not None and scale == 0:
            raise ValueError("global_scale must be > 0 (a decode scale of 0 erases the tensor)")
        if amax is None and (variant == "te" or scale is None):
            raise ValueError(f"an NVFP4 BlockArray ({variant}) needs global_amax"
                             + ("" if variant == "te" else " or global_scale"))
        if scale is None:
            scale = nvfp4_decode_scale(amax, variant, int(e4m3_max))
        object.__setattr__(self, "variant", variant)
        object.__setattr__(self, "global_amax", amax)
        object.__setattr__(self, "global_scale", scale)

    def block_factors(self, scales: np.ndarray, work: np.dtype) -> tuple[np.ndarray, Any]:
        if not self.format.tensor_scale:  # element * scale: exact in float32 (6 * UE5M3: 2**-18 .. 688128)
            return decode(scales, self.format.scale, dtype=np.float32), None
        factor, post = _nvfp4_factors(self, scales)
        return factor, (None if post == 1 else post)

    def _repr_extra(self) -> str:
        if self.global_scale is None:
            return ""
        extra = "" if self.e4m3_max == 448 else f", e4m3_max={self.e4m3_max}"
        return f", global_scale={float(self.global_scale)!r}, variant={self.variant!r}{extra}"


def _tensor_scalar(value: Any, name: str, allow_inf: bool) -> np.float32 | None:
    """An NVFP4 per-tensor float32 field: None, or a number >= 0 (Inf only where allowed)."""
    if value is None:
        return None
    if np.ndim(value) != 0 or isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a single number, got {value!r}")
    v = np.float32(value)
    if np.isnan(v) or v < 0 or (np.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a {'' if allow_inf else 'finite '}number >= 0, "
                         f"got {float(v)}")
    return v


def _nvfp4_factors(q: NVFP4Array, s: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """(per-block float32 factor, power of two applied after the element product) for NVFP4.

    TransformerEngine's kernel computes ``fp32(fp32(scale * amax) * fp32(1/2688))`` (``1/1536``
    for a Four Over Six tensor of ``e4m3_max`` 256, ``dequantize_fp4_kernel``); for an
    amax above FLT_MAX/448 its ``scale * amax`` overflows and finite tensors read back Inf and
    NaN (0 * Inf). fpemu runs the same float32 roundings with amax scaled by 2**-32 and the
    result by 2**32 (binary scaling commutes with rounding away from the subnormals), which is
    TE's result wherever TE stays finite. Where TE's S_enc is not 2688/amax (amax 0 or Inf,
    or S_enc clamped to FLT_MAX), amax/2688 is not the decode scale the data was encoded with,
    so the factor is ``fp32(scale * global_scale)``, the value the encoding represents.
    """
    f32 = np.float32
    scale = decode(s, q.format.scale, dtype=np.float32)
    if q.variant == "torchao" or te_amax_is_degenerate(q.global_amax, q.e4m3_max):
        return scale * q.global_scale, f32(1.0)
    post = f32(2.0**32) if q.global_amax >= f32(2.0**100) else f32(1.0)
    amax = f32(q.global_amax / post)
    return (scale * amax) * f32(1.0 / (6.0 * q.e4m3_max)), post
