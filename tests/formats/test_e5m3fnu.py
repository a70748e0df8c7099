"""float8_e5m3fnu (UE5M3, ml_dtypes 0.7): the format's fields, every code's value, encoding
and the ml_dtypes/crosscheck interop, against ml_dtypes itself (skipped where the installed
release predates the type) and against the exact Fraction reference of tests/reference.py
(always).

ml_dtypes 0.7 defines it (``ml_dtypes.finfo``, every uint8 code viewed): no sign bit, 5
exponent bits with bias 15, 3 mantissa bits, subnormals, no Inf, one NaN (0xFF); largest
value 114688 = 1.75 * 2**16 (0xFE), smallest normal 2**-14, smallest subnormal 2**-17. Its
``astype`` sends every negative input but -0 to NaN, even one that rounds to zero: fpemu's
default gives those +0 (as for every unsigned format), ``nan="ml_dtypes"`` (which
``like("ml_dtypes", ...)`` names) gives NaN.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import decode, encode, get_format, like
from fpemu.codec.exports import ml_dtypes_dtype
from fpemu.codec.foreign import to_ml_dtypes

from reference import decode_table, ref_decode, ref_encode

FMT = get_format("float8_e5m3fnu")
CODES = np.arange(256, dtype=np.uint8)
ALL_HALF = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def ml_type():
    """ml_dtypes.float8_e5m3fnu, or skip: ml_dtypes missing, or a release before 0.7."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    if not hasattr(ml_dtypes, "float8_e5m3fnu"):
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no float8_e5m3fnu (added in 0.7)")
    return ml_dtypes.float8_e5m3fnu


