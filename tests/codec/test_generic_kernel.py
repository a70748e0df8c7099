"""The generic kernel's promise, one kernel for every format: random user-defined formats,
tested like the built-in ones against the exact reference.

A hypothesis strategy (tests/random_formats.py) draws any :class:`fpemu.Format` the dataclass
accepts. For each one the codec is compared with ``tests/reference.py`` (exact ``Fraction``
arithmetic built from the Format fields only):

* decode of every code (a dense sample of every binade for wide formats), float64 and float32;
* encode, in every rounding mode (P3109's stochastic A/B/C with random bits, ml_dtypes' E8M0
  rule where it applies) and every overflow and NaN option the format admits, of
  values on, between, at and next to the ties of neighbouring codes, below the smallest value,
  and around the overflow boundary, from float64 and (where the value is one) float32 input;
* quantize, from float64, float32 and float16 input: the value of the reference code;
* stochastic rounding: one of the two neighbours, the same codes from float32 as float64;
* every derived property (``max``, ``min_normal``, ``min_subnormal``, ``eps``, ``emax``)
  against the enumeration of the format's codes.

The default run draws a few dozen formats; ``-m slow`` draws thousands.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpemu import Format, decode, encode, quantize
from random_formats import formats, overflow_options, ref_options
from reference import magnitude_value, max_magnitude_code, ref_decode, ref_encode

MODES = ("rne", "rna", "rz", "ru", "rd", "odd")


def _modes(fmt: Format) -> tuple[str, ...]:
    """The deterministic rounding modes the format admits (ml_dtypes' E8M0 rule: no mantissa
    bits, no zero)."""
    return MODES + (("ml_dtypes_e8m0",) if fmt.mantissa_bits == 0 and not fmt.subnormals else ())
DEFAULT = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))


# ---- values to encode ---------------------------------------------------------------------
def _value(k: int, fmt: Format) -> Fraction:
    return magnitude_value(k, fmt)


def _as_float(q: Fraction) -> float | None:
    try:
        return float(q)
    except OverflowError:
        return None


def probe_magnitudes(fmt: Format, rng: np.random.Generator) -> list[float]:
    """Magnitudes on, next to, between, and at and next to the ties of neighbouring codes:
    the smallest codes, the largest (and the first value past them), both edges of a few
    binades and a few random codes."""
    top = max_magnitude_code(fmt)
    m_bits = fmt.mantissa_bits
    ks = {0, 1, 2, top - 1, top} | {int(k) for k in rng.integers(0, top + 1, size=4)}
    for field in rng.integers(0, (top >> m_bits) + 1, size=3):
        ks |= {int(field) << m_bits, (int(field) << m_bits) - 1}
    out: set[float] = set()
    for k in sorted(k for k in ks if 0 <= k <= top):
        lo, hi = _value(k, fmt), _value(k + 1, fmt)  # k + 1 may lie past the largest value
        for q in (lo, (lo + hi) / 2, lo + (hi - lo) / 4, hi):
            f = _as_float(q)
            if f is not None:
                out |= {f, math.nextafter(f, 0.0), math.nextafter(f, math.inf)}
    smallest = _value(0 if not fmt.subnormals else 1, fmt)
    for q in (smallest / 2, smallest / 4, smallest * 3 / 4):
        f = _as_float(q)
        out.add(f if f is not None else 0.0)
    beyond = _as_float(_value(top + 1, fmt) * 2)
    out |= {0.0, 5e-324, 1.0, 1e300, math.inf} | ({beyond} if beyond else set())
    return sorted(v for v in out if v >= 0)


def _same_code(got: np.ndarray, want: list[int], values: list[float], what: str) -> None:
    got = [int(c) for c in np.asarray(got).ravel()]
    bad = [(v, hex(g), hex(w)) for v, g, w in zip(values, got, want) if g != w]
    assert not bad, f"{what}: {len(bad)} of {len(values)} codes differ, e.g. {bad[:4]}"


_CACHE: dict[tuple, int] = {}


def _reference_codes(values, fmt, **options) -> list[int]:
    """Reference codes (remembered: quantize asks for the ones encode asked for)."""
    key = (fmt, tuple(sorted(options.items())))
    if len(_CACHE) > 200_000:
        _CACHE.clear()
    out = []
    for v in values:
        vkey = key + (v, math.copysign(1.0, v))  # -0.0 == 0.0 as a dict key
        code = _CACHE.get(vkey)
        if code is None:
            code = _CACHE[vkey] = ref_encode(v, fmt, **options)
        out.append(code)
    return out


def _is_exact_in(v: float, dtype) -> bool:
    """Whether v is a value of the float dtype (Inf included)."""
    with np.errstate(over="ignore"):
        return math.isinf(v) or float(dtype(v)) == v


def _is_float32(v: float) -> bool:
    return _is_exact_in(v, np.float32)


def _values_equal(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: same value, same sign of zero, or both NaN."""
    with np.errstate(invalid="ignore"):  # signalling NaNs
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    return same | (np.isnan(got) & np.isnan(want))


