"""``mx.quantize(..., convention=...)`` against exact models of each library's MX rule (issue 17).

Each model is written from the library's source, named below with its version and lines, in
integer and Fraction arithmetic (elements by the independent Fraction codec ``reference``);
it shares no code with fpemu. Random blocks mix wide exponents, subnormals, zeros of both
signs, Inf, NaN and amaxes just above ``max_elem * 2**k`` (where torchao's float32 log2 errs).

* torchao 0.18.0, ``torchao/prototype/mx_formats/mx_tensor.py``: ``to_mx`` lines 247-343
  (FLOOR/CEIL/EVEN: the amax's float32 exponent field, Inf's included; scale code 0 divides by
  2**-126, lines 352-362) and ``_to_mx_rceil`` lines 133-211 (``ceil(log2(amax / max_pos))``
  in float32; code 0 leaves the block unscaled, lines 197-200).
* torchao 0.18.0 ``kernels.py`` lines 473-546 (Triton, PTX ``cvt.rp.satfinite.ue8m0x2.f32`` of
  ``amax * fp32(1/448)``; code 0 unscaled, NaN rows NaN).
* TransformerEngine ``common/util/ptx.cuh``: ``float_to_e8m0`` (v2.18 lines 386-418) of
  ``amax * fp32(1/max)`` with the amax taken by ``fmaxf`` (``cast/mxfp8/quantize_mxfp8.cuh``
  lines 257-269: NaNs skipped), and ``exp2f_rcp``: v2.6-v2.12 ``code == 0 ? 1 : (254 - code)
  << 23`` (so 0xFE gives 0), v2.13+ (v2.18 lines 356-365) exact, 0xFE -> 2**-127. CUDA's
  float32 -> FP8 conversion (``cuda_fp8.hpp``) saturates and writes every NaN as 0x7F.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from fpemu import mx
from fpemu.formats import get_format
from reference import ref_encode

from mx_helpers import EMAX, MAXV, MBITS

TORCHAO_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4"]
ELEMENT = {"mxfp8_e4m3": "e4m3", "mxfp8_e5m2": "e5m2", "mxfp6_e3m2": "e3m2", "mxfp6_e2m3": "e2m3",
           "mxfp4": "e2m1"}  # fmt: skip
TWO = Fraction(2)


# ---- exact arithmetic ---------------------------------------------------------------------------
def f32_bits(v: float) -> int:
    return int(np.array([v], np.float32).view(np.uint32)[0])


def floor_log2(fr: Fraction) -> int:
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    return e - 1 if TWO**e > fr else e


def round_f32(fr: Fraction) -> Fraction:
    """A positive Fraction rounded to float32 (RNE, subnormals; beyond range: 2**128 = Inf)."""
    q = TWO ** (max(floor_log2(fr), -126) - 23)
    n, r = divmod(fr / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    return min(n * q, TWO**128)


def ceil_of_f32_log2(d: Fraction) -> int:
    """ceil(RN_float32(log2(d))) for d > 0: log2 rounds down to k = floor(log2 d) exactly when
    log2(d) - k is below half the gap from k to the next float32 above it (numpy's nextafter);
    decided in 60-digit decimal arithmetic (2**h against d / 2**k)."""
    k = floor_log2(d)
    if d == TWO**k:
        return k
    half = (Fraction(float(np.nextafter(np.float32(k), np.float32(np.inf)))) - k) / 2
    with localcontext() as ctx:
        ctx.prec = 60
        ratio = d / TWO**k
        below = Decimal(ratio.numerator) / Decimal(ratio.denominator) < Decimal(2) ** (
            Decimal(half.numerator) / Decimal(half.denominator))
    return k if (k != 0 and below) else k + 1


def element(x: float, factor: Fraction, fmt: str) -> int:
    """RNE, saturating, of x * factor (x a float32 value; +-0 and +-Inf keep their sign)."""
    f = get_format(ELEMENT[fmt])
    if x == 0 or math.isinf(x) or factor == 0:
        return ref_encode(math.copysign(0.0, x) if factor == 0 or x == 0 else x, f, overflow="saturate")
    return ref_encode(Fraction(x) * factor, f, overflow="saturate")


# ---- the libraries' rules -----------------------------------------------------------------------
def torchao_eager(block: np.ndarray, fmt: str, mode: str) -> tuple[int, list[int] | None]:
    """torchao 0.18.0 to_mx (eager) of one float32 block: (scale, codes; None in NaN blocks)."""
    if np.isnan(block).any():
        return 255, None
    amax = float(np.max(np.abs(block)))
    if mode == "rceil":
        if math.isinf(amax):
            code = 254
        else:  # log2(0) = -Inf: a quotient that underflows to 0 clamps to code 0
            d = round_f32(Fraction(amax) / Fraction(MAXV[fmt])) if amax else Fraction(0)
            code = min(max(ceil_of_f32_log2(d), -127), 127) + 127 if d else 0
        factor = Fraction(1) if code == 0 else TWO ** (127 - code)
        return code, [element(float(x), factor, fmt) for x in block]
    bits = f32_bits(amax)
    if mode == "even":
        bits = (bits + (1 << (23 - MBITS[fmt] - 1))) & 0xFF800000
    e = ((bits >> 23) & 0xFF) - 127
    if mode == "ceil":
        e += (bits & 0x7FFFFF) > 0
    code = min(max(e - EMAX[fmt], -127), 128) + 127
    divisor = TWO ** (code - 127) if code else TWO**-126
    return code, [element(float(x), 1 / divisor, fmt) for x in block]


def nvidia_e8m0(amax: float, fmt: str) -> int:
    """TransformerEngine's float_to_e8m0 (= PTX cvt.rp.satfinite.ue8m0x2.f32) of amax * fp32(1/max)."""
    if math.isinf(amax):
        return 0xFE
    c = Fraction(float(np.float32(1) / np.float32(MAXV[fmt])))
    bits = f32_bits(float(round_f32(Fraction(amax) * c))) if amax else 0
    exponent, mantissa = bits >> 23, bits & 0x7FFFFF
    if mantissa > 0 and exponent != 0xFE and not (exponent == 0 and mantissa <= 0x400000):
        exponent += 1
    return exponent


def transformer_engine(block: np.ndarray, fmt: str, version: int) -> tuple[int, list[int]]:
    finite_or_inf = block[~np.isnan(block)]
    code = nvidia_e8m0(float(np.max(np.abs(finite_or_inf), initial=0)), fmt)
    if version <= 12:
        factor = Fraction(1) if code == 0 else (TWO ** (127 - code) if code < 254 else Fraction(0))
    else:
        factor = TWO ** (127 - code)
    nan = [np.isnan(x) or (math.isinf(x) and factor == 0) for x in block]
    return code, [0x7F if n else element(float(x), factor, fmt) for x, n in zip(block, nan)]


def triton(block: np.ndarray, fmt: str) -> tuple[int, list[int] | None]:
    if np.isnan(block).any():
        return 255, None
    code = nvidia_e8m0(float(np.max(np.abs(block))), fmt)
    factor = Fraction(1) if code == 0 else TWO ** (127 - code)
    return code, [element(float(x), factor, fmt) for x in block]


# ---- random blocks ------------------------------------------------------------------------------
def random_blocks(seed: int, fmt: str, n: int = 120, k: int = 8) -> np.ndarray:
    """n blocks of k float32 values: a random binade per block (subnormal to FLT_MAX), values
    spread below it, with specials and amaxes just above max_elem * 2**j sprinkled in."""
    rng = np.random.default_rng(seed)
    top = rng.integers(-150, 128, size=(n, 1))
    x = rng.choice([-1.0, 1.0], size=(n, k)) * rng.uniform(1, 2, size=(n, k)) * np.exp2(
        top - rng.integers(0, 30, size=(n, k)).astype(float))
    with np.errstate(over="ignore", under="ignore"):
        x = np.clip(x, -3.4e38, 3.4e38).astype(np.float32)
    near = rng.random(n) < 0.3  # amax = fp32(max * 2**j) nudged up a few float32 steps
    j = rng.integers(-130, 118, size=n)
    with np.errstate(over="ignore"):
        base = np.float32(MAXV[fmt]) * np.exp2(j).astype(np.float32)
    x[near, 0] = (base[near].view(np.uint32) + rng.integers(0, 24, size=near.sum()).astype(np.uint32)).view(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 2.0**-149, 2.0**-120], np.float32)
    hit = rng.random((n, k)) < 0.04
    x[hit] = rng.choice(specials, size=hit.sum())
    return x


