"""The inputs that make a cast exhaustive (``fpemu vectors --kind exhaustive``): one of every
class of input a deterministic rounding can tell apart."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import code_values, nan_patterns
from ..formats import Format, get_format

_UINT_OF_DTYPE = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
#: Widest format exhaustive vectors exist for (about 6 inputs per code).
MAX_EXHAUSTIVE_BITS = 16


def _anchors(fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """The magnitudes of the format's finite values (0 always included, as the lower end of
    the first interval) and the midpoints between neighbours, as exact float64s; the last
    midpoint is the overflow tie, between the largest magnitude and the next one the exponent
    range would have. Both signs' magnitudes: a two's complement format's most negative value
    (int8's -2) has no positive twin, and its neighbourhood is a class of its own."""
    finite = code_values(np.arange(fmt.num_codes, dtype=np.int64), fmt)
    vals = np.union1d([0.0], np.abs(finite[np.isfinite(finite)]))
    ulp_max = np.ldexp(1.0, fmt.emax - fmt.mantissa_bits)
    nxt = np.append(vals[1:], vals[-1] + ulp_max)
    return vals, (vals + nxt) / 2  # exact: neighbours differ by at most one binade


def _exhaustive_nans(fmt: Format, dtype: np.dtype) -> np.ndarray:
    """NaN inputs for every outcome of every NaN policy: with IEEE NaNs (where ``payload``
    and ``quiet_payload`` keep the top mantissa-width payload bits), every value of those bits
    with the bits below them zero, one and all ones, both signs; otherwise the edge cases'
    quiet, signalling and payload NaNs."""
    if fmt.nan != "ieee":
        return nan_patterns(dtype)
    nmant = np.finfo(dtype).nmant
    uint = _UINT_OF_DTYPE[dtype]
    drop = nmant - fmt.mantissa_bits
    top = np.arange(1 << fmt.mantissa_bits, dtype=np.uint64) << np.uint64(drop)
    lows = np.array([0, 1, (1 << drop) - 1], dtype=np.uint64)
    frac = np.unique((top[:, None] | lows[None, :]).ravel())
    frac = frac[frac != 0]  # a zero fraction is Inf, not NaN
    exp_all_ones = np.uint64(((1 << (dtype.itemsize * 8 - 1 - nmant)) - 1) << nmant)
    bits = (frac | exp_all_ones).astype(uint)
    sign = uint(1) << uint(dtype.itemsize * 8 - 1)
    return np.concatenate([bits, bits | sign]).view(dtype)


def exhaustive_inputs(fmt: str | Format = "bf16", dtype: Any = np.float32) -> np.ndarray:
    """Inputs that make a cast into ``fmt`` exhaustive: one input at least for every way a
    deterministic rounding (every mode but stochastic, every overflow and NaN option) can
    treat an input of ``dtype``.

    A finite input's result depends only on where it lies among the format's values
    v_0 = 0 < v_1 < ... and the midpoints m_i = (v_i + v_i+1)/2: on one of them, or strictly
    between two neighbouring ones (the last midpoint is the overflow tie, half-way to the
    value after the largest). So the set holds every value, every midpoint, and the ``dtype``
    floats just below and just above each (which lie strictly between), both signs, the
    value after the largest and its neighbours, ``dtype``'s largest finite value, +-0,
    +-Inf, and NaNs covering every payload the format can keep. Formats of at most 16 bits
    only (about 6 inputs per code); ``dtype`` must hold every midpoint exactly.

    >>> exhaustive_inputs("fp16").size, exhaustive_inputs("e4m3").size, exhaustive_inputs("bf16").size
    (387084, 1548, 392448)
    """
    f = get_format(fmt)
    dtype = np.dtype(dtype)
    if dtype not in _UINT_OF_DTYPE:
        raise ValueError(f"exhaustive inputs are float32 or float64, got {dtype}")
    if f.bits > MAX_EXHAUSTIVE_BITS:
        raise ValueError(
            f"exhaustive vectors exist for formats of at most {MAX_EXHAUSTIVE_BITS} bits (every value, midpoint "
            f"and their neighbours); {f.name} has {f.bits} bits, 2^{f.bits} codes: use --kind edge or random")
    vals, mids = _anchors(f)
    core = np.concatenate([vals, mids])  # every value and midpoint, the overflow tie included
    with np.errstate(over="ignore"):
        if not np.array_equal(core.astype(dtype).astype(np.float64), core):
            raise ValueError(f"{dtype} cannot hold every midpoint of {f.name} exactly; exhaustive vectors need it")
        # Past the overflow tie: the value after the largest, and twice the largest (Inf in dtype is dropped).
        a = np.concatenate([core, [2 * mids[-1] - vals[-1], 2 * f.max]]).astype(dtype)
    a = a[np.isfinite(a)]
    finite = np.concatenate([a, np.nextafter(a, dtype.type(-np.inf)), np.nextafter(a, dtype.type(np.inf)),
                             [np.finfo(dtype).max]]).astype(dtype)  # fmt: skip
    finite = finite[np.isfinite(finite) & (finite >= 0)]  # -tiny (below 0) returns as the negation of +tiny
    x = np.concatenate([finite, -finite, np.array([np.inf, -np.inf], dtype=dtype), _exhaustive_nans(f, dtype)])
    uint = _UINT_OF_DTYPE[dtype]
    return np.unique(x.view(uint)).view(dtype)  # sorted by bit pattern, no repeats (+0/-0 both kept)
