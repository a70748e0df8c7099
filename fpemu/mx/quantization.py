""":func:`quantize`, the front door: checks the input and the options, then runs the MX or
the NVFP4 pipeline and returns a :class:`BlockArray`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import as_array, option_name
from ..codec import check_random, is_dask, is_stochastic
from .array import BlockArray, read_only
from .mx_array import MXArray
from .nvfp4_array import NVFP4Array
from .dask_blocks import MeasuredAmax, quantize_chunks, tensor_amax_bits
from .conventions import mx_rule, nvfp4_variant
from .formats import BlockFormat, get_block_format
from .inputs import as_float_array, canonical_rounding, float32_input
from .four_over_six import four_over_six_rule
from .layout import normalize_layout
from .mx_quantization import quantize_mx
from .nvfp4_quantization import quantize_nvfp4


def quantize(
    x: Any,
    fmt: str | BlockFormat,
    *,
    axis: int | tuple[int, int] | None = None,
    block_size: int | tuple[int, int] | None = None,
    scale_rounding: str | None = None,
    rounding: str = "nearest_even",
    rng: int | np.random.Generator | None = None,
    inf: str | None = None,
    variant: str | None = None,
    global_amax: float | None = None,
    workers: int | None = None,
    convention: str | None = None,
    four_over_six: str | None = None,
) -> BlockArray:
    """Quantize ``x`` into a block format.

    Args:
        x: real array of any rank >= 1 (float16, float32 and ml_dtypes floats are computed in
            float32, float64 and integers in float64, with the same codes for equal values;
            NVFP4 always computes in float32, as its recipes do). Never modified.
        fmt: ``mxfp8_e4m3``, ``mxfp8_e5m2``, ``mxfp6_e3m2``, ``mxfp6_e2m3``, ``mxfp4``,
            ``mxint8``, ``nvfp4`` or ``nvfp4_ue5m3`` (NVFP4's blocks with UE5M3 scales and no
            per-tensor scale). Every name here (format, roundings, ``inf``, ``variant``,
            ``convention``) is read in any case.
        axis: the block axis (default -1); for 2-D tiles a pair (default ``(-2, -1)``).
        block_size: elements per block (default 32 for MX, 16 for NVFP4), or a pair such as
            ``(16, 16)`` for 2-D tiles (TransformerEngine's NVFP4 weight tiles); 1 .. 2**31.
        scale_rounding: MX scale rule: ``floor`` (OCP, the default), ``rceil`` (NVIDIA),
            ``ceil`` or ``even`` (torchao). NVFP4 has its own rule (``variant``).
        rounding: element rounding, any mode of :func:`fpemu.encode` (default RNE, the OCP
            rule; NVFP4 gradients use ``"stochastic"`` with ``rng``), for every format:
            MXINT8 with ``"nearest_away"`` is microxcaling's default (``round="nearest"``).
        rng: seed or ``np.random.Generator`` for stochastic rounding (refused for the others).
        inf: MX block containing +-Inf (and no NaN): ``"nan"`` (the default) gives scale 0xFF
            (the spec, microxcaling), ``"saturate"`` gives 0xFE with the Inf elements at +-max
            (TransformerEngine, torchao RCEIL).
        variant: NVFP4 arithmetic: ``"te"`` (TransformerEngine, default) or ``"torchao"``
            (``nvfp4_ue5m3``: ``"te"`` only); ``convention=`` names the same by library.
        global_amax: NVFP4: use this tensor amax (a finite number > 0) instead of max |x|
            (a calibrated or delayed amax); refused for ``nvfp4_ue5m3``.
        workers: threads over chunks of blocks (default: ``FPEMU_WORKERS`` or the CPU count);
            the codes are the same for every number (stochastic rounding included).
        convention: reproduce a library's rule, departures from the spec included, spelled
            as for :func:`fpemu.like` (one table: :mod:`fpemu.codec.conventions`). MX:
            ``"torchao-0.18"`` (eager ``to_mx``, any ``scale_rounding`` it offers),
            ``"torchao_triton-0.18"``, ``"transformer_engine-2.12"`` (2.6 to 2.12) or
            ``"transformer_engine-2.13"`` (2.13 and later), or a plain ``"torchao"``,
            ``"transformer_engine"`` for the installed release (the newest when absent);
            None or ``"ocp"``: the OCP MX spec. A library computes in float32 with RNE
            elements: float64 and integer input is rounded to float32 first, and
            ``inf``/``rounding`` are fixed (see docs/mx.md). NVFP4:
            ``"transformer_engine-2.13"`` (``variant="te"``) or ``"torchao-0.18"``
            (``variant="torchao"``), so that one keyword names a library for every family.
        four_over_six: NVFP4 "Four Over Six" (arXiv 2512.02010) as TransformerEngine runs it:
            each block keeps the scale mapping its amax to 4 or to 6, whichever gives the
            smaller sum of squared (``"mse"``) or absolute (``"mae"``, TE's default) errors
            (ties: 6), under a tensor scale bound of 256 (TE's default) or, with ``"mse_448"``
            or ``"mae_448"``, 448. None (the default): the plain rule. NVFP4 only, ``"te"``
            arithmetic and round-to-nearest-even elements (see :mod:`fpemu.mx.four_over_six`).

    Returns:
        a :class:`BlockArray`. A Dask array in gives a BlockArray of Dask codes and scales,
        chunk by chunk, with the same bits (every chunk along a block axis but the last must
        hold whole blocks; ``.compute()`` brings it into memory).

    >>> q = quantize([100.0, -37.0, 5.0] + [0.0] * 13 + [0.001, -0.0004] + [0.0] * 14, "nvfp4")
    >>> q.scales.tolist(), q.codes[:3].tolist(), q.codes[16:18].tolist()
    ([126, 2], [7, 12, 1], [7, 13])
    >>> r = quantize([2.0**-120], "mxfp8_e4m3", convention="torchao-0.18")  # divides by 2**-126
    >>> r.scales.tolist(), r.codes.tolist(), r.dequantize().tolist()
    ([0], [104], [3.76158192263132e-37])
    """
    bf = get_block_format(fmt)
    scale_rounding, inf, variant, convention = (option_name(v) for v in (scale_rounding, inf, variant, convention))
    rule = four_over_six_rule(four_over_six)
    if rule is not None and not bf.is_nvfp4:
        raise ValueError(f"four_over_six applies to nvfp4 (its UE4M3 block scales), not {bf.name}")
    if is_dask(x):
        options = dict(axis=axis, block_size=block_size, scale_rounding=scale_rounding, rounding=rounding,
                       rng=rng, inf=inf, variant=variant, global_amax=global_amax, convention=convention,
                       four_over_six=four_over_six)
        return _quantize_dask(x, bf, options)
    raw = as_array(x, "x")
    arr = as_float_array(raw)
    if arr.ndim == 0:
        raise ValueError("quantize needs an array of at least one dimension")
    axes, block = normalize_layout(arr.ndim, axis, block_size, bf)
    rounding = canonical_rounding(rounding)
    check_random(rounding, rng, None)
    if bf.is_nvfp4:
        if scale_rounding not in (None, "floor"):
            raise ValueError("scale_rounding applies to MX formats; NVFP4 scales follow variant=")
        if inf not in (None, "nan"):
            raise ValueError("inf= applies to MX formats; NVFP4 follows the variant's arithmetic")
        variant = nvfp4_variant(convention, variant)
        return quantize_nvfp4(arr, bf, axes, block, rounding, rng, variant, global_amax, workers, rule)
    rule, scale_rounding = mx_rule(convention, scale_rounding, inf, rounding, bf.name)
    if convention not in (None, "ocp"):
        raw = arr = float32_input(arr, f"convention {convention!r}")
    _check_mx_options(raw, arr, rule.scale, variant, global_amax)
    with np.errstate(over="ignore", invalid="ignore"):  # saturation and NaN blocks are handled
        codes, scales = quantize_mx(arr, bf, axes, block, rule, rounding, rng, workers)
    return MXArray(
        codes=read_only(codes),
        scales=read_only(scales),
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        scale_rounding=scale_rounding,
    )


def _check_mx_options(
    raw: np.ndarray, arr: np.ndarray, scale_rounding: str, variant: str, global_amax: Any,
) -> None:
    """Refuse MX options that do not apply or that fpemu cannot honour exactly."""
    if global_amax is not None or variant not in (None, "te"):
        raise ValueError("global_amax and variant apply to NVFP4 only")
    if scale_rounding == "rceil" and raw.dtype.kind in "iu" and arr.size:
        # rceil rounds amax * (1/max) to float32 from the exact amax; an integer beyond 2**53
        # has no exact float64 amax (its round-to-odd copy keeps floor/ceil/even exact only).
        if float(np.max(np.abs(arr))) >= 2.0**53:
            raise ValueError("scale_rounding='rceil' on integers beyond 2**53 in magnitude is not "
                             "computed exactly: convert the input to float64 first")


def _quantize_dask(x: Any, bf: BlockFormat, options: dict) -> BlockArray:
    """quantize of a Dask array: the options checked now on one element of its dtype, the
    tensor amax (NVFP4) taken over the whole array, then every chunk where it lies."""
    axes, block = normalize_layout(x.ndim, options["axis"], options["block_size"], bf)
    stochastic = is_stochastic(canonical_rounding(options["rounding"]))
    dry_rng = 0 if stochastic else options["rng"]  # (a Generator's draw is the chunks' to take)
    dry = quantize(np.zeros((1,) * x.ndim, dtype=x.dtype), bf, **{**options, "rng": dry_rng}, workers=1)
    if bf.tensor_scale and options["global_amax"] is None:
        options["global_amax"] = MeasuredAmax(tensor_amax_bits(x, float32_input))
    codes, scales = quantize_chunks(
        x, axes, block, stochastic, options["rng"],
        lambda chunk, rng: quantize(chunk, bf, **{**options, "rng": rng}, workers=1))
    amax = options["global_amax"]
    if isinstance(amax, MeasuredAmax):
        amax = amax.bits.view(np.float32)
    if not bf.is_nvfp4:
        return MXArray(codes, scales, bf, dry.axis, dry.block_size, scale_rounding=dry.scale_rounding)
    return NVFP4Array(codes, scales, bf, dry.axis, dry.block_size,
                      global_amax=None if amax is None else np.float32(amax), variant=dry.variant,
                      e4m3_max=dry.e4m3_max)
