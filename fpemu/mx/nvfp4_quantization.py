"""NVFP4 quantization: the tensor amax, then each region's UE4M3 block scales and E2M1
codes, in float32 as TransformerEngine or torchao compute them; ``nvfp4_ue5m3`` runs the same
steps with its UE5M3 scales and no per-tensor scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..parallel import run_each
from .array import read_only
from .nvfp4_array import NVFP4Array
from .elements import encode_elements
from .four_over_six import FourOverSix, block_errors, candidates
from .formats import BlockFormat
from .inputs import float32_input, stochastic_positions
from .layout import block_regions, moved, nblocks, output_rows, region_rows, row_chunks, store_rows, unmoved
from .mx_scales import block_amax_bits
from .nvfp4_scales import nvfp4_block_scales, nvfp4_decode_scale, tensor_amax


def _global_amax_argument(global_amax: Any) -> np.float32:
    """A caller's tensor amax: a finite number > 0 that float32 represents (an Inf, NaN, 0 or
    negative amax would silently give all-Inf, all-NaN or all-zero tensors)."""
    if np.ndim(global_amax) != 0 or isinstance(global_amax, (bool, np.bool_, str, bytes)):
        raise TypeError(f"global_amax must be a single number, got {global_amax!r}")
    try:
        value = float(global_amax)
    except (TypeError, ValueError):
        raise TypeError(f"global_amax must be a number, got {global_amax!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"global_amax must be a finite number > 0, got {value}")
    with np.errstate(over="ignore", under="ignore"):
        amax = np.float32(value)
    if not np.isfinite(amax) or amax == 0:
        raise ValueError(f"global_amax {value} is outside float32's range, in which NVFP4 "
                         "computes its scales")
    return amax


def quantize_nvfp4(
    arr: np.ndarray,
    bf: BlockFormat,
    axes: tuple[int, ...],
    block: tuple[int, ...],
    rounding: str,
    rng: Any,
    variant: str,
    global_amax: Any,
    workers: int | None = None,
    four_over_six: FourOverSix | None = None,
) -> NVFP4Array:
    """NVFP4 two-level scaling in float32, TransformerEngine's or torchao's arithmetic (a
    format without a per-tensor scale: TransformerEngine's, with S_enc = 1); with
    ``four_over_six``, TransformerEngine's choice of scale per block (:mod:`.four_over_six`)."""
    if variant not in ("te", "torchao"):
        raise ValueError(f"variant must be 'te' or 'torchao', got {variant!r}")
    if four_over_six is not None:
        if not bf.tensor_scale:
            raise ValueError(f"four_over_six applies to nvfp4 (UE4M3 block scales under an FP32 tensor scale), "
                             f"not {bf.name}")
        if variant != "te":
            raise ValueError("four_over_six follows TransformerEngine's arithmetic (variant='te'); torchao has no "
                             "Four Over Six")
        if rounding != "nearest_even":
            raise ValueError(f"four_over_six takes round-to-nearest-even elements (TransformerEngine refuses "
                             f"stochastic rounding with 4over6), not rounding={rounding!r}")
    if not bf.tensor_scale:
        if global_amax is not None:
            raise ValueError(f"{bf.name} has no per-tensor scale: global_amax applies to nvfp4")
        if variant != "te":
            raise ValueError(f"variant applies to nvfp4's per-tensor arithmetic; {bf.name} has one rule "
                             "(block scale amax / 6, no per-tensor scale)")
    measured_bits = getattr(global_amax, "bits", None)  # over a whole Dask array (dask_blocks)
    if measured_bits is not None:
        given = np.uint32(measured_bits).view(np.float32)
    else:
        given = None if global_amax is None else _global_amax_argument(global_amax)
    xm = moved(float32_input(arr), axes)
    lead, lengths = xm.shape[: xm.ndim - len(block)], xm.shape[xm.ndim - len(block):]
    regions = block_regions(lengths, block)
    rows = [region_rows(xm, r) for r in regions]
    bmax = [_block_amax_bits(rr, workers) for rr in rows]
    if given is None and bf.tensor_scale:
        measured = max((tensor_amax(rr, bm) for rr, bm in zip(rows, bmax)), default=np.uint32(0))
        given = np.uint32(measured).view(np.float32)
    amax = np.float32(1.0) if given is None else given  # (no per-tensor scale: unused)
    codes_m = np.empty(xm.shape, np.uint8)
    scales_m = np.empty(lead + nblocks(lengths, block), np.uint8)
    key, positions = stochastic_positions(rounding, rng, arr)
    pos_m = None if positions is None else moved(positions, axes)
    for r, rr, bm in zip(regions, rows, bmax):
        out, scratch = output_rows(codes_m, r)
        pos = None if pos_m is None else region_rows(pos_m, r)
        if four_over_six is None:
            scales = _nvfp4_region(rr, bm.view(np.float32), variant, amax, rounding, key, out, bf, pos, workers)
        else:
            scales = _four_over_six_region(rr, bm.view(np.float32), amax, out, bf, four_over_six, r.tile, workers)
        store_rows(codes_m, r, out, scratch)
        scales_m[(Ellipsis,) + r.blocks] = scales.reshape(lead + r.counts)
    e4m3_max = 448 if four_over_six is None else four_over_six.e4m3_max
    tensor = dict(global_scale=nvfp4_decode_scale(amax, variant, e4m3_max), global_amax=np.float32(amax),
                  variant=variant, e4m3_max=e4m3_max) if bf.tensor_scale else {}
    return NVFP4Array(
        codes=read_only(unmoved(codes_m, axes)),
        scales=read_only(unmoved(scales_m, axes)),
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        **tensor,
    )


def _block_amax_bits(rows: np.ndarray, workers: int | None = None) -> np.ndarray:
    """Per-block magnitude maxima of float32 rows as uint32 patterns, chunk by chunk."""
    bmax = np.empty(rows.shape[0], np.uint32)

    def chunk(sl: slice) -> None:
        bmax[sl] = block_amax_bits(rows[sl])

    run_each(chunk, row_chunks(*rows.shape), workers)
    return bmax


def _nvfp4_region(
    rows: np.ndarray, bamax: np.ndarray, variant: str, amax: np.float32, rounding: str,
    key: Any, out: np.ndarray, bf: BlockFormat, positions: np.ndarray | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """Scale codes of one region's blocks (rows); the element codes go into out."""
    scales, mult = nvfp4_block_scales(bamax, variant, amax, bf)
    def chunk(sl: slice) -> None:
        # Step 4: q = e2m1(clamp(x * enc, -6, 6)). The clamp is left to the saturating
        # encode: 6 is representable, so clamping before rounding and saturating after it
        # agree for every rounding mode (and NaN stays NaN either way).
        with np.errstate(over="ignore", invalid="ignore"):
            y = rows[sl] * mult[sl, None]
        out[sl] = encode_elements(y, bf, rounding, key, None if positions is None else positions[sl])

    run_each(chunk, row_chunks(*rows.shape), workers)
    nan_blocks = np.isnan(bamax)
    if nan_blocks.any():
        scales[nan_blocks] = bf.scale.nan_code
        out[nan_blocks] = 0
    return scales.astype(np.uint8)


def _four_over_six_region(
    rows: np.ndarray, bamax: np.ndarray, amax: np.float32, out: np.ndarray, bf: BlockFormat,
    rule: FourOverSix, tile: tuple[int, ...], workers: int | None = None,
) -> np.ndarray:
    """Scale codes of one region's blocks under Four Over Six; the chosen candidate's element
    codes go into out."""
    cand = candidates(bamax, amax, bf, rule)
    scales = np.empty(rows.shape[0], np.uint8)

    def chunk(sl: slice) -> None:
        codes, errors = [], []
        for block_scales, mult in cand:
            with np.errstate(over="ignore", invalid="ignore"):
                y = rows[sl] * mult[sl, None]
            c = encode_elements(y, bf, "nearest_even", None, None)
            codes.append(c)
            errors.append(block_errors(rows[sl], c, block_scales[sl], amax, bf, rule, tile))
        with np.errstate(invalid="ignore"):
            pick4 = errors[0] < errors[1]  # ties and NaN keep map-to-6
        out[sl] = np.where(pick4[:, None], codes[0], codes[1])
        scales[sl] = np.where(pick4, cand.map4[0][sl], cand.map6[0][sl])

    run_each(chunk, row_chunks(*rows.shape), workers)
    nan_blocks = np.isnan(bamax)
    if nan_blocks.any():
        scales[nan_blocks] = bf.scale.nan_code
        out[nan_blocks] = 0
    return scales
