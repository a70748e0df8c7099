"""decode: every code of every registered format of 16 bits or less decodes exactly as
ml_dtypes does (where it has the format) and as the Fraction reference (all formats), to
float64 and float32; fp32 and tf32 on a large random + edge sample; every finite code
round-trips through encode in every deterministic rounding mode.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fpemu
from fpemu import Format, decode
from fpemu.formats import format_names, get_format

from reference import ML_DTYPES_TYPES, assert_same_floats, decode_table, oracle_type, ref_decode

SMALL = [n for n in format_names() if get_format(n).bits <= 16]
SMALL_ML = [n for n in SMALL if n in ML_DTYPES_TYPES]  # (skipped where the installed release lacks one)


def _all_codes(fmt) -> np.ndarray:
    return np.arange(1 << fmt.bits, dtype=np.uint32).astype(fmt.code_dtype)


@pytest.mark.parametrize("name", SMALL)
def test_decode_every_code_matches_reference(name):
    fmt = get_format(name)
    codes = _all_codes(fmt)
    got = fpemu.decode(codes, fmt)
    assert got.dtype == np.float64
    assert_same_floats(got, decode_table(fmt), f"decode {name} vs reference")


@pytest.mark.parametrize("name", SMALL)
def test_decode_float32_every_code_matches_reference(name):
    fmt = get_format(name)
    got = fpemu.decode(_all_codes(fmt), fmt, dtype=np.float32)
    assert got.dtype == np.float32
    # Every value of these formats is a float32, so the float32 decode is exact too.
    assert_same_floats(got, decode_table(fmt), f"decode {name} as float32")


@pytest.mark.parametrize("name", SMALL_ML)
def test_decode_every_code_matches_ml_dtypes(name):
    pytest.importorskip("ml_dtypes")
    fmt = get_format(name)
    codes = _all_codes(fmt)
    with np.errstate(invalid="ignore"):
        expected = codes.view(oracle_type(name)).astype(np.float64)
    assert_same_floats(fpemu.decode(codes, fmt), expected, f"decode {name} vs ml_dtypes")


def _edge_and_random_words(seed: int) -> np.ndarray:
    """fp32 bit patterns: every exponent with edge mantissas, both signs, plus random words."""
    exps = np.arange(256, dtype=np.uint32) << 23
    mants = np.array([0, 1, 2, 0x1000, 0x1FFF, 0x2000, 0x400000, 0x401000, 0x7FE000, 0x7FFFFF, 0x001FFF], dtype=np.uint32)
    edge = (exps[:, None] | mants[None, :]).ravel()
    rng = np.random.default_rng(seed)
    rand = rng.integers(0, 1 << 32, size=200_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([edge, edge | np.uint32(0x80000000), rand])


def test_decode_fp32_matches_numpy_and_reference():
    fmt = get_format("fp32")
    words = _edge_and_random_words(1)
    got = fpemu.decode(words, fmt)
    with np.errstate(invalid="ignore"):  # numpy's oracle widens signalling NaN words
        numpy_view = words.view(np.float32).astype(np.float64)
    assert_same_floats(got, numpy_view, "fp32 decode vs numpy view")
    sample = words[::20]
    expected = np.array([ref_decode(int(w), fmt).to_float() for w in sample])
    assert_same_floats(got[::20], expected, "fp32 decode vs reference")
    got32 = fpemu.decode(words, fmt, dtype=np.float32)
    assert got32.dtype == np.float32
    assert_same_floats(got32, words.view(np.float32), "fp32 decode as float32")


def test_decode_tf32_matches_reference_and_ignores_low_bits():
    fmt = get_format("tf32")
    words = _edge_and_random_words(2)
    got = fpemu.decode(words, fmt)
    sample = words[::20]
    expected = np.array([ref_decode(int(w), fmt).to_float() for w in sample])
    assert_same_floats(got[::20], expected, "tf32 decode vs reference")
    # The low 13 bits are ignored on read: the value is the fp32 value of the cleared word.
    with np.errstate(invalid="ignore"):  # the cleared words include signalling NaNs
        cleared = (words & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    assert_same_floats(got, cleared, "tf32 decode vs fp32 view of the cleared word")
    # SPEC: a NaN whose payload lies only in the low 13 bits reads as Inf.
    assert fpemu.decode(np.array([0x7F800001, 0xFF801000], dtype=np.uint32), fmt).tolist() == [np.inf, -np.inf]


@pytest.mark.parametrize("name", SMALL)
def test_every_finite_code_round_trips(name):
    """encode(decode(c)) == c for every non-NaN code, in every rounding mode (exact values)."""
    fmt = get_format(name)
    codes = _all_codes(fmt)
    values = decode_table(fmt)
    keep = ~np.isnan(values)
    for rounding in ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd"):
        got = fpemu.encode(values[keep], fmt, rounding=rounding)
        np.testing.assert_array_equal(got, codes[keep], err_msg=f"{name} {rounding}")


# (a regression, issue 9: it once gave wrong bits or a traceback; worked out by hand from the format's definition)
def test_decode_to_float32_is_exact_or_refused():
    wide = Format("wide", 9, 4, 255)  # values up to about 2^256
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="float32 cannot hold exactly"):
            decode([0x1FF], wide, dtype=np.float32)
        assert decode([0x7F7F], "bf16", dtype=np.float32).tolist() == [3.3895313892515355e38]
