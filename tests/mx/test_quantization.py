"""Tests of MX quantization (fpemu.mx.quantization, mx_quantization, mx_scales, elements):
SPEC section 3 vectors, independent oracles, properties, option errors.

Oracles: element rounding from ml_dtypes (or exact Fractions for MXINT8), scale rules from
math.frexp / Fraction on Python floats; torch's float8 casts as a second element oracle.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fpemu import mx

from mx_helpers import EMAX, MAXV, MBITS, ML_ELEMENT, MX_FORMATS, block_of, element_value

ml_dtypes = pytest.importorskip("ml_dtypes")


# ---- oracles ------------------------------------------------------------------------------------
def oracle_scale(amax: float, fmt: str, rule: str) -> int:
    """E8M0 scale code of one finite block from its amax (a float32 value)."""
    if amax == 0:
        return 0
    emax = EMAX[fmt]
    if rule == "rceil":
        v = float(np.float32(amax) * np.float32(1 / np.float32(MAXV[fmt])))
        if v == 0:  # the float32 product underflowed
            return 0
        m, e = math.frexp(v)
        return min(max((e - 1 if m == 0.5 else e) + 127, 0), 254)
    m, e = math.frexp(amax)  # amax = m * 2**e, 0.5 <= m < 1
    if rule == "floor":
        lg = e - 1
    elif rule == "ceil":
        lg = e - 1 if m == 0.5 else e
    elif rule == "even":
        # round amax to MBITS+1 significant bits, ties away (half-up on the magnitude)
        q = Fraction(amax) / Fraction(2) ** (e - 1 - MBITS[fmt])
        r = math.floor(q + Fraction(1, 2))
        lg = e - 1 + (1 if r >= 2 ** (MBITS[fmt] + 1) else 0)
    return min(max(lg - emax + 127, 0), 254)


def oracle_codes(block: np.ndarray, fmt: str, scale_code: int) -> list[int]:
    """Element codes of a finite block given its scale code, via ml_dtypes / Fractions."""
    X = Fraction(2) ** (scale_code - 127)
    out = []
    for v in block.astype(np.float64):
        y = Fraction(float(v)) / X
        if fmt == "mxint8":
            q = max(-127, min(127, round(y * 64)))  # Python rounds Fractions half-to-even
            out.append(q & 0xFF)
            continue
        mx_ = Fraction(MAXV[fmt])
        y = max(-mx_, min(mx_, y))
        yf = float(y) if y != 0 else math.copysign(0.0, float(v))  # -0 and underflow keep the sign
        assert Fraction(yf) == y or abs(yf) < 2.0**-900, "the scaled value must be exact"
        code = int(np.array([yf], dtype=np.float64).astype(ML_ELEMENT[fmt]).view(np.uint8)[0])
        out.append(code)
    return out


# ---- SPEC section 3 vectors ------------------------------------------------------------------------
SPEC3 = [
    ("mxfp8_e4m3", [500, -3, 0.1, 0.001, 1], "floor", 0x7F, [0x7E, 0xC4, 0x1D, 0x01, 0x38]),
    ("mxfp8_e4m3", [500, -3, 0.1, 0.001, 1], "rceil", 0x80, [0x78, 0xBC, 0x15, 0x00, 0x30]),
    ("mxfp4", [7, 3, 1, 0.4, -0.24, 0.26, 5], "floor", 0x7F, [7, 5, 2, 1, 8, 1, 6]),
    ("mxfp4", [7, 3, 1, 0.4, -0.24, 0.26, 5], "rceil", 0x80, [6, 3, 1, 0, 8, 0, 4]),
    ("mxfp8_e4m3", [150, 1], "floor", 0x7E, [0x79, 0x40]),
    ("mxfp8_e4m3", [150, 1], "rceil", 0x7E, [0x79, 0x40]),
    ("mxint8", [1, -0.5, 0.3, 1.99, 2.5 / 64], "floor", 0x7F, [0x40, 0xE0, 0x13, 0x7F, 0x02]),
]


@pytest.mark.parametrize("fmt, values, rule, scale, codes", SPEC3)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spec_mx_vectors(fmt, values, rule, scale, codes, dtype):
    q = mx.quantize(block_of(values, dtype=dtype), fmt, scale_rounding=rule)
    assert q.scales.tolist() == [scale]
    assert q.codes[: len(codes)].tolist() == codes
    assert not q.codes[len(codes):].any()


@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("rule", mx.SCALE_ROUNDINGS)
def test_spec_all_zero_block(fmt, rule):
    q = mx.quantize(np.zeros(64, np.float32), fmt, scale_rounding=rule)
    assert q.scales.tolist() == [0, 0]
    assert not q.codes.any()
    assert not q.dequantize().any()


# ---- properties ------------------------------------------------------------------------------------
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
blocks32 = hnp.arrays(np.float32, st.integers(1, 100), elements=finite32)


@st.composite
def realistic(draw):
    """Arrays of float32 with a random common magnitude and a random spread (so blocks have
    elements far below amax, near the element range's bottom, and zeros)."""
    n = draw(st.integers(1, 96))
    base = draw(st.integers(-140, 120))
    spread = draw(st.integers(0, 40))
    mant = draw(hnp.arrays(np.float64, n, elements=st.floats(-2, 2)))
    expo = draw(hnp.arrays(np.int64, n, elements=st.integers(base - spread, base)))
    x = np.ldexp(mant, expo).astype(np.float32)
    return x


@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("rule", mx.SCALE_ROUNDINGS)
@settings(max_examples=25, deadline=None)
@given(x=st.one_of(realistic(), blocks32))
def test_scales_and_codes_follow_the_oracle(fmt, rule, x):
    q = mx.quantize(x, fmt, scale_rounding=rule)
    nb = -(-x.size // 32)
    assert q.scales.shape == (nb,) and q.codes.shape == x.shape and q.codes.dtype == np.uint8
    xp = block_of(x, nb * 32)
    for j in range(nb):
        blk = xp[32 * j : 32 * j + 32]
        amax = float(np.max(np.abs(blk)))
        code = oracle_scale(amax, fmt, rule)
        assert q.scales[j] == code, (j, amax)
        got = q.codes[32 * j : 32 * j + 32].tolist()
        want = oracle_codes(blk, fmt, code)[: len(got)]
        assert got == want


@pytest.mark.parametrize("fmt", MX_FORMATS)
@settings(max_examples=30, deadline=None)
@given(x=realistic())
def test_error_bound_range_and_requantize(fmt, x):
    q = mx.quantize(x, fmt)
    bits = mx.get_block_format(fmt).bits
    assert int(q.codes.max(initial=0)) < (1 << bits)
    if fmt == "mxfp8_e4m3":
        assert not np.isin(q.codes, [0x7F, 0xFF]).any()  # saturating: never NaN
    if fmt == "mxfp8_e5m2":
        assert not ((q.codes & 0x7C) == 0x7C).any()  # never Inf/NaN
    if fmt == "mxint8":
        assert not (q.codes == 0x80).any()  # symmetric clamp
    d = q.dequantize(np.float64)
    X = np.repeat(np.ldexp(1.0, q.scales.astype(int) - 127), 32)[: x.size]
    y = x.astype(np.float64) / X
    maxv, m = MAXV[fmt], MBITS[fmt]
    if fmt == "mxint8":
        half_ulp = np.full(y.shape, 2.0**-7)
    else:
        emin = {"mxfp8_e4m3": -6, "mxfp8_e5m2": -14, "mxfp6_e3m2": -2, "mxfp6_e2m3": 0, "mxfp4": 0}[fmt]
        binade = np.maximum(np.floor(np.log2(np.maximum(np.abs(y), 2.0**-300))), emin)
        half_ulp = np.ldexp(1.0, (binade - m - 1).astype(int))
    clamped = np.abs(y) > maxv
    assert np.all(np.abs(y - d / X)[~clamped] <= half_ulp[~clamped])
    assert np.all(np.abs(d / X)[clamped] == maxv)
    # quantizing the dequantized array gives the same codes and scales (floor rule)
    q2 = mx.quantize(q.dequantize(np.float32), fmt)
    assert np.array_equal(q2.scales, q.scales)
    assert np.array_equal(q2.codes, q.codes)


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_nan_and_inf_blocks(fmt):
    x = np.ones(96, np.float32)
    x[5] = np.nan
    x[40] = np.inf
    x[41] = -2.0
    x[70] = -np.inf
    x[71] = np.nan
    q = mx.quantize(x, fmt)
    assert q.scales.tolist() == [0xFF, 0xFF, 0xFF]
    assert np.isnan(q.dequantize()).all()
    qs = mx.quantize(x, fmt, inf="saturate")
    assert qs.scales.tolist() == [0xFF, 0xFE, 0xFF]
    d = qs.dequantize(np.float64)
    assert d[40] == MAXV[fmt] * 2.0**127
    assert d[41] == 0 and d[42] == 0  # 1 and -2 vanish under the 2**127 scale
    assert np.isnan(d[:32]).all() and np.isnan(d[64:]).all()


def test_rceil_subnormal_and_saturation_rules():
    # fp32(amax * fp32(1/6)) lands on 2**-127 exactly (0x00400000: stays 0x00), on 1.5 * 2**-127
    # (mantissa 0x600000 > 0x400000: rounds up to 0x01) and on 2**-126 (0x01)
    codes = []
    for k in (6, 9, 12):
        x = block_of([k * 2.0**-127])
        codes.append(int(mx.quantize(x, "mxfp4", scale_rounding="rceil").scales[0]))
    assert codes == [0, 1, 1]
    big = block_of([np.finfo(np.float32).max])
    # MXINT8: FLT_MAX * (64/127) has exponent field 254 and a non-zero mantissa: saturate at 0xFE
    assert mx.quantize(big, "mxint8", scale_rounding="rceil").scales[0] == 0xFE
    assert [int(mx.quantize(big, "mxfp8_e4m3", scale_rounding=r).scales[0])
            for r in mx.SCALE_ROUNDINGS] == [127 + 127 - 8, 128 + 127 - 8, 128 + 127 - 8, 128 + 127 - 8]


def test_mx_2d_tiles():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((40, 70)) * np.exp2(rng.integers(-8, 8, (40, 70)))).astype(np.float32)
    q = mx.quantize(x, "mxfp6_e3m2", block_size=(32, 32))
    assert q.scales.shape == (2, 3) and q.axis == (0, 1)
    for i in range(2):
        for j in range(3):
            tile = x[32 * i : 32 * i + 32, 32 * j : 32 * j + 32]
            code = oracle_scale(float(np.abs(tile).max()), "mxfp6_e3m2", "floor")
            assert q.scales[i, j] == code
            got = q.codes[32 * i : 32 * i + 32, 32 * j : 32 * j + 32].ravel().tolist()
            assert got == oracle_codes(tile.ravel(), "mxfp6_e3m2", code)
    assert np.array_equal(mx.quantize(q.dequantize(), "mxfp6_e3m2", block_size=(32, 32)).codes, q.codes)


@pytest.mark.parametrize("fmt", MX_FORMATS)
@settings(max_examples=20, deadline=None)
@given(x=realistic(), data=st.data())
def test_special_blocks_property(fmt, x, data):
    """NaN anywhere in a block -> 0xFF; Inf -> 0xFF or 0xFE (saturate); other blocks untouched."""
    n = x.size
    where = data.draw(st.lists(st.integers(0, n - 1), max_size=4))
    kinds = data.draw(st.lists(st.sampled_from([np.nan, np.inf, -np.inf]), min_size=len(where), max_size=len(where)))
    y = x.copy()
    for i, v in zip(where, kinds):
        y[i] = v
    clean = mx.quantize(x, fmt)
    for mode in ("nan", "saturate"):
        q = mx.quantize(y, fmt, inf=mode)
        d = q.dequantize(np.float64)
        for j in range(q.scales.size):
            blk = y[32 * j : 32 * j + 32]
            if np.isnan(blk).any():
                assert q.scales[j] == 0xFF and np.isnan(d[32 * j : 32 * j + 32]).all()
            elif np.isinf(blk).any():
                assert q.scales[j] == (0xFF if mode == "nan" else 0xFE)
                if mode == "saturate":
                    inf_at = np.isinf(blk)
                    assert np.all(d[32 * j : 32 * j + 32][inf_at] == np.sign(blk[inf_at].astype(np.float64)) * MAXV[fmt] * 2.0**127)
            else:
                assert q.scales[j] == clean.scales[j]
                assert np.array_equal(q.codes[32 * j : 32 * j + 32], clean.codes[32 * j : 32 * j + 32])


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp6_e2m3", "mxfp4", "mxint8"])
def test_mx_stochastic_rounding_picks_a_neighbour(fmt):
    x = np.random.default_rng(9).standard_normal(4096).astype(np.float32)
    rne = mx.quantize(x, fmt)
    sr = mx.quantize(x, fmt, rounding="stochastic", rng=3)
    assert np.array_equal(sr.scales, rne.scales)
    X = np.repeat(np.ldexp(1.0, rne.scales.astype(int) - 127), 32)
    lo = np.minimum(rne.dequantize(np.float64), sr.dequantize(np.float64)) / X
    hi = np.maximum(rne.dequantize(np.float64), sr.dequantize(np.float64)) / X
    y = x / X
    values = (element_value(c, fmt) for c in range(1 << mx.get_block_format(fmt).bits))
    finite_vals = sorted({v for v in values if not math.isnan(v)})
    step = {v: b - v for v, b in zip(finite_vals, finite_vals[1:])}
    # SR and RNE agree or sit on the two neighbours around y
    differs = lo != hi
    assert np.all((lo[differs] <= y[differs]) & (y[differs] <= hi[differs]))
    assert all(hi_ - lo_ == step[lo_] for lo_, hi_ in zip(lo[differs], hi[differs]))
    assert 0.2 < differs.mean() < 0.8
    assert abs(np.mean(sr.dequantize(np.float64) - x)) < abs(np.mean(np.abs(rne.dequantize(np.float64) - x)))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("rule", mx.SCALE_ROUNDINGS)
@settings(max_examples=400, deadline=None)
@given(x=st.one_of(realistic(), blocks32))
def test_scales_and_codes_follow_the_oracle_long(fmt, rule, x):
    test_scales_and_codes_follow_the_oracle.hypothesis.inner_test(fmt, rule, x)


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2"])
def test_fp8_elements_match_torch_casts(fmt):
    """torch's float8 casts as a second element oracle (torchao's eager MX path: x times the
    reciprocal E8M0 scale in float32, clamped to +-max, cast)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(32 * 512) * np.exp2(rng.integers(-30, 30, 32 * 512))).astype(np.float32)
    q = mx.quantize(x, fmt)
    recip = np.ldexp(np.float32(1), 127 - q.scales.astype(int)).astype(np.float32)
    y = np.clip(x.reshape(-1, 32) * recip[:, None], -MAXV[fmt], MAXV[fmt]).astype(np.float32)
    tdtype = torch.float8_e4m3fn if fmt == "mxfp8_e4m3" else torch.float8_e5m2
    want = torch.from_numpy(y.ravel()).to(tdtype).view(torch.uint8).numpy()
    assert np.array_equal(q.codes, want)


# ---- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"fmt": "mxfp5"}, "unknown block format"),
        ({"block_size": 0}, "block size"),
        ({"block_size": "32"}, "block size"),
        ({"block_size": (16, 16, 16)}, "block_size"),
        ({"axis": 2}, "out of range"),
        ({"axis": 1.5}, "axis must be an integer"),
        ({"axis": (0, 1)}, "need 1 axes"),
        ({"scale_rounding": "round"}, "scale_rounding"),
        ({"inf": "clip"}, "inf must be"),
        ({"variant": "torchao"}, "NVFP4 only"),
    ],
)
def test_clear_errors(kwargs, match):
    args = {"fmt": "mxfp4", **kwargs}
    fmt = args.pop("fmt")
    with pytest.raises(ValueError, match=match):
        mx.quantize(np.ones((4, 8)), fmt, **args)


def test_more_errors():
    with pytest.raises(ValueError, match="at least one dimension"):
        mx.quantize(1.0, "mxfp4")
    with pytest.raises(TypeError):
        mx.quantize(["a"], "mxfp4")
    with pytest.raises(ValueError, match="variant"):
        mx.quantize([1.0], "nvfp4", variant="cudnn")
    with pytest.raises(ValueError, match="NVFP4 scales"):
        mx.quantize([1.0], "nvfp4", scale_rounding="rceil")
    with pytest.raises(ValueError, match="2-D blocks"):
        mx.quantize(np.ones(8), "nvfp4", block_size=(16, 16))
    with pytest.raises(TypeError):
        mx.dequantize(np.ones(3))