def _nan_options(fmt: Format) -> list[str | None]:
    if fmt.nan == "none":  # the default, "raise", is checked on its own
        return ["zero", "max"] + (["ml_dtypes"] if fmt.signed else [])
    options = [None, "positive"] + (["all_ones", "ones_with_sign", "ones_positive"] if fmt.nan in ("ieee", "top") else [])
    return options + (["payload", "quiet_payload"] if fmt.nan == "ieee" else [])


# ---- the checks ------------------------------------------------------------------------------
def check_decode(fmt: Format) -> None:
    """decode of every code (or a sample of every binade) equals the reference, exactly."""
    width = fmt.bits
    if width <= 12:
        codes = np.arange(1 << width, dtype=np.uint64)
    else:
        rng = np.random.default_rng(width)
        m_bits = fmt.mantissa_bits
        fields = np.arange(1 << fmt.exponent_bits, dtype=np.uint64) << np.uint64(m_bits)
        low = rng.integers(0, 1 << m_bits, size=(4, fields.size), dtype=np.uint64) if m_bits else np.uint64(0)
        last = np.uint64((1 << m_bits) - 1)
        mags = np.concatenate([fields, fields + last, (fields + low).ravel()])
        mags = np.unique(np.minimum(mags, np.uint64((1 << (width - int(fmt.signed))) - 1)))
        sign = np.uint64(1 << (width - 1))  # the sign bit, or the two's complement's top bit
        codes = np.concatenate([mags, mags | sign]) if fmt.signed else mags
    stored = codes << np.uint64(fmt.code_shift)
    want = np.array([ref_decode(int(c), fmt).to_float() for c in stored])
    if width <= 12:  # Format.codes() and .values(): every code, every finite value once
        assert fmt.codes().tolist() == stored.tolist()
        finite = np.unique(want[np.isfinite(want)] + 0.0)
        assert np.array_equal(fmt.values(), finite)
    same = _values_equal(decode(stored.astype(fmt.code_dtype), fmt), want)
    assert same.all(), f"decode differs at codes {[hex(int(c)) for c in stored[~same][:4]]}"
    # float32 holds every value when the format's finest spacing, 2**(emin - M), is 2**-149 or
    # more (float32's), its precision at most 24 bits and its largest value below 2**128.
    fits32 = fmt.mantissa_bits <= 23 and fmt.emax <= 127 and (1 - fmt.bias if fmt.subnormals else -fmt.bias) - fmt.mantissa_bits >= -149
    if fits32:
        got32 = decode(stored.astype(fmt.code_dtype), fmt, dtype=np.float32)
        assert got32.dtype == np.float32 and _values_equal(got32, want).all()
    else:
        with pytest.raises(ValueError, match="float32"):
            decode(stored.astype(fmt.code_dtype), fmt, dtype=np.float32)


def check_encode(fmt: Format, values: list[float]) -> None:
    """encode in every mode and option equals the reference, float64 and float32 input."""
    signed_values = values + [-v for v in values]
    f32 = [v for v in signed_values if _is_float32(v)]
    overflows = overflow_options(fmt)
    edge = [v for v in signed_values if abs(v) >= fmt.max / 2 or math.isinf(v)]
    for mode in _modes(fmt):
        for overflow in overflows:
            # Every value under the default overflow; the overflow region under the others.
            vals = signed_values if overflow["overflow"] is None else edge
            opts = dict(rounding=mode, nan="zero" if fmt.nan == "none" else None, **overflow)
            want = _reference_codes(vals, fmt, **ref_options(opts))
            _same_code(encode(np.array(vals), fmt, **opts), want, vals, f"float64 {mode} {overflow}")
            v32 = [v for v in vals if v in f32]
            want32 = [w for v, w in zip(vals, want) if v in f32]
            _same_code(encode(np.array(v32, np.float32), fmt, **opts), want32, v32, f"float32 {mode} {overflow}")


