"""MX quantization: blocks of an array to E8M0 scale codes and element codes, region by
region, chunk by chunk."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..codec import Conversion, MXRule, encode_array, encode_scaled_blocks, encode_scaled_by_block_max
from ..formats import Format
from ..parallel import run_each
from .elements import TINY_MATTERS, encode_elements, nan_fill, restore_underflow
from .formats import BlockFormat
from .inputs import stochastic_positions
from .layout import block_regions, moved, nblocks, output_rows, region_rows, row_chunks, store_rows, unmoved
from .mx_scales import block_amax_bits, floor_exponents, mx_scale_codes, pow2_from_e8m0


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
    if rule.is_spec and rule.scale == "floor" and _scaled_pays(bf, key):
        # the floor scale reads only each block's largest exponent: the codec finds it in
        # the element encode's own pass over the rows (rows it declines: the way below)
        done = encode_scaled_by_block_max(rows, bf.element, _element_options(bf.element, rounding),
                                          lambda maxima: floor_exponents(maxima, bf), out)
        if done is not None:
            exponents, undone = done
            scales = (exponents + 127).astype(np.uint8)
            for part in undone:
                scales[part] = _quantize_blocks(rows[part], bf, rule, rounding, key, out[part])
            return scales
    return _quantize_blocks(rows, bf, rule, rounding, key, out, positions)


def _quantize_blocks(
    rows: np.ndarray, bf: BlockFormat, rule: MXRule, rounding: str, key: Any,
    out: np.ndarray, positions: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`_quantize_mx_rows` from each block's amax, found in a pass of its own."""
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


def _scaled_pays(bf: BlockFormat, key: Any) -> bool:
    """Whether the codec's scaled-block arithmetic pays for these elements: a deterministic
    rounding, and a normal range of :data:`_FEW_SPECIALS` binades or more."""
    return key is None and bf.element.emax - bf.element.emin >= _FEW_SPECIALS


def _encode_scaled(rows: np.ndarray, amax: np.ndarray, scales: np.ndarray, bf: BlockFormat,
                   rounding: str, key: Any, out: np.ndarray) -> bool:
    """Element codes of float32 rows divided by their scales, into out, without the
    quotients (:func:`fpemu.codec.encode_scaled_blocks`: the codec folds each block's scale
    exponent into its top-half arithmetic), where the element format has the normal range for
    that to pay and the rounding is deterministic; False (nothing written) where not, or where
    the codec declines these blocks (the caller then divides and encodes)."""
    if not _scaled_pays(bf, key):
        return False
    exponents = scales.astype(np.int64) - 127
    return encode_scaled_blocks(rows, exponents, amax, bf.element, _element_options(bf.element, rounding), out)


def _encode_into(y: np.ndarray, bf: BlockFormat, rounding: str, key: Any, positions: np.ndarray | None,
                 out: np.ndarray) -> None:
    """Element codes of the scaled rows y into out. Deterministic roundings into a floating
    point element go straight to the codec's :func:`~fpemu.codec.encode_array` (encode's
    paths for a chunk this size, on one thread, without its argument checks), writing into
    out where it is contiguous; the rest through :func:`.elements.encode_elements`."""
    fmt = bf.element
    if key is not None or fmt.twos_complement or not (out.flags.c_contiguous and y.flags.c_contiguous):
        out[...] = encode_elements(y, bf, rounding, key, positions)
        return
    encode_array(y, fmt, _element_options(fmt, rounding), out=out)


@lru_cache(maxsize=64)
def _element_options(fmt: Format, rounding: str) -> Conversion:
    """The codec options of MX elements: saturating, NaN to 0 where the format has none (as
    :func:`.elements.encode_elements` asks of encode), resolved once."""
    return Conversion(rounding, "saturate", None if fmt.has_nan else "zero").resolved(fmt)


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
