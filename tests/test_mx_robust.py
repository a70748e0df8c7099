"""fpemu.mx gives no silent wrong answer (issue 9, items 2-8): every odd input is either
handled exactly or refused with an error that names the problem; nothing warns, nothing is
modified in place, and the cost follows the data, never a parameter.

Oracles: numpy float32 scalar arithmetic (TransformerEngine's steps), ml_dtypes decodes and
exact Fractions.
"""

from __future__ import annotations

import math
import time
import tracemalloc
import warnings
from fractions import Fraction

import numpy as np
import pytest

from fpemu import mx
from fpemu.cli import main

ml_dtypes = pytest.importorskip("ml_dtypes")

f32 = np.float32
MX_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8"]
ALL_FORMATS = MX_FORMATS + ["nvfp4"]


def e2m1(codes) -> np.ndarray:
    return np.asarray(codes, np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def e4m3(codes) -> np.ndarray:
    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def round24(fr: Fraction) -> Fraction:
    """fr rounded to 24 significant bits, ties to even, with no exponent limits: float32
    arithmetic as it would be without overflow or subnormals."""
    if fr == 0:
        return fr
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    e -= Fraction(2) ** e > abs(fr)
    q = Fraction(2) ** (e - 23)
    n, r = divmod(fr / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    return n * q


# ---- item 2: NVFP4 dequantization stays finite ----------------------------------------------------
def test_nvfp4_te_huge_amax_reads_back_finite():
    """[1e38, 1]: S_enc = 2688/1e38, block scale 448, codes 6 and 0. TransformerEngine's
    dequantize computes fp32(448 * 1e38) = Inf first, so it returns [Inf, NaN]; the same
    float32 roundings without that overflow give 6 * fp32(fp32(448 * a) * fp32(1/2688)),
    one float32 ulp above a = fp32(1e38), and 0."""
    x = f32([1e38, 1])
    q = mx.quantize(x, "nvfp4")
    assert q.scales.tolist() == [0x7E] and q.codes.tolist() == [0x7, 0x0]
    with np.errstate(over="ignore", invalid="ignore"):
        te = (f32(448) * q.global_amax) * f32(1 / 2688)  # TE's final_scale
        assert np.isinf(te) and np.isnan(f32(0) * te)
    a, c = Fraction(float(q.global_amax)), Fraction(float(f32(1 / 2688)))
    want = round24(6 * round24(round24(448 * a) * c))
    d = q.dequantize()
    assert np.isfinite(d).all()
    assert d.tolist() == [float(want), 0.0]
    assert abs(want - a) <= a * Fraction(1, 2**23)  # 6 * 448 / 2688 = 1: about the amax
    t = mx.quantize(x, "nvfp4", variant="torchao").dequantize()  # torchao: 6 * fp32(pts * 448)
    assert t.tolist() == [float(round24(6 * round24(round24(a / 2688) * 448))), 0.0]


def test_nvfp4_te_scaled_path_is_te_where_te_is_finite():
    """amax in [2**100, FLT_MAX/448): fpemu evaluates TE's formula with amax scaled by
    2**-32; the values must equal TE's plain float32 arithmetic bit for bit."""
    rng = np.random.default_rng(1)
    for amax in (2.0**100, 3e33, 7e35):
        x = (rng.standard_normal(64) * amax / 4).astype(np.float32)
        x[5] = amax
        q = mx.quantize(x, "nvfp4")
        final = (e4m3(q.scales).astype(np.float32) * q.global_amax) * f32(1 / 2688)
        assert np.isfinite(final).all()
        want = e2m1(q.codes).astype(np.float32) * np.repeat(final, 16)
        assert np.array_equal(q.dequantize(), want)


def test_nvfp4_tiny_amax_reads_back_what_was_encoded():
    """amax below 2688/FLT_MAX: TE clamps S_enc to FLT_MAX, so the data is encoded with the
    decode scale fp32(1/FLT_MAX) = 2**-128, not amax/2688 (TE's dequantize formula reads
    back 8x too small here). fpemu returns code * scale * 2**-128, exactly."""
    x = f32([1e-37, 5e-38, 0, -3e-38])
    q = mx.quantize(x, "nvfp4")
    assert q.global_scale == f32(2.0**-128)
    want = e2m1(q.codes) * np.repeat(e4m3(q.scales), 16)[:4] * 2.0**-128
    assert q.dequantize().tolist() == want.tolist()
    assert abs(q.dequantize()[0] - 1e-37) < 0.1e-37
    te = float(e2m1(q.codes[:1])[0] * e4m3(q.scales)[0] * float(q.global_amax) / 2688)
    assert te < 0.2e-37  # what TE's amax/2688 formula would give


def test_nvfp4_inf_input_reads_back_finite():
    """An Inf makes the amax Inf and TE's S_enc 1: elements read back as code * scale
    (the Inf saturates to 6 * 448, as TE's satfinite conversion does)."""
    x = np.zeros(32, np.float32)
    x[0], x[1], x[16], x[17] = np.inf, 1.0, 3.0, -0.75
    q = mx.quantize(x, "nvfp4")
    assert q.global_amax == np.inf and q.global_scale == 1
    d = q.dequantize()
    assert np.isfinite(d).all()
    assert d.tolist() == (e2m1(q.codes) * np.repeat(e4m3(q.scales), 16)).tolist()
    assert d[0] == 2688.0 and d[16] == 3.0 and d[17] == -0.75


def test_nvfp4_float64_beyond_float32_is_refused():
    with pytest.raises(ValueError, match="beyond float32's range"):
        mx.quantize(np.array([1e300, 1.0]), "nvfp4")
    # float64 values that round to FLT_MAX are fine; from the midpoint to 2**128 on they would
    # round to Inf (the tie goes to the even 2**128)
    midpoint = 2.0**128 - 2.0**103
    below = float(np.nextafter(midpoint, 0))
    q = mx.quantize(np.array([below, 1.0]), "nvfp4")
    assert q.global_amax == np.finfo(np.float32).max and np.isfinite(q.dequantize()).all()
    with pytest.raises(ValueError, match="beyond float32's range"):
        mx.quantize(np.array([-midpoint]), "nvfp4")


# ---- item 3: global_amax ------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), 0, 0.0, -1.0, float("nan"), 1e300, 1e-50])
def test_bad_global_amax_is_refused(bad):
    with pytest.raises(ValueError, match="global_amax"):
        mx.quantize(np.ones(16), "nvfp4", global_amax=bad)


@pytest.mark.parametrize("bad", ["4", [1.0, 2.0], object(), True])
def test_non_number_global_amax_is_refused(bad):
    with pytest.raises(TypeError, match="global_amax"):
        mx.quantize(np.ones(16), "nvfp4", global_amax=bad)


def test_good_global_amax():
    """amax 2 for a block of ones: S_enc = 1344, block scale 1344/6 = 224 (E4M3 0x76),
    enc = 1/(224/1344) = 6, so 1 -> 6 (code 7), read back 6 * 224 * 2/2688 = 1."""
    q = mx.quantize(np.ones(16), "nvfp4", global_amax=np.float64(2.0))
    assert q.global_amax == 2.0 and q.scales.tolist() == [0x76] and (q.codes == 7).all()
    assert (q.dequantize() == 1.0).all()


# ---- item 4: BlockArray parts -----------------------------------------------------------------------
def test_blockarray_scale_out_of_range():
    with pytest.raises(ValueError, match="code 256 is out of range for E8M0"):
        mx.BlockArray(np.zeros(4, np.uint8), np.full(1, 256), mx.get_block_format("mxfp4"), 0, 32)
    with pytest.raises(ValueError, match="code -1 is out of range"):
        mx.BlockArray(np.zeros(4, np.uint8), np.full(1, -1), "mxfp4", 0, 32)
    with pytest.raises(ValueError, match="code 128 is out of range for UE4M3"):
        mx.BlockArray(np.zeros(4, np.uint8), np.full(1, 128), "nvfp4", 0, 16, global_amax=1.0)


@pytest.mark.parametrize("fmt, bad", [("mxfp4", 16), ("nvfp4", 16), ("mxfp6_e3m2", 64),
                                      ("mxfp6_e2m3", 255), ("mxfp8_e4m3", 256), ("mxfp8_e5m2", -1),
                                      ("mxint8", 256), ("mxint8", -129)])
def test_blockarray_element_code_out_of_range(fmt, bad):
    codes = np.zeros(4, np.int64)
    codes[2] = bad
    kw = {"global_amax": 1.0} if fmt == "nvfp4" else {}
    with pytest.raises(ValueError, match=f"code {bad} is out of range for {fmt} elements"):
        mx.BlockArray(codes, np.zeros(1, np.uint8), fmt, 0, 16, **kw)


def test_blockarray_mxint8_accepts_int8_values():
    q = mx.BlockArray(np.array([-128, -5, 3, 251], np.int64), np.full(1, 127), "mxint8", 0, 32)
    assert q.codes.tolist() == [0x80, 0xFB, 0x03, 0xFB]
    assert q.dequantize().tolist() == [-2.0, -5 / 64, 3 / 64, -5 / 64]


def test_blockarray_accepts_a_format_name_and_negative_axis():
    q = mx.BlockArray(np.array([[1, 2], [3, 4]]), np.full((2, 1), 127), "MXFP4", -1, 32)
    assert q.format is mx.get_block_format("mxfp4") and q.axis == 1
    assert q.dequantize().tolist() == [[0.5, 1.0], [1.5, 2.0]]
    with pytest.raises(ValueError, match="unknown block format"):
        mx.BlockArray(np.ones(2, np.uint8), np.ones(1, np.uint8), "mxfp5", 0, 32)
    with pytest.raises(TypeError, match="block format"):
        mx.BlockArray(np.ones(2, np.uint8), np.ones(1, np.uint8), 4, 0, 32)


@pytest.mark.parametrize("bs", [0, -3, 2.5, "32", True, 2**31 + 1, (16, 0), (16, 16, 16), None])
def test_blockarray_bad_block_size(bs):
    with pytest.raises(ValueError, match="block"):
        mx.BlockArray(np.ones((2, 2), np.uint8), np.ones((1, 1), np.uint8), "mxfp4", (0, 1), bs)


@pytest.mark.parametrize("axis", [2, -3, 1.0, (0, 0), (0, 1)])
def test_blockarray_bad_axis(axis):
    with pytest.raises(ValueError, match="axis|axes"):
        mx.BlockArray(np.ones((2, 2), np.uint8), np.ones((2, 1), np.uint8), "mxfp4", axis, 32)


def test_blockarray_tensor_fields():
    codes, s = np.ones(4, np.uint8), np.full(1, 0x38, np.uint8)
    with pytest.raises(ValueError, match="needs global_amax"):
        mx.BlockArray(codes, s, "nvfp4", 0, 16)
    with pytest.raises(ValueError, match="NVFP4 tensors"):
        mx.BlockArray(codes, np.ones(1, np.uint8), "mxfp4", 0, 32, global_scale=1.0)
    with pytest.raises(ValueError, match="variant"):
        mx.BlockArray(codes, s, "nvfp4", 0, 16, global_amax=1.0, variant="cudnn")
    with pytest.raises(ValueError, match="global_scale must be"):
        mx.BlockArray(codes, s, "nvfp4", 0, 16, global_scale=float("inf"), variant="torchao")
    with pytest.raises(ValueError, match="global_amax must be"):
        mx.BlockArray(codes, s, "nvfp4", 0, 16, global_amax=-1.0)
    q = mx.BlockArray(codes, s, "nvfp4", 0, 16, global_amax=2688.0)
    assert q.variant == "te" and q.global_scale == f32(1) / (f32(2688) / f32(2688))
    assert q.dequantize().tolist() == [0.5 * 1.0] * 4  # code 1 = 0.5, scale 0x38 = 1.0
    t = mx.BlockArray(codes, s, "nvfp4", 0, 16, global_scale=0.25, variant="torchao")
    assert t.dequantize().tolist() == [0.125] * 4


# ---- item 5: command line files ----------------------------------------------------------------------
def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["mx", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fpemu: error: "), err
    for p in parts:
        assert p in lines[0], (p, err)


def test_cli_complex_npy_is_refused_like_the_api(capsys, tmp_path):
    f = tmp_path / "complex.npy"
    np.save(f, np.array([1 + 2j, 3.0]))
    code, out, err = cli(capsys, str(f))
    with pytest.raises(TypeError) as api:
        mx.quantize(np.array([1 + 2j, 3.0]), "mxfp8_e4m3")
    assert code == 2 and not out
    one_line_error(err, str(f), str(api.value))


@pytest.mark.parametrize("make, status, text", [
    (lambda p: None, 1, "No such file or directory"),
    (lambda p: p.mkdir(), 1, "Is a directory"),
    (lambda p: p.write_bytes(b"\x93NUMPY"), 1, "not a valid .npy file"),
    (lambda p: np.save(p, np.array(["a", "b"])), 2, "cannot quantize"),
    (lambda p: np.save(p, np.array([1, "a"], dtype=object), allow_pickle=True), 2, "Python objects"),
    (lambda p: np.save(p, np.zeros(0)), 2, "no values"),
])
def test_cli_bad_npy_files(capsys, tmp_path, make, status, text):
    f = tmp_path / "data.npy"
    make(f)
    code, out, err = cli(capsys, str(f))
    assert code == status and not out
    one_line_error(err, str(f), text)


def test_cli_truncated_npy(capsys, tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.arange(10, dtype=np.float32))
    f = tmp_path / "cut.npy"
    f.write_bytes(good.read_bytes()[:-7])
    code, out, err = cli(capsys, str(f))
    assert code == 1 and not out
    one_line_error(err, str(f), "not a valid .npy file")


def test_cli_text_files(capsys, tmp_path):
    f = tmp_path / "v.txt"
    f.write_text("7, 3\n1 0.4\n")
    code, out, _ = cli(capsys, str(f), "-f", "mxfp4")
    assert code == 0 and "codes:  7 5 2 1" in out
    f.write_text("1 2 x")
    code, _, err = cli(capsys, str(f))
    assert code == 2
    one_line_error(err, str(f), "neither a .npy file nor text of numbers")
    f.write_bytes(bytes(range(256)))
    code, _, err = cli(capsys, str(f))
    assert code == 2
    one_line_error(err, str(f))
    code, _, err = cli(capsys, str(tmp_path / "missing.txt"))
    assert code == 1
    one_line_error(err, "missing.txt", "No such file")


def test_cli_long_value_lists_are_values(capsys):
    """A value list longer than a file name may be: not 'File name too long'."""
    code, out, err = cli(capsys, ",".join(["1.5"] * 3000), "-f", "mxfp4")
    assert code == 0 and not err and out.startswith("mxfp4: 3000 values, 94 blocks of 32")
    code, _, err = cli(capsys, "1/3")
    assert code == 2
    one_line_error(err, "cannot read '1/3' as numbers or an existing file")


def test_cli_float32_npy_is_quantized_as_float32(capsys, tmp_path):
    f = tmp_path / "x.npy"
    x = np.float32([7, 3, 1, 0.4])
    np.save(f, x)
    code, out, _ = cli(capsys, str(f))
    q = mx.quantize(x, "mxfp8_e4m3")
    assert code == 0 and "codes:  " + " ".join(f"{c:02X}" for c in q.codes) in out


# ---- item 6: cost follows the data --------------------------------------------------------------------
def peak_bytes(fn) -> tuple[int, float]:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - t0
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("block", [2**31, (2**31, 2**31), (3, 2**31)])
def test_huge_block_sizes_cost_what_the_data_costs(fmt, block):
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -6.0]])
    axis = -1 if isinstance(block, int) else None

    def run():
        q = mx.quantize(x, fmt, block_size=block, axis=axis)
        q.dequantize()
        q.dequantize(np.float64)
        q.pack()
        if isinstance(block, int):
            mx.matmul(q, mx.quantize(x.T, fmt, block_size=block, axis=0))
            mx.dot(mx.quantize(x[0], fmt, block_size=block), mx.quantize(x[1], fmt, block_size=block))
            mx.describe(mx.quantize(x[0], fmt, block_size=block), x[0])

    run()  # the codec builds its lookup tables on first use: not part of the cost measured
    peak, seconds = peak_bytes(run)
    assert peak < 4 << 20 and seconds < 5  # a padded block would need gigabytes
    q = mx.quantize(x, fmt, block_size=block, axis=axis)
    one = mx.quantize(x, fmt, block_size=(2, 3) if not isinstance(block, int) else 3, axis=axis)
    assert np.array_equal(q.codes, one.codes) and np.array_equal(q.scales, one.scales)


