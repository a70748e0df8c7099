"""quantize's two paths that round by floating-point arithmetic instead of through codes:
float32 input into fp16-like formats under round-to-nearest-even by adding a "magic" number
(:func:`quantize_by_magic_number`), and float64 input under RNE, toward zero, up or down by
scaling with the quantum and rounding to an integer (:func:`quantize_by_quantum_scaling`).
Where each applies is :func:`fpemu.codec.encode_path`'s decision (``values=True``); overflow,
Inf, NaN and signed zeros are decided by the generic kernel, so every option means the same
on every path.

>>> from ...formats import get_format
>>> from ..options import Conversion
>>> fp16 = get_format("fp16")
>>> quantize_by_magic_number(np.float32([1 + 2**-11, 1 + 3 * 2**-11, 70000.0]), fp16, Conversion().resolved(fp16))
array([1.       , 1.0019531,       inf], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ...formats import Format
from ..chunks import chunk_size, chunks
from ..generic_kernel import decode_generic, encode_generic
from ..options import Conversion
from ..specials import refuse_nan


def quantize_by_magic_number(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """RNE values of float32 x in fmt, by float32 addition of a "magic" number.

    For x in the binade [2**e, 2**(e+1)) (e clamped below at emin), M = 1.5 * 2**(e - m + 23)
    has float32 spacing 2**(e - m), the format's quantum at x, and x + M stays in M's binade; so
    the float32 addition rounds x to the format's precision, ties to even (M is an even multiple
    of the quantum), and subtracting M is exact. Overflow, Inf, NaN and signed zeros are then
    set per the options, as the generic kernel does (tested against it exhaustively).
    """
    if opts.nan == "raise" and not fmt.has_nan:
        refuse_nan(np.asarray(x), fmt)
    flat = np.asarray(x, order="C").reshape(-1)
    out = np.empty(flat.size, dtype=np.float32)
    size = chunk_size()
    magic_bits = np.empty(min(size, flat.size), dtype=np.uint32)
    low = np.uint32(fmt.emin + 127)
    high = np.uint32(fmt.emax + 127)
    offset = np.uint32(23 - fmt.mantissa_bits)
    for part in chunks(flat.size, size):
        n = part.stop - part.start
        xs, m, q = flat[part], magic_bits[:n], out[part]
        np.right_shift(xs.view(np.uint32), np.uint32(23), out=m)
        m &= np.uint32(0xFF)
        np.clip(m, low, high, out=m)
        m += offset
        m <<= np.uint32(23)
        m |= np.uint32(0x400000)
        magic = m.view(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            np.add(xs, magic, out=q)
            q -= magic
        np.copysign(q, xs, out=q)
        with np.errstate(invalid="ignore"):
            big = ~(np.abs(q) <= fmt.max)  # overflowed, Inf or NaN
        if big.any():
            q[big] = _special_values(xs[big], fmt, opts)
    if not fmt.has_neg_zero:
        out[out == 0] = 0.0
    return out.reshape(x.shape)


def _special_values(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Values for the (few) inputs that overflowed, are Inf or are NaN: the generic kernel
    decides them, so the overflow and NaN options mean the same on every path."""
    return decode_generic(encode_generic(x, fmt, opts), fmt).astype(x.dtype)


# numpy's own integer rounding of float64 values, per rounding mode (each exact; the modes
# are those the dispatch sends here).
_INTEGER_ROUNDING = {"nearest_even": np.rint, "toward_zero": np.trunc, "up": np.ceil, "down": np.floor}


def quantize_by_quantum_scaling(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Values of float64 x rounded in fmt, by scaling with the quantum and rounding to integer.

    v / 2**(max(e, emin) - m) has at most m + 1 integer bits and is exact (a power-of-two
    scaling), numpy's rint/trunc/ceil/floor round it, and scaling back is exact. Overflow,
    Inf, NaN and signed zeros then follow the options as in the generic kernel (tested against
    it).
    """
    if opts.nan == "raise" and not fmt.has_nan:
        refuse_nan(np.asarray(x), fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = np.frexp(x)
        quantum = np.ldexp(1.0, np.maximum(e - 1, fmt.emin) - fmt.mantissa_bits)
        scaled = x / quantum
        if opts.rounding in ("up", "down") and fmt.emin - fmt.mantissa_bits >= 1:
            # A quantum of 2 or more can scale the tiniest inputs to 0, where ceil/floor
            # no longer see that they were not zero.
            scaled = np.where((scaled == 0) & (x != 0), np.copysign(5e-324, x), scaled)
        r = _INTEGER_ROUNDING[opts.rounding](scaled) * quantum
        bad = ~(np.abs(r) <= fmt.max)  # overflowed, Inf or NaN
    if bad.any():
        r[bad] = _special_values(x[bad], fmt, opts)
    if not fmt.has_neg_zero:
        r[r == 0] = 0.0
    return r
