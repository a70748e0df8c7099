"""MX scales: the E8M0 scale rules (floor, rceil, ceil, even) from each block's amax.

Scale codes are computed with integer operations on the IEEE bit patterns; the reciprocal
scale is a power of two built from bits, so the division by a scale is an exact
multiplication.
"""

from __future__ import annotations

import numpy as np

from ..codec.odd import _round_to_odd_sum
from .formats import BlockFormat

#: Scale rounding rules for MX (see ``docs/mx.md`` for who uses which).
SCALE_ROUNDINGS = ("floor", "rceil", "ceil", "even")


_BITS = {np.dtype(np.float32): (np.uint32, 23, 127), np.dtype(np.float64): (np.uint64, 52, 1023)}
_F64_INF_BITS = np.uint64(0x7FF0000000000000)


# ---- MX scales ----------------------------------------------------------------------------------
def _amax_bits(xb: np.ndarray) -> np.ndarray:
    """Per-block max |x| as an unsigned bit pattern (one integer reduction; NaN patterns win)."""
    utype, mbits, _ = _BITS[xb.dtype]
    sign_off = utype(np.iinfo(utype).max >> 1)
    mag = np.bitwise_and(xb.view(utype), sign_off)
    return mag.max(axis=-1) if mag.shape[-1] else np.zeros(mag.shape[:-1], utype)


def _as_float64_bits(amax_bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Per-block amax patterns as float64 patterns (exact: float32 subnormals become normal),
    so every scale rule sees the same value whatever the input precision."""
    if np.dtype(dtype) == np.float64:
        return amax_bits
    with np.errstate(invalid="ignore"):  # a signalling NaN pattern stays a NaN
        return amax_bits.view(np.float32).astype(np.float64).view(np.uint64)


def _ceil_log2_bits(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """ceil(log2(v)) for positive finite bit patterns v (int64); subnormals give <= -bias
    except that the binade just below the smallest normal rounds up to 1 - bias when v exceeds
    half of it (fp32: values above 2**-127 give -126, the NVIDIA rule)."""
    utype, mbits, bias = _BITS[np.dtype(dtype)]
    efield = (bits >> utype(mbits)).astype(np.int64)
    mant = bits & utype((1 << mbits) - 1)
    normal_up = (mant != 0).astype(np.int64)
    sub_up = (mant > utype(1 << (mbits - 1))).astype(np.int64)
    return np.where(efield == 0, sub_up - bias, efield - bias + normal_up)


def _rn32_product(a: np.ndarray, c: float) -> np.ndarray:
    """float32 (RNE) of the exact product of finite float64 values a and a float32 value c.

    a is split into its top 29 and low 24 significand bits, so both partial products fit
    float64's 53 bits exactly; their sum rounded to odd and then to float32 is the correct
    rounding of the exact product (Boldo and Melquiond). For float32 a this is exactly the
    float32 multiplication ``fp32(a * c)``.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    head = (a.view(np.uint64) & ~np.uint64((1 << 24) - 1)).view(np.float64)
    with np.errstate(over="ignore"):  # products beyond float32 round to Inf, as intended
        return _round_to_odd_sum(head * c, (a - head) * c).astype(np.float32)


def _scale_exponent(bits: np.ndarray, bf: BlockFormat, scale_rounding: str) -> np.ndarray:
    """log2 of the unclamped scale plus emax, per block, from finite float64 amax patterns."""
    if scale_rounding == "floor":
        # X = 2**(floor(log2(amax)) - emax): the biased exponent field is floor(log2) + bias.
        return (bits >> np.uint64(52)).astype(np.int64) - 1023
    if scale_rounding == "ceil":
        return _ceil_log2_bits(bits, np.float64)
    if scale_rounding == "even":
        # torchao EVEN: round amax to the element's precision (add half an element ulp to the
        # bit pattern, a carry rolls into the exponent), then take floor(log2).
        half = np.uint64(1 << (52 - bf.mantissa_bits - 1))
        return ((bits + half) >> np.uint64(52)).astype(np.int64) - 1023
    if scale_rounding == "rceil":
        # NVIDIA: round up to a power of two fp32(amax * fp32(1/max_elem)), the product
        # rounded once to float32 (what cuBLAS/TE/torchao compute for float32 input).
        c = float(np.float32(1) / np.float32(bf.max_value))
        v = _rn32_product(bits.view(np.float64), c)
        return _ceil_log2_bits(v.view(np.uint32), np.float32) + bf.emax
    raise ValueError(
        f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
    )


def _mx_scale_codes(
    amax_bits: np.ndarray, dtype: np.dtype, bf: BlockFormat, scale_rounding: str, inf: str
) -> np.ndarray:
    """E8M0 scale code of each block from the bit pattern of its amax."""
    bits = _as_float64_bits(amax_bits, dtype)
    finite = np.minimum(bits, _F64_INF_BITS - np.uint64(1))  # keep the arithmetic finite
    e = _scale_exponent(finite, bf, scale_rounding)
    codes = np.clip(e - bf.emax + 127, 0, 254).astype(np.uint8)
    codes[bits == 0] = 0
    nonfinite = bits >= _F64_INF_BITS
    if nonfinite.any():
        codes[nonfinite] = 0xFE if inf == "saturate" else 0xFF
        codes[bits > _F64_INF_BITS] = 0xFF
    return codes


def _pow2_from_e8m0(codes: np.ndarray, dtype: np.dtype, negate: bool = False) -> np.ndarray:
    """2**(code - 127) (or its reciprocal) built from bits; NaN for 0xFF. Exact in float32,
    where 2**-127 is the subnormal 0x00400000."""
    c = codes.astype(np.int64)
    e = (127 - c) if negate else (c - 127)
    dtype = np.dtype(dtype)
    utype, mbits, bias = _BITS[dtype]
    biased = e + bias
    bits = np.where(biased >= 1, biased << mbits, 1 << (mbits - 1 + np.minimum(biased, 1)))
    quiet_nan = (((1 << (dtype.itemsize * 8 - 1 - mbits)) - 1) << mbits) | (1 << (mbits - 1))
    bits = np.where(c == 255, quiet_nan, bits)
    return bits.astype(utype).view(dtype)
