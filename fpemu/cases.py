"""Inputs that exercise a cast or a matrix product: edge cases, random cases, random matrices.

fpemu is compared with other implementations (:mod:`fpemu.crosscheck`) and written out as
golden files (:mod:`fpemu.vectors`) on the inputs made here:

* :func:`edge_cases`: every representable value of a format and the float neighbours around
  it, every tie and the neighbours of every tie, the subnormal and overflow boundaries, +-0,
  +-Inf, quiet, signalling and payload NaNs, each with a tag naming its kind;
* :func:`random_cases`: random bit patterns and random values across the format's range;
* :func:`matmul_inputs`: random matrices whose values are already in an input format.

Sizes are bounded by :data:`MAX_VALUES` and refused before anything is allocated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import is_whole
from .codec import decode
from .codec import encode  # noqa: F401  (used by the doctest of matmul_inputs)
from .formats import Format, get_format

__all__ = ["edge_cases", "random_cases", "matmul_inputs", "MAX_VALUES"]


# ---------------------------------------------------------------------------------------------
# Test values
# ---------------------------------------------------------------------------------------------
UINT_OF = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def magnitude_codes(fmt: Format) -> np.ndarray:
    """Non-negative finite magnitude codes to build edge cases from (right-aligned).

    Every code for formats of up to 16 bits; for wider ones (fp32, tf32) the codes with the
    smallest and largest few fractions in every binade, and a sprinkle in between.
    """
    mag_bits = fmt.exponent_bits + fmt.mantissa_bits
    if fmt.bits <= 16:
        codes = np.arange(fmt.max_code + 1, dtype=np.int64)
    else:
        m = fmt.mantissa_bits
        fracs = np.array([0, 1, 2, 3, (1 << (m - 1)) - 1, 1 << (m - 1), (1 << m) - 3, (1 << m) - 2, (1 << m) - 1])
        exps = np.arange(1 << fmt.exponent_bits, dtype=np.int64)
        codes = (exps[:, None] << m | fracs[None, :]).ravel()
        codes = np.unique(codes[codes <= fmt.max_code])
    assert mag_bits <= 63  # magnitude codes fit int64 (binary64: 63 bits)
    return codes


def code_values(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """float64 values of right-aligned magnitude codes."""
    container = (codes << fmt.code_shift).astype(fmt.code_dtype)
    return decode(container, fmt)


def _tagged(parts: list[tuple[np.ndarray, str]], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    values = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v, _ in parts])
    tags = np.concatenate([np.full(np.size(v), t, dtype=object) for v, t in parts])
    with np.errstate(over="ignore"):
        cast = values.astype(dtype)
    return cast, tags


def _neighbours(v: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The next float of ``dtype`` below and above each value (values cast to dtype first)."""
    with np.errstate(over="ignore"):  # dtype's largest value steps on to Inf: dropped by the callers
        x = v.astype(dtype)
        return np.nextafter(x, dtype.type(-np.inf)), np.nextafter(x, dtype.type(np.inf))


def nan_patterns(dtype: np.dtype) -> np.ndarray:
    """Quiet, signalling and payload NaNs of both signs, as values of dtype."""
    if dtype == np.float32:
        bits = np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FC00001, 0x7FA00000], dtype=np.uint32)
        bits = np.concatenate([bits, bits | np.uint32(0x80000000)])
    else:
        bits = np.array(
            [0x7FF8000000000000, 0x7FF0000000000001, 0x7FFFFFFFFFFFFFFF, 0x7FF8000000000001, 0x7FF4000000000000],
            dtype=np.uint64,
        )
        bits = np.concatenate([bits, bits | np.uint64(1 << 63)])
    return bits.view(dtype)


