"""The float_fields path gives the generic kernel's codes bit for bit: every float16 pattern
(all 2**16), float32 patterns of every exponent and float64 values, every built-in format it
serves, every rounding mode (stochastic ones with the same random bits: the same key and
positions, scalar or per element, or P3109's given bits), overflow rules and NaN policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import fpemu

from fpemu.codec.dispatch import encode_flat, encode_path
from fpemu.codec.fast.float_fields import fields_serve
from fpemu.codec.generic_kernel import encode_generic
from fpemu.codec.options import Conversion
from fpemu.codec.rounding import sr_key
from fpemu.formats import FORMATS, Format, get_format
from random_formats import formats
from tests.codec.test_dispatch import float32_patterns, float64_values

DETERMINISTIC = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd")
STOCHASTIC = ("stochastic", "stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd")
ALL_FLOAT16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def conversions(fmt):
    """Every rounding mode under two overflow rules and two NaN policies the format takes."""
    nan = ("sign", "all_ones") if fmt.has_nan else ("zero", "max")
    for rounding in DETERMINISTIC + STOCHASTIC:
        for overflow in (None, "saturate"):
            for policy in nan:
                conv = Conversion(rounding=rounding, overflow=overflow, nan=policy,
                                  sr_bits=5 if rounding in STOCHASTIC[1:] else None)
                try:
                    yield conv.resolved(fmt)
                except ValueError:
                    continue


def check(x, fmt, opts, start=0, bits=None):
    key = sr_key(11)
    want = encode_generic(x, fmt, opts, key, start, bits).astype(fmt.code_dtype)
    if fmt.code_shift:
        want = want << fmt.code_dtype.type(fmt.code_shift)
    got = encode_flat(x, fmt, opts, "float_fields", key, start, bits)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (fmt.name, opts, x.dtype, x[bad[:3]], got[bad[:3]], want[bad[:3]])


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_float16_pattern_and_float32_and_float64_input(name):
    fmt = get_format(name)
    x32 = float32_patterns(20_000, 4)
    x64 = float64_values(20_000, 5)
    served = 0
    for opts in conversions(fmt):
        for x in (ALL_FLOAT16, x32, x64):
            if not fields_serve(fmt, opts, x.dtype):
                continue
            served += 1
            try:
                check(x, fmt, opts)
            except ValueError:  # (a NaN the conversion refuses: both refuse it, with one message)
                with pytest.raises(ValueError) as generic_error:
                    encode_generic(x, fmt, opts)
                with pytest.raises(ValueError, match=generic_error.value.args[0].replace("(", r"\(").replace(")", r"\)")):
                    encode_flat(x, fmt, opts, "float_fields")
    assert served or fmt.twos_complement


@pytest.mark.parametrize("name", ["bf16", "fp16", "e4m3", "e2m1", "ue4m3"])
@pytest.mark.parametrize("rounding", STOCHASTIC)
def test_stochastic_bits_of_each_position_and_given_bits(name, rounding):
    fmt = get_format(name)
    opts = Conversion(rounding=rounding, sr_bits=None if rounding == "stochastic" else 7).resolved(fmt)
    x = np.nan_to_num(float32_patterns(30_000, 6), nan=1.0)
    positions = np.random.default_rng(1).integers(0, 2**40, x.size, dtype=np.uint64)
    check(x, fmt, opts, start=123_456_789)
    check(x, fmt, opts, start=positions)
    if opts.sr_bits:
        check(x, fmt, opts, bits=np.random.default_rng(2).integers(0, 1 << 7, x.size, dtype=np.uint64))


def test_the_dispatch_sends_every_other_option_here():
    e6m9 = Format("e6m9", 6, 9, 31)  # (a format no cast or prefix path serves)
    assert encode_path(e6m9, Conversion(rounding="toward_zero"), np.float32) == "float_fields"
    assert encode_path("fp16", Conversion(rounding="stochastic", overflow="saturate"), np.float64) == "float_fields"
    assert encode_path("e2m1", Conversion(rounding="stochastic"), np.float32) == "float_fields"
    assert encode_path("e4m3", Conversion(rounding="stochastic_a", sr_bits=3), np.float16) == "float_fields"
    assert not fields_serve(get_format("int8"), Conversion().resolved(get_format("int8")), np.float32)
    assert fields_serve(get_format("fp32"), Conversion().resolved(get_format("fp32")), np.float32)  # (k = 0)
    assert fields_serve(get_format("e8m0"), Conversion().resolved(get_format("e8m0")), np.float32)  # (as float64)
    e8m0 = get_format("e8m0")
    assert not fields_serve(e8m0, Conversion(rounding="ml_dtypes_e8m0").resolved(e8m0), np.float32)


# ---- stochastic rounding by integer carries (rounding.stochastic_carry), on any format ----------

def edge_values(fmt, seed: int, n: int = 2000) -> np.ndarray:
    """float64 values around fmt's own: its finite values (subnormals included) nudged by a
    random fraction of a unit either way (ties exactly, too), both signs, values past the
    largest (overflow), far below the smallest, zeros, Inf and NaN."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, fmt.max_code + 1, n, dtype=np.uint64)
    values = fmt.magnitudes(codes)
    nudge = rng.choice([0.0, 0.5, -0.5], n)
    fraction = np.where(rng.random(n) < 0.3, nudge, rng.uniform(-1, 1, n))
    unit = np.abs(fmt.magnitudes(np.minimum(codes + np.uint64(1), np.uint64(fmt.max_code))) - values)
    values = np.abs(values + fraction * unit)
    top, least = float(fmt.magnitudes(np.uint64(fmt.max_code))), float(fmt.magnitudes(np.uint64(1)))
    extra = np.array([top * 1.5, top * (1 + 2.0 ** -(fmt.mantissa_bits + 1)), least / 3, least * 0.5, least * 2.0 ** -60,
                      0.0, np.inf, np.nan, 1.0, 3.0])
    values = np.concatenate([values, extra])
    return np.concatenate([values, -values])


