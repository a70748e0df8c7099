"""MX quantization: blocks of an array to E8M0 scale codes and element codes, region by
region, chunk by chunk."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..codec.options import Conversion, resolved_options
from ..codec.paths import encode_flat, top_half_kernel
from ..codec.top_half import encode_scaled_blocks, scaled_blocks_hold
from ..formats import Format
from ..parallel import run_each
from .conventions import MXRule
from .elements import TINY_MATTERS, encode_elements, nan_fill, restore_underflow
from .formats import BlockFormat
from .inputs import stochastic_positions
from .layout import block_regions, moved, nblocks, output_rows, region_rows, row_chunks, store_rows, unmoved
from .mx_scales import block_amax_bits, mx_scale_codes, pow2_from_e8m0


# ---- quantize -------------------------------------------------------------------------------
#: Element multipliers libraries use instead of 1/scale for scale codes 0 and 0xFE.
_CODE0 = {"one": 1.0, "min_normal": 2.0**126}
_CODE254 = {"zero": 0.0}
_CUDA_NAN = 0x7F  # CUDA's float32 -> FP8 conversions give every NaN this code (E4M3 and E5M2)


def _library_multipliers(inv: np.ndarray, scales: np.ndarray, rule: MXRule) -> None:
    """Replace the exact 1/scale of codes 0 and 0xFE by the rule's multipliers (in place)."""
    if rule.code0 in _CODE0:
        inv[scales == 0] = _CODE0[rule.code0]
    if rule.code254 in _CODE254:
        inv[scales == 254] = _CODE254[rule.code254]


def _quantize_mx_rows(
    rows: np.ndarray, bf: BlockFormat, rule: MXRule, rounding: str, key: Any,
    out: np.ndarray, positions: np.ndarray | None = None,
) -> np.ndarray:
    """Scale codes of blocks laid out as rows (rows, k); their element codes go into out."""
    amax = block_amax_bits(rows, skip_nan=rule.nan == "ignore")
    scales = mx_scale_codes(amax, rows.dtype, bf, rule.scale, rule.inf)
    if rule.is_spec and _encode_scaled(rows, amax, scales, bf, rounding, key, out):
        return scales
    nan_blocks = scales == 255
    inv = pow2_from_e8m0(np.where(nan_blocks, 127, scales), rows.dtype, negate=True)
    if not rule.is_spec:
        _library_multipliers(inv, scales, rule)
    with np.errstate(over="ignore", invalid="ignore"):
        y = rows * inv[:, None]  # exact down to the working precision's subnormals
    if rounding in TINY_MATTERS:
        restore_underflow(y, rows)
    nan_elements = np.isnan(y) if rule.nan == "ignore" else None
    _encode_into(y, bf, rounding, key, positions, out)
    if nan_elements is not None:
        out[nan_elements] = _CUDA_NAN
    if nan_blocks.any():
        out[nan_blocks] = nan_fill(bf)
    return scales


#: Normal binades an element format needs beyond its first for the scaled-block arithmetic
#: to pay: with fewer (FP4, E2M3), much of a block lies below the normal range, where the
#: quotients are computed anyway (mxfp4: 231 -> 151 Melem/s with the arithmetic).
_FEW_SPECIALS = 6


