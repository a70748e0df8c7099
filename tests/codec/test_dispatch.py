"""The one dispatch (fpemu.codec.encode_path): every path it names, run on inputs it sends there,
gives the generic kernel's codes (quantize's two value paths: the values of those codes), bit
for bit; the path a call takes is the one encode_path names for it; every decision the module
docstring lists is the one encode_path makes.

Each path's own tests go deeper (tests/codec/fast/, tests/codec/test_exact_kernel.py); here
each is held to the generic kernel, which the Fraction reference holds to the definitions
(tests/codec/test_generic_kernel.py, test_rounding.py).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu import get_format
from fpemu.codec import PATHS, Conversion, encode_path
from fpemu.codec import encoder as encoder_module
from fpemu.codec.generic_kernel import decode_generic, encode_generic

MODES = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd")


def generic_codes(x: np.ndarray, fmt, conversion: Conversion) -> np.ndarray:
    """The generic kernel's codes of float (or small integer) input, in encode's code dtype and
    container position."""
    fmt = get_format(fmt)
    opts = conversion.resolved(fmt)
    source = x if x.dtype.kind == "f" else x.astype(np.float64)  # (<= 16-bit integers: exact)
    codes = encode_generic(source, fmt, opts).astype(fmt.code_dtype)
    return codes << fmt.code_dtype.type(fmt.code_shift) if fmt.code_shift else codes


def float32_patterns(n: int, seed: int, nan: bool = True) -> np.ndarray:
    """Random float32 bit patterns (every exponent, subnormals, Inf, NaN), half of them near 1
    (ties and sticky bits of narrow formats)."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    near = (u[: n // 2] & np.uint32(0x80FFFFFF)) | np.uint32(0x3F000000)
    x = np.concatenate([u[n // 2:], near]).view(np.float32)
    return x if nan else np.nan_to_num(x, nan=1.5)


def float64_values(n: int, seed: int) -> np.ndarray:
    """float64: float32 values, values just off them (one float32 ulp's 2**-20), wide normals,
    Inf and NaN."""
    rng = np.random.default_rng(seed)
    with np.errstate(invalid="ignore"):  # (signalling NaN patterns widen quietly)
        f = float32_patterns(n // 2, seed).astype(np.float64)
    with np.errstate(invalid="ignore"):  # (Inf times a number near 1, NaN: on purpose)
        off = f * (1 + rng.choice([-1.0, 1.0], f.size) * 2.0**-44)
    wide = rng.standard_normal(n - 2 * f.size) * 2.0 ** rng.integers(-140, 140, n - 2 * f.size)
    return np.concatenate([f, off, wide, [np.inf, -np.inf, np.nan, 1e300, -0.0]])


def inputs(dtype) -> np.ndarray:
    """A small array of dtype (too few elements for the input tables)."""
    if dtype == np.float32:
        return float32_patterns(20_000, 1)
    if dtype == np.float64:
        return float64_values(20_000, 2)
    with np.errstate(over="ignore"):  # (beyond float16: Inf, on purpose)
        return float32_patterns(20_000, 3).astype(np.float16)[:3000]


def same(got: np.ndarray, want: np.ndarray, x: np.ndarray, what) -> None:
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (what, x.reshape(-1)[bad[:3]], got.reshape(-1)[bad[:3]], want.reshape(-1)[bad[:3]])


def no_nan_option(fmt) -> dict:
    return {} if get_format(fmt).has_nan else {"nan": "zero"}


# ---- each path against the generic kernel --------------------------------------------------
TOP_HALF = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e2m1", "e3m2", "e2m3", "binary8p3se", "binary8p5sf")


@pytest.mark.parametrize("name", TOP_HALF)
@pytest.mark.parametrize("rounding", ("nearest_even", "nearest_away", "toward_zero"))
def test_top_half_path_is_the_generic_kernel(name, rounding):
    for overflow in ("saturate", None):
        conv = Conversion(rounding=rounding, overflow=overflow, **no_nan_option(name))
        for dtype in (np.float32, np.float16, np.float64):
            x = inputs(dtype)
            assert encode_path(name, conv, dtype, x.size) == "top_half", (name, conv, dtype)
            same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv, dtype))


@pytest.mark.parametrize("name, rounding", [
    ("e4m3", "up"), ("e5m2", "down"), ("e2m1", "odd"), ("e8m0", "nearest_even"), ("e8m0", "up"),
    ("ue4m3", "nearest_even"), ("float8_e4m3", "up"), ("binary8p1se", "nearest_away"),
    ("float8_e5m3fnu", "nearest_even"),
])
def test_fp32_table_path_is_the_generic_kernel(name, rounding):
    conv = Conversion(rounding=rounding, overflow="saturate", **no_nan_option(name))
    for dtype in (np.float32, np.float16, np.float64):
        x = inputs(dtype)
        if not get_format(name).signed:
            x = np.abs(x)
        assert encode_path(name, conv, dtype, x.size) == "fp32_table", (name, conv, dtype)
        same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv, dtype))