def check(fmt: str, convention: str, scale_rounding: str | None, model, seed: int) -> None:
    x = random_blocks(seed, fmt)
    q = mx.quantize(x, fmt, block_size=x.shape[1], convention=convention, scale_rounding=scale_rounding)
    for i, block in enumerate(x):
        scale, codes = model(block)
        assert int(q.scales[i, 0]) == scale, (i, block)
        if codes is not None:
            assert q.codes[i].tolist() == codes, (i, block, scale)


@pytest.mark.parametrize("fmt", TORCHAO_FORMATS)
@pytest.mark.parametrize("mode", ["floor", "ceil", "even", "rceil"])
def test_torchao_eager_on_random_blocks(fmt, mode):
    check(fmt, "torchao-0.18", mode, lambda b: torchao_eager(b, fmt, mode), seed=sum(map(ord, fmt + mode)))


def test_torchao_triton_on_random_blocks():
    check("mxfp8_e4m3", "torchao_triton-0.18", None, lambda b: triton(b, "mxfp8_e4m3"), seed=17)


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2"])
@pytest.mark.parametrize("version", [12, 13])
def test_transformer_engine_on_random_blocks(fmt, version):
    check(fmt, f"transformer_engine-2.{version}", None, lambda b: transformer_engine(b, fmt, version),
          seed=version * 7 + len(fmt))


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp4", "mxfp6_e2m3"])
def test_torchao_log2_around_every_power_of_two(fmt):
    """For every k with max_elem * 2**k in range, float32 amaxes whose quotient d = fp32(amax /
    max) is 2**k or 1 .. 24 float32 steps above it: torchao's code (decimal model of its float32
    log2) is one below the exact rule's while log2(d) rounds to k, and fpemu's codes are the
    model's."""
    powers = np.array([2.0**k for k in range(-127, 126)], np.float32)
    d = (powers.view(np.uint32)[:, None] + np.arange(25, dtype=np.uint32)).view(np.float32).ravel()
    # an amax with fp32(amax / max) == d: fp32(d * max), or a float32 step either side of it
    def quotient(a):
        with np.errstate(invalid="ignore", over="ignore"):  # nudged Inf patterns are NaN
            return (a.astype(np.float64) / MAXV[fmt]).astype(np.float32)

    with np.errstate(over="ignore"):
        amax = (d.astype(np.float64) * MAXV[fmt]).astype(np.float32)
    for nudge in (1, -1):
        a = (amax.view(np.uint32) + np.uint32(nudge % 2**32)).view(np.float32)
        amax = np.where(quotient(amax) == d, amax, a)
    good = np.isfinite(amax) & (quotient(amax) == d)
    assert good.mean() > 0.95
    amax, d = amax[good], d[good]
    torchao = [min(max(ceil_of_f32_log2(Fraction(float(v))), -127), 127) + 127 for v in d]
    q = mx.quantize(amax[:, None], fmt, block_size=1, convention="torchao-0.18", scale_rounding="rceil")
    assert q.scales[:, 0].tolist() == torchao
    exact = [nvidia_e8m0(float(a), fmt) for a in amax]  # the same code from amax * fp32(1/max)
    slips = [e - t for e, t in zip(exact, torchao)]
    assert set(slips) == {0, 1}  # one code low, or none; both happen