def _encode_scaled(rows: np.ndarray, amax: np.ndarray, scales: np.ndarray, bf: BlockFormat,
                   rounding: str, key: Any, out: np.ndarray) -> bool:
    """Element codes of float32 rows divided by their scales, into out, without the
    quotients: each block's scale exponent comes off the exponent fields inside the codec's
    top-half arithmetic (:func:`fpemu.codec.top_half.encode_scaled_blocks`), where that is
    exact for these blocks (no Inf or NaN among them, no extreme scales). False (nothing
    written) where it is not, or the element format or rounding has no such arithmetic."""
    if key is not None or rows.dtype != np.float32 or not (rows.flags.c_contiguous and out.flags.c_contiguous) \
            or bf.element.emax - bf.element.emin < _FEW_SPECIALS or not amax.size or int(amax.max()) >= 0x7F800000:
        return False
    kernel = top_half_kernel(bf.element, _element_options(bf.element, rounding))
    if kernel is None:
        return False
    plan, table = kernel
    exponents = scales.astype(np.int64) - 127
    if not scaled_blocks_hold(plan, exponents, amax >> np.uint32(23)):
        return False
    flat, k = rows.reshape(-1), rows.shape[1]

    def divided(piece: slice, where: np.ndarray | None) -> np.ndarray:
        """The quotients, by 1/scale built for just these blocks (no NaN scale here): most
        chunks never ask, so the reciprocals of all blocks are never built."""
        first = piece.start // k
        with np.errstate(over="ignore", invalid="ignore"):
            if where is None:
                inv = pow2_from_e8m0(scales[first: piece.stop // k], np.float32, negate=True)
                return (rows[first: piece.stop // k] * inv[:, None]).reshape(-1)
            return flat[piece][where] * pow2_from_e8m0(scales[first + where // k], np.float32, negate=True)

    encode_scaled_blocks(flat.view(np.uint32), plan, table, exponents, k, divided, out.reshape(-1))
    return True


def _encode_into(y: np.ndarray, bf: BlockFormat, rounding: str, key: Any, positions: np.ndarray | None,
                 out: np.ndarray) -> None:
    """Element codes of the scaled rows y into out. Deterministic roundings into a floating
    point element go straight to the codec's path for a flat array (what encode does for a
    chunk this size, on one thread, without its argument checks), writing into out where it
    is contiguous; the rest through :func:`.elements.encode_elements`."""
    fmt = bf.element
    flat_out = out.reshape(-1) if out.flags.c_contiguous else None
    if key is not None or fmt.twos_complement or flat_out is None or not y.flags.c_contiguous:
        out[...] = encode_elements(y, bf, rounding, key, positions)
        return
    opts = _element_options(fmt, rounding)
    encode_flat(y.reshape(-1), fmt, opts, None, 0, None, out=flat_out)


@lru_cache(maxsize=64)
def _element_options(fmt: Format, rounding: str) -> Conversion:
    """The codec options of MX elements: saturating, NaN to 0 where the format has none (as
    :func:`.elements.encode_elements` asks of encode)."""
    return resolved_options(fmt, rounding, "saturate", None if fmt.has_nan else "zero")


def quantize_mx(
    arr: np.ndarray, bf: BlockFormat, axes: tuple[int, ...], block: tuple[int, ...],
    rule: MXRule, rounding: str, rng: Any, workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(codes, scales) in the input's layout, region by region, chunk by chunk."""
    xm = moved(arr, axes)
    lead, lengths = xm.shape[: xm.ndim - len(block)], xm.shape[xm.ndim - len(block):]
    codes_m = np.empty(xm.shape, np.uint8)
    scales_m = np.empty(lead + nblocks(lengths, block), np.uint8)
    key, positions = stochastic_positions(rounding, rng, arr)
    pos_m = None if positions is None else moved(positions, axes)
    for r in block_regions(lengths, block):
        rows = region_rows(xm, r)
        pos = None if pos_m is None else region_rows(pos_m, r)
        out, scratch = output_rows(codes_m, r)
        scales = np.empty(rows.shape[0], np.uint8)
        def chunk(sl: slice, rows=rows, out=out, scales=scales, pos=pos) -> None:
            scales[sl] = _quantize_mx_rows(rows[sl], bf, rule, rounding, key, out[sl],
                                           None if pos is None else pos[sl])

        run_each(chunk, row_chunks(*rows.shape), workers)
        store_rows(codes_m, r, out, scratch)
        scales_m[(Ellipsis,) + r.blocks] = scales.reshape(lead + r.counts)
    return unmoved(codes_m, axes), unmoved(scales_m, axes)