@pytest.mark.parametrize("name, dtypes", [("bf16", (np.float32, np.float16, np.float64)),
                                          ("tf32", (np.float32, np.float16, np.float64))])
def test_prefix_rne_path_is_the_generic_kernel(name, dtypes):
    conv = Conversion()
    for dtype in dtypes:
        x = inputs(dtype)
        assert encode_path(name, conv, dtype, x.size) == "prefix_rne", (name, dtype)
        same(fpemu.encode(x, name, workers=1), generic_codes(x, name, conv), x, (name, dtype))


@pytest.mark.parametrize("name, dtype", [("fp16", np.float32), ("fp16", np.float64), ("fp16", np.float16),
                                         ("fp32", np.float32), ("fp32", np.float64), ("fp64", np.float64),
                                         ("fp64", np.float32)])
@pytest.mark.parametrize("nan", [None, "payload", "quiet_payload", "positive"])
@pytest.mark.parametrize("rounding", [None, "up", "odd", "stochastic", "stochastic_a", "stochastic_odd"])
def test_numpy_cast_path_is_the_generic_kernel(name, dtype, nan, rounding):
    """Under every rounding from an input no wider (the stochastic ones too: nothing is
    dropped, so no random bit decides), to nearest even from a wider one."""
    if rounding and np.dtype(dtype).itemsize > {"fp16": 2, "fp32": 4, "fp64": 8}[name]:
        return  # (a narrowing cast rounds to nearest even only)
    conv = Conversion(nan=nan, rounding=rounding, sr_bits=3 if rounding in ("stochastic_a", "stochastic_odd") else None)
    x = inputs(dtype)
    assert encode_path(name, conv, dtype, x.size) == "numpy_cast", (name, dtype)
    drawn = {"rng": 5} if conv.stochastic else {}
    same(fpemu.encode(x, name, conversion=conv, workers=1, **drawn), generic_codes(x, name, conv), x, (name, dtype, nan))
    if conv.sr_bits:  # given bits: checked as before, then unread
        given = np.random.default_rng(1).integers(0, 8, x.shape, dtype=np.uint8)
        same(fpemu.encode(x, name, conversion=conv, random_bits=given, workers=1), generic_codes(x, name, conv), x, name)
        with pytest.raises(ValueError, match="random_bits must lie in"):
            fpemu.encode(x, name, conversion=conv, random_bits=given + np.uint8(8))


@pytest.mark.parametrize("name, conv", [
    ("fp16", Conversion(rounding="up")), ("fp16", Conversion(rounding="down", overflow="saturate")),
    ("fp32", Conversion(rounding="odd", nan="payload")), ("fp32", Conversion(rounding="nearest_away", overflow="sat_none")),
    ("fp32", Conversion(rounding="toward_zero", overflow="ml_dtypes_saturate")),
])
def test_cast_directed_path_is_the_generic_kernel(name, conv):
    for dtype in ((np.float32, np.float64) if name == "fp16" else (np.float64,)):
        x = inputs(dtype)
        assert encode_path(name, conv, dtype, x.size) == "cast_directed", (name, conv, dtype)
        same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv, dtype))