def test_cli_huge_block_size(capsys):
    t0 = time.perf_counter()
    code, out, _ = cli(capsys, "1,2,3", "-b", "1000000000")
    assert code == 0 and "3 values, 1 block of 1000000000" in out
    assert time.perf_counter() - t0 < 5
    for bad in ("0", "-4", "3000000000"):
        code, _, err = cli(capsys, "1,2,3", "-b", bad)
        assert code == 2
        one_line_error(err, "block size must be an integer from 1 to 2**31")


@pytest.mark.parametrize("bad", [0, -1, 2**31 + 1, 1.5, 32.0, "32", True, np.float64(32)])
def test_quantize_bad_block_size(bad):
    with pytest.raises(ValueError, match="block size"):
        mx.quantize(np.ones(4), "mxfp4", block_size=bad)


def test_pack_and_unpack_parameters():
    with pytest.raises(ValueError, match="bits must be"):
        mx.pack_codes([1, 2], 4.0)
    with pytest.raises(ValueError, match="bits must be"):
        mx.unpack_codes([1, 2], 5)
    for bad in (2.5, -1, 5, True):
        with pytest.raises(ValueError, match="length"):
            mx.unpack_codes([1, 2], 4, bad)
    assert mx.unpack_codes([0x21, 0x0F], 4, 3).tolist() == [1, 2, 15]