def edge_cases(fmt: str | Format, dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Edge-case inputs for casts into ``fmt``, as values of ``dtype``, with a tag per value.

    Tags: ``value`` (a representable value), ``near value`` (the next ``dtype`` float on
    either side), ``tie`` (exactly half-way between two neighbours of the format, including
    half-way between 0 and the smallest subnormal), ``near tie``, ``overflow`` (at and
    around the largest finite value, the overflow tie, twice the maximum and dtype's largest),
    ``tiny`` (far below the smallest subnormal), ``zero``, ``inf``, ``nan``. Every case comes
    with both signs, and no value is repeated.

    >>> x, tags = edge_cases("e2m1")
    >>> sorted(set(float(v) for v, t in zip(x, tags) if t == "tie" and v > 0))
    [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    >>> sorted(set(float(v) for v, t in zip(x, tags) if t == "overflow" and v > 0))[:5]
    [6.999999523162842, 7.0, 7.000000476837158, 7.999999523162842, 8.0]
    """
    fmt = get_format(fmt)
    dtype = np.dtype(dtype)
    codes = magnitude_codes(fmt)
    vals = code_values(codes, fmt)
    nxt = code_values(np.minimum(codes + 1, fmt.max_code), fmt)
    # Above the largest finite value, the next "value" is where the exponent would step on.
    ulp_max = np.ldexp(1.0, fmt.emax - fmt.mantissa_bits)
    with np.errstate(over="ignore"):  # binary64: the step past its largest value is Inf
        nxt = np.where(codes == fmt.max_code, fmt.max + ulp_max, nxt)
        total = vals + nxt
        ties = np.where(np.isfinite(total), total / 2, vals / 2 + nxt / 2)  # both exact here
    if fmt.subnormals:  # half-way between 0 and the smallest subnormal is in `ties` already
        lowest = [fmt.min_subnormal / 4, fmt.min_subnormal * 0.75]
    else:  # E8M0: no zero; values below the smallest value
        lowest = [fmt.min_normal / 2, fmt.min_normal * 0.75, fmt.min_normal * 0.5001]
    info = np.finfo(dtype)
    with np.errstate(over="ignore"):  # binary64: the overflow tie and beyond are Inf
        top = [fmt.max, fmt.max + ulp_max / 2, fmt.max + ulp_max, 2 * fmt.max, float(info.max)]
    ov_lo, ov_hi = _neighbours(np.array(top[:3]), dtype)
    parts = [
        (vals[vals != 0], "value"),
        (np.concatenate(_neighbours(vals[vals != 0], dtype)), "near value"),
        (ties[:-1], "tie"),
        (np.concatenate(_neighbours(ties[:-1], dtype)), "near tie"),
        (np.concatenate([top, ov_lo, ov_hi]), "overflow"),
        (np.array(lowest + [float(info.smallest_subnormal), float(info.tiny)]), "tiny"),
    ]
    x, tags = _tagged(parts, dtype)
    keep = np.isfinite(x) & (x != 0)
    x, tags = x[keep], tags[keep]
    x = np.concatenate([x, -x])
    tags = np.concatenate([tags, tags])
    specials = np.array([0.0, -0.0, np.inf, -np.inf], dtype=dtype)
    nans = nan_patterns(dtype)
    x = np.concatenate([x, specials, nans])
    tags = np.concatenate([tags, np.array(["zero", "zero", "inf", "inf"], dtype=object), np.full(nans.size, "nan", dtype=object)])
    # Drop repeats (compare bit patterns so +0/-0 and NaN payloads stay distinct).
    _, first = np.unique(x.view(UINT_OF[dtype]), return_index=True)
    first.sort()
    return x[first], tags[first]


def random_cases(fmt: str | Format, dtype: Any = np.float32, n: int = 20000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random inputs: half uniformly random bit patterns of ``dtype`` (every class of value,
    NaNs included), half random values spread log-uniformly over the format's range (from a
    quarter of its smallest subnormal to four times its maximum), random signs.

    >>> x, tags = random_cases("e4m3", n=10)
    >>> x.dtype, len(x), sorted(set(tags))
    (dtype('float32'), 10, ['random bits', 'random value'])
    """
    fmt = get_format(fmt)
    dtype = np.dtype(dtype)
    check_size("n", n, 0)
    rng = np.random.default_rng(seed)
    n_bits = n // 2
    uint = UINT_OF[dtype]
    bits = rng.integers(0, np.iinfo(uint).max, size=n_bits, dtype=uint, endpoint=True).view(dtype)
    lo = np.log2(fmt.min_subnormal) - 2
    hi = np.log2(fmt.max) + 2
    signs = rng.choice([-1.0, 1.0], size=n - n_bits)
    with np.errstate(over="ignore"):  # past float64's range (binary64's top) is Inf
        mags = np.exp2(rng.uniform(lo, hi, size=n - n_bits))
        values = (mags * signs).astype(dtype)
    x = np.concatenate([bits, values])
    tags = np.array(["random bits"] * n_bits + ["random value"] * (n - n_bits), dtype=object)
    return x, tags


#: Most values one call draws (random cases, matrix elements): beyond it a size is a typo,
#: refused before any allocation.
MAX_VALUES = 1 << 24


def check_size(name: str, value: int, low: int) -> int:
    if not is_whole(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= MAX_VALUES:
        raise ValueError(f"{name} must be in {low}..{MAX_VALUES:,}, got {value:,}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# Random matrices
# ---------------------------------------------------------------------------------------------
def matmul_inputs(inputs: str, m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random A (m, k) and B (k, n) already in the input format, with exponents spread over
    about 2**-8..2**8 (so the alignment inside a block loses bits) and random signs.

    >>> a, b = matmul_inputs("e4m3", 2, 32, 3)
    >>> a.shape, b.shape, bool((encode(a, "e4m3") == encode(a, "e4m3")).all())
    ((2, 32), (32, 3), True)
    """
    from .codec import quantize

    for name, size in (("m", m), ("k", k), ("n", n)):
        check_size(name, size, 1)
    check_size("m * k + k * n", m * k + k * n, 1)  # the matrices drawn
    rng = np.random.default_rng(seed)
    fmt = get_format(inputs)
    span = min(8, fmt.emax - 1)

    def draw(shape):
        v = rng.uniform(1, 2, size=shape) * np.exp2(rng.integers(-span, span + 1, size=shape))
        v *= rng.choice([-1.0, 1.0], size=shape)
        return quantize(v, fmt, rounding="toward_zero" if fmt.name == "tf32" else "nearest_even")

    return draw((m, k)), draw((k, n))
