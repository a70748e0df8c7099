"""Options that only decide values beyond the format's range, at the default path's speed.

An overflow rule, a NaN policy (and ``directed_overflow``) change only the codes of values
whose rounded magnitude passes the format's largest finite value, of Inf and of NaN. A value
of magnitude below the largest finite value, ``max``, rounds (in every deterministic mode) to
a magnitude of at most ``max``: none of those options touches it. So a conversion that
differs from one a fast path serves only in them (:func:`in_range_base`, the same rounding
under the format's default overflow rule and NaN policy) takes that fast path for every
element, then the generic kernel redoes the few with ``|x| < max`` false (NaN included),
which one maximum and one minimum over the input find (:func:`redo_outside`): on data
without them the option costs two reductions.

>>> from ...formats import get_format
>>> from ..options import Conversion
>>> fmt = get_format("bf16")
>>> opts = Conversion(overflow="saturate", nan="all_ones").resolved(fmt)
>>> in_range_base(fmt, opts)
Conversion(rounding='nearest_even', overflow='inf', nan='sign')
>>> x = np.float32([1.0, 3.4e38, np.nan])
>>> [hex(c) for c in redo_outside(np.uint16([0x3F80, 0x7F80, 0x7FC0]), x, fmt, opts)]
['0x3f80', '0x7f7f', '0xffff']
"""

from __future__ import annotations

import numpy as np

from ...formats import Format
from ..generic_kernel import encode_generic
from ..options import Conversion


def in_range_serves(fmt: Format, opts: Conversion) -> bool:
    """Whether opts differs from :func:`in_range_base` only where ``|x| < max`` is false:
    signed sign-magnitude formats with zero (there no value inside the range is a value with
    no code) and NaN (the default NaN policy never refuses), a deterministic rounding of the generic kernel's, overflow or NaN options that
    are not the format's defaults."""
    return (
        fmt.signed and fmt.subnormals and fmt.has_nan and not fmt.twos_complement and fmt.max_code > 0
        and not opts.stochastic and opts.rounding != "ml_dtypes_e8m0"
        and in_range_base(fmt, opts) != opts
    )


def in_range_base(fmt: Format, opts: Conversion) -> Conversion:
    """opts under the format's default overflow rule and NaN policy (and IEEE's sparing):
    the conversion whose codes agree with opts' for every ``|x| < max``."""
    return Conversion(opts.rounding, no_code=opts.no_code).resolved(fmt)


def outside_positions(flat: np.ndarray, fmt: Format) -> np.ndarray:
    """Flat positions of the elements of a float array whose magnitude is not below fmt's
    largest finite value (NaN among them): a maximum and a minimum first, which on data
    without any is all it costs."""
    if not flat.size:
        return np.empty(0, np.intp)
    with np.errstate(invalid="ignore"):  # (NaN: it wins both reductions, and is outside)
        where = positions_beyond(flat, range_bound(fmt, flat.dtype))
    return np.empty(0, np.intp) if where is None else where


def range_bound(fmt: Format, dtype: np.dtype):
    """fmt's largest finite value in the float dtype, for :func:`positions_beyond`: rounded
    there it has no value of that dtype between it and ``fmt.max``, so comparing with it is
    comparing with ``fmt.max`` exactly (past the dtype's range: Inf, every finite is inside)."""
    with np.errstate(over="ignore"):
        return np.dtype(dtype).type(fmt.max)


def positions_beyond(flat: np.ndarray, bound) -> np.ndarray | None:
    """Flat positions of the elements of the non-empty float array flat with ``|x| < bound``
    false (NaN among them), or None where there are none: a maximum and a minimum, which on
    data without any is all it costs. (Under the caller's ``np.errstate(invalid="ignore")``:
    a chunk loop pays for that context once, not per chunk.)"""
    if np.maximum.reduce(flat) < bound and np.minimum.reduce(flat) > -bound:
        return None
    return np.flatnonzero(~(np.abs(flat) < bound))


def redo_outside(codes: np.ndarray, x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """codes (of the flat float array x, in the format's code dtype and container position,
    by a path exact for ``|x| < max``) with the elements outside that range re-encoded under
    opts by the generic kernel, in place."""
    return redo_at(codes, x, outside_positions(x, fmt), fmt, opts)


def redo_at(codes: np.ndarray, x: np.ndarray, where: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """codes with the elements at the flat positions ``where`` re-encoded under opts by the
    generic kernel, in place (see :func:`redo_outside`)."""
    if where.size:
        redone = encode_generic(x[where], fmt, opts).astype(fmt.code_dtype)
        codes[where] = redone << fmt.code_dtype.type(fmt.code_shift) if fmt.code_shift else redone
    return codes
