"""NVFP4's two-level scaling: the FP32 per-tensor scale and the UE4M3 block scales, in
TransformerEngine's or torchao's float32 arithmetic; the same block rule with any scale
format (``nvfp4_ue5m3``: UE5M3 scales, no per-tensor scale)."""

from __future__ import annotations

import numpy as np

from ..codec import decode, encode
from .formats import BlockFormat

_FLT_MAX = np.float32(np.finfo(np.float32).max)


# ---- NVFP4 --------------------------------------------------------------------------------------
def tensor_amax(rows: np.ndarray, bmax: np.ndarray) -> np.uint32:
    """max |x| (as a float32 pattern) over some block rows with NaNs ignored (CUDA's fmaxf
    reductions skip NaN), from the rows and their per-block magnitude maxima."""
    inf = np.uint32(0x7F800000)
    nan_blocks = bmax > inf
    if nan_blocks.any():
        part = np.bitwise_and(rows[nan_blocks].view(np.uint32), np.uint32(0x7FFFFFFF))
        bmax = np.concatenate([bmax[~nan_blocks], np.where(part > inf, 0, part).ravel()])
    return np.uint32(bmax.max(initial=np.uint32(0)))


def _te_s_enc(amax: np.float32, e4m3_max: int = 448) -> np.float32:
    """TransformerEngine's S_enc = fmin(6 * e4m3_max / amax, FLT_MAX) (2688 / amax; 1536 / amax
    for Four Over Six's default bound of 256); 1 when amax is 0 or S_enc is 0 (amax = Inf)."""
    f32 = np.float32
    with np.errstate(divide="ignore", over="ignore"):
        s_enc = np.fmin(f32(6 * e4m3_max) / amax, _FLT_MAX)
    return f32(1.0) if (amax == 0 or s_enc == 0) else f32(s_enc)


def _torchao_pts(amax: np.float32) -> np.float32:
    """torchao's per-tensor scale amax / 2688; 1 where that is 0 or not finite (torchao would
    divide by zero)."""
    with np.errstate(over="ignore", under="ignore"):
        pts = np.float32(amax / np.float32(2688.0))
    return pts if (pts != 0 and np.isfinite(pts)) else np.float32(1.0)


def nvfp4_decode_scale(amax: np.float32, variant: str, e4m3_max: int = 448) -> np.float32:
    """The per-tensor decode scale a tensor of this amax is encoded with (``e4m3_max``: the
    bound TransformerEngine's S_enc maps the amax to, over 6; 448 but for Four Over Six)."""
    if variant == "te":
        return np.float32(np.float32(1.0) / _te_s_enc(amax, e4m3_max))
    return _torchao_pts(amax)


def te_amax_is_degenerate(amax: np.float32, e4m3_max: int = 448) -> bool:
    """Whether TransformerEngine's S_enc is not 6 * e4m3_max / amax (amax 0 or Inf, or so small
    that the quotient overflows and S_enc is clamped to FLT_MAX)."""
    with np.errstate(divide="ignore", over="ignore"):
        return bool(amax == 0 or not np.isfinite(amax) or not np.isfinite(np.float32(6 * e4m3_max) / amax))


def nvfp4_block_scales(
    bamax: np.ndarray, variant: str, amax: np.float32, bf: BlockFormat
) -> tuple[np.ndarray, np.ndarray]:
    """(scale codes, float32 multiplier for the elements) per block, from block amaxes: UE4M3
    for NVFP4; for a format without a per-tensor scale (``nvfp4_ue5m3``) TransformerEngine's
    steps with S_enc = 1, the largest scale in place of 448."""
    f32 = np.float32
    sf = bf.scale
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if variant == "te":
            # Step 2: block scale = e4m3_rne(min(amax_b * (S_enc * (1/6)), 448)).
            s_enc = _te_s_enc(amax) if bf.tensor_scale else f32(1.0)
            scales = encode(np.minimum(bamax * f32(s_enc * f32(f32(1.0) / f32(6.0))), f32(sf.max)), sf)
            # Step 3: enc = min(1 / (fp32(scale) * (1 / S_enc)), FLT_MAX).
            s_dec = f32(f32(1.0) / s_enc)
            mult = np.minimum(f32(1.0) / (decode(scales, sf, dtype=np.float32) * s_dec), _FLT_MAX)
        else:
            # torchao (per_tensor_amax_to_scale and _nvfp4_quantize, two-level path):
            # pts = amax / 2688; scale = e4m3(clamp((amax_b / 6) / pts, 2**-6, 448));
            # data * ((1 / pts) / scale), clamped to +-6 (by the saturating encode).
            pts = _torchao_pts(amax)
            scales = encode(np.clip((bamax / f32(6.0)) / pts, f32(2.0**-6), f32(448.0)), sf)
            mult = (f32(1.0) / pts) / decode(scales, sf, dtype=np.float32)
    return scales, mult


def four_over_six_block_scales(
    bamax: np.ndarray, amax: np.float32, bf: BlockFormat, e4m3_max: int
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Four Over Six's two candidates per block, ((scale codes, multipliers) mapping the block
    amax to 4, the same mapping it to 6), as TransformerEngine computes them
    (``compute_scale_pair`` in cast/nvfp4/quantize_4over6_nvfp4.cuh, PR #2972):
    ``base = fp32(fp32(amax_b / 6) * S_enc)`` with ``S_enc = fmin(6 * e4m3_max / amax,
    FLT_MAX)``; map-to-4 ``e4m3(fmin(base * 1.5, 448))``, map-to-6 ``e4m3(fmin(base, 448))``
    (a division, unlike the plain recipe's ``amax_b * (S_enc * (1/6))``); each multiplier
    ``fmin(1 / (fp32(scale) * (1 / S_enc)), FLT_MAX)``."""
    f32 = np.float32
    sf = bf.scale
    s_enc = _te_s_enc(amax, e4m3_max)
    s_dec = f32(f32(1.0) / s_enc)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        base = (bamax / f32(6.0)) * s_enc
        out = []
        for expanded in (base * f32(1.5), base):
            scales = encode(np.minimum(expanded, f32(sf.max)), sf)
            mult = np.minimum(f32(1.0) / (decode(scales, sf, dtype=np.float32) * s_dec), _FLT_MAX)
            out.append((scales, mult))
    return out[0], out[1]
