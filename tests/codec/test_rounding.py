"""Every rounding mode, overflow option and nan option against the exact Fraction reference.

* A deterministic grid: for every small format, every mode, every exact value, every tie,
  the quarter points between neighbours and one float64 ulp either side of each tie, plus the
  overflow boundary under every overflow option.
* Hypothesis-drawn float64 inputs for a representative set of formats (FP8, FNUZ, FP6, FP4,
  E8M0, UE4M3, bf16, fp16, tf32, fp32, P3109 and user-defined formats), drawn to hit exact
  ties, representable values, the overflow boundary, subnormals and zeros of both signs.
* Stochastic rounding: reproducible from a seed, always one of the two neighbours, and
  unbiased (a fixed-seed statistical test with a stated bound).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fpemu
from fpemu.formats import Format, get_format

from reference import (
    decode_table,
    magnitude_value,
    max_magnitude_code as max_code,
    ref_decode,
    ref_encode,
)
from fpemu import mx

MODES = ["nearest_even", "nearest_away", "toward_zero", "up", "down", "odd"]
ALIASES = {"rne": "nearest_even", "rna": "nearest_away", "rz": "toward_zero", "ru": "up", "rd": "down", "rto": "odd"}

USER_E3M3 = Format("user_e3m3", exponent_bits=3, mantissa_bits=3, bias=3, inf="none", nan="none")
USER_E6M5 = Format("user_e6m5", exponent_bits=6, mantissa_bits=5, bias=31)  # IEEE-style Inf/NaN
USER_E5M0 = Format("user_e5m0_fnuz", exponent_bits=5, mantissa_bits=0, bias=16, inf="none", nan="neg_zero")

FORMATS = [get_format(n) for n in (
    "e4m3", "e5m2", "e2m1", "e3m2", "e2m3", "e8m0", "e4m3fnuz", "e5m2fnuz", "ue4m3",
    "bf16", "fp16", "tf32", "fp32", "binary8p3", "binary8p1",
)] + [USER_E3M3, USER_E6M5, USER_E5M0]
SMALL_FORMATS = [f for f in FORMATS if f.bits <= 8]


def overflow_options(fmt: Format) -> list[str | None]:
    options: list[str | None] = [None, "saturate"]
    if fmt.has_inf:
        options.append("inf")
    if fmt.has_nan:
        options.append("nan")
    return options


def nan_options(fmt: Format) -> list[str | None]:
    return [None] if fmt.has_nan else [None, "raise", "zero", "ml_dtypes"]


def _hexes(codes) -> list[str]:
    return [hex(int(c)) for c in np.asarray(codes).ravel()]


def check_against_reference(x: np.ndarray, fmt: Format, **options) -> None:
    """encode and quantize equal the reference on every element of float64 array ``x``."""
    try:
        expected = [ref_encode(float(v), fmt, **options) for v in x]
    except ValueError:
        # The reference refuses (NaN into a format without NaN under nan="raise"): so must fpemu.
        with pytest.raises(ValueError):
            fpemu.encode(x, fmt, **options)
        return
    before = x.copy()
    got = fpemu.encode(x, fmt, **options)
    assert np.array_equal(before, x, equal_nan=True), "input modified"
    assert got.dtype == fmt.code_dtype and got.shape == x.shape
    bad = np.flatnonzero(got != np.array(expected, dtype=fmt.code_dtype))
    assert bad.size == 0, (
        f"{fmt.name} {options}: inputs {x[bad[:6]].tolist()} got {_hexes(got[bad[:6]])} "
        f"expected {[hex(expected[i]) for i in bad[:6]]}"
    )
    q = fpemu.quantize(x, fmt, **options)
    assert q.dtype == np.float64
    expected_q = np.array([ref_decode(c, fmt).to_float() for c in expected])
    same = (q == expected_q) & (np.signbit(q) == np.signbit(expected_q))
    same |= np.isnan(q) & np.isnan(expected_q)
    assert same.all(), f"quantize {fmt.name} {options}: {x[~same][:5]} -> {q[~same][:5]}, expected {expected_q[~same][:5]}"


# ---- deterministic grid ---------------------------------------------------------------------


def grid_values(fmt: Format) -> np.ndarray:
    """Each value, the points 1/4, 1/2, 3/4 of the way to the next, and float64 neighbours of ties."""
    mags = [magnitude_value(k, fmt) for k in range(max_code(fmt) + 3)]  # two past the largest
    pts: list[float] = []
    for lo, hi in zip(mags, mags[1:]):
        d = hi - lo
        tie = float(lo + d / 2)
        pts += [float(lo), float(lo + d / 4), tie, float(lo + 3 * d / 4)]
        pts += [math.nextafter(tie, math.inf), math.nextafter(tie, -math.inf)]
    small = float(magnitude_value(1, fmt)) if fmt.subnormals else float(mags[0])
    pts += [0.0, small / 4, small / 2 * 1.0000001, 1e-300, 5e-324, 1e300, math.inf]
    v = np.array(pts)
    return np.concatenate([v, -v, [math.nan, -math.nan]])


@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=str)
@pytest.mark.parametrize("rounding", MODES)
def test_grid_every_mode(fmt, rounding):
    x = grid_values(fmt)
    nan = None if fmt.has_nan else "zero"
    check_against_reference(x, fmt, rounding=rounding, nan=nan)


def overflow_boundary_values(fmt: Format) -> np.ndarray:
    """The largest value, the tie above it, the next binade, their float64 neighbours, Inf."""
    top = magnitude_value(max_code(fmt), fmt)
    nxt = magnitude_value(max_code(fmt) + 1, fmt)
    prev = magnitude_value(max_code(fmt) - 1, fmt)
    pts = [float(top), float((top + nxt) / 2), float(nxt), float((prev + top) / 2), float(2 * nxt),
           float(top + (nxt - top) / 4), float(top + 3 * (nxt - top) / 4), 1e308, math.inf]
    v = np.array(pts)
    v = np.concatenate([v, np.nextafter(v, np.inf), np.nextafter(v, -np.inf)])
    return np.concatenate([v, -v])


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_overflow_boundary_every_mode_and_option(fmt):
    x = overflow_boundary_values(fmt)
    if not fmt.signed:
        x = np.abs(x)
    for rounding in MODES:
        for overflow in overflow_options(fmt):
            check_against_reference(x, fmt, rounding=rounding, overflow=overflow)


def test_overflow_semantics_spot_checks():
    """Hand-checked cases of 'round first, then overflow' (SPEC section 2, IEEE 754 7.4)."""
    e4m3, e5m2, fp16 = get_format("e4m3"), get_format("e5m2"), get_format("fp16")
    enc = lambda x, f, **o: int(np.asarray(fpemu.encode(np.float64(x), f, **o)))  # noqa: E731
    # 460 rounds down to 448 under RNE: not an overflow even without saturation; 470 rounds
    # to 480 (> max) and so overflows to NaN.
    assert enc(460.0, e4m3) == 0x7E
    assert enc(470.0, e4m3) == 0x7F
    # Directed rounding toward zero never overflows to Inf/NaN: +-max instead.
    assert enc(1e9, e4m3, rounding="toward_zero") == 0x7E
    assert enc(-1e9, e4m3, rounding="toward_zero") == 0xFE
    assert enc(1e9, e5m2, rounding="down") == 0x7B
    assert enc(-1e9, e5m2, rounding="down") == 0xFC
    assert enc(1e9, e5m2, rounding="up") == 0x7C
    assert enc(-1e9, e5m2, rounding="up") == 0xFB
    assert enc(65520.0, fp16, rounding="odd") == 0x7BFF
    # RU just above max overflows (the rounded magnitude exceeds max); RZ stays at max.
    assert enc(math.nextafter(448.0, math.inf), e4m3, rounding="up") == 0x7F
    assert enc(math.nextafter(448.0, math.inf), e4m3, rounding="up", overflow="saturate") == 0x7E
    # Inf input: Inf where the format has it, NaN for E4M3, max when saturating.
    assert enc(math.inf, e5m2, rounding="toward_zero") == 0x7C
    assert enc(-math.inf, e4m3, overflow="saturate") == 0xFE


# ---- hypothesis ---------------------------------------------------------------------------


@st.composite
def format_value(draw, fmt: Format) -> float:
    """A float64 aimed at the interesting places of ``fmt``."""
    top = max_code(fmt)
    k = draw(st.one_of(
        st.integers(0, top + 1),
        st.integers(0, 4),
        st.integers(max(top - 3, 0), top + 2),
        st.sampled_from([1 << fmt.mantissa_bits, (1 << fmt.mantissa_bits) - 1]),
    ))
    lo, hi = magnitude_value(k, fmt), magnitude_value(k + 1, fmt)
    kind = draw(st.sampled_from(["exact", "tie", "tie_up", "tie_down", "between", "any", "tiny", "special"]))
    if kind == "exact":
        v = float(lo)
    elif kind in ("tie", "tie_up", "tie_down"):
        v = float((lo + hi) / 2)
        if kind == "tie_up":
            v = math.nextafter(v, math.inf)
        elif kind == "tie_down":
            v = math.nextafter(v, -math.inf)
    elif kind == "between":
        num = draw(st.integers(1, 63))
        v = float(lo + (hi - lo) * Fraction(num, 64))
    elif kind == "any":
        v = draw(st.floats(allow_nan=True, allow_infinity=True))
    elif kind == "tiny":
        v = draw(st.sampled_from([0.0, 5e-324, 1e-310, 1e-45, float(lo) / 2, float(lo) / 3]))
    else:
        v = draw(st.sampled_from([math.inf, math.nan, fmt.max, 2 * fmt.max, 1e308, 0.0]))
    return -v if draw(st.booleans()) else v


@st.composite
def case(draw):
    fmt = draw(st.sampled_from(FORMATS))
    rounding = draw(st.sampled_from(MODES + list(ALIASES)))
    overflow = draw(st.sampled_from(overflow_options(fmt)))
    nan = draw(st.sampled_from(nan_options(fmt)))
    values = draw(st.lists(format_value(fmt), min_size=1, max_size=24))
    return fmt, rounding, overflow, nan, np.array(values, dtype=np.float64)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case())
def test_hypothesis_every_option_matches_reference(c):
    fmt, rounding, overflow, nan, x = c
    check_against_reference(x, fmt, rounding=rounding, overflow=overflow, nan=nan)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.sampled_from(FORMATS), st.sampled_from(MODES), st.lists(st.floats(width=32), min_size=1, max_size=32))
def test_hypothesis_float32_input_matches_reference(fmt, rounding, values):
    """float32 arrays are read exactly: the same codes as the reference on their values."""
    x = np.array(values, dtype=np.float32)
    nan = None if fmt.has_nan else "ml_dtypes"
    expected = np.array([ref_encode(float(v), fmt, rounding=rounding, nan=nan) for v in x], dtype=fmt.code_dtype)
    got = fpemu.encode(x, fmt, rounding=rounding, nan=nan)
    np.testing.assert_array_equal(got, expected)
    q = fpemu.quantize(x, fmt, rounding=rounding, nan=nan)
    assert q.dtype == np.float32


# ---- input kinds -----------------------------------------------------------------------------


def test_python_scalars_ints_and_lists():
    e4m3 = get_format("e4m3")
    assert int(np.asarray(fpemu.encode(3, e4m3))) == ref_encode(3, e4m3) == 0x44
    assert int(np.asarray(fpemu.encode(3.25, "e4m3"))) == ref_encode(3.25, e4m3)
    np.testing.assert_array_equal(fpemu.encode([1, -2, 300], e4m3), [ref_encode(v, e4m3) for v in (1, -2, 300)])
    ints = np.array([0, 1, -7, 17, 1000, -1000, 123457], dtype=np.int64)
    for name in ("e4m3", "e5m2", "bf16", "fp16", "e2m1", "tf32"):
        fmt = get_format(name)
        expected = [ref_encode(int(v), fmt) for v in ints]
        np.testing.assert_array_equal(fpemu.encode(ints, fmt), expected)
        q = fpemu.quantize(ints, fmt)
        assert q.dtype == np.float64


def test_huge_integers_round_once():
    """int64 beyond 2^53 are rounded exactly once (not through an inexact float64)."""
    fmt = get_format("bf16")
    x = np.array([2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), 2**62 + 2**54 + 3], dtype=np.int64)
    expected = [ref_encode(int(v), fmt) for v in x]
    assert expected[0] == ref_encode(2.0**60 + 2.0**53, fmt)  # above the tie: rounds up
    np.testing.assert_array_equal(fpemu.encode(x, fmt), expected)


def test_shape_and_dtype_preserved():
    x = np.linspace(-3, 3, 24).reshape(2, 3, 4)
    for name in ("e4m3", "bf16", "tf32", "e2m1"):
        fmt = get_format(name)
        codes = fpemu.encode(x, fmt)
        assert codes.shape == x.shape and codes.dtype == fmt.code_dtype
        for dt in (np.float32, np.float64):
            q = fpemu.quantize(x.astype(dt), fmt)
            assert q.dtype == dt and q.shape == x.shape
        # float16 input: float16 out when every value of the format is a float16, else the
        # codec widens to float32 (casting back to float16 would round a second time).
        q16 = fpemu.quantize(x.astype(np.float16), fmt)
        assert q16.dtype == (np.float16 if name in ("e4m3", "e2m1") else np.float32)
        assert q16.shape == x.shape
        back = fpemu.decode(codes, fmt)
        assert back.shape == x.shape


# ---- stochastic rounding --------------------------------------------------------------------


def test_stochastic_same_seed_same_codes():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100_000) * 10
    for name in ("e4m3", "bf16", "e2m1", "e5m2"):
        a = fpemu.encode(x, name, rounding="stochastic", rng=1234)
        b = fpemu.encode(x, name, rounding="sr", rng=1234)
        np.testing.assert_array_equal(a, b)
        c = fpemu.encode(x, name, rounding="stochastic", rng=np.random.default_rng(99))
        d = fpemu.encode(x, name, rounding="stochastic", rng=np.random.default_rng(99))
        np.testing.assert_array_equal(c, d)
        # A different seed really draws differently (a fixed-but-ignored rng would pass above).
        e = fpemu.encode(x, name, rounding="stochastic", rng=1235)
        assert (a != e).mean() > 0.05


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "bf16", "fp16", "e2m1", "e3m2", "e4m3fnuz", "tf32", "binary8p3"])
def test_stochastic_result_is_a_neighbour(name):
    """Every SR result is the value rounded toward zero or away from zero; exact values stay."""
    fmt = get_format(name)
    rng = np.random.default_rng(11)
    exp = rng.uniform(np.log2(fmt.min_subnormal) - 1, np.log2(fmt.max) - 0.01, 3000)
    x = np.sign(rng.standard_normal(3000)) * 2.0**exp
    exact = np.array([float(magnitude_value(k, fmt)) for k in (0, 1, 2, 1 << fmt.mantissa_bits)])
    x = np.concatenate([x, exact, -exact[1:]])
    got = fpemu.encode(x, fmt, rounding="stochastic", rng=5)
    toward = np.array([ref_encode(float(v), fmt, rounding="toward_zero") for v in x])
    away = np.array([ref_encode(float(v), fmt, rounding="down" if v < 0 else "up") for v in x])
    ok = (got == toward) | (got == away)
    assert ok.all(), f"{x[~ok][:5]} -> {_hexes(got[~ok][:5])}"
    # Both neighbours actually occur (it is not a directed mode in disguise).
    inexact = toward != away
    assert (got[inexact] == toward[inexact]).mean() > 0.2
    assert (got[inexact] == away[inexact]).mean() > 0.2


# (format, lower neighbour code, fraction p of the way to the next value)
SR_CASES = [
    ("e4m3", 0x38, Fraction(5, 16)),     # 1.0 + 5/16 ulp
    ("e4m3", 0x01, Fraction(3, 4)),      # subnormal
    ("e4m3", 0x7D, Fraction(1, 2)),      # just below max: 416 -> 448
    ("bf16", 0x3F80, Fraction(1, 1024)),  # needs >= 10 random bits below the kept precision
    ("e2m1", 0x5, Fraction(1, 3)),       # 3.0 + (1/3) * 1: p is not dyadic
    ("e5m2", 0xBC, Fraction(7, 8)),      # negative: -(1.0 + 7/8 ulp)
    ("fp16", 0x0001, Fraction(1, 8)),    # fp16 subnormal
    ("e8m0", 0x7F, Fraction(1, 4)),      # no mantissa: 1.25 -> 1 or 2
    ("ue4m3", 0x38, Fraction(1, 4)),     # unsigned
]


@pytest.mark.parametrize("name, lo_code, p", SR_CASES, ids=[f"{c[0]}-{c[1]:#x}-{c[2]}" for c in SR_CASES])
def test_stochastic_is_unbiased(name, lo_code, p):
    """The mean of N SR draws of x converges to x.

    Each draw is lo or hi = next value; unbiased SR picks hi with probability
    p = (x - lo) / (hi - lo), so the fraction of hi over N independent draws has standard
    deviation sigma = sqrt(p (1 - p) / N). With N = 2^20 we allow 6 sigma (a false alarm
    probability below 2e-9 for any seed; the seed is fixed so the test is deterministic) plus
    2^-20 for the rounding of p itself to a float64 input; a biased rule (round to nearest,
    truncation, or too few random bits: bias >= 2^-12 for p = 1/1024 with 10 bits) fails by
    many sigmas.
    """
    fmt = get_format(name)
    lo = ref_decode(lo_code, fmt)
    sign = -1 if lo.negative else 1
    k = lo_code & (fmt.sign_mask - 1 if fmt.signed else 0xFFFF)
    lo_mag, hi_mag = magnitude_value(k, fmt), magnitude_value(k + 1, fmt)
    x_exact = lo_mag + (hi_mag - lo_mag) * p
    x = sign * float(x_exact)
    n = 1 << 20
    codes = fpemu.encode(np.full(n, x), fmt, rounding="stochastic", rng=20241129)
    hi_code = lo_code + 1
    assert set(np.unique(codes).tolist()) <= {lo_code, hi_code}
    frac_hi = np.count_nonzero(codes == hi_code) / n
    p_input = (abs(Fraction(x)) - lo_mag) / (hi_mag - lo_mag)  # exact p of the float64 input
    sigma = math.sqrt(float(p_input * (1 - p_input)) / n)
    assert abs(frac_hi - float(p_input)) <= 6 * sigma + 2.0**-20, (frac_hi, float(p_input), sigma)
    # The same statement as a mean error in units of the gap: mean(q) - x -> 0.
    mean = (frac_hi * float(hi_mag) + (1 - frac_hi) * float(lo_mag)) * sign
    assert abs(mean - x) <= (6 * sigma + 2.0**-20) * float(hi_mag - lo_mag)


def test_stochastic_mean_error_over_many_values():
    """Aggregate check on 2^20 distinct random float32 values into e4m3: sum of errors ~ 0.

    Each error e_i = q_i - x_i has mean 0 and |e_i| < ulp_i, so var(e_i) <= ulp_i^2 / 4; the
    sum's sigma is at most sqrt(sum(ulp_i^2)) / 2, and we allow 6 of them.
    """
    fmt = get_format("e4m3")
    rng = np.random.default_rng(3)
    x = rng.uniform(-400, 400, 1 << 20).astype(np.float32)
    codes = fpemu.encode(x, fmt, rounding="stochastic", rng=42)
    q = decode_table(fmt)[codes]
    toward = decode_table(fmt)[fpemu.encode(x, fmt, rounding="toward_zero")]
    away = decode_table(fmt)[fpemu.encode(x, fmt, rounding="up")]
    away = np.where(x < 0, decode_table(fmt)[fpemu.encode(x, fmt, rounding="down")], away)
    ulp = np.abs(away - toward)
    err = (q - x.astype(np.float64)).sum()
    sigma = math.sqrt(float((ulp**2).sum())) / 2
    assert abs(err) <= 6 * sigma, (err, sigma)
    # SR must not quietly be round-to-nearest (whose errors would also roughly cancel here).
    assert (codes != fpemu.encode(x, fmt)).mean() > 0.1


def test_nan_payloads_become_the_canonical_nan_with_sign():
    """Signalling / payload NaNs (float32 and float64) give the canonical NaN, sign kept."""
    words32 = np.array([0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0xFF800100, 0x7FC00000, 0xFFFFFFFF], dtype=np.uint32)
    words64 = np.array([0x7FF0000000000001, 0xFFF8000000000001, 0x7FF7FFFFFFFFFFFF, 0xFFF0000020000000], dtype=np.uint64)
    for fmt in FORMATS:
        nan = None if fmt.has_nan else "ml_dtypes"
        for x in (words32.view(np.float32), words64.view(np.float64)):
            expected = [ref_encode(float(v), fmt, nan=nan) for v in x]
            got = fpemu.encode(x, fmt, nan=nan)
            assert _hexes(got) == [hex(c) for c in expected], (fmt.name, x.dtype)


def test_stochastic_rounds_first_then_applies_overflow():
    """Between max and the next (unbounded) value, SR picks one of them; the upper one overflows."""
    e4m3, e5m2 = get_format("e4m3"), get_format("e5m2")
    x = np.full(20_000, 460.0)  # between 448 (max) and 480
    assert set(np.unique(fpemu.encode(x, e4m3, rounding="stochastic", rng=3)).tolist()) == {0x7E, 0x7F}
    assert set(np.unique(fpemu.encode(-x, e4m3, rounding="stochastic", rng=3)).tolist()) == {0xFE, 0xFF}
    assert set(np.unique(fpemu.encode(x, e4m3, rounding="stochastic", rng=3, overflow="saturate")).tolist()) == {0x7E}
    y = np.full(20_000, 60000.0)  # between 57344 (max) and 61440
    assert set(np.unique(fpemu.encode(y, e5m2, rounding="stochastic", rng=3)).tolist()) == {0x7B, 0x7C}


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_rng_seed_takes_numpy_integers_but_not_bools():
    x = np.linspace(1, 2, 64)
    np.testing.assert_array_equal(fpemu.encode(x, "e4m3", rounding="sr", rng=np.int64(7)),
                                  fpemu.encode(x, "e4m3", rounding="sr", rng=7))
    with pytest.raises(TypeError, match="rng must be"):
        fpemu.encode(x, "e4m3", rounding="sr", rng=True)


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_rng_still_seeds_every_stochastic_rounding():
    x = np.linspace(1, 2, 32)
    assert fpemu.encode(x, "e4m3", rounding="SR", rng=3).shape == (32,)
    assert fpemu.encode(x, "e4m3", rounding="stochastic_b", sr_bits=8, rng=3).shape == (32,)
    assert mx.quantize(x, "mxfp4", rounding="stochastic", rng=3).codes.shape == (32,)


# ---- the fast paths' pieces: a run's top random bits, the stochastic carries ----------------

def test_random_top_bits_are_the_top_bits_of_random_u64():
    """For every width n (the last xor-shift skipped below 32) and runs starting anywhere,
    past 2**64's wrap-around of the Weyl sequence too."""
    from fpemu.codec.rounding import random_top_bits, random_u64

    key = np.uint64(0xDEADBEEF12345678)
    for first in (0, 1, 123_456_789, 2**63 - 5, 2**64 - 100):
        u = random_u64(key, (np.arange(300, dtype=np.uint64) + np.uint64(first)))
        for n in range(65):
            want = u >> np.uint64(64 - n) if n else np.zeros_like(u)
            for dtype in (np.uint64, np.uint32) if n <= 32 else (np.uint64,):
                got = random_top_bits(key, first, 300, n, dtype)
                assert got.dtype == dtype and np.array_equal(got, want.astype(dtype)), (first, n, dtype)


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_stochastic_carry_decides_as_the_general_functions(dtype):
    """Every shift count and N the carry serves, on uint32 and uint64 remainders, against
    stochastic_increment (64 random bits) and sr_increment (N bits)."""
    from fpemu.codec.rounding import carry_serves, random_u64, sr_increment, stochastic_carry, stochastic_increment

    rng = np.random.default_rng(8)
    width = 8 * np.dtype(dtype).itemsize
    u = random_u64(np.uint64(3), np.arange(2000, dtype=np.uint64))
    served = 0
    for shift in range(1, min(width - 1, 54)):
        rem = rng.integers(0, 1 << shift, 2000, dtype=np.uint64)
        rem[:6] = np.array([0, 1, (1 << shift) - 1, 1 << (shift - 1), (1 << (shift - 1)) + 1, 3], dtype=np.uint64) \
            & np.uint64((1 << shift) - 1)
        if carry_serves("stochastic", shift, None, width):
            got = stochastic_carry("stochastic", rem.astype(dtype), shift, None,
                                   (u >> np.uint64(64 - shift)).astype(dtype), np.empty(2000, dtype))
            assert np.array_equal(got, stochastic_increment(rem, shift, u)), shift
            served += 1
        for mode in ("stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd"):
            for n in (1, 2, 3, 7, 8, 16, 29, 40):
                if carry_serves(mode, shift, n, width):
                    r = u >> np.uint64(64 - n)
                    got = stochastic_carry(mode, rem.astype(dtype), shift, n, r.astype(dtype), np.empty(2000, dtype))
                    assert np.array_equal(got, sr_increment(mode, rem, shift, n, r)), (mode, shift, n)
                    served += 1
    assert served > 100
