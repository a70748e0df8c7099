"""encode of exact input (object and string arrays: Fractions, Decimals, decimal strings): the
generic kernel's own rounding and special rules, fed from exact rationals.

The generic kernel rounds a value that it sees as a truncated magnitude code plus the dropped
fraction nu of one quantum (:func:`.generic_kernel.round_code`). Here both come from the exact
rational a = |x| with Python integers, element by element, so nothing passes through float64
and the value is rounded once, by the kernel's code (:mod:`.rounding`, :mod:`.specials`):

* the binade e = floor(log2 a), clamped below at emin; the quantum 2**(e - M); the truncated
  code from floor(a / quantum), exactly. The quantum is the format's own, subnormal range
  included (there e is clamped at emin, so the step is the subnormal one): no intermediate
  grid, float64's or another, lies between the exact value and the format, so nothing can
  round twice near the bottom of the range or the top;
* nu, given as a 60-bit fraction rounded *to odd*: floor(nu * 2**60), its last bit set where
  anything below was dropped. That decides every deterministic mode as nu itself would:
  nu = 0 iff it is 0, nu = 1/2 iff it is 2**59 (an even number, so never a sticky result), and
  it is below or above 1/2 iff nu is; P3109's stochastic_a/b/c read floor(nu * 2**N) and
  round_ties_even(nu * 2**N) for N <= 32, which the 28 or more bits below N keep the same way.
* ``stochastic`` compares its 64 random bits u (integer, uniform on [0, 2**64)) with
  floor(nu * 2**64): it rounds up iff u < floor(nu * 2**64), exactly the rule the kernel
  applies to float input (exact there up to 64 dropped bits, floored beyond), so an exact input
  equal to a float gets the float's code for the same seed; the probability of rounding up is
  nu up to less than 2**-64.

Magnitudes far outside every format are replaced by ones every decision treats alike: 2**1024
and above by 2**1024 (beyond every format's largest value: each rounds it past max, in every
mode), below 2**-1300 by 2**-1400 (more than 64 bits below every format's smallest step:
truncated code 0, dropped fraction below 2**-64 yet not zero); so no integer grows with the
input's exponent beyond that.

>>> from fractions import Fraction
>>> from .options import resolved_options
>>> from ..formats import get_format
>>> f = get_format("fp16")
>>> x = np.array([Fraction(4097, 4096), "1.00048828125000000001", "-1e-400"], dtype=object)
>>> encode_exact(x, f, resolved_options(f, "nearest_even", None, None)).tolist()  # tie, above it, -0
[15360, 15361, 32768]
>>> encode_exact(x, f, resolved_options(f, "down", None, None)).tolist()  # -1e-400 down: -2**-24
[15360, 15360, 32769]
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..formats import Format
from .exact_numbers import exact_number
from .generic_kernel import chunk_random, encode_generic, finish_codes, round_code  # noqa: F401  (encode_generic: the doctest)
from .options import Conversion
from .rounding import broadcast_random_bits, sr_key
from .specials import sign_read

_HUGE_EXPONENT, _TINY_EXPONENT = 1024, -1300


def exact_values(arr: np.ndarray) -> list:
    """The exact value (:func:`.exact_numbers.exact_number`) of every element of an object or string
    array, in C order."""
    return [exact_number(v) for v in arr.reshape(-1).tolist()]


def _fraction_bits(n: int, d: int, emin: int, M: int, width: int, sticky: bool) -> tuple[int, int, int]:
    """(ex, kept, rem) of a = n / d > 0: ex = floor(log2 a) (after the range clamps of the
    module docstring); kept = floor(a / 2**(max(ex, emin) - M)); rem = floor(nu * 2**width) of
    the fraction nu that remains, with its last bit set where that was inexact (``sticky``)."""
    ex = n.bit_length() - d.bit_length()
    if (n << max(-ex, 0)) < (d << max(ex, 0)):
        ex -= 1
    # After the clamps the kernel's int64 code ((binade - emin) << M) + kept + 1 stays below
    # 2**63: kept < 2**(M + 1), binade <= 1024 and emin - M >= -1074 (every value of a format
    # is a float64), the worst case M = 52, emin = -1022 giving 2047 * 2**52 at 2**1024.
    if ex >= _HUGE_EXPONENT:
        n, d, ex = 1 << _HUGE_EXPONENT, 1, _HUGE_EXPONENT
    elif ex < _TINY_EXPONENT:
        n, d, ex = 1, 1 << 1400, -1400
    q = max(ex, emin) - M
    num, den = (n, d << q) if q >= 0 else (n << -q, d)
    kept, r = divmod(num, den)
    rem, low = divmod(r << width, den)
    return ex, kept, rem | (sticky and low != 0)


def encode_exact(arr: np.ndarray, fmt: Format, opts: Conversion, key: Any = None, index: Any = 0,
                 random_bits: Any = None) -> np.ndarray:
    """Codes (fmt's code dtype and container position, arr's shape) of exact input, rounded
    once (see the module docstring). Stochastic rounding: the bits of each element's position
    (``index`` + its flat position, or ``index[...]``, an array of positions) under ``key``
    (else one drawn from the rng ``key``), as for float input."""
    values = exact_values(arr)
    n = len(values)
    stochastic = opts.stochastic
    width = 64 if opts.rounding == "stochastic" else 60  # see the module docstring
    ex = np.full(n, fmt.emin, dtype=np.int64)
    kept = np.zeros(n, dtype=np.int64)
    rem = np.zeros(n, dtype=np.uint64)
    source = np.zeros(n, dtype=np.float64)  # the float inputs, for NaN payloads
    negative = np.zeros(n, dtype=bool)
    for i, v in enumerate(values):
        if isinstance(v, float):  # zero, Inf, NaN
            source[i], negative[i] = v, np.signbit(v)
            continue
        negative[i] = v < 0
        ex[i], kept[i], rem[i] = _fraction_bits(abs(v.numerator), v.denominator, fmt.emin,
                                                fmt.mantissa_bits, width, opts.rounding != "stochastic")
    negative = sign_read(negative, fmt, opts)
    if stochastic and not isinstance(key, np.uint64):
        key = sr_key(key)
    if np.ndim(index):
        index = np.ascontiguousarray(np.broadcast_to(index, arr.shape), dtype=np.uint64).reshape(-1)
    bits = broadcast_random_bits(random_bits, arr.shape, opts.sr_bits) if opts.sr_bits else None
    u, bits = chunk_random(opts, stochastic, key, index, slice(0, n), bits)
    shift = np.full(n, width, dtype=np.uint64)
    binade = np.maximum(ex, fmt.emin)
    mag = round_code(binade, kept, rem, shift, shift.astype(np.int64), ex, negative, fmt, opts, u, bits)
    isnan, isinf = np.isnan(source), np.isinf(source)
    iszero = np.array([isinstance(v, float) and v == 0 for v in values], dtype=bool)
    codes = finish_codes(mag, negative, isnan, isinf, ~(isnan | isinf), iszero, fmt, opts, source)
    if fmt.code_shift:
        codes = codes << np.uint64(fmt.code_shift)
    return codes.astype(fmt.code_dtype).reshape(arr.shape)


def exact_to_float32(arr: np.ndarray) -> np.ndarray:
    """Exact input as float32, rounded once (to nearest even, Inf beyond float32's range): the
    ``via="fp32"`` conversion of exact input, as C's ``(float)`` cast of the exact value."""
    from ..formats import get_format
    from .options import resolved_options

    fp32 = get_format("fp32")
    return encode_exact(arr, fp32, resolved_options(fp32, "nearest_even", "inf", None)).view(np.float32)


def outside_range(codes: np.ndarray, arr: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Under ``directed_overflow="outside_range"``, the codes of finite values outside [lowest,
    max] (before rounding) set to those of an overflow of their sign that no mode spares: the
    kernel's codes for +-2**(emax + 1), which every mode rounds past max (gfloat's encode_float:
    Inf, else NaN). In place (codes and arr of one size: any path's codes of the float or
    exact input arr); codes of the other values are the path's.

    >>> from ..formats import get_format
    >>> from .options import resolved_options
    >>> f = get_format("e4m3")
    >>> opts = resolved_options(f, "toward_zero", None, None, None, "outside_range")
    >>> x = np.array([449.0, 448.0, -500.0])
    >>> outside_range(encode_generic(x, f, opts).astype(np.uint8), x, f, opts).tolist()  # 449: NaN
    [127, 126, 255]
    """
    if opts.directed_overflow != "outside_range" or not codes.size:
        return codes
    if arr.dtype.kind in "OU":
        lowest, top = Fraction(fmt.lowest), Fraction(fmt.max)
        values = exact_values(arr)
        outside = np.array([isinstance(v, Fraction) and not lowest <= v <= top for v in values], bool)
        negative = np.array([isinstance(v, Fraction) and v < 0 for v in values], bool)
    else:
        with np.errstate(invalid="ignore"):  # (NaN wins both reductions: then every element is looked at)
            if float(np.maximum.reduce(arr, axis=None)) <= fmt.max and float(np.minimum.reduce(arr, axis=None)) >= fmt.lowest:
                return codes  # (compared as float64, exactly: the usual case, two reductions and no widening)
        # In the input's dtype where it holds max and lowest exactly, else in float64 (exact)
        same = arr.dtype.type
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # (NaN: neither; widening it warns)
            wide = arr if float(same(fmt.max)) == fmt.max and float(same(fmt.lowest)) == fmt.lowest \
                else np.asarray(arr, dtype=np.float64)
            outside = ((wide > same(fmt.max)) | (wide < same(fmt.lowest)) if wide is arr
                       else (wide > fmt.max) | (wide < fmt.lowest)).reshape(-1)
        negative = np.signbit(wide).reshape(-1)
    if outside.any():
        beyond = Fraction(2) ** (fmt.emax + 1)
        plus, minus = encode_exact(np.array([beyond, -beyond], dtype=object), fmt,
                                   opts.replace(directed_overflow="none"))
        flat, dtype = codes.reshape(-1), codes.dtype.type
        # Branch-free blends (a scatter or a masked copy through a random mask is 10x slower):
        # all-ones masks from the booleans, the code of each sign, then the outside ones swapped in.
        sign_mask = np.negative(negative.astype(codes.dtype))
        target = np.bitwise_and(sign_mask, dtype(int(plus) ^ int(minus)), out=sign_mask)
        target ^= dtype(int(plus))
        target ^= flat
        target &= np.negative(outside.astype(codes.dtype))
        flat ^= target
    return codes