@pytest.mark.parametrize("name, conv", [
    ("bf16", Conversion(rounding="odd", overflow="saturate")), ("tf32", Conversion(rounding="up")),
    ("bf16", Conversion(rounding="nearest_away", nan="payload")), ("tf32", Conversion(rounding="toward_zero")),
])
def test_prefix_directed_path_is_the_generic_kernel(name, conv):
    for dtype in (np.float32, np.float64, np.float16):
        x = inputs(dtype)
        assert encode_path(name, conv, dtype, x.size) == "prefix_directed", (name, conv, dtype)
        same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv, dtype))


@pytest.mark.parametrize("name, conv", [
    ("bf16", Conversion(nan="all_ones")), ("bf16", Conversion(overflow="saturate", nan="payload")),
    ("tf32", Conversion(overflow="sat_none")), ("fp16", Conversion(overflow="saturate")),
    ("fp32", Conversion(overflow="ml_dtypes_saturate", nan="ones_positive")), ("e5m2", Conversion(nan="payload")),
    ("fp16", Conversion(overflow="nan", nan="all_ones")), ("float8_e3m4", Conversion(nan="quiet_payload")),
])
def test_in_range_path_is_the_generic_kernel(name, conv):
    for dtype in (np.float32, np.float64):
        x = inputs(dtype)
        assert encode_path(name, conv, dtype, x.size) == "in_range", (name, conv, dtype)
        same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv, dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("name", ["e4m3", "bf16", "e2m1", "fp16", "e8m0", "int8"])
def test_input_table_path_is_the_generic_kernel(dtype, name):
    bits = 8 * np.dtype(dtype).itemsize
    patterns = np.arange(1 << bits, dtype=np.uint64).astype(f"u{bits // 8}").view(dtype)
    x = np.tile(patterns, 1 << (16 - bits))  # enough elements for the table
    for rounding in ("nearest_even", "toward_zero", "odd"):
        conv = Conversion(rounding=rounding, overflow="saturate", **no_nan_option(name))
        assert encode_path(name, conv, dtype, x.size) == "input_table", (name, conv, dtype)
        same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv, dtype))


@pytest.mark.parametrize("name", ["e4m3", "fp16", "e2m1", "binary8p3se"])
def test_exact_path_is_the_generic_kernel_on_float_values(name):
    """Exact input that happens to be floats gets the float's codes (in every mode)."""
    x = float64_values(600, 4)
    x = x[np.isfinite(x)]
    exact = np.array([Fraction(float(v)) if v else float(v) for v in x], dtype=object)
    for rounding in MODES:
        conv = Conversion(rounding=rounding, **no_nan_option(name))
        assert encode_path(name, conv, exact.dtype, exact.size) == "exact"
        same(fpemu.encode(exact, name, conversion=conv), generic_codes(x, name, conv), x, (name, rounding))


@pytest.mark.parametrize("name, conv", [
    ("e4m3", Conversion(rounding="stochastic")),
    ("e2m1", Conversion(rounding="stochastic_c", sr_bits=5)),
    ("bf16", Conversion(rounding="stochastic", nan="all_ones")),
    ("bf16", Conversion(rounding="stochastic", overflow="saturate")),
    ("fp16", Conversion(rounding="stochastic_a", sr_bits=6, overflow="saturate")),
    ("e5m2", Conversion(rounding="stochastic", nan="payload")),
    ("fp16", Conversion(rounding="stochastic")),
    ("e5m2", Conversion(rounding="stochastic_odd", sr_bits=3, overflow="saturate_propagate")),
    ("ue4m3", Conversion(rounding="stochastic")),
    ("e8m0", Conversion(rounding="stochastic")),  # (float32 input read as float64: its lowest binade is float32 subnormal)
    ("fp32", Conversion(rounding="stochastic", overflow="saturate")),  # (with Inf overflow: numpy_cast)
])
def test_float_fields_path_is_the_generic_kernel(name, conv):
    stochastic_or_generic_path(name, conv, "float_fields")


