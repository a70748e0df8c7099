"""MX scales: the E8M0 scale rules (floor, rceil, ceil, even) from each block's amax.

Scale codes are computed with integer operations on the IEEE bit patterns; the reciprocal
scale is a power of two built from bits, so the division by a scale is an exact
multiplication. torchao's eager RCEIL (``rceil_log2``), whose float32 log2 rounds to an
integer just above a power of two, is a table of how far above each power that happens.
"""

from __future__ import annotations

import math

import numpy as np

from ..arith import round_to_odd_sum
from ..codec import last_axis_max, scratch
from .formats import BlockFormat

#: Scale rounding rules for MX (see ``docs/mx.md`` for who uses which).
SCALE_ROUNDINGS = ("floor", "rceil", "ceil", "even")


_BITS = {np.dtype(np.float32): (np.uint32, 23, 127), np.dtype(np.float64): (np.uint64, 52, 1023)}
_F64_INF_BITS = np.uint64(0x7FF0000000000000)


# ---- MX scales ----------------------------------------------------------------------------------
def block_amax_bits(xb: np.ndarray, skip_nan: bool = False) -> np.ndarray:
    """Per-block max |x| as an unsigned bit pattern (one integer reduction; NaN patterns win,
    or with ``skip_nan`` are left out, as CUDA's fmaxf leaves them)."""
    utype, mbits, _ = _BITS[xb.dtype]
    sign_off = utype(np.iinfo(utype).max >> 1)
    # (into a reused buffer: a fresh one costs a page fault a page, more than the pass itself)
    mag = np.bitwise_and(xb.view(utype), sign_off, out=scratch("amax.magnitudes", xb.size, utype).reshape(xb.shape))
    if skip_nan:
        inf_bits = utype(sign_off ^ ((1 << mbits) - 1))
        mag[mag > inf_bits] = 0  # mag is the buffer, not xb
    return last_axis_max(mag) if mag.shape[-1] else np.zeros(mag.shape[:-1], utype)


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