def check_both_dtypes(fmt, opts, x64, start=0, bits=None):
    """The fields' codes equal the generic kernel's for float64 input and, where fmt fits
    float32's range, for float32 input (a refusal: both refuse alike)."""
    inputs = [x64]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        inputs.append(x64.astype(np.float32))
    compared = 0
    for x in inputs:
        if not fields_serve(fmt, opts, x.dtype):
            continue
        try:
            check(x, fmt, opts, start, bits)
            compared += 1
        except ValueError:  # (a negative or a NaN the conversion refuses: both refuse it alike)
            with pytest.raises(ValueError) as generic_error:
                encode_generic(x, fmt, opts, sr_key(11), start, bits)
            with pytest.raises(ValueError, match=generic_error.value.args[0].replace("(", r"\(").replace(")", r"\)")):
                encode_flat(x, fmt, opts, "float_fields", sr_key(11), start, bits)
    return compared


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fmt=formats(), mode=st.sampled_from(STOCHASTIC), sr_bits=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       overflow=st.sampled_from([None, "saturate"]), nan=st.sampled_from([None, "zero", "max", "ml_dtypes"]),
       first=st.integers(0, 2**62))
def test_stochastic_modes_on_random_formats(fmt, mode, sr_bits, seed, overflow, nan, first):
    """Every stochastic mode, drawn bits (positions from ``first`` on, and as an array) and
    P3109's given bits, on random user-defined formats and their edge values."""
    try:
        opts = Conversion(rounding=mode, overflow=overflow, nan=None if fmt.has_nan else nan,
                          sr_bits=None if mode == "stochastic" else sr_bits).resolved(fmt)
    except ValueError:
        assume(False)
    assume(fields_serve(fmt, opts, np.float64))
    x = edge_values(fmt, seed)
    event(f"compared {check_both_dtypes(fmt, opts, x, start=first)} dtypes")
    positions = np.random.default_rng(seed).integers(0, 2**62, x.size, dtype=np.uint64)
    check_both_dtypes(fmt, opts, x, start=positions)
    if opts.sr_bits:
        given_bits = np.random.default_rng(seed + 1).integers(0, 1 << opts.sr_bits, x.size, dtype=np.uint64)
        check_both_dtypes(fmt, opts, x, bits=given_bits)