def test_long_k_blocks_sum_exactly():
    """K-blocks longer than 2**15 E5M2 products at 57344**2: an int64 running sum of the
    scaled integers would overflow; the exact sum is 2**16 * 57344**2 (a float32)."""
    k = 1 << 16
    a = mx.quantize(np.full(k, 57344.0), "mxfp8_e5m2", block_size=k)
    assert a.scales[0] == 127 and (a.codes == a.codes[0]).all()
    assert mx.dot(a, a) == f32(k * 57344.0**2)
    signs = np.where(np.arange(k) % 3 == 0, -1.0, 1.0)
    b = mx.quantize(57344.0 * signs, "mxfp8_e5m2", block_size=k)
    want = Fraction(int(signs.sum())) * 57344**2
    assert mx.dot(a, b) == f32(float(want))


def test_nvfp4_matmul_global_scale_product_beyond_float32():
    """fp32(global_scale_a * global_scale_b) overflows (3.7e34 * 3.7e4), yet the product is
    finite: the result is acc * ga * gb rounded once, not acc * Inf."""
    a = np.zeros((1, 32), np.float32)
    a[0, 0], a[0, 16] = 1e38, 2e33  # block 1: scale 5 * 2**-9, element 6
    b = np.zeros((32, 1), np.float32)
    b[1, 0], b[16, 0] = 1e8, 2e3
    A, B = mx.quantize(a, "nvfp4", axis=1), mx.quantize(b, "nvfp4", axis=0)
    with np.errstate(over="ignore"):
        assert np.isinf(f32(A.global_scale) * f32(B.global_scale))
    got = mx.matmul(A, B)
    ea, eb = e2m1(A.codes[0]), e2m1(B.codes[:, 0])
    sa, sb = np.repeat(e4m3(A.scales[0]), 16), np.repeat(e4m3(B.scales[:, 0]), 16)
    exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(ea * sa, eb * sb))
    exact *= Fraction(float(A.global_scale)) * Fraction(float(B.global_scale))
    assert exact > 1e36 and got[0, 0] == f32(float(round24(exact)))