def rn32_product(a: np.ndarray, c: float) -> np.ndarray:
    """float32 (RNE) of the exact product of finite float64 values a and a float32 value c.

    a is split into its top 29 and low 24 significand bits, so both partial products fit
    float64's 53 bits exactly; their sum rounded to odd and then to float32 is the correct
    rounding of the exact product (Boldo and Melquiond). For float32 a this is exactly the
    float32 multiplication ``fp32(a * c)``.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    head = (a.view(np.uint64) & ~np.uint64((1 << 24) - 1)).view(np.float64)
    with np.errstate(over="ignore"):  # products beyond float32 round to Inf, as intended
        return round_to_odd_sum(head * c, (a - head) * c).astype(np.float32)


def _log2_slack() -> tuple[np.ndarray, int]:
    """How far above 2**k a float32 d may lie and still have log2(d), rounded to float32
    (RNE, as torch's CPU log2 does), equal k: for each exponent field E = k + 127 the largest
    mantissa M (d = 2**k * (1 + M * 2**-23)) that does, and for subnormal d (k = -127, 22
    fraction bits) the largest M - 2**22. log2(d) - k = log2(1 + f) rounds to k while it stays
    below h, half the gap between k and the next float32 above it, so f < 2**h - 1 (never
    equal: log2 of such d is irrational). The bounds are small integers (at most 22) far
    from a rounding boundary, so float64 computes them exactly."""
    def half_gap(k: int) -> float:
        a = abs(k)
        binade = a.bit_length() - 1  # floats just above k lie in |k|'s binade, or (k = -2**j)
        step = binade - 23 - (1 if k < 0 and a == 1 << binade else 0)  # the one below it
        return 2.0 ** (step - 1)

    table = np.zeros(256, np.uint32)
    for e in range(1, 255):
        k = e - 127
        if k:
            table[e] = math.floor(math.expm1(half_gap(k) * math.log(2.0)) * 2.0**23)
    return table, math.floor(math.expm1(half_gap(-127) * math.log(2.0)) * 2.0**22)


_LOG2_SLACK, _LOG2_SLACK_SUBNORMAL = _log2_slack()


def _rceil_log2_exponent(bits: np.ndarray, bf: BlockFormat) -> np.ndarray:
    """torchao's eager RCEIL: ceil(log2(fp32(amax / max_elem))) with torch's float32 log2,
    which is one low where d lies just above a power of two (``_log2_slack``). The float64
    quotient rounded to float32 is torch's float32 division: max_elem's odd part is 3, 7 or
    15, so an inexact quotient of a float32 amax lies at least 1/30 of a float32 step from a
    rounding boundary, far beyond float64's error."""
    with np.errstate(under="ignore"):
        d = (bits.view(np.float64) / bf.max_value).astype(np.float32)
    dbits = d.view(np.uint32)
    efield, mant = dbits >> np.uint32(23), dbits & np.uint32(0x7FFFFF)
    low = np.where(efield == 0,
                   (mant > np.uint32(0x400000)) & (mant - np.uint32(0x400000) <= _LOG2_SLACK_SUBNORMAL),
                   (mant != 0) & (mant <= _LOG2_SLACK[efield]))
    return _ceil_log2_bits(dbits, np.float32) - low + bf.emax


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
        v = rn32_product(bits.view(np.float64), c)
        return _ceil_log2_bits(v.view(np.uint32), np.float32) + bf.emax
    if scale_rounding == "rceil_log2":
        return _rceil_log2_exponent(bits, bf)
    raise ValueError(
        f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
    )


def floor_exponents(maxima: np.ndarray, bf: BlockFormat) -> np.ndarray | None:
    """The floor rule's scale exponents (scale code - 127, int64) of blocks whose largest
    magnitudes have the float32 top halves ``maxima`` (uint16, sign off: the exponent field is
    ``maxima >> 7``, all the floor rule reads), as :func:`mx_scale_codes` gives them; None
    where some amax is zero or a float32 subnormal (mx_scale_codes reads those in float64,
    below float32's exponent field) or not finite.

    >>> from .formats import get_block_format
    >>> bf = get_block_format("mxfp8_e4m3")
    >>> top_halves = (np.float32([7.0, 448.0, 2.0**-120]).view(np.uint32) >> 16).astype(np.uint16)
    >>> floor_exponents(top_halves, bf).tolist()  # floor(log2 amax) - emax, clamped to E8M0
    [-6, 0, -127]
    """
    fields = (maxima >> np.uint16(7)).astype(np.int16)  # (int16: few elements, every call counts)
    if not fields.size or int(fields.min()) == 0 or int(fields.max()) == 255:
        return None
    fields -= np.int16(bf.emax + 127)
    np.maximum(fields, np.int16(-127), out=fields)  # E8M0's smallest code
    return np.minimum(fields, np.int16(127), out=fields) if bf.emax < 0 else fields  # (its largest: only for emax < 0)


def mx_scale_codes(
    amax_bits: np.ndarray, dtype: np.dtype, bf: BlockFormat, scale_rounding: str, inf: str
) -> np.ndarray:
    """E8M0 scale code of each block from the bit pattern of its amax. A block holding Inf
    (and no NaN) gets 0xFF (``inf="nan"``), 0xFE (``"saturate"``) or the code read off Inf's
    exponent field, ``255 - emax`` (``"exponent"``, torchao); a NaN amax 0xFF."""
    bits = _as_float64_bits(amax_bits, dtype)
    finite = np.minimum(bits, _F64_INF_BITS - np.uint64(1))  # keep the arithmetic finite
    e = _scale_exponent(finite, bf, scale_rounding)
    codes = np.clip(e - bf.emax + 127, 0, 254).astype(np.uint8)
    codes[bits == 0] = 0
    nonfinite = bits >= _F64_INF_BITS
    if nonfinite.any():
        codes[nonfinite] = {"saturate": 0xFE, "exponent": 255 - bf.emax}.get(inf, 0xFF)
        codes[bits > _F64_INF_BITS] = 0xFF
    return codes


def pow2_from_e8m0(codes: np.ndarray, dtype: np.dtype, negate: bool = False) -> np.ndarray:
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