def random_float32(n: int, seed: int) -> np.ndarray:
    """Random float32 bit patterns (every exponent, both signs, NaNs among them)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def reference_codes(x: np.ndarray, **options) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # signalling NaN patterns flag "invalid" when widened
        values = x.astype(np.float64)
    return np.array([ref_encode(float(v), FMT, **options) for v in values], dtype=np.uint8)


def same_codes(got: np.ndarray, want: np.ndarray, x: np.ndarray, what: str) -> None:
    """Equal codes (0xFF is this format's only NaN, so NaN codes are compared too)."""
    bad = np.flatnonzero(np.asarray(got) != np.asarray(want))
    assert bad.size == 0, (f"{what}: {bad.size} of {got.size} differ, e.g. x={x[bad[:4]].tolist()} "
                           f"got {np.asarray(got)[bad[:4]].tolist()} want {np.asarray(want)[bad[:4]].tolist()}")


# ---- the format ---------------------------------------------------------------------------------
def test_fields_and_names():
    assert (FMT.exponent_bits, FMT.mantissa_bits, FMT.bias, FMT.signed, FMT.inf, FMT.nan, FMT.subnormals) == \
        (5, 3, 15, False, "none", "top", True)
    assert get_format("UE5M3") is FMT and get_format("e5m3fnu") is FMT
    assert (FMT.max, FMT.min_normal, FMT.min_subnormal, FMT.eps) == (114688.0, 2.0**-14, 2.0**-17, 0.125)
    assert FMT.nan_code == 0xFF and FMT.max_code == 0xFE and FMT.inf_code is None and FMT.code_dtype == np.uint8


def test_reference_values_of_the_definition():
    """Every code from the Fraction reference: field 0 subnormal, 0xFF the only NaN."""
    table = decode_table(FMT)
    assert np.isnan(table).sum() == 1 and np.isnan(table[0xFF])
    assert table[0] == 0 and table[1] == 2.0**-17 and table[8] == 2.0**-14 and table[0xFE] == 114688
    assert ref_decode(0x78, FMT).magnitude == 1 and ref_decode(0xFE, FMT).magnitude == Fraction(114688)
    assert np.all(np.diff(table[:0xFF]) > 0)  # 255 finite values, increasing with the code


def test_finfo_matches_ml_dtypes():
    t = ml_type()
    import ml_dtypes

    fi = ml_dtypes.finfo(t)
    assert float(fi.max) == FMT.max and float(fi.smallest_normal) == FMT.min_normal
    assert float(fi.smallest_subnormal) == FMT.min_subnormal and float(fi.eps) == FMT.eps
    assert float(fi.min) == 0.0 and fi.nexp == 5 and fi.nmant == 3


# ---- decode -------------------------------------------------------------------------------------
def test_decode_every_code_matches_reference():
    got = decode(CODES, FMT)
    np.testing.assert_array_equal(got, decode_table(FMT))  # (NaN at the same place)
    np.testing.assert_array_equal(decode(CODES, FMT, dtype=np.float32), decode_table(FMT).astype(np.float32))


def test_decode_every_code_matches_ml_dtypes():
    t = ml_type()
    with np.errstate(invalid="ignore"):
        theirs = CODES.view(t).astype(np.float64)
    np.testing.assert_array_equal(decode(CODES, FMT), theirs)


# ---- encode -------------------------------------------------------------------------------------
@pytest.mark.parametrize("nan", [None, "ml_dtypes"])
def test_encode_every_float16_value_matches_reference(nan):
    same_codes(encode(ALL_HALF, FMT, nan=nan), reference_codes(ALL_HALF, nan=nan), ALL_HALF, f"float16, nan={nan}")


@pytest.mark.parametrize("nan", [None, "ml_dtypes"])
def test_encode_random_float32_matches_reference(nan):
    x = random_float32(1 << 15, seed=11)
    small = x[:4096][np.isfinite(x[:4096])]
    small = -np.abs(small) * np.float32(2.0**-30)  # negatives near zero (and float32 subnormals)
    x = np.concatenate([x, small, np.float32([-0.0, 118784, 122880, -np.inf])])
    same_codes(encode(x, FMT, nan=nan), reference_codes(x, nan=nan), x, f"float32, nan={nan}")


def test_encode_exact_input_matches_reference():
    """Fractions and decimal strings are rounded once, with the same rule for negatives."""
    xs = [Fraction(118784), Fraction(118784) + Fraction(1, 10**9), Fraction(-1, 10**30), Fraction(17, 16 * 2**17)]
    for nan in (None, "ml_dtypes"):
        assert encode(xs, FMT, nan=nan).tolist() == [ref_encode(v, FMT, nan=nan) for v in xs]
    assert encode(["-1e-30", "-0"], FMT, nan="ml_dtypes").tolist() == [0xFF, 0x00]


def test_encode_every_float16_value_matches_ml_dtypes():
    t = ml_type()
    with np.errstate(over="ignore", invalid="ignore"):
        want = ALL_HALF.astype(t).view(np.uint8)
    assert like("ml_dtypes", FMT) == {"nan": "ml_dtypes"}
    same_codes(encode(ALL_HALF, FMT, **like("ml_dtypes", FMT)), want, ALL_HALF, "float16 vs ml_dtypes")
    # the one rule apart: negatives that round to zero (fpemu's default: +0)
    differ = encode(ALL_HALF, FMT) != want
    neg_small = np.signbit(ALL_HALF) & (ALL_HALF != 0) & (np.abs(ALL_HALF.astype(np.float64)) <= 2.0**-18)
    assert np.array_equal(differ, neg_small) and differ.sum() == 64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encode_random_patterns_match_ml_dtypes(dtype):
    t = ml_type()
    x = random_float32(1 << 20, seed=12)
    if dtype == np.float64:  # float64 near every tie and value too: 0.7 rounds float64 once
        mids = (decode_table(FMT)[:0xFE] + decode_table(FMT)[1:0xFF]) / 2
        with np.errstate(invalid="ignore"):  # signalling NaN patterns
            x = np.concatenate([x.astype(np.float64), mids, mids * (1 + 2.0**-40), mids * (1 - 2.0**-40)])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(t).view(np.uint8)
    same_codes(encode(x, FMT, **like("ml_dtypes", FMT)), want, x, f"{np.dtype(dtype)} vs ml_dtypes")


def test_nan_ml_dtypes_rule_for_unsigned_formats():
    """The rule applies to unsigned formats with NaN and zero; E8M0 (no zero) refuses it."""
    x = np.float32([-2.0**-30, -1.0, -np.inf, -0.0])
    assert encode(x, FMT, nan="ml_dtypes").tolist() == [0xFF, 0xFF, 0xFF, 0x00]
    assert encode(x, FMT).tolist() == [0x00, 0xFF, 0xFF, 0x00]
    assert encode(x, FMT, nan="ml_dtypes", overflow="saturate").tolist() == [0, 0, 0, 0]  # lowest value
    assert encode(x, "ue4m3", nan="ml_dtypes").tolist() == [0x7F, 0x7F, 0x7F, 0x00]
    with pytest.raises(ValueError, match="nan='ml_dtypes'"):
        encode(x, "e8m0", nan="ml_dtypes")


# ---- interop ------------------------------------------------------------------------------------
def test_ml_dtypes_arrays_in_and_out():
    t = ml_type()
    arr = to_ml_dtypes(CODES, FMT)
    assert arr.dtype == np.dtype(t) and arr.view(np.uint8).tolist() == CODES.tolist()
    np.testing.assert_array_equal(decode(arr, FMT), decode(CODES, FMT))  # read by its bits
    with pytest.raises(ValueError, match="these are float8_e5m3fnu codes"):
        decode(arr, "e4m3")
    out = encode(np.float32([1.0, 3.0]), FMT, returns="ml_dtypes")
    assert out.dtype == np.dtype(t) and out.astype(np.float32).tolist() == [1.0, 3.0]
    np.testing.assert_array_equal(fpemu.quantize(arr, "e4m3"), fpemu.quantize(decode(CODES, FMT), "e4m3"))


def test_without_the_type_codes_come_back_as_integers(monkeypatch):
    """An ml_dtypes without float8_e5m3fnu (0.5, 0.6): returns='ml_dtypes' gives uint8 codes,
    to_ml_dtypes says why, and the crosscheck backend leaves the format out."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    if hasattr(ml_dtypes, "float8_e5m3fnu"):
        monkeypatch.delattr(ml_dtypes, "float8_e5m3fnu")
    assert ml_dtypes_dtype(FMT) is None
    assert encode([1.0], FMT, returns="ml_dtypes").dtype == np.uint8
    with pytest.raises(ValueError, match="has no float8_e5m3fnu"):
        to_ml_dtypes([0x78], FMT)
    from fpemu.backends import MlDtypesBackend

    assert "float8_e5m3fnu" not in MlDtypesBackend().dtypes() and "e4m3" in MlDtypesBackend().dtypes()


def test_crosscheck_compares_it():
    ml_type()
    from fpemu.backends import MlDtypesBackend
    from fpemu.crosscheck import compare_cast, compare_decode

    backend = MlDtypesBackend()
    assert "float8_e5m3fnu" in backend.dtypes()
    assert compare_decode(backend, FMT).identical == 256
    row = compare_cast(backend, FMT, "f32", n_random=2000)
    assert row.status == "reproduced"
    assert row.reproduced_by == "ml_dtypes sends every negative input but -0 to NaN: nan='ml_dtypes'"
    assert row.convention == "like('ml_dtypes-0.7') reproduces every case"