# ---- torchao divides, TransformerEngine multiplies by fp32(1/max): the same round-up code --------
def rceil_code(d: np.ndarray) -> np.ndarray:
    """float_to_e8m0's round-up of float32 quotients (integer rule, ptx.cuh v2.18 lines 409-416)."""
    bits = d.view(np.uint32)
    e, m = (bits >> 23).astype(np.int64), bits & 0x7FFFFF
    return e + np.where(e == 0, m > 0x400000, m != 0)


def division_and_product_codes(amax: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    a = amax.astype(np.float64)  # one float32 rounding of each exact quotient/product (see mx_scales)
    with np.errstate(under="ignore"):
        div = (a / MAXV[fmt]).astype(np.float32)
        mul = (a * float(np.float32(1) / np.float32(MAXV[fmt]))).astype(np.float32)
    return rceil_code(div), rceil_code(mul)


@pytest.mark.parametrize("fmt", TORCHAO_FORMATS)
def test_division_and_reciprocal_product_round_up_alike(fmt):
    """Every float32 amax within 64 steps of max * 2**k or of max * 2**-127 (where the two
    quotients could straddle a code boundary), and 2**20 random ones, give one code."""
    k = np.arange(-150, 128)
    with np.errstate(over="ignore"):
        centres = np.concatenate([np.float32(MAXV[fmt]) * np.exp2(k).astype(np.float32),
                                  np.float32(MAXV[fmt] * 2.0**-127) * np.float32([1, 1.5, 2])])
    near = (centres.view(np.uint32)[:, None].astype(np.int64) + np.arange(-64, 65)).ravel()
    rand = np.random.default_rng(len(fmt)).integers(1, 0x7F800000, 2**20)
    amax = np.concatenate([near, rand])
    amax = amax[(amax > 0) & (amax < 0x7F800000)].astype(np.uint32).view(np.float32)
    div, mul = division_and_product_codes(amax, fmt)
    assert np.array_equal(div, mul)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", TORCHAO_FORMATS)
def test_division_and_reciprocal_product_round_up_alike_exhaustively(fmt):
    """Every float32 amax in the binade [1, 2) (the codes repeat per binade for normal
    quotients) and every amax below 2**-100 (quotients near and in the subnormals)."""
    for lo, hi in ((0x3F800000, 0x40000000), (1, 0x0D800000)):
        for start in range(lo, hi, 1 << 23):
            amax = np.arange(start, min(start + (1 << 23), hi), dtype=np.uint32).view(np.float32)
            div, mul = division_and_product_codes(amax, fmt)
            assert np.array_equal(div, mul), start
