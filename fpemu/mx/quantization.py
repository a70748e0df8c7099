""":func:`quantize`, the front door: checks the input and the options, then runs the MX or
the NVFP4 pipeline and returns a :class:`BlockArray`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .array import BlockArray
from .formats import BlockFormat, get_block_format
from .inputs import _as_float_array, _canonical_rounding
from .layout import _normalize_layout
from .mx_quantization import _quantize_mx
from .mx_scales import SCALE_ROUNDINGS
from .nvfp4_quantization import _quantize_nvfp4


def quantize(
    x: Any,
    fmt: str | BlockFormat,
    *,
    axis: int | tuple[int, int] | None = None,
    block_size: int | tuple[int, int] | None = None,
    scale_rounding: str = "floor",
    rounding: str = "nearest_even",
    rng: int | np.random.Generator | None = None,
    inf: str = "nan",
    variant: str = "te",
    global_amax: float | None = None,
    workers: int | None = None,
) -> BlockArray:
    """Quantize ``x`` into a block format.

    Args:
        x: real array of any rank >= 1 (float16, float32 and ml_dtypes floats are computed in
            float32, float64 and integers in float64, with the same codes for equal values;
            NVFP4 always computes in float32, as its recipes do). Never modified.
        fmt: ``mxfp8_e4m3``, ``mxfp8_e5m2``, ``mxfp6_e3m2``, ``mxfp6_e2m3``, ``mxfp4``,
            ``mxint8`` or ``nvfp4`` (case-insensitive).
        axis: the block axis (default -1); for 2-D tiles a pair (default ``(-2, -1)``).
        block_size: elements per block (default 32 for MX, 16 for NVFP4), or a pair such as
            ``(16, 16)`` for 2-D tiles (TransformerEngine's NVFP4 weight tiles); 1 .. 2**31.
        scale_rounding: MX scale rule: ``floor`` (OCP), ``rceil`` (NVIDIA), ``ceil`` or
            ``even`` (torchao). NVFP4 has its own rule (``variant``).
        rounding: element rounding, any mode of :func:`fpemu.encode` (default RNE, the OCP
            rule; NVFP4 gradients use ``"stochastic"`` with ``rng``), for every format:
            MXINT8 with ``"nearest_away"`` is microxcaling's default (``round="nearest"``).
        rng: seed or ``np.random.Generator`` for stochastic rounding.
        inf: MX block containing +-Inf (and no NaN): ``"nan"`` gives scale 0xFF (the spec,
            torchao), ``"saturate"`` gives 0xFE with the Inf elements at +-max
            (TransformerEngine).
        variant: NVFP4 arithmetic: ``"te"`` (TransformerEngine, default) or ``"torchao"``.
        global_amax: NVFP4: use this tensor amax (a finite number > 0) instead of max |x|
            (a calibrated or delayed amax).
        workers: threads over chunks of blocks (default: ``FPEMU_WORKERS`` or the CPU count);
            the codes are the same for every number (stochastic rounding included).

    Returns:
        a :class:`BlockArray`.

    >>> q = quantize([100.0, -37.0, 5.0] + [0.0] * 13 + [0.001, -0.0004] + [0.0] * 14, "nvfp4")
    >>> q.scales.tolist(), q.codes[:3].tolist(), q.codes[16:18].tolist()
    ([126, 2], [7, 12, 1], [7, 13])
    """
    bf = get_block_format(fmt)
    raw = np.asarray(x)
    arr = _as_float_array(raw)
    if arr.ndim == 0:
        raise ValueError("quantize needs an array of at least one dimension")
    axes, block = _normalize_layout(arr.ndim, axis, block_size, bf)
    rounding = _canonical_rounding(rounding)
    if inf not in ("nan", "saturate"):
        raise ValueError(f"inf must be 'nan' or 'saturate', got {inf!r}")
    if bf.is_nvfp4:
        if scale_rounding != "floor":
            raise ValueError("scale_rounding applies to MX formats; NVFP4 scales follow variant=")
        if inf != "nan":
            raise ValueError("inf= applies to MX formats; NVFP4 follows the variant's arithmetic")
        return _quantize_nvfp4(arr, bf, axes, block, rounding, rng, variant, global_amax, workers)
    _check_mx_options(raw, arr, scale_rounding, variant, global_amax)
    with np.errstate(over="ignore", invalid="ignore"):  # saturation and NaN blocks are handled
        codes, scales = _quantize_mx(arr, bf, axes, block, scale_rounding, inf, rounding, rng, workers)
    return BlockArray(
        codes=codes,
        scales=scales,
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        scale_rounding=scale_rounding,
    )


def _check_mx_options(
    raw: np.ndarray, arr: np.ndarray, scale_rounding: str, variant: str, global_amax: Any,
) -> None:
    """Refuse MX options that do not apply or that fpemu cannot honour exactly."""
    if scale_rounding not in SCALE_ROUNDINGS:
        raise ValueError(
            f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
        )
    if global_amax is not None or variant != "te":
        raise ValueError("global_amax and variant apply to NVFP4 only")
    if scale_rounding == "rceil" and raw.dtype.kind in "iu" and arr.size:
        # rceil rounds amax * (1/max) to float32 from the exact amax; an integer beyond 2**53
        # has no exact float64 amax (its round-to-odd copy keeps floor/ceil/even exact only).
        if float(np.max(np.abs(arr))) >= 2.0**53:
            raise ValueError("scale_rounding='rceil' on integers beyond 2**53 in magnitude is not "
                             "computed exactly: convert the input to float64 first")
