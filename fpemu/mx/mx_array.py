"""OCP MX arrays: :class:`MXArray`, a :class:`~fpemu.mx.array.BlockArray` whose scales are
E8M0 powers of two, with the rule that computed them (``scale_rounding``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .array import BlockArray
from .formats import BlockFormat
from .mx_scales import SCALE_ROUNDINGS, pow2_from_e8m0


@dataclass(frozen=True, eq=False, repr=False)  # BlockArray's repr
class MXArray(BlockArray):
    """An MX block array (MXFP8, MXFP6, MXFP4, MXINT8): each element times its block's power
    of two. ``scale_rounding``: the rule the scales were computed with (None: unknown).

    >>> q = MXArray(np.array([2, 7], np.uint8), np.array([128], np.uint8), "mxfp4", 0, 32, "floor")
    >>> q.dequantize().tolist(), q.global_scale
    ([2.0, 12.0], None)
    """

    scale_rounding: str | None = None

    @classmethod
    def holds(cls, bf: BlockFormat) -> bool:
        return not bf.is_nvfp4

    # MX has no per-tensor scale: readers that handle both families see None, as for nvfp4_ue5m3.
    global_scale = property(lambda self: None, doc="None: MX has no per-tensor scale.")
    global_amax = property(lambda self: None, doc="None: MX has no per-tensor amax.")
    variant = property(lambda self: None, doc="None: MX has one arithmetic.")

    def _check_family_fields(self) -> None:
        if self.scale_rounding is not None and self.scale_rounding not in SCALE_ROUNDINGS:
            raise ValueError(f"unknown scale_rounding {self.scale_rounding!r}; choose one of "
                             f"{', '.join(SCALE_ROUNDINGS)}")

    def block_factors(self, scales: np.ndarray, work: np.dtype) -> tuple[np.ndarray, None]:
        return pow2_from_e8m0(scales, work), None

    def work_dtype(self, dtype: np.dtype) -> np.dtype:
        # Every MX value is exact in float64; float32 holds every one that is not Inf there.
        return np.dtype(np.float64) if dtype.itemsize >= 8 else np.dtype(np.float32)


def refuse_tensor_fields(bf: BlockFormat, global_scale: Any, global_amax: Any, variant: Any) -> None:
    """Refuse NVFP4's per-tensor fields for a format without a per-tensor scale."""
    if (global_scale, global_amax, variant) != (None, None, None):
        raise ValueError("global_scale, global_amax and variant describe NVFP4 tensors; "
                         f"a {bf.name} BlockArray has none")
