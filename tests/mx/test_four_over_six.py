"""``mx.quantize(..., four_over_six=...)`` against an exact model of TransformerEngine's
Four Over Six (NVIDIA/TransformerEngine PR #2972, ``cast/nvfp4/quantize_4over6_nvfp4.cuh``:
``compute_scale_pair``, ``cvt_fp32_to_fp4_8x_with_error``, ``accumulate_dequant_error``,
``reduce_group_sum_16`` and ``pick_map4 = err_map4 < err_map6``; ``core_nvfp4.cuh``
``compute_global_encode_scaling_factor_FP4<E4M3_MAX>``; the paper: arXiv 2512.02010).

The model is written here from that source in Fraction arithmetic, every float32 operation
rounded by ``round_f32`` (RNE, subnormals), the E4M3 scales and E2M1 elements by the
independent Fraction codec ``reference.ref_encode`` (RNE, saturating, as ``cvt.rn.satfinite``);
it shares no code with fpemu. Blocks: random (normal, wide log-uniform, E2M1 grids), and
adversarial: all zeros, one value at the tensor amax (both candidates exact: a tie, which
keeps map-to-6), block amaxes whose scales land on E4M3 midpoints, on the 448 clamp and in the
E4M3 subnormals or below them (a zero scale).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fpemu import mx
from fpemu.formats import get_format
from reference import ref_encode

TWO = Fraction(2)
FLT_MAX = Fraction(float(np.finfo(np.float32).max))
E2M1 = [Fraction(v) for v in (0, 0.5, 1, 1.5, 2, 3, 4, 6)]
RULES = {"mse": ("mse", 256), "mae": ("mae", 256), "mse_448": ("mse", 448), "mae_448": ("mae", 448)}


def floor_log2(fr: Fraction) -> int:
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    return e - 1 if TWO**e > fr else e


def f32(fr: Fraction) -> Fraction:
    """A Fraction rounded to float32: RNE with subnormals; past FLT_MAX by half an ulp or more:
    +-Inf (a float; met by x * FLT_MAX where a block's scale is 0, and by 1 / a tiny product)."""
    if fr == 0:
        return Fraction(0)
    sign = -1 if fr < 0 else 1
    a = abs(fr)
    q = TWO ** (max(floor_log2(a), -126) - 23)
    n, r = divmod(a / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    v = n * q
    return sign * float("inf") if v > FLT_MAX else sign * v


def ue4m3_value(code: int) -> Fraction:
    e, m = (code >> 3) & 0xF, code & 7
    return Fraction(m, 8) * TWO**-6 if e == 0 else (1 + Fraction(m, 8)) * TWO ** (e - 7)


def e2m1_value(code: int) -> Fraction:
    return (-1 if code & 8 else 1) * E2M1[code & 7]


def encode_e2m1(v: Fraction) -> int:
    return ref_encode(v, get_format("e2m1"), overflow="saturate")


def encode_e4m3(v: Fraction) -> int:
    return ref_encode(v, get_format("e4m3"), overflow="saturate")


def s_enc(amax: Fraction, e4m3_max: int) -> Fraction:
    """compute_global_encode_scaling_factor_FP4: fmin(fp32(6 * E4M3_MAX) / amax, FLT_MAX);
    1 for amax 0 (and Inf, not met here)."""
    if amax == 0:
        return Fraction(1)
    return min(f32(Fraction(6 * e4m3_max) / amax), FLT_MAX)


def candidate(block: list[Fraction], amax: Fraction, scale: Fraction, enc: Fraction, metric: str,
              e4m3_max: int) -> tuple[int, list[int], list[Fraction]]:
    """One candidate: (scale code, element codes, per-element error terms)."""
    code = encode_e4m3(scale)
    sf = ue4m3_value(code)
    prod = f32(sf * f32(1 / enc))  # fp32(scale) * S_dec
    inv = FLT_MAX if prod == 0 else min(f32(1 / prod), FLT_MAX)
    codes, terms = [], []
    for x in block:
        c = encode_e2m1(f32(x * inv))
        val = f32(f32(f32(e2m1_value(c) * sf) * amax) / (6 * e4m3_max))
        diff = f32(val - x)
        codes.append(c)
        terms.append(f32(diff * diff) if metric == "mse" else abs(diff))
    return code, codes, terms


def add_in_order(terms: list[Fraction]) -> Fraction:
    acc = Fraction(0)
    for t in terms:
        acc = f32(acc + t)
    return acc


def tree(sums: list[Fraction]) -> Fraction:
    """__shfl_down_sync over 16 lanes: lane i += lane i + 8, + 4, + 2, + 1."""
    v = list(sums) + [Fraction(0)] * (16 - len(sums))
    for off in (8, 4, 2, 1):
        v = [f32(v[i] + v[i + off]) for i in range(off)]
    return v[0]


def model_block(block: list[Fraction], amax: Fraction, rule: str, rows: int = 1):
    """TE's 4over6 of one block (a flat 16x16 tile, row-major, when rows = 16): (scale code,
    element codes, map-to-4 chosen)."""
    metric, e4m3_max = RULES[rule]
    enc = s_enc(amax, e4m3_max)
    bamax = max(abs(x) for x in block)
    base = f32(f32(bamax / 6) * enc)
    m4 = candidate(block, amax, min(f32(base * Fraction(3, 2)), Fraction(448)), enc, metric, e4m3_max)
    m6 = candidate(block, amax, min(base, Fraction(448)), enc, metric, e4m3_max)
    errs = []
    for _, _, terms in (m4, m6):
        width = len(terms) // rows
        row_sums = [add_in_order(terms[r * width:(r + 1) * width]) for r in range(rows)]
        errs.append(row_sums[0] if rows == 1 else tree(row_sums))
    pick4 = errs[0] < errs[1]
    chosen = m4 if pick4 else m6
    return chosen[0], chosen[1], pick4, errs[0] == errs[1]


def check(x: np.ndarray, rule: str, global_amax: float | None = None) -> tuple[int, int]:
    """fpemu's codes and scales of x (blocks of 16 along rows) equal the model's, block by
    block; returns (blocks choosing map-to-4, blocks with equal errors)."""
    x = np.asarray(x, np.float32)
    q = mx.quantize(x, "nvfp4", four_over_six=rule, global_amax=global_amax)
    amax = Fraction(float(np.max(np.abs(x)))) if global_amax is None else Fraction(float(np.float32(global_amax)))
    assert float(q.global_amax) == float(amax) and q.e4m3_max == RULES[rule][1]
    blocks = x.reshape(-1, 16)
    codes = q.codes.reshape(-1, 16)
    scales = q.scales.reshape(-1)
    n4 = ties = 0
    for i, b in enumerate(blocks):
        scale, elems, pick4, tie = model_block([Fraction(float(v)) for v in b], amax, rule)
        # element codes compared by value (the sign of a zero element is the cast's, not the rule's)
        got = [e2m1_value(int(c)) for c in codes[i]]
        assert (int(scales[i]), got) == (scale, [e2m1_value(c) for c in elems]), (i, b.tolist())
        n4 += pick4
        ties += tie
    return n4, ties


def random_blocks(rng: np.random.Generator, n: int) -> np.ndarray:
    kinds = [
        rng.standard_normal((n, 16)),
        rng.choice([-1.0, 1.0], (n, 16)) * 2.0 ** rng.uniform(-20, 20, (n, 16)),
        rng.choice([-1.0, 1.0], (n, 16)) * rng.choice([0, 0.5, 1, 1.5, 2, 3, 4, 6], (n, 16)) * 2.0 ** rng.integers(-8, 8, (n, 1)),
        rng.standard_normal((n, 16)) * (rng.random((n, 16)) < 0.3),  # mostly zeros
    ]
    return np.concatenate(kinds).astype(np.float32)


@pytest.mark.parametrize("rule", list(RULES))
def test_random_blocks_match_the_exact_model(rule):
    rng = np.random.default_rng([40, len(rule), RULES[rule][1]])
    x = random_blocks(rng, 40)
    n4, _ = check(x, rule)
    # both outcomes occur, so neither candidate's path goes untested
    assert 0 < n4 < len(x)
    # a calibrated amax far above the data: small scales, E4M3 subnormals
    check(x, rule, global_amax=float(np.max(np.abs(x))) * 3000.0)


def e4m3_midpoints() -> list[Fraction]:
    vals = sorted({ue4m3_value(c) for c in range(0x7F)})
    return [(a + b) / 2 for a, b in zip(vals, vals[1:])]


@pytest.mark.parametrize("rule", list(RULES))
def test_adversarial_blocks_match_the_exact_model(rule):
    metric, e4m3_max = RULES[rule]
    amax = 448.0
    enc = s_enc(Fraction(amax), e4m3_max)
    rng = np.random.default_rng(7)
    rows = [np.zeros(16), np.r_[amax, np.zeros(15)], np.r_[-amax, np.zeros(15)], np.full(16, amax),
            np.r_[amax, amax * 2 / 3, amax / 2, np.zeros(13)]]
    # block amaxes whose map-to-6 (or map-to-4) scale lands on an E4M3 midpoint, a few ulps
    # either side; deep ones give subnormal and zero scales
    for mid in e4m3_midpoints()[::3]:
        for target in (mid, mid / Fraction(3, 2)):
            b = float(np.float32(float(target * 6 / enc)))
            for k in (-2, 0, 2):
                bamax = np.float32(b) + np.float32(k) * np.spacing(np.float32(b))
                if 0 < bamax <= amax:
                    row = rng.uniform(-1, 1, 16) * bamax
                    row[rng.integers(16)] = bamax
                    rows.append(row)
    for tiny in (2.0**-12, 2.0**-14, 2.0**-17):  # scales in E4M3's subnormals, and below them
        rows.append(np.r_[tiny, rng.uniform(-tiny, tiny, 15)])
    x = np.array(rows, np.float32)
    n4, ties = check(x, rule, global_amax=amax)
    assert ties >= 3  # the zero block and the blocks of one value at the amax
    # a tie keeps map-to-6: one value at the amax maps to 6 exactly
    q = mx.quantize(np.r_[amax, np.zeros(15)].astype(np.float32), "nvfp4", four_over_six=rule, global_amax=amax)
    assert (q.codes[0], q.codes[1]) == (7, 0)


def test_tiles_match_the_exact_model():
    """16x16 tiles: each tile row's terms in order, then the warp's halving tree."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((32, 48)) * 2.0 ** rng.integers(-3, 3, (32, 48))).astype(np.float32)
    amax = Fraction(float(np.max(np.abs(x))))
    for rule in ("mse", "mae_448"):
        q = mx.quantize(x, "nvfp4", four_over_six=rule, axis=(0, 1), block_size=(16, 16))
        for i in range(2):
            for j in range(3):
                tile = x[16 * i:16 * i + 16, 16 * j:16 * j + 16]
                scale, elems, _, _ = model_block([Fraction(float(v)) for v in tile.ravel()], amax, rule, rows=16)
                got = q.codes[16 * i:16 * i + 16, 16 * j:16 * j + 16].ravel()
                assert int(q.scales[i, j]) == scale
                assert [e2m1_value(int(c)) for c in got] == [e2m1_value(c) for c in elems]


def test_dequantize_uses_the_tensor_bound():
    """A 4over6 tensor (bound 256) reads back as TE's dequantize_fp4_kernel<256>:
    fp32(fp32(scale * amax) * fp32(1/1536)) times the element."""
    x = np.float32([5.0, -1.25, 0.3] + [0.0] * 13)
    q = mx.quantize(x, "nvfp4", four_over_six="mae")
    factor = np.float32(np.float32(ue4m3_value(int(q.scales[0]))) * np.float32(5.0)) * np.float32(1.0 / 1536.0)
    want = [float(np.float32(float(e2m1_value(int(c)))) * factor) for c in q.codes]
    assert q.dequantize().tolist() == want


def test_off_by_default_and_refused_where_it_does_not_apply():
    x = np.random.default_rng(1).standard_normal((4, 32)).astype(np.float32)
    plain = mx.quantize(x, "nvfp4")
    again = mx.quantize(x, "nvfp4", four_over_six=None)
    assert np.array_equal(plain.codes, again.codes) and np.array_equal(plain.scales, again.scales)
    assert plain.e4m3_max == 448
    with pytest.raises(ValueError, match="four_over_six applies to nvfp4"):
        mx.quantize(x, "mxfp4", four_over_six="mse")
    with pytest.raises(ValueError, match="four_over_six applies to nvfp4"):
        mx.quantize(x, "nvfp4_ue5m3", four_over_six="mse")
    with pytest.raises(ValueError, match="four_over_six must be None or one of"):
        mx.quantize(x, "nvfp4", four_over_six="l1")
    with pytest.raises(ValueError, match="stochastic rounding"):
        mx.quantize(x, "nvfp4", four_over_six="mse", rounding="stochastic", rng=0)
    with pytest.raises(ValueError, match="variant='te'"):
        mx.quantize(x, "nvfp4", four_over_six="mse", variant="torchao")


def test_gemm_alpha_uses_each_operands_bound():
    """TE's factor_inv = fp32(1 / (36 * fp8_max_A * fp8_max_B)) (recipe/nvfp4.cu)."""
    from fpemu.accumulator.tensor_scale import cublaslt_alpha

    a = mx.quantize(np.ones((1, 16), np.float32), "nvfp4", four_over_six="mse", global_amax=3.0)
    b = mx.quantize(np.ones((1, 16), np.float32), "nvfp4", global_amax=5.0)
    want = np.float32(np.float32(np.float32(3.0) * np.float32(5.0)) * np.float32(1.0 / (36.0 * 256 * 448)))
    assert cublaslt_alpha(a, b) == want