# ---- item 7: no floating-point warning escapes -----------------------------------------------------
EXTREMES = [np.inf, -np.inf, np.nan, 1e300, -1e300, 5e-324, -0.0, 0.0, 3.5e38, 1e-45, 1.0, -2.5]


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("rule", ["floor", "rceil", "ceil", "even"])
def test_extreme_inputs_do_not_warn(fmt, dtype, rule):
    with np.errstate(over="ignore", under="ignore"):
        x = np.array(EXTREMES, np.float64).astype(dtype)
    if fmt == "nvfp4":
        if dtype == np.float64:  # finite beyond float32 is refused (tested above)
            x = x[~(np.isfinite(x) & (np.abs(x) > 3.4e38))]
        if rule != "floor":
            return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for inf in ("nan", "saturate") if fmt != "nvfp4" else ("nan",):
            kw = {"scale_rounding": rule, "inf": inf} if fmt != "nvfp4" else {}
            for rounding in ("nearest_even", "up", "odd", "stochastic"):
                if fmt == "mxint8" and rounding != "nearest_even":
                    continue
                q = mx.quantize(x, fmt, block_size=4, rounding=rounding, rng=0, **kw)
                for out in (np.float16, np.float32, np.float64):
                    q.dequantize(out)
                mx.dot(q, q)
                mx.describe(q, x)
                rows = mx.quantize(np.tile(x, (2, 1)), fmt, axis=1, block_size=4, **kw)
                cols = mx.quantize(np.tile(x, (3, 1)).T, fmt, axis=0, block_size=4, **kw)
                mx.matmul(rows, cols)