def check_nan_options(fmt: Format) -> None:
    """NaN inputs (both signs, with payloads) under every NaN option the format admits."""
    bits64 = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                       0x7FF4000000000000, 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)  # fmt: skip
    bits32 = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFFFFFFFF], dtype=np.uint32)
    for source in (bits64.view(np.float64), bits32.view(np.float32)):
        for option in _nan_options(fmt):
            want = [ref_encode(float(s), fmt, nan=option, payload_of=s) for s in source]
            _same_code(encode(source, fmt, nan=option), want, list(source), f"nan={option}")
    if fmt.nan == "none":
        with pytest.raises(ValueError, match="NaN"):
            encode([1.0, math.nan], fmt)


def check_unrepresentable(fmt: Format) -> None:
    """Values with no code (negatives of an unsigned format, zero of a format without zero)
    saturate to the lowest value or become NaN as the overflow rule says; where a NaN would be
    needed and the format has none, the NaN option decides (raise, or code 0)."""
    bad = ([-1.0, -fmt.max] if not fmt.signed else []) + ([0.0, -0.0] if not fmt.subnormals else [])
    if not bad:
        return
    for overflow in overflow_options(fmt):
        for mode in _modes(fmt):
            for nan in ([None, "zero"] if fmt.nan == "none" else [None]):
                opts = dict(rounding=mode, nan=nan, **overflow)
                try:
                    want = [ref_encode(v, fmt, **ref_options(opts)) for v in bad]
                except ValueError:
                    with pytest.raises(ValueError, match="no code|has no NaN"):
                        encode(bad, fmt, **opts)
                    continue
                _same_code(encode(bad, fmt, **opts), want, bad, f"no code {opts}")


def check_stochastic_bits(fmt: Format, values: list[float], seed: int) -> None:
    """P3109's stochastic roundings A, B and C with given random bits equal the reference for
    every value and a random R each, from float64 and float32 input."""
    rng = np.random.default_rng(seed)
    vals = [v for v in values + [-v for v in values] if math.isfinite(v)][:120]
    nan = "zero" if fmt.nan == "none" else None
    for mode in ("sra", "srb", "src"):
        n = int(rng.integers(1, 12))
        r = rng.integers(0, 1 << n, size=len(vals))
        want = [ref_encode(v, fmt, rounding=mode, nan=nan, sr_bits=n, r=int(ri)) for v, ri in zip(vals, r)]
        got = encode(np.array(vals), fmt, rounding=mode, nan=nan, sr_bits=n, random_bits=r)
        _same_code(got, want, vals, f"{mode} N={n} float64")
        is32 = np.array([_is_float32(v) for v in vals])
        got32 = encode(np.array(vals)[is32].astype(np.float32), fmt, rounding=mode, nan=nan, sr_bits=n,
                       random_bits=r[is32])
        _same_code(got32, [w for w, ok in zip(want, is32) if ok], list(np.array(vals)[is32]), f"{mode} float32")


def check_quantize(fmt: Format, values: list[float]) -> None:
    """quantize gives the value of the reference code, from float64 and float32 input."""
    vals = values + [-v for v in values]
    nan = "zero" if fmt.nan == "none" else None
    for mode in _modes(fmt):
        want = _reference_codes(vals, fmt, rounding=mode, overflow=None, nan=nan)
        want_values = np.array([ref_decode(c, fmt).to_float() for c in want])
        got = quantize(np.array(vals), fmt, rounding=mode, nan=nan)
        same = _values_equal(got, want_values)
        assert same.all(), f"quantize float64 {mode}: {np.array(vals)[~same][:4]} -> {got[~same][:4]}, want {want_values[~same][:4]}"
        for narrow in (np.float32, np.float16):
            exact = np.array([_is_exact_in(v, narrow) for v in vals])
            xn = np.array(vals)[exact].astype(narrow)
            gotn = quantize(xn, fmt, rounding=mode, nan=nan)
            same = _values_equal(gotn, want_values[exact])
            assert same.all(), f"quantize {xn.dtype} {mode}: {xn[~same][:4]} -> {gotn[~same][:4]}, want {want_values[exact][~same][:4]}"


def check_stochastic(fmt: Format, values: list[float], seed: int) -> None:
    """Stochastic rounding gives one of the two neighbours (the codes of rounding toward
    zero and away from it), and the same codes from float32 as from float64 input."""
    vals = [v for v in values + [-v for v in values] if math.isfinite(v)]
    nan = "zero" if fmt.nan == "none" else None
    low = _reference_codes(vals, fmt, rounding="rz", overflow=None, nan=nan)
    up = _reference_codes(vals, fmt, rounding="ru", overflow=None, nan=nan)
    down = _reference_codes(vals, fmt, rounding="rd", overflow=None, nan=nan)
    got = encode(np.array(vals), fmt, rounding="stochastic", rng=seed, nan=nan)
    for v, g, lo, u, d in zip(vals, got.tolist(), low, up, down):
        assert g in (lo, u if v > 0 else d), f"stochastic {v!r} -> {hex(g)}, not {hex(lo)} or the next code"
    is32 = [_is_float32(v) for v in vals]
    x32 = np.array([v for v, ok in zip(vals, is32) if ok], np.float32)
    got32 = encode(x32, fmt, rounding="stochastic", rng=seed, nan=nan)
    got64 = encode(x32.astype(np.float64), fmt, rounding="stochastic", rng=seed, nan=nan)
    assert got32.tolist() == got64.tolist()


