"""encode: real numbers to codes of any format, on every core for large arrays; and
:func:`encode_array`, the same work on a float array whose conversion is already resolved,
for pipelines that encode many pieces (mx's blocks).

Each call asks :func:`.dispatch.encode_path` once which path its input takes, then runs it:
exact input at once, the input table as one gather in pieces, every other path on float
input in contiguous pieces on threads (:mod:`fpemu.parallel`). Stochastic rounding's random
bits depend on the seed and each element's position only, so the codes are the same for
every number of workers, and for a Dask array block by block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..formats import Format, get_format
from ..parallel import run_pieces
from .dask_arrays import blockwise, is_dask
from .dispatch import LIGHT_PATHS, encode_flat, encode_path, encode_patterns
from .exact_kernel import encode_exact, exact_to_float32, outside_range
from .fast.fp32_table import NAN_SENTINEL
from .fast.input_table import input_table, lookup
from .foreign import as_numpy
from .inputs import as_real_array, check_via, integers_as_floats, narrow
from .option_names import check_random
from .options import Conversion
from .returns import check_returns, deliver_codes
from .rounding import broadcast_random_bits, sr_key
from .specials import NanInputError, raise_nan


def encode(
    x: Any,
    fmt: str | Format,
    *,
    conversion: Conversion | Mapping | None = None,
    rounding: str | None = None,
    overflow: str | None = None,
    nan: str | None = None,
    rng: int | np.random.Generator | None = None,
    sr_bits: int | None = None,
    random_bits: Any = None,
    directed_overflow: str | None = None,
    no_code: str | None = None,
    via: str | None = None,
    workers: int | None = None,
    returns: str = "numpy",
) -> np.ndarray:
    """Encode real numbers into integer codes of ``fmt``.

    The conversion options (rounding, overflow, nan, sr_bits, random_bits, directed_overflow,
    via) come as one :class:`~fpemu.Conversion` (``conversion=``, e.g. from :func:`~fpemu.like`)
    or as the keywords below, or both where they agree (a keyword that contradicts the
    conversion is an error).

    Args:
        x: real array-like (float16/32/64, integers, Python numbers, ml_dtypes arrays), or
            exact numbers: ``fractions.Fraction``, ``decimal.Decimal`` and strings (decimals
            such as ``"-0.1"``, ``"1e-40"``, ``inf``, ``nan``, hex floats ``"0x1.8p3"``,
            fractions ``"1/3"``), alone or in lists and object arrays, read exactly, never
            through float64 (:mod:`.exact_kernel`; ``stochastic`` compares its 64 random bits
            with the dropped fraction truncated to 64 bits, as for float input). It is
            rounded exactly once; it is never modified.
        fmt: a format name or :class:`Format`.
        rounding: ``nearest_even`` (``rne``), ``nearest_away`` (``rna``), ``toward_zero``
            (``rz``), ``up`` (``ru``), ``down`` (``rd``), ``odd`` (``rto``: truncate, then set
            the last bit if inexact), ``stochastic`` (``sr``: round up with probability equal to
            the dropped fraction; 64 random bits per element are compared with the dropped bits,
            which is exactly unbiased whenever at most 64 bits are dropped, i.e. always except
            for inputs far below the smallest subnormal, where the bias is below 2**-64 ulp),
            ``stochastic_a``/``_b``/``_c`` (IEEE P3109's stochastic rounding with ``sr_bits``
            random bits per value: ``random_bits`` given, or drawn from ``rng``; A is PTX
            ``cvt.rs``), ``stochastic_odd`` (``sro``: gfloat's StochasticOdd, C with the
            dropped fraction rounded to N bits ties to odd), ``ml_dtypes_e8m0`` (ml_dtypes' E8M0 cast: ties away, and everything
            between the two smallest values up to the larger).
        overflow: ``saturate`` (``sat_finite``: +-max, also for +-Inf input),
            ``saturate_propagate`` (``sat_propagate``: finite overflow saturates, Inf stays Inf,
            or saturates where the format has none), ``ml_dtypes_saturate`` (the same, but Inf
            becomes NaN where the format has no Inf: ml_dtypes' C++ saturating conversion),
            ``inf``, ``nan`` (Inf or NaN, except in the modes ``directed_overflow`` spares),
            ``sat_none`` (P3109 SatNone: round-to-odd overflows too, except into an unsigned
            extended format; a format without Inf saturates), or None for the format's
            non-saturating default (ml_dtypes): Inf where the format has it, else NaN, else
            saturate. Negative numbers of an unsigned format, and zero of a format without
            zero, saturate to the lowest value under the saturating rules, and are NaN
            otherwise (except, for negatives, in the spared modes).
        nan: the code of NaN results. Formats without NaN: ``raise`` (default), ``zero``,
            ``max`` (+max: PTX ``cvt .satfinite`` into FP4/FP6), ``ml_dtypes`` (its codes:
            sign bit set for +NaN, clear for -NaN). Formats with NaN:
            ``sign`` (default: the canonical quiet NaN, with the sign where the format is
            signed), ``positive`` (sign dropped), ``all_ones`` (every bit set: gfloat),
            ``ones_with_sign`` (every magnitude bit set, the sign kept: torch's E5M2),
            ``ones_positive`` (every magnitude bit set, no sign), ``ones_positive_input``
            (a NaN input as ``ones_positive``, an overflow to NaN keeps its sign: CUDA's
            float -> E4M3 ``__NV_NOSAT``),
            ``payload`` (numpy's float->half rule: top payload bits, non-zero),
            ``quiet_payload`` (what FPUs do: top payload bits with the quiet bit set).
            Unsigned formats with NaN and zero also take ``ml_dtypes``: every negative input
            but -0 is NaN, even one that rounds to zero (ml_dtypes' ``float8_e5m3fnu``).
        rng: seed or ``np.random.Generator`` for the stochastic roundings (refused for the
            others, and with ``random_bits``, as ``random_bits`` are refused but for A/B/C).
        sr_bits: N, the random bits per value of ``stochastic_a``/``_b``/``_c``/``_odd`` (1..32).
        random_bits: their values, integers in [0, 2**N) broadcast to ``x``'s shape (a
            kernel's own random bits, to check its output bit for bit); None draws them.
        directed_overflow: which rounding modes an ``inf``/``nan`` overflow spares, giving
            +-max: ``ieee`` (default; IEEE 754 7.4: the modes that round toward zero for that
            sign, and round-to-odd, which truncates), ``p3109`` (the same without round-to-odd,
            for which Inf is the next code up: P3109 and gfloat), ``none`` (every overflow is Inf
            or NaN: ml_dtypes' C++ ``ConvertFrom<kTruncate>``), ``outside_range`` (every value
            outside [lowest, max] before rounding is Inf or NaN as a non-spared overflow of its
            sign, even where rounding gives max: gfloat's ``encode_float``).
        no_code: ``"magnitude"``: an unsigned format converts |x| (the sign is dropped
            before rounding) and a format without zero gives zero its smallest code, whatever
            the overflow rule (NVIDIA's ue8m0: ``like("cuda-13.0", "e8m0")``). None (default):
            as ``overflow`` says above.
        via: ``"fp32"``: convert input that is not float32 to float32 first (round to nearest
            even, overflow to Inf, NaN payloads as C's ``(float)`` cast keeps them), then
            encode; libraries that go through float32 round twice so (ml_dtypes before 0.7,
            torch: :func:`~fpemu.like` says which). None (default): round once.
        workers: threads for a large array (default: ``FPEMU_WORKERS`` or the CPU count); the
            codes are the same for every number. A Dask array is encoded block by block and
            comes back as a Dask array of the same codes (:mod:`.dask_arrays`).
        returns: ``"numpy"`` (default), ``"input"`` (the input's type: a torch tensor in,
            a tensor of the format's torch dtype out), ``"torch"`` or ``"ml_dtypes"``
            (:mod:`.returns`).

    Returns:
        Codes as uint8 (<= 8 bits, right-aligned), uint16, uint32 or uint64; TF32 codes are
        fp32 patterns with the low 13 bits zero.

    >>> encode([0.25, 0.26, 5.0, 5.01, -100.0], "e2m1")
    array([ 0,  1,  6,  7, 15], dtype=uint8)
    >>> hex(int(encode(1024.5, "tf32", rounding="rna")))
    '0x44802000'
    >>> encode([1.3, 1.3], "e4m3", rounding="stochastic_a", sr_bits=4, random_bits=[2, 14]).tolist()
    [58, 59]
    >>> encode(["1.00048828125000000001", "0.1"], "fp16").tolist()  # a hair above a tie: up
    [15361, 11878]
    >>> c = Conversion(rounding="toward_zero", directed_overflow="outside_range")
    >>> encode([449.0, 448.0, -500.0], "e4m3", conversion=c).tolist()  # truncation, yet 449 is NaN
    [127, 126, 255]
    """
    fmt = get_format(fmt)
    conv = Conversion.of(conversion, rounding=rounding, overflow=overflow, nan=nan, sr_bits=sr_bits,
                         random_bits=random_bits, directed_overflow=directed_overflow, via=via, no_code=no_code)
    opts = conv.resolved(fmt)
    random_bits = conv.random_bits
    check_random(opts.rounding, rng, random_bits)
    via = check_via(conv.via)
    returns, given = check_returns(returns, x), x
    x = as_numpy(x)  # torch tensors, DLPack objects
    key = sr_key(rng) if opts.stochastic else None
    if is_dask(x):  # a Dask array in, a Dask array out: block by block, the same bits
        return blockwise(x, lambda xb, rb, where: _encode_numpy(as_real_array(xb), fmt, opts, via, key, where, rb,
                                                                workers or 1), fmt.code_dtype, random_bits)
    codes = _encode_numpy(as_real_array(x), fmt, opts, via, key, 0, random_bits, workers)
    return deliver_codes(codes, fmt, returns, given)


def _encode_numpy(arr: np.ndarray, fmt: Format, opts: Conversion, via: str | None, key: Any, index: Any,
                  random_bits: Any, workers: int | None) -> np.ndarray:
    """Codes of a real ndarray (the whole input, or a Dask block whose elements lie at the
    positions ``index`` of the whole) by the path :func:`.dispatch.encode_path` names."""
    if arr.dtype.kind in "OU" and via is not None:
        arr = exact_to_float32(arr)  # once, from the exact value
    arr = narrow(arr, via)
    path = encode_path(fmt, opts, arr.dtype, arr.size)
    if path == "exact":  # rounded once from the exact rationals
        return outside_range(encode_exact(arr, fmt, opts, key, index, random_bits), arr, fmt, opts)
    if path == "input_table":  # float16, (u)int8/16: one gather
        return _encode_by_input_table(arr, fmt, opts, workers)
    if arr.dtype.kind in "iu":
        arr = integers_as_floats(arr, fmt, opts.rounding)
    return encode_array(arr, fmt, opts, key=key, positions=index, random_bits=random_bits, workers=workers,
                        path=path)


def _encode_by_input_table(arr: np.ndarray, fmt: Format, opts: Conversion, workers: int | None) -> np.ndarray:
    """Codes of a float16 or (u)int8/16 array through the table of all its patterns' codes
    (:mod:`.fast.input_table`), on ``workers`` threads."""
    table = input_table(arr.dtype, fmt, opts, encode_patterns)
    flat = np.ascontiguousarray(arr).reshape(-1).view(f"u{arr.dtype.itemsize}")
    refused = opts.nan == "raise" and arr.dtype.kind == "f"
    sentinel = refused and table[0x7E01] == NAN_SENTINEL  # (0x7E01: a float16 NaN)
    if refused and not sentinel:  # NaN: a magnitude pattern above Inf's
        nan = np.count_nonzero((flat & np.uint16(0x7FFF)) > np.uint16(0x7C00))
        if nan:
            raise_nan(int(nan), fmt)
    out = np.empty(flat.size, dtype=table.dtype)
    run_pieces(lambda part: lookup(flat[part], table, out[part]), flat.size, workers, light=True)
    if sentinel and out.size and out.max() == NAN_SENTINEL:
        raise_nan(int(np.count_nonzero(out == NAN_SENTINEL)), fmt)
    return out.reshape(arr.shape)


def encode_array(arr: np.ndarray, fmt: Format, conversion: Conversion, *, key: Any = None, positions: Any = 0,
                 random_bits: Any = None, workers: int | None = 1, out: np.ndarray | None = None,
                 path: str | None = None) -> np.ndarray:
    """Codes of a float16/32/64 array, in pieces on ``workers`` threads, by the path
    :func:`.dispatch.encode_path` names for its dtype (``path``: the one the caller asked
    already), without :func:`encode`'s argument handling: for pipelines that encode many
    pieces of a larger array (mx's blocks). ``conversion`` is resolved here (cheaply, when it
    is already). Stochastic rounding gives element i the random bits of ``positions[i]`` (or
    ``positions + i``) under ``key`` (:func:`.rounding.sr_key`), as in the whole array it is a
    piece of; ``random_bits``: P3109's given bits. Into ``out`` (arr's shape, the format's code
    dtype, C-contiguous) when given.

    >>> from .rounding import sr_key
    >>> x = np.full(6, 1.3)
    >>> whole = encode(x, "e4m3", rounding="sr", rng=7)
    >>> part = encode_array(x[4:], get_format("e4m3"), Conversion(rounding="sr"), key=sr_key(7), positions=4)
    >>> bool((part == whole[4:]).all())
    True
    """
    if out is not None and not (out.flags.c_contiguous and out.shape == arr.shape and out.dtype == fmt.code_dtype):
        raise ValueError(f"out must be a C-contiguous {fmt.code_dtype} array of shape {arr.shape}")
    opts = conversion.resolved(fmt)
    if opts.stochastic and key is None:
        key = sr_key(None)
    if path is None:
        path = encode_path(fmt, opts, arr.dtype)
    if np.ndim(positions):
        positions = np.ascontiguousarray(np.broadcast_to(positions, arr.shape), dtype=np.uint64).reshape(-1)
    bits = broadcast_random_bits(random_bits, arr.shape, opts.sr_bits) if opts.sr_bits else None
    flat = np.ascontiguousarray(arr).reshape(-1)
    codes = np.empty(flat.size, dtype=fmt.code_dtype) if out is None else out.reshape(-1)

    def piece(part: slice) -> None:
        start = positions[part] if np.ndim(positions) else positions + part.start
        encode_flat(flat[part], fmt, opts, path, key, start, None if bits is None else bits[part], out=codes[part])

    # the fast paths on float32 cost a few ns an element: threads pay off only for millions
    light = path in LIGHT_PATHS and flat.dtype.itemsize <= 4
    try:
        run_pieces(piece, flat.size, workers, light=light)
    except NanInputError:  # a piece counted its own NaNs: say how many the whole input has
        raise_nan(int(np.count_nonzero(np.isnan(flat))), fmt)
    return codes.reshape(arr.shape) if out is None else out