def test_huge_float64_in_mx_saturates_exactly():
    """MX handles float64 exactly: 1e300 needs a scale of 2**988, E8M0 stops at 2**127, so the
    block takes 0xFE and the element saturates to the largest MX value, 448 * 2**127 (the
    OCP clamp, as for any magnitude above the element maximum). float32 output cannot hold
    it and reads Inf; float64 reads it exactly."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = mx.quantize(np.array([1e300, 1.0, -1e300]), "mxfp8_e4m3")
        assert q.scales.tolist() == [0xFE] and q.codes.tolist() == [0x7E, 0x00, 0xFE]
        assert q.dequantize(np.float64).tolist() == [448 * 2.0**127, 0.0, -448 * 2.0**127]
        assert q.dequantize(np.float32).tolist() == [np.inf, 0.0, -np.inf]
        assert q.dequantize(np.longdouble)[0] == 448 * 2.0**127


def test_cli_huge_value_prints_no_warning(capfd):
    assert main(["mx", "1e300,1"]) == 0
    out, err = capfd.readouterr()
    assert "Warning" not in err and not err
    assert "values: 7.62233e+40 0" in out and "max |error| 1e+300, rms error 7.071e+299" in out


# ---- item 8: inputs are never modified ----------------------------------------------------------------
@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("rounding", ["nearest_even", "up", "stochastic"])
def test_inputs_are_not_modified(fmt, rounding):
    if fmt == "mxint8" and rounding != "nearest_even":
        pytest.skip("MXINT8 rounds to nearest even only")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 40)) * np.exp2(rng.integers(-150, 120, (5, 40)))).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    variants = [x, x.astype(np.float64), x.astype(">f4"), np.asfortranarray(x), x[:, ::2]]
    for v in variants:
        before = v.copy()
        mx.quantize(v, fmt, rounding=rounding, rng=1)
        mx.quantize(v, fmt, axis=0, rounding=rounding, rng=1)
        assert np.array_equal(v, before, equal_nan=True) and v.dtype == before.dtype
    a = mx.quantize(x[:, :32], fmt, axis=1)
    b = mx.quantize(x[:, :32].T, fmt, axis=0)
    v = mx.quantize(x[1], fmt)
    saved = [arr.copy() for q in (a, b, v) for arr in (q.codes, q.scales)]
    a.dequantize(), b.dequantize(np.float64), mx.matmul(a, b), mx.dot(v, v)
    after = [arr for q in (a, b, v) for arr in (q.codes, q.scales)]
    assert all(np.array_equal(s, arr) for s, arr in zip(saved, after))


def test_blockarray_from_user_arrays_leaves_them_alone():
    codes = np.array([1, 2, 3], np.int64)
    scales = np.array([127], np.int32)
    q = mx.BlockArray(codes, scales, "mxfp4", 0, 32)
    q.dequantize()
    mx.matmul(mx.BlockArray(codes[None, :], scales[None, :], "mxfp4", 1, 32),
              mx.BlockArray(codes[:, None], scales[:, None], "mxfp4", 0, 32))
    assert codes.tolist() == [1, 2, 3] and codes.dtype == np.int64 and scales.tolist() == [127]


# ---- other inputs: exact or a clear error ------------------------------------------------------------
def test_odd_inputs():
    with pytest.raises(ValueError, match="at least one dimension"):
        mx.quantize(np.float32(1.0), "mxfp4")
    with pytest.raises(ValueError, match="out of range"):
        mx.quantize(np.ones((2, 3)), "mxfp4", axis=-3)
    with pytest.raises(TypeError, match="complex"):
        mx.quantize([1j], "mxfp4")
    with pytest.raises(TypeError, match="bool"):
        mx.quantize(np.array([True]), "mxfp4")
    with pytest.raises(ValueError, match="unknown rounding"):
        mx.quantize(np.zeros(0), "mxfp4", rounding="bogus")  # checked even with no data
    with pytest.raises(ValueError, match="MXINT8"):
        mx.quantize(np.zeros(0), "mxint8", rounding="up")


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_dtypes_and_byte_orders_agree(fmt):
    x = np.array([0.75, -3.0, 1.5, 96.0, 0.0, -0.0, 2.0**-10, 5.0], np.float32)
    ref = mx.quantize(x, fmt)
    for v in (x.astype(np.float16), x.astype(">f8"), x.astype(">f4"), x.astype(ml_dtypes.bfloat16),
              x.astype(np.float64)):
        q = mx.quantize(v, fmt)
        assert np.array_equal(q.codes, ref.codes) and np.array_equal(q.scales, ref.scales), v.dtype
    ints = np.array([3, -7, 0, 100, 2**40], np.int64)
    q = mx.quantize(ints, fmt)
    r = mx.quantize(ints.astype(np.float64), fmt)
    assert np.array_equal(q.codes, r.codes) and np.array_equal(q.scales, r.scales)


def test_empty_and_degenerate_shapes():
    for fmt in ALL_FORMATS:
        for shape in [(0,), (0, 5), (5, 0), (2, 0, 3)]:
            q = mx.quantize(np.zeros(shape), fmt, axis=1 if len(shape) > 1 else 0)
            assert q.codes.shape == shape and q.dequantize().shape == shape
    A = mx.quantize(np.zeros((2, 0)), "mxfp4", axis=1)
    B = mx.quantize(np.zeros((0, 3)), "mxfp4", axis=0)
    assert mx.matmul(A, B).tolist() == [[0.0] * 3] * 2


def test_matmul_and_dot_mismatches():
    a = mx.quantize(np.ones((2, 32)), "mxfp4", axis=1)
    with pytest.raises(ValueError, match="inner dimensions"):
        mx.matmul(a, mx.quantize(np.ones((16, 2)), "mxfp4", axis=0))
    with pytest.raises(ValueError, match="K block sizes differ"):
        mx.matmul(a, mx.quantize(np.ones((32, 2)), "mxfp4", axis=0, block_size=16))
    with pytest.raises(ValueError, match="mix MX and NVFP4"):
        mx.matmul(a, mx.quantize(np.ones((32, 2)), "nvfp4", axis=0))
    with pytest.raises(ValueError, match="2-D"):
        mx.matmul(mx.quantize(np.ones(32), "mxfp4"), a)
    with pytest.raises(TypeError):
        mx.matmul(np.ones((2, 2)), a)
    with pytest.raises(ValueError, match="equal lengths"):
        mx.dot(mx.quantize(np.ones(3), "mxfp4"), mx.quantize(np.ones(4), "mxfp4"))
    with pytest.raises(ValueError, match="1-D"):
        mx.describe(a, np.ones((2, 32)))
    with pytest.raises(ValueError, match="quantized values"):
        mx.describe(mx.quantize(np.ones(3), "mxfp4"), np.ones(4))


def test_matmul_of_2d_tiles_with_a_short_last_tile():
    """16x16 NVFP4 weight tiles with 20 columns: the short last tile's scale applies to its
    columns only; the result equals the float64 product of the dequantized operands up to
    the rounding of each block sum (checked exactly by test_mx's oracle for 1-D blocks)."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((32, 20)).astype(np.float32)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    W = mx.quantize(w, "nvfp4", block_size=(16, 16))
    assert W.scales.shape == (2, 2)
    X = mx.quantize(x, "nvfp4", axis=1)
    got = mx.matmul(X, W)
    ref = X.dequantize(np.float64) @ W.dequantize(np.float64)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert math.isfinite(float(got.sum()))