@pytest.mark.parametrize("name", ["e4m3", "e2m1", "e3m2", "bf16", "fp16", "fp32", "e8m0", "ue4m3", "float8_e5m3fnu"])
@pytest.mark.parametrize("rounding", STOCHASTIC)
def test_stochastic_modes_on_built_in_formats_normals(name, rounding):
    """Normally distributed data (most of it in the normal range: the carries' share), in
    chunks past the first, float32 and float64, drawn and given bits, with NaN, Inf, zeros."""
    fmt = get_format(name)
    opts = Conversion(rounding=rounding, sr_bits=None if rounding == "stochastic" else 8,
                      nan=None if fmt.has_nan else "zero").resolved(fmt)
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(150_000) * 2.0 ** rng.integers(-8, 8, 150_000),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0]])
    assert check_both_dtypes(fmt, opts, x, start=987_654_321) == 2
    if opts.sr_bits:
        assert check_both_dtypes(fmt, opts, x, bits=rng.integers(0, 256, x.size, dtype=np.uint64)) == 2


@pytest.mark.parametrize("rounding", ["stochastic", "stochastic_c"])
def test_two_workers_draw_the_bits_one_worker_draws(rounding):
    """Split among threads (whose chunks grow), each piece draws the bits of its own positions."""
    x = np.random.default_rng(4).standard_normal((1 << 20) + 12345).astype(np.float32)
    for name in ("e4m3", "ue4m3"):
        kw = {"rounding": rounding, "rng": 5, "sr_bits": None if rounding == "stochastic" else 8}
        one = fpemu.encode(x, name, workers=1, **kw)
        two = fpemu.encode(x, name, workers=2, **kw)
        assert np.array_equal(one, two)
        head = slice(0, 20_000)  # and the generic kernel's, on a stretch of it
        fmt = get_format(name)
        want = encode_generic(x[head], fmt, Conversion(**{k: v for k, v in kw.items() if k != "rng"}).resolved(fmt), 5)
        assert np.array_equal(one[head], want.astype(one.dtype))


@pytest.mark.parametrize("rounding", ["stochastic_a", "stochastic_b"])
def test_float64_read_from_its_top_words_where_the_decision_lies_there(rounding):
    """P3109's A and B on float64 input read the top 32 bits of each pattern alone where the
    exponent, the M kept and the N (B: N + 1) read bits lie there (M + N <= 20): the same codes
    as the generic kernel for values whose low words are random, whose top words end in ones
    below the N bits (a carry from the low word would cross them), for N at the bound and
    past it (read from the full pattern), in the normal and the subnormal range."""
    from fpemu.codec.fast.float_fields import _high_word_serves

    fmt = get_format("e5m2")
    rng = np.random.default_rng(9)
    top = rng.integers(0x3E000000, 0x40400000, 40_000, dtype=np.uint64)  # exponents around 2**-31 .. 2**2
    low = rng.integers(0, 1 << 32, top.size, dtype=np.uint64)
    low[::3] = 0xFFFFFFFF
    top[1::4] |= np.uint64(0xFFF)  # the top word's lowest fraction bits all ones
    sign = (rng.integers(0, 2, top.size, dtype=np.uint64) << np.uint64(63))
    x = ((top << np.uint64(32)) | low | sign).view(np.float64)
    last = 20 - fmt.mantissa_bits - (rounding == "stochastic_b")  # the largest N served
    fraction = x.view(np.uint64) & np.uint64((1 << 50) - 1)  # the bits e5m2's normal range drops
    for n in (1, last - 1, last, last + 1, last + 3):
        opts = Conversion(rounding=rounding, sr_bits=n).resolved(fmt)
        assert _high_word_serves(np.float64, fmt, opts) == (n <= last)
        check(x, fmt, opts, start=77)
        check(x, fmt, opts, bits=rng.integers(0, 1 << n, x.size, dtype=np.uint64))
        # given bits at each normal element's boundary, where one bit read from the low word
        # decides: A carries where floor(nu * 2**N) + R >= 2**N, B where floor(nu * 2**(N+1)) + 2R + 1
        # >= 2**(N+1)
        read = n + (rounding == "stochastic_b")
        floor_read = fraction >> np.uint64(50 - read)
        boundary = (np.uint64(1 << read) - floor_read) >> np.uint64(read - n)
        check(x, fmt, opts, bits=boundary & np.uint64((1 << n) - 1))


