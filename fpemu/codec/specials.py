"""What the generic kernel does after rounding: overflow, values with no code, NaN, and the
sign, each rule as the option that names it says (the order of IEEE P3109 v4.0 section 4.7:
round first on an unbounded grid, then saturate, then encode).

* Overflow (a finite value whose rounded magnitude is beyond the largest finite value) and
  Inf input follow the ``overflow`` option: ``saturate`` (P3109 SatFinite), ``saturate_propagate``
  (SatPropagate), ``ml_dtypes_saturate`` (finite overflow saturates, Inf input is Inf, or
  NaN where the format has no Inf: ml_dtypes' C++ ``ConvertFrom<kSaturate>``), ``inf``/``nan``
  (Inf or NaN, except in the rounding modes ``directed`` spares: IEEE 754 7.4's modes that
  round toward zero for that sign, and round-to-odd; P3109's, without round-to-odd; or none)
  and ``sat_none`` (P3109 SatNone: P3109's sparing, plus round-to-odd into an unsigned
  extended format; a format without Inf saturates).
* Values with no code: a negative number in an unsigned format (one that rounds to zero is
  zero, except under ``nan="ml_dtypes"``, ml_dtypes' rule, where only -0 is; otherwise the
  lowest value under saturation and in the modes that round toward zero for it, NaN in the
  others) and zero in a format without zero (its smallest value under saturation, else NaN).
  Under ``no_code="magnitude"`` (NVIDIA's ue8m0) an unsigned format converts |x| instead,
  rounding the magnitude (:func:`sign_read`), and zero takes the smallest code.
* NaN results take the code the ``nan`` option names (``ones_positive_input``: a NaN input
  gives the positive all-ones code and an overflow to NaN keeps its sign, as CUDA's float
  -> E4M3 ``__NV_NOSAT`` conversion does); a format without NaN raises, or gives
  the code the option names (``zero``, ``ml_dtypes``).
* The sign: a sign bit, or the two's complement; zero is unsigned where there is no -0.
"""

from __future__ import annotations

import numpy as np

from ..formats import Format
from .options import Conversion


def _sparing(opts: Conversion) -> str:
    """The sparing rule in effect: sat_none is P3109's own ("sat_none"), inf/nan follow the
    directed_overflow option."""
    return "sat_none" if opts.overflow == "sat_none" else opts.directed


def _spared(mode: str, negative: np.ndarray, rule: str, fmt: Format) -> np.ndarray:
    """Where an overflow gives the largest finite value rather than Inf/NaN: the modes that
    round toward zero for that sign, and round-to-odd under the IEEE rule (it truncates) and
    under SatNone into an unsigned extended format (P3109 v4.0 4.7.5); none under "none"."""
    if rule == "none":
        return np.zeros(negative.shape, dtype=bool)
    odd_spared = rule == "ieee" or (rule == "sat_none" and not fmt.signed and fmt.has_inf)
    if mode == "toward_zero" or (mode == "odd" and odd_spared):
        return np.ones(negative.shape, dtype=bool)
    if mode == "down":
        return ~negative
    if mode == "up":
        return negative.copy()
    return np.zeros(negative.shape, dtype=bool)