@pytest.mark.parametrize("name, conv", [
    ("int8", Conversion(rounding="nearest_even", overflow="saturate")),
])
def test_generic_path_is_the_generic_kernel(name, conv):
    stochastic_or_generic_path(name, conv, "generic")


def stochastic_or_generic_path(name, conv, path):
    x = inputs(np.float32)
    x = x if get_format(name).has_nan or "nan" in conv else np.nan_to_num(x, nan=0.5)
    assert encode_path(name, conv, np.float32, x.size) == path
    if conv.stochastic:  # the same random bits: those of each position under the seed's key
        from fpemu.codec import sr_key

        fmt = get_format(name)
        opts = conv.resolved(fmt)
        want = encode_generic(x, fmt, opts, sr_key(7), 0).astype(fmt.code_dtype)
        same(fpemu.encode(x, name, conversion=conv, rng=7, workers=1), want, x, name)
        return
    same(fpemu.encode(x, name, conversion=conv, workers=1), generic_codes(x, name, conv), x, (name, conv))


@pytest.mark.parametrize("name", ["fp16", fpemu.Format("e5m8", 5, 8, 15),
                                  fpemu.Format("e6m9fnuz", 6, 9, 31, inf="none", nan="neg_zero")])
def test_magic_number_path_gives_the_generic_kernels_values(name):
    fmt = get_format(name)
    x = inputs(np.float32)
    for overflow in (None, "saturate", "saturate_propagate"):
        conv = Conversion(overflow=overflow)
        assert encode_path(fmt, conv, np.float32, x.size, values=True) == "magic_number"
        want = decode_generic(encode_generic(x, fmt, conv.resolved(fmt)), fmt).astype(np.float32)
        got = fpemu.quantize(x, fmt, conversion=conv, workers=1)
        nan = np.isnan(got) & np.isnan(want)
        same(np.where(nan, 0, got.view(np.uint32)), np.where(nan, 0, want.view(np.uint32)), x, (fmt.name, overflow))


@pytest.mark.parametrize("name", ["e4m3", "e2m1", "bf16", "fp16", "e3m2"])
@pytest.mark.parametrize("rounding", ["nearest_even", "toward_zero", "up", "down"])
def test_quantum_scaling_path_gives_the_generic_kernels_values(name, rounding):
    fmt = get_format(name)
    x = inputs(np.float64)
    conv = Conversion(rounding=rounding, overflow="saturate", **no_nan_option(name))
    assert encode_path(fmt, conv, np.float64, x.size, values=True) == "quantum_scaling"
    want = decode_generic(encode_generic(x, fmt, conv.resolved(fmt)), fmt)
    got = fpemu.quantize(x, fmt, conversion=conv, workers=1)
    nan = np.isnan(got) & np.isnan(want)
    same(np.where(nan, 0, got.view(np.uint64)), np.where(nan, 0, want.view(np.uint64)), x, (name, rounding))


def test_every_path_is_tested_here():
    tested = {name.removeprefix("test_").partition("_path_")[0] for name in globals()
              if name.startswith("test_") and ("_path_is_the_generic_kernel" in name
                                               or "_path_gives_the_generic_kernels_values" in name)}
    assert tested == set(PATHS)


# ---- the path named is the path taken -------------------------------------------------------------
@pytest.mark.parametrize("name, conv, x", [
    ("e4m3", Conversion(), np.float32([1.0, 1000.0])),
    ("e4m3", Conversion(rounding="up"), np.float64([1.0, 1e-300])),
    ("bf16", Conversion(), np.float16([1.0, -2.5])),
    ("fp16", Conversion(), np.float64([1.0, 70000.0])),
    ("e2m1", Conversion(rounding="stochastic"), np.float32([0.3, 2.5])),
    ("tf32", Conversion(nan="all_ones"), np.float32([np.nan])),
])
def test_encode_runs_the_path_encode_path_names(name, conv, x, monkeypatch):
    """encode asks the dispatch once and runs what it names (encode_flat is told the path)."""
    taken = []
    real = encoder_module.encode_flat

    def spy(flat, fmt, opts, path, *args, **kwargs):
        taken.append(path)
        return real(flat, fmt, opts, path, *args, **kwargs)

    monkeypatch.setattr(encoder_module, "encode_flat", spy)
    rng = 0 if conv.stochastic else None
    fpemu.encode(x, name, conversion=conv, rng=rng)
    assert taken and set(taken) == {encode_path(name, conv, x.dtype, x.size)}