@pytest.mark.parametrize("name", ["e5m2", "bf16", "fp16"])
def test_stochastic_on_float64_top_words_leaves_their_ties_to_the_low_words(name):
    """``stochastic`` on float64 read from the top words: where the top k random bits equal
    the top word's k dropped bits (here made so for every other element), the low word
    decides, as in the generic kernel."""
    from fpemu.codec.fast.float_fields import _high_word_serves
    from fpemu.codec.rounding import random_u64

    fmt = get_format(name)
    opts = Conversion(rounding="stochastic").resolved(fmt)
    assert _high_word_serves(np.float64, fmt, opts)
    rng = np.random.default_rng(10)
    n, k, start = 30_000, 20 - fmt.mantissa_bits, 77
    drawn = random_u64(sr_key(11), np.arange(n, dtype=np.uint64) + np.uint64(start)) >> np.uint64(64 - k)
    dropped = np.where(np.arange(n) % 2 == 0, drawn, rng.integers(0, 1 << k, n, dtype=np.uint64))
    exponent = rng.integers(1023 - 6, 1023 + 6, n, dtype=np.uint64)
    kept = rng.integers(0, 1 << fmt.mantissa_bits, n, dtype=np.uint64)
    top = (exponent << np.uint64(20)) | (kept << np.uint64(k)) | dropped | (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(31))
    x = ((top << np.uint64(32)) | rng.integers(0, 1 << 32, n, dtype=np.uint64)).view(np.float64)
    check(x, fmt, opts, start=start)


@pytest.mark.parametrize("rounding", ["stochastic_c", "stochastic_odd"])
@pytest.mark.parametrize("name", ["e5m2", "e2m1"])
def test_float64_top_words_with_the_low_words_sticky_bit(rounding, name):
    """P3109's C and stochastic odd on float64 read from the top words, with whether the low
    word is non-zero as the last bit dropped: the generic kernel's codes where the top word's
    dropped bits are a tie of the N-bit rounding (the low word alone then decides its
    direction), at each element's boundary given bits, for N at the bound and past it; e2m1
    (much below its normal range) goes the one way with the same bit."""
    from fpemu.codec.fast.float_fields import _high_word_serves

    fmt = get_format(name)
    rng = np.random.default_rng(12)
    n, M = 30_000, fmt.mantissa_bits
    k = 20 - M
    exponent = rng.integers(1023 + fmt.emin - 3, 1023 + fmt.emax + 1, n, dtype=np.uint64)
    kept = rng.integers(0, 1 << M, n, dtype=np.uint64) if M else np.zeros(n, np.uint64)
    dropped = rng.integers(0, 1 << k, n, dtype=np.uint64)
    low = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    low[::3] = 0
    sign = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(31)
    last = 18 - M  # the largest N served
    for N in (1, last - 1, last, last + 1):
        opts = Conversion(rounding=rounding, sr_bits=N).resolved(fmt)
        assert _high_word_serves(np.float64, fmt, opts) == (N <= last)
        d = k - N  # the top word's dropped bits below the N
        tied = np.where(np.arange(n) % 2 == 0, (dropped >> np.uint64(d) << np.uint64(d)) | np.uint64(1 << (d - 1)), dropped)
        top = sign | (exponent << np.uint64(20)) | (kept << np.uint64(k)) | tied
        x = ((top << np.uint64(32)) | low).view(np.float64)
        check(x, fmt, opts, start=5)
        # given bits at each normal element's boundary: 2**N less the fraction rounded to N bits
        q, half = tied >> np.uint64(d), np.uint64(1 << (d - 1))
        r = tied & np.uint64((1 << d) - 1)
        tie_up = (q & np.uint64(1)) == (0 if rounding == "stochastic_odd" else 1)
        nearest = q + ((r > half) | ((r == half) & ((low != 0) | tie_up)))
        check(x, fmt, opts, bits=(np.uint64(1 << N) - nearest) & np.uint64((1 << N) - 1))