def sign_read(negative: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """The sign the kernels round and encode with: the input's, or none where an unsigned
    format converts the magnitude (``no_code="magnitude"``)."""
    if opts.no_code == "magnitude" and not fmt.signed:
        return np.zeros_like(negative)
    return negative


def resolve_overflow(result, nan_out, over, isinf, negative, fmt: Format, opts: Conversion) -> None:
    """Overflowed finite values and Inf inputs, in place: a magnitude code in result, or a
    NaN result in nan_out. (Negatives of unsigned formats are left to resolve_no_code.)"""
    if not (over.any() or isinf.any()):
        return
    rule = opts.overflow
    # The largest magnitude code a value of this sign may take (two's complement: one more
    # below zero).
    largest = np.where(negative & fmt.twos_complement, fmt.max_code + 1, fmt.max_code).astype(np.uint64)
    inf = fmt.inf_code if fmt.has_inf else None
    if rule == "saturate" or (rule == "sat_none" and inf is None):
        result[over | isinf] = largest[over | isinf]
        return
    if rule in ("saturate_propagate", "ml_dtypes_saturate"):
        result[over] = largest[over]
        if inf is not None:
            result[isinf] = inf
        elif rule == "saturate_propagate":
            result[isinf] = largest[isinf]
        else:
            nan_out |= isinf
        return
    spared = over & _spared(opts.rounding, negative, _sparing(opts), fmt)
    result[spared] = largest[spared]
    over = over & ~spared
    # Not spared: Inf, or NaN ("nan", or no Inf in the format).
    if rule == "nan" or inf is None:
        nan_out |= over
    else:
        result[over] = inf
    if inf is None:
        nan_out |= isinf
    else:
        result[isinf] = inf


def resolve_no_code(result, nan_out, negative, iszero, finite, isnan, mag, fmt: Format, opts: Conversion) -> None:
    """Values no code represents, in place: negatives of unsigned formats, zero of zero-less
    formats (see the module docstring)."""
    saturating = opts.overflow in ("saturate", "saturate_propagate", "ml_dtypes_saturate")
    if not fmt.signed:
        neg = negative & ~iszero & ~isnan
        if fmt.subnormals and opts.nan != "ml_dtypes":
            neg &= ~(finite & (mag == 0))  # rounded to zero first: it is +0 (ml_dtypes: no code)
        if neg.any():
            if saturating:
                keep = np.ones(neg.shape, bool)
            else:  # -Inf is never spared
                keep = finite & _spared(opts.rounding, negative, _sparing(opts), fmt)
            if opts.overflow == "ml_dtypes_saturate":
                keep &= finite  # ml_dtypes turns Inf into Inf/NaN before it looks at the sign
            result[neg & keep] = 0
            nan_out |= neg & ~keep
    if not fmt.subnormals:
        if saturating or opts.no_code == "magnitude":
            result[iszero] = 0
        else:
            nan_out |= iszero


def place_sign(result, negative, nan_out, fmt: Format) -> None:
    """Sign bit (or two's complement) of every result that is not NaN, in place."""
    if not fmt.signed:
        return
    neg = negative & ~nan_out
    if fmt.subnormals and not fmt.has_neg_zero:
        neg &= result != 0  # FNUZ, P3109, two's complement: zero is unsigned
    if fmt.twos_complement:
        width = np.uint64(1 << (fmt.mantissa_bits + 1))
        result[neg] = width - result[neg]
    else:
        result[neg] |= np.uint64(fmt.sign_mask)


def nan_codes(result, nan_out, isnan, negative, fmt: Format, opts: Conversion, source) -> None:
    """The codes of NaN results, per the nan option, in place (or the error of 'raise')."""
    if not nan_out.any():
        return
    if not fmt.has_nan:
        if opts.nan == "raise":
            inputs = int(np.count_nonzero(isnan))
            if inputs:
                raise_nan(inputs, fmt)
            _raise_no_code(int(np.count_nonzero(nan_out)), fmt)
        if opts.nan == "zero":
            result[nan_out] = 0
        elif opts.nan == "max":  # PTX cvt .satfinite into FP4/FP6: +MAX_NORM
            result[nan_out] = fmt.max_code
        else:  # ml_dtypes: the sign bit is set for +NaN and clear for -NaN
            result[nan_out] = np.where(negative[nan_out], 0, fmt.sign_mask)
        return
    signed = fmt.signed and fmt.nan != "neg_zero"
    sign = np.where(negative & signed, np.uint64(fmt.sign_mask), np.uint64(0))
    if opts.nan == "positive":
        codes = np.full(result.shape, fmt.nan_code, dtype=np.uint64)
    elif opts.nan == "all_ones":
        codes = np.full(result.shape, (1 << fmt.bits) - 1, dtype=np.uint64)
    elif opts.nan == "ones_with_sign":
        codes = np.uint64(fmt.top_code) | sign
    elif opts.nan == "ones_positive":
        codes = np.full(result.shape, fmt.top_code, dtype=np.uint64)
    elif opts.nan == "ones_positive_input":  # NaN inputs lose their sign, overflows keep it
        codes = np.where(isnan, np.uint64(fmt.top_code), np.uint64(fmt.nan_code) | sign)
    else:
        codes = np.uint64(fmt.nan_code) | sign
        if opts.nan in ("payload", "quiet_payload"):
            payload = _nan_payload(source, fmt.mantissa_bits)
            if opts.nan == "payload":  # numpy's float->half rule: top payload bits, non-zero
                payload = np.maximum(payload, 1)
            else:  # what FPUs do (numpy float64->float32, torch float32->float16): quiet bit set
                payload |= np.uint64(1 << (fmt.mantissa_bits - 1))
            codes = np.where(isnan, np.uint64(fmt.inf_code) | payload | sign, codes)
    result[nan_out] = np.broadcast_to(codes, result.shape)[nan_out]


def _nan_payload(source: np.ndarray, width: int) -> np.ndarray:
    """The top `width` fraction bits of each float's own bit pattern (its NaN payload)."""
    nmant = np.finfo(source.dtype).nmant
    uint = np.dtype(f"u{source.dtype.itemsize}")
    frac = (np.asarray(source, order="C").view(uint) & uint.type((1 << nmant) - 1)).astype(np.uint64)
    return frac >> np.uint64(nmant - width) if nmant >= width else frac << np.uint64(width - nmant)


class NanInputError(ValueError):
    """NaN input into a format without NaN under nan='raise' (a ValueError)."""


def holds_nan(x: np.ndarray) -> bool:
    """Whether the float array x holds a NaN: one maximum over it, which a NaN wins (a
    signalling one quietly); a fraction of an isnan pass and its count. (float16 has no fast
    reduction in NumPy: there the isnan pass.)

    >>> holds_nan(np.float32([1.0, np.nan, -np.inf])), holds_nan(np.float16([2.0, 3.0]))
    (True, False)
    """
    if not x.size:
        return False
    if x.dtype.itemsize < 4:
        return bool(np.isnan(x).any())
    with np.errstate(invalid="ignore"):
        return bool(np.isnan(np.maximum.reduce(x, axis=None)))


def refuse_nan(x: np.ndarray, fmt: Format) -> None:
    """Under ``nan="raise"`` into a format without NaN: raise, counting the NaNs of the float
    array x, where it holds any (:func:`holds_nan` first: data without NaN pays one reduction)."""
    if x.dtype.kind == "f" and holds_nan(x):
        raise_nan(int(np.count_nonzero(np.isnan(x))), fmt)


def raise_nan(count: int, fmt: Format) -> None:
    raise NanInputError(
        f"{count} NaN value{'s' if count != 1 else ''} in the input: format {fmt.name} has no "
        "NaN (pass nan='zero' or nan='ml_dtypes' to choose a code)"
    )


def _raise_no_code(count: int, fmt: Format) -> None:
    what = " or ".join((["negative numbers"] if not fmt.signed else [])
                       + (["zero"] if not fmt.subnormals else []))
    raise ValueError(
        f"{count} value{'s' if count != 1 else ''} in the input have no code in format "
        f"{fmt.name}, which has no {what} and no NaN (saturate them with overflow='saturate', "
        "or pass nan='zero' to give them code 0)"
    )