def test_the_decision_follows_the_module_docstring():
    f32, f64, f16 = np.float32, np.float64, np.float16
    assert encode_path("e4m3", {"via": "fp32"}, f64) == "top_half"  # 1. via: float32 from here on
    assert encode_path("e4m3", {"via": "fp32"}, object) == "top_half"
    assert encode_path("fp16", {}, f64, values=True) == "quantum_scaling"  # 2. quantize's arithmetic
    assert encode_path("fp16", {}, f64) == "numpy_cast"
    assert encode_path("fp16", {"rounding": "stochastic_a", "sr_bits": 4}, f32, values=True) == "float_fields"
    assert encode_path("e4m3", {}, object) == "exact"  # 3. exact input
    assert encode_path("e4m3", {}, np.str_) == "exact"
    assert encode_path("e4m3", {}, np.int16, 1 << 15) == "input_table"  # 4. the input table ...
    assert encode_path("e4m3", {}, np.int16, (1 << 15) - 1) == "top_half"  # ... from 2**15 elements
    assert encode_path("e4m3", {}, np.uint8, 1 << 10) == "input_table"  # (8 bits: from 2**10)
    assert encode_path("e4m3", {"rounding": "sr"}, f16, 1 << 20) == "float_fields"  # (deterministic only)
    assert encode_path("fp16", {}, np.int64) == "numpy_cast"  # 5. integers: float64's path
    assert encode_path("bf16", {}, np.int16) == "prefix_rne"  # (16 bits: float32's)
    assert encode_path("e2m1", {}, f32) == "top_half"  # 6. the top half ...
    assert encode_path("e4m3", {"rounding": "up"}, f32) == "fp32_table"  # ... or the 17-bit table
    assert encode_path("e8m0", {}, f64) == "fp32_table"
    assert encode_path("fp32", {}, f16) == "numpy_cast"  # 7. numpy's cast: exact from a narrower input ...
    assert encode_path("fp32", {"rounding": "up"}, f32) == "numpy_cast"  # ... in any deterministic mode
    assert encode_path("fp16", {"rounding": "up"}, f32) == "cast_directed"  # ... and stepped from a wider one
    assert encode_path("tf32", {}, f64) == "prefix_rne"  # 8. bf16 and tf32 prefixes
    assert encode_path("bf16", {"rounding": "up", "overflow": "saturate"}, f64) == "prefix_directed"
    assert encode_path("fp32", {}, f32) == "numpy_cast"
    assert encode_path("bf16", {"overflow": "saturate"}, f32) == "in_range"  # 9. options beyond the range
    assert encode_path("fp16", {"overflow": "saturate", "rounding": "up"}, f32) == "cast_directed"
    assert encode_path("fp16", {"rounding": "stochastic"}, f32) == "float_fields"  # 10. the fields
    assert encode_path("e5m2", {"nan": "payload"}, f64) == "in_range"
    assert encode_path("e4m3", {"rounding": "sr"}, f64) == "float_fields"
    assert encode_path("e8m0", {"rounding": "sr"}, f64) == "float_fields"
    assert encode_path("int8", {}, f32) == "generic"  # 11. the rest


def test_encode_path_refuses_what_encode_refuses():
    with pytest.raises(ValueError, match="unknown rounding"):
        encode_path("e4m3", {"rounding": "round_up"}, np.float32)
    with pytest.raises(ValueError, match="has no Inf"):
        encode_path("e4m3", {"overflow": "inf"}, np.float32)
    with pytest.raises(ValueError, match="unknown format"):
        encode_path("e4m4", None, np.float32)