def check_properties(fmt: Format) -> None:
    """Derived properties against the enumeration of the finite codes."""
    top = max_magnitude_code(fmt)
    largest = magnitude_value(top, fmt)
    assert fmt.max_code == top and Fraction(fmt.max) == largest
    if largest:  # exactly: 2**emax <= max < 2**(emax + 1)
        assert Fraction(2) ** fmt.emax <= largest < Fraction(2) ** (fmt.emax + 1)
    else:  # zero is the only finite value: emax lies below every step of the format
        assert fmt.emax < fmt.emin - fmt.mantissa_bits and fmt.min_subnormal == math.inf
    first = 0 if not fmt.subnormals else 1
    if top >= first:
        assert Fraction(fmt.min_subnormal) == magnitude_value(first, fmt)
    m_bits = fmt.mantissa_bits
    normal_codes = [k for k in (0, 1 << m_bits) if k <= top and (not fmt.subnormals or k >> m_bits >= 1)]
    if normal_codes:
        assert Fraction(fmt.min_normal) == magnitude_value(normal_codes[0], fmt)
        k = normal_codes[0]  # eps: the relative gap in a normal binade
        if m_bits and k + 1 <= top:
            gap = magnitude_value(k + 1, fmt) - magnitude_value(k, fmt)
            assert Fraction(fmt.eps) == gap / magnitude_value(k, fmt)
    else:
        assert fmt.min_normal == math.inf  # every finite value is subnormal
    assert fmt.num_codes == 1 << fmt.bits


def check_all(fmt: Format, seed: int) -> None:
    values = probe_magnitudes(fmt, np.random.default_rng(seed))
    check_properties(fmt)
    check_decode(fmt)
    check_encode(fmt, values)
    check_nan_options(fmt)
    check_unrepresentable(fmt)
    check_quantize(fmt, values)
    check_stochastic(fmt, values, seed)
    check_stochastic_bits(fmt, values, seed)


@DEFAULT
@given(formats(), st.integers(0, 2**32 - 1))
def test_random_format_matches_reference(fmt, seed):
    check_all(fmt, seed)


@pytest.mark.slow
@SLOW
@given(formats(), st.integers(0, 2**32 - 1))
def test_random_format_matches_reference_many(fmt, seed):
    check_all(fmt, seed)


# Formats that once gave wrong bits (issue 9), kept as named regressions.
REGRESSIONS = {
    "signed, no zero": Format("s", 3, 2, 3, inf="none", nan="none", subnormals=False),
    "smallest subnormal 2": Format("b", 1, 3, -3, inf="none", nan="none"),
    "one exponent bit, IEEE": Format("x", 1, 7, -3),
    "unsigned, no NaN": Format("u", 3, 3, 3, signed=False, inf="none", nan="none"),
    "unsigned, Inf on top": Format("ut", 4, 2, 7, signed=False, inf="top", nan="none"),
    "float64-wide range": Format("w", 11, 20, 1023),
    "no subnormals, spacing below float32's": Format("r1", 8, 21, 129, signed=False, inf="none", nan="none", subnormals=False),
    "no subnormals, spacing 2^-133": Format("r2", 8, 3, 130, signed=False, inf="none", nan="none", subnormals=False),
}


@pytest.mark.parametrize("name", REGRESSIONS)
def test_regression_formats_match_reference(name):
    check_all(REGRESSIONS[name], seed=0)


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_one_bit_exponent_format_has_only_subnormal_values():
    # IEEE Inf/NaN take exponent field 1, so the finite values are k/8, k = 0..127.
    fmt = Format("x", 1, 7, -3)
    assert fmt.max == 15.875 and fmt.min_subnormal == 0.125 and fmt.min_normal == float("inf")
    got = quantize(np.float32([0.55, 0.5625, 15.9, 16.0]), fmt)
    assert got.tolist() == [0.5, 0.5, 15.875, float("inf")]  # 0.5625 is a tie: even k = 4
    assert got.dtype == np.float32