@pytest.mark.parametrize("fmt", [Format("e8m2", 8, 2, 127), Format("e4m0", 4, 0, 7, inf="none", nan="top"),
                                 Format("e2m1", 2, 1, 1, inf="none", nan="none")])
@pytest.mark.parametrize("rounding", ["stochastic", "stochastic_a", "stochastic_c"])
def test_one_way_chunks_find_what_lies_too_far_below(fmt, rounding):
    """The one-way stochastic chunks (data mostly below the normal range) leave the elements
    too far below it, zeros and float32 subnormals to the generic kernel: where float32's
    zero field is itself within reach of the carries (e8m2: its smallest normal is float32's)
    and where a format has no mantissa bits (e4m0), a check of the field finds them; else the
    exponent part wraps the code past the largest (e2m1)."""
    opts = Conversion(rounding=rounding, sr_bits=None if rounding == "stochastic" else 6).resolved(fmt)
    rng = np.random.default_rng(13)
    low = 2.0 ** fmt.emin
    x = np.concatenate([rng.uniform(-low, low, 20_000) * 2.0 ** -rng.integers(0, 40, 20_000), np.zeros(500),
                        -np.zeros(500), rng.standard_normal(2000) * low * 4])
    x32 = x.astype(np.float32)
    with np.errstate(under="ignore"):
        x32 = np.concatenate([x32, np.float32(1e-45) * rng.integers(1, 1 << 20, 1000).astype(np.float32)])
    check(x32, fmt, opts, start=3)
    if opts.sr_bits:
        check(x32, fmt, opts, bits=rng.integers(0, 1 << 6, x32.size, dtype=np.uint64))


@pytest.mark.parametrize("name", ["bf16", "tf32"])
@pytest.mark.parametrize("rounding", ["stochastic", "stochastic_a", "stochastic_b"])
def test_float32_prefixes_by_an_addend_at_each_boundary(name, rounding):
    """bf16 and tf32 from float32 under stochastic, A and B: the pattern plus the addend, then
    the shift. Every element's dropped bits made its decision's boundary (stochastic: equal to
    its drawn bits, or one more; A and B: given bits that just carry, or just do not), both
    signs, float32 subnormals, values at and past the largest, Inf, NaN, under two overflow
    rules."""
    from fpemu.codec.rounding import random_u64

    fmt = get_format(name)
    k = 23 - fmt.mantissa_bits
    rng = np.random.default_rng(14)
    n, start, N = 40_000, 9, 6
    top = rng.integers(0, 0xFF << (23 - k), n, dtype=np.uint64) << np.uint64(k)  # kept bits, Inf/NaN fields excluded
    top[: n // 8] &= np.uint64((1 << 23) - 1)  # float32 subnormals
    sign = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(31)
    if rounding == "stochastic":
        drawn = random_u64(sr_key(11), np.arange(n, dtype=np.uint64) + np.uint64(start)) >> np.uint64(64 - k)
        dropped = np.minimum(drawn + (np.arange(n) % 2).astype(np.uint64), np.uint64((1 << k) - 1))
        bits = None
    else:
        read = N + (rounding == "stochastic_b")
        dropped = rng.integers(0, 1 << k, n, dtype=np.uint64)
        floor_read = dropped >> np.uint64(k - read)
        boundary = (np.uint64(1 << read) - floor_read) >> np.uint64(read - N)  # the R that just carries
        bits = (boundary - (np.arange(n) % 2).astype(np.uint64)) & np.uint64((1 << N) - 1)
    x = (sign | top | dropped).astype(np.uint32).view(np.float32)
    x = np.concatenate([x, np.float32([3.3895314e38, -3.3895314e38, 3.4e38, np.inf, -np.inf, np.nan, 0.0, -0.0])])
    if bits is not None:
        bits = np.concatenate([bits, np.zeros(8, np.uint64)])
    for overflow in (None, "saturate"):
        opts = Conversion(rounding=rounding, sr_bits=None if rounding == "stochastic" else N, overflow=overflow).resolved(fmt)
        check(x, fmt, opts, start=start, bits=bits)
