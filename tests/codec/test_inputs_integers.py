"""Integer inputs beyond 2**53 are rounded once, exactly (no double rounding through float64)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpemu


def exact_fp32_rz(v: int) -> int:
    """fp32 code of int v rounded toward zero, from exact integer arithmetic."""
    sign = 0x80000000 if v < 0 else 0
    mag = abs(v)
    if mag == 0:
        return sign
    e = mag.bit_length() - 1
    kept = mag >> (e - 23) if e >= 23 else mag << (23 - e)
    return sign | ((e + 127) << 23) | (kept - (1 << 23))


def exact_fp32_nearest_even(v: int) -> int:
    """fp32 code of int v rounded to nearest even, from Fraction arithmetic."""
    down = exact_fp32_rz(v)
    mag = abs(v)
    e = mag.bit_length() - 1
    if e < 24:
        return down
    ulp = 1 << (e - 23)
    rem = Fraction(mag % ulp, ulp)
    up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and down & 1)
    return down + int(up)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_int64_to_fp32_rounds_once(v):
    x = np.array([v], dtype=np.int64)
    assert int(fpemu.encode(x, "fp32", rounding="rz")[0]) == exact_fp32_rz(v)
    assert int(fpemu.encode(x, "fp32")[0]) == exact_fp32_nearest_even(v)


@pytest.mark.parametrize(
    "v, code",
    [
        # 2**53 + 1 rounds to 2**53 in float64; a second rounding toward +inf must still go up.
        (2**53 + 1, 0x5A000001),
        (2**64 - 1, 0x5F800000),
        (2**63 + 1, 0x5F000000),
    ],
)
def test_uint64_round_up_sees_the_dropped_bits(v, code):
    rounding = "up" if v == 2**53 + 1 else "nearest_even"
    assert int(fpemu.encode(np.array([v], dtype=np.uint64), "fp32", rounding=rounding)[0]) == code


def test_python_ints_and_lists():
    assert fpemu.encode(3, "e4m3") == 0x44
    assert fpemu.encode([1, 2], "bf16").tolist() == [0x3F80, 0x4000]
    assert fpemu.quantize([1, 3], "e2m1").dtype == np.float64


# ---- integers of at most 16 bits: the float32 paths, the codes of the same float64 values ----
from reference import ref_encode, table_rne  # noqa: E402

SMALL_INTS = [np.int8, np.uint8, np.int16, np.uint16]
NAMED = ["e4m3", "e5m2", "bf16", "fp16", "e2m1", "e8m0", "int8"]
SMALL_MODES = ["nearest_even", "toward_zero", "up", "stochastic"]


def _random_formats(count: int, seed: int = 25) -> list:
    """User-defined formats drawn with a fixed seed (refused combinations drawn again)."""
    rng = np.random.default_rng(seed)
    found: list = []
    while len(found) < count:
        e = int(rng.integers(1, 9))
        m = int(rng.integers(0, 24))
        inf, nan = [("none", "none"), ("ieee", "ieee"), ("none", "top"), ("top", "none")][int(rng.integers(4))]
        standard = (1 << (e - 1)) - 1
        try:
            found.append(fpemu.Format(f"random{len(found)}", e, m, standard + int(rng.integers(-4, 5)),
                                      signed=bool(rng.integers(2)), inf=inf, nan=nan,
                                      subnormals=bool(rng.integers(2))))
        except ValueError:
            continue
    return found


RANDOM_FORMATS = _random_formats(5)
SMALL_FORMATS = [fpemu.get_format(name) for name in NAMED] + RANDOM_FORMATS


def _every(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype)


def _outcome(call):
    """The result of call(), or the error it raises (type and words), to compare both ways."""
    try:
        return call()
    except (ValueError, TypeError, OverflowError) as err:
        return (type(err).__name__, str(err))


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def every_small_case(test):
    """Every <=16-bit integer dtype x every small format x every rounding of SMALL_MODES."""
    for name, values, ids in (("mode", SMALL_MODES, None), ("fmt", SMALL_FORMATS, lambda f: f.name),
                              ("dtype", SMALL_INTS, lambda d: np.dtype(d).name)):
        test = pytest.mark.parametrize(name, values, ids=ids)(test)
    return test


def _kwargs(mode: str) -> dict:
    return {"rounding": mode, "rng": 2025} if mode == "stochastic" else {"rounding": mode}


def _as_ints_and_as_float64(convert, dtype, fmt, mode):
    """convert(every value of dtype) and convert(the same values as float64), each a result
    or the error it raised; also the values and the keywords used."""
    x, kw = _every(dtype), _kwargs(mode)
    return _outcome(lambda: convert(x, fmt, **kw)), _outcome(lambda: convert(x.astype(np.float64), fmt, **kw)), x, kw


@every_small_case
def test_small_integers_encode_as_their_float64_values(dtype, fmt, mode):
    got, want, x, kw = _as_ints_and_as_float64(fpemu.encode, dtype, fmt, mode)
    assert _same(got, want)
    # the same in pieces on threads, and for a 2-D array (stochastic bits follow positions)
    assert _same(_outcome(lambda: fpemu.encode(x, fmt, workers=3, **kw)), want)
    assert _same(_outcome(lambda: fpemu.encode(x.reshape(-1, 16), fmt, **kw)),
                 want if isinstance(want, tuple) else want.reshape(-1, 16))


@every_small_case
def test_small_integers_quantize_as_their_float64_values(dtype, fmt, mode):
    got, want, _, _ = _as_ints_and_as_float64(fpemu.quantize, dtype, fmt, mode)
    if not isinstance(got, tuple) and not isinstance(want, tuple):
        assert got.dtype == want.dtype == np.float64
        nan = np.isnan(want)  # (NaN payloads may differ by path: the NaNs must agree)
        assert np.array_equal(np.isnan(got), nan)
        got, want = got[~nan], want[~nan]
    assert _same(got, want)


@pytest.mark.parametrize("dtype", SMALL_INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", [f for f in SMALL_FORMATS if f.bits <= 16 and not f.container_bits],
                         ids=lambda f: f.name)
def test_small_integers_round_to_nearest_even_as_the_reference(dtype, fmt):
    x = _every(dtype)
    got = _outcome(lambda: fpemu.encode(x, fmt, nan="zero") if not fmt.has_nan else fpemu.encode(x, fmt))
    if isinstance(got, tuple):
        pytest.skip(f"{fmt.name} refuses these values: {got}")
    if not fmt.signed and fmt.has_nan:
        x, got = x[x >= 0], got[x >= 0]  # (negatives: the NaN convention, not the rounding)
    if not fmt.subnormals:
        x, got = x[x != 0], got[x != 0]  # (no zero: table_rne gives ml_dtypes' NaN code)
    assert np.array_equal(got, table_rne(x.astype(np.float64), fmt))


@pytest.mark.parametrize("dtype", SMALL_INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("mode", ["nearest_even", "toward_zero", "up"])
def test_small_integers_as_the_fraction_reference(dtype, fmt, mode):
    """The scalar exact reference: every value of the 8-bit dtypes, every 61st of the others
    (with both ends)."""
    x = _every(dtype)
    if x.size > 256:
        x = np.unique(np.concatenate([x[::61], x[-3:], x[:3], np.array([0, 1, -1], dtype=np.int64).astype(dtype)]))
    want = [_outcome(lambda v=v: ref_encode(int(v), fmt, rounding=mode)) for v in x.tolist()]
    refused = np.array([isinstance(w, tuple) for w in want], dtype=bool)
    for v in x[refused][:3]:  # (no code: encode refuses them too)
        with pytest.raises(ValueError):
            fpemu.encode(np.array([v]), fmt, rounding=mode)
    assert fpemu.encode(x[~refused], fmt, rounding=mode).tolist() == [w for w in want if not isinstance(w, tuple)]
