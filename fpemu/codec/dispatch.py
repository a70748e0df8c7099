"""Which way an encode (or a quantize) goes: one function, :func:`encode_path`, decides it from
the format, the resolved conversion, the input dtype and the array's size, and every encode,
quantize and MX element encode asks it; :func:`encode_flat` then runs the path it named.

The paths (:data:`PATHS`) are one exact kernel, the generic one (:mod:`.generic_kernel`), and
the speed-only ways of :mod:`.fast`, each taken only where it gives the generic kernel's
codes bit for bit, and each tested against it over its inputs. The decision, in order:

1. ``via="fp32"``: the input is float32 from here on (numpy's cast; exact input rounded once).
2. quantize only (``values=True``): float32 into fp16-like formats under round-to-nearest-even
   by float32 addition (``magic_number``); float64 into formats with zero and 1 to 51
   mantissa bits under RNE, RZ, up or down by scaling to integers (``quantum_scaling``).
3. Exact input (object and string arrays: Fractions, Decimals, decimal strings): ``exact``.
4. float16 and (u)int8/16 arrays of enough elements, deterministic roundings: one gather
   from a table of every bit pattern's code (``input_table``).
5. Integers otherwise become floats that round once (16 bits or fewer: float32, exactly;
   wider: float64, rounded to odd), and take that float's path.
6. Formats of at most 6 mantissa bits within float32's range, deterministic roundings: the
   top-half arithmetic where its exhaustive check passed for the format and conversion
   (``top_half``), else the 17-bit table (``fp32_table``); float16 and float64 input is made
   float32 chunk by chunk first, in a way that keeps every code (:mod:`.fast.float32_alike`).
7. fp16, fp32, fp64 under RNE with Inf overflow, from an input at least as wide: numpy's
   correctly rounded cast; from an input at most as wide under any rounding (stochastic
   included), which then changes no finite value: numpy's exact cast (``numpy_cast``). From a wider
   input under RZ (fp32 only), up, down, odd or nearest-away, with any overflow rule and
   NaN policy: that cast stepped one unit where it went against the mode, the generic kernel
   for the elements of magnitude not below the format's largest (``cast_directed``).
8. bf16 and tf32 (float32 prefixes) under RNE: integer rounding of the float32 bit pattern
   (``prefix_rne``); under the other deterministic roundings, with any overflow rule and NaN
   policy, the same for every value below the format's largest, the generic kernel for the
   rest (``prefix_directed``).
9. Conversions that differ from one of steps 6-8 only in the overflow rule or the NaN policy
   (signed formats with NaN, deterministic roundings): that path, then the generic kernel
   for the elements of magnitude not below the format's largest finite value, NaN included,
   which one maximum and one minimum find (``in_range``).
10. Sign-magnitude and unsigned formats whose normal range lies within float64's (read as
   float32 fields where the format fits float32's, else as float64's), under any other
   rounding or option (directed, odd,
   stochastic, P3109's given bits, overflow rules, NaN policies): the truncated code and the
   dropped fraction read off the bit pattern, rounded by the generic kernel's ``round_code``,
   with the generic kernel for the elements outside the format's normal range
   (``float_fields``).
11. Everything else: ``generic``.

Steps inside one path that depend on the data (the top-half path's choice, chunk by chunk,
between listing few specials and bulk ways for many; the narrowing's choice between fixing
a few decision points and rounding a whole chunk to odd) change the speed, never a code: the
path's name is decided before any data is read.

>>> encode_path("e4m3", Conversion(), np.float32)
'top_half'
>>> encode_path("e4m3", Conversion(rounding="stochastic"), np.float32)
'float_fields'
>>> encode_path("bf16", Conversion(), np.float64), encode_path("fp16", Conversion(), np.float32)
('prefix_rne', 'numpy_cast')
>>> encode_path("e4m3", Conversion(), np.float16, 1 << 20), encode_path("e4m3", Conversion(), np.float16, 100)
('input_table', 'top_half')
>>> encode_path("fp16", Conversion(), np.float32, values=True), encode_path("e4m3", {"via": "fp32"}, object)
('magic_number', 'top_half')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..formats import Format, get_format
from .exact_kernel import outside_range
from .fast.float32_alike import encode_through_float32
from .fast.float_fields import encode_float_fields, fields_serve, narrows_alike
from .fast.in_range import in_range_base, in_range_serves, outside_positions, redo_at, redo_outside
from .fast.fp32_table import encode_float32_by_table
from .fast.input_table import input_table
from .fast.numpy_cast import CAST_DIRECTED, NUMPY_NATIVE, encode_cast_directed, encode_numpy_cast
from .fast.prefix_rne import PREFIX_DIRECTED, PREFIX_INPUTS, encode_prefix_directed, encode_prefix_rne
from .fast.top_half import arithmetic_plan, encode_float32_top_half
from .generic_kernel import encode_generic, is_fp32_prefix
from .inputs import check_via, integers_as_floats
from .options import Conversion

#: Every path :func:`encode_path` names, and what it is.
PATHS = {
    "exact": "exact input, rounded once from its exact rationals (exact_kernel)",
    "input_table": "float16 and (u)int8/16 input: one gather from the codes of every bit pattern (fast/input_table)",
    "top_half": "float32 (float16, float64 made float32 alike) into formats of <= 5 mantissa bits, "
                "by uint16 arithmetic on the top half of each pattern (fast/top_half)",
    "fp32_table": "float32 (float16, float64 made float32 alike) into formats of <= 6 mantissa bits, "
                  "by one gather from the 17-bit table (fast/fp32_table)",
    "numpy_cast": "fp16/fp32/fp64 under RNE by numpy's cast, or any deterministic rounding of a narrower input "
                  "(then exact) (fast/numpy_cast)",
    "cast_directed": "fp16/fp32 from a wider float under RZ, up, down, odd, nearest-away, any overflow rule and NaN policy: numpy's "
                     "cast stepped one unit where it went against the mode, the generic kernel for |x| >= max and NaN "
                     "(fast/numpy_cast, fast/in_range)",
    "prefix_rne": "bf16/tf32 under RNE by integer rounding of the float32 pattern (fast/prefix_rne)",
    "in_range": "overflow rules and NaN policies (signed formats with NaN): the path of the same rounding under the "
                "format's defaults, then the generic kernel for |x| >= max and NaN, found by two reductions "
                "(fast/in_range)",
    "prefix_directed": "bf16/tf32 under RZ, up, down, odd, nearest-away with any overflow rule and NaN policy: "
                       "integer rounding of the float32 pattern, the generic kernel for |x| >= max and NaN "
                       "(fast/prefix_rne, fast/in_range)",
    "float_fields": "float16/32/64 into sign-magnitude formats, any rounding and option: the truncated code and the "
                    "dropped fraction read off the bit pattern, the generic kernel's rounding; what lies outside the "
                    "format's normal range by the generic kernel (fast/float_fields)",
    "magic_number": "quantize: float32 into fp16-like formats under RNE by float32 addition (fast/float_arithmetic)",
    "quantum_scaling": "quantize: float64 under RNE/RZ/up/down by scaling to integers (fast/float_arithmetic)",
    "generic": "every format, rounding and option: the reference kernel (generic_kernel)",
}

#: Paths that cost a few ns an element on float32 (threads pay off only for millions).
LIGHT_PATHS = ("input_table", "top_half", "fp32_table", "numpy_cast", "prefix_rne", "prefix_directed", "cast_directed", "in_range")

#: Below this many 16-bit elements the input table is not worth building (2**16 encodes); for
#: 8-bit input (256 encodes) below :data:`MIN_BYTE_TABLE_ELEMENTS`. Either way the codes are
#: the same.
MIN_TABLE_ELEMENTS = 1 << 15
MIN_BYTE_TABLE_ELEMENTS = 1 << 10

# The paths in_range runs for the values inside the format's range.
_IN_RANGE_BASES = ("top_half", "fp32_table", "numpy_cast", "prefix_rne")

# numpy's own integer roundings of float64 values (quantum_scaling), per rounding mode.
_INTEGER_ROUNDINGS = ("nearest_even", "toward_zero", "up", "down")


def encode_path(fmt: str | Format, conversion: Conversion | Mapping | None = None, dtype: Any = np.float64,
                size: int | None = None, *, values: bool = False) -> str:
    """The path (a key of :data:`PATHS`) that encoding an array of ``dtype`` and ``size``
    elements into ``fmt`` under ``conversion`` takes; ``values=True``: that quantize takes.
    ``size`` None: an array too small for the input tables. ``conversion`` may be resolved
    or not (its ``via`` applies); a Dask array's blocks each take the path of their own
    dtype and size. Asking runs nothing on the data; it may build (and cache) a table the
    path itself would build.

    >>> encode_path("e2m1", {"rounding": "toward_zero"}, np.int16, 5)
    'top_half'
    >>> encode_path("e4m3", {"rounding": "odd"}, np.float32), encode_path("bf16", {"nan": "all_ones"}, np.float32)
    ('fp32_table', 'in_range')
    """
    fmt = get_format(fmt)
    conv = Conversion.of(conversion)
    opts = conv.resolved(fmt)
    dtype = np.dtype(dtype)
    if check_via(conv.via) is not None:
        dtype = np.dtype(np.float32)
    if values and opts.sr_bits is None and conv.random_bits is None and opts.directed_overflow is None:
        if dtype == np.float32 and _magic_number_serves(fmt, opts):
            return "magic_number"
        if dtype == np.float64 and _quantum_scaling_serves(fmt, opts):
            return "quantum_scaling"
    if dtype.kind in "OU":
        return "exact"
    if size is not None and _input_table_serves(dtype, opts, size) \
            and input_table(dtype, fmt, opts, encode_patterns) is not None:
        return "input_table"
    if dtype.kind in "iu":  # made floats first (inputs.integers_as_floats)
        dtype = np.dtype(np.float32 if dtype.itemsize <= 2 else np.float64)
    return _float_path(fmt, opts, dtype)


def _float_path(fmt: Format, opts: Conversion, dtype: np.dtype) -> str:
    """Steps 6-11 of the module docstring: the path of float16/32/64 input."""
    if _fp32_table_serves(fmt, opts):
        return "fp32_table" if arithmetic_plan(fmt, opts) is None else "top_half"
    if opts.overflow == "inf" and fmt in NUMPY_NATIVE and (
            opts.rounding == "nearest_even" and (dtype.itemsize >= NUMPY_NATIVE[fmt].itemsize or fmt.bits == 64)
            or _exact_rounding(opts) and dtype.itemsize <= NUMPY_NATIVE[fmt].itemsize):
        return "numpy_cast"
    if fmt in NUMPY_NATIVE and dtype.itemsize > NUMPY_NATIVE[fmt].itemsize and opts.rounding in CAST_DIRECTED \
            and (fmt.bits > 16 or opts.rounding != "toward_zero"):  # (fp16 RZ: the fields, which skip rounding, are faster)
        return "cast_directed"
    prefix = dtype in PREFIX_INPUTS and is_fp32_prefix(fmt) \
        and (fmt.mantissa_bits <= 21 or dtype == np.float32 and fmt.mantissa_bits < 23)
    if prefix and opts == Conversion("nearest_even", "inf", "sign"):  # (directed_overflow: RNE is never spared)
        return "prefix_rne"
    if prefix and opts.rounding in PREFIX_DIRECTED and fmt.has_nan:
        return "prefix_directed"
    if in_range_serves(fmt, opts) and _float_path(fmt, in_range_base(fmt, opts), dtype) in _IN_RANGE_BASES:
        return "in_range"
    if fields_serve(fmt, opts, dtype):
        return "float_fields"
    return "generic"


def _exact_rounding(opts: Conversion) -> bool:
    """Whether the rounding leaves every finite value the format holds as it is: the generic
    kernel's modes but ml_dtypes' E8M0 rule, the stochastic ones too (each rounds up only a
    non-zero fraction dropped: none, whatever the random bits)."""
    return opts.rounding != "ml_dtypes_e8m0"


def _fp32_table_serves(fmt: Format, opts: Conversion) -> bool:
    """Whether the 17-bit table (and float64 -> float32 narrowing alike) is exact for fmt."""
    # The round bit must lie in the top 16 bits of every float32 pattern, including float32
    # subnormals (resolution 2**-133 there, so the format's quantum, 2**(emin - M) also where
    # it has no subnormals, must be 2**-132 or more), and float32 must have 2 bits more than
    # the format wherever the format has values, for the float64 -> float32 rounding to odd.
    no_code_raises = opts.nan == "raise" and not fmt.has_nan and not (fmt.signed and fmt.subnormals)
    return (
        not opts.stochastic
        and opts.nan not in ("payload", "quiet_payload")
        and not no_code_raises  # the table has no code to flag such values with
        and fmt.mantissa_bits <= 6
        and fmt.emax <= 127
        and fmt.emin - fmt.mantissa_bits >= -132
    )


def _input_table_serves(dtype: np.dtype, opts: Conversion, size: int) -> bool:
    """Whether an input of dtype and size goes through the input table (deterministic
    roundings; enough elements to pay for building it)."""
    return (
        dtype.itemsize <= 2 and dtype.kind in "fiu" and dtype.isnative and not opts.stochastic
        and size >= (MIN_TABLE_ELEMENTS if dtype.itemsize == 2 else MIN_BYTE_TABLE_ELEMENTS)
    )


def _magic_number_serves(fmt: Format, opts: Conversion) -> bool:
    """Whether float32 addition can do the RNE rounding (fp16-like formats: 7 to 21 mantissa
    bits, subnormals, and an exponent range whose magic numbers stay finite in float32)."""
    return (
        opts.rounding == "nearest_even"
        and 7 <= fmt.mantissa_bits <= 21 and fmt.subnormals and fmt.signed and fmt.has_normals
        and not fmt.twos_complement
        and fmt.emin >= -126 and fmt.emax <= 103 + fmt.mantissa_bits
    )


def _quantum_scaling_serves(fmt: Format, opts: Conversion) -> bool:
    """Whether float64 scaling by the quantum can do the rounding (signed formats with zero,
    1 to 51 mantissa bits, in a mode numpy rounds integers in). Without mantissa bits the
    integer's parity is not the code's, so ties to even would go wrong."""
    return (
        opts.rounding in _INTEGER_ROUNDINGS
        and fmt.subnormals and fmt.signed and 1 <= fmt.mantissa_bits <= 51 and not fmt.twos_complement
    )


def _redo_and_range(codes: np.ndarray, x: np.ndarray, where: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """codes (of the flat x, by a path exact for ``|x| < max``) with the elements at ``where``
    (those of ``|x| >= max`` and NaN, or more) re-encoded by the generic kernel and
    ``directed_overflow="outside_range"`` applied to them alone: the values it changes,
    finite beyond max or lowest, lie among them, so the rest of x is never looked at again."""
    codes = redo_at(codes, x, where, fmt, opts)
    if where.size and opts.directed_overflow == "outside_range":
        codes[where] = outside_range(codes[where], x[where], fmt, opts)
    return codes


def encode_flat(x: np.ndarray, fmt: Format, opts: Conversion, path: str, key: Any = None, start: Any = 0,
                bits: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Codes of a flat float16/32/64 array by ``path`` (a float path :func:`encode_path` named
    for its dtype), in the format's code dtype and container position, ``directed_overflow=
    "outside_range"`` applied; written into ``out`` when given (the fast paths write there
    directly). Stochastic rounding draws the bits of positions ``start``.. (or ``start[i]``,
    an array) under ``key``; ``bits``: P3109's given random bits."""
    if path == "in_range":  # the base path's codes (positioned, outside_range-free), then the rest
        base = in_range_base(fmt, opts)
        codes = encode_flat(x, fmt, base, _float_path(fmt, base, x.dtype), out=out)
        return _redo_and_range(codes, x, outside_positions(x, fmt), fmt, opts)
    if path in ("top_half", "fp32_table"):
        encode32 = encode_float32_top_half if path == "top_half" else encode_float32_by_table
        codes = encode32(x, fmt, opts, out) if x.dtype == np.float32 else encode_through_float32(x, fmt, opts, out,
                                                                                                 encode32)
    elif path == "numpy_cast":
        codes = encode_numpy_cast(x, fmt, opts)
    elif path == "cast_directed":  # (it finds what lies outside the range while each chunk is in cache)
        found: list = []
        codes = encode_cast_directed(x, fmt, opts.rounding, out, found)
        codes = _redo_and_range(codes, x, np.concatenate(found) if found else np.empty(0, np.intp), fmt, opts)
    elif path == "prefix_rne":
        codes = encode_prefix_rne(x, fmt, None if fmt.code_shift else out)
    elif path == "prefix_directed":
        codes = encode_prefix_directed(x, fmt, opts.rounding, None if fmt.code_shift else out)
    elif path == "float_fields":
        into = None if fmt.code_shift else out
        if x.dtype == np.float64 and narrows_alike(fmt, opts):  # half the memory of float64 fields
            codes = encode_through_float32(x, fmt, opts, into, encode_float_fields)
        else:
            codes = encode_float_fields(x, fmt, opts, key, start, bits, into)
    elif path == "generic":
        codes = encode_generic(x, fmt, opts, key, start, bits)
    else:
        raise ValueError(f"{path!r} is not a path of float input; encode_path names them")
    codes = np.asarray(codes)
    if fmt.code_shift:
        codes = codes.astype(fmt.code_dtype) << fmt.code_dtype.type(fmt.code_shift)
    if path == "prefix_directed":  # exact below the format's largest value: the rest by the generic kernel
        codes = redo_outside(codes.astype(fmt.code_dtype, copy=False), x, fmt, opts)
    if path != "cast_directed":  # (its outside_range ran on the values it found)
        codes = outside_range(codes.astype(fmt.code_dtype, copy=False), x, fmt, opts)
    if out is None:
        return codes
    if not np.shares_memory(codes, out):
        out[...] = codes
    return out


def encode_patterns(values: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Codes of the bit patterns of a <= 16-bit dtype (the input table's entries), the way
    encode takes such values when they are too few for the table."""
    floats = integers_as_floats(values, fmt, opts.rounding) if values.dtype.kind in "iu" else values
    flat = np.ascontiguousarray(floats).reshape(-1)
    return encode_flat(flat, fmt, opts, _float_path(fmt, opts, flat.dtype)).reshape(values.shape)
