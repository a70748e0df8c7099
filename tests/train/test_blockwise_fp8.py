"""DeepSeek-V3 blockwise FP8 (TransformerEngine's Float8BlockScaling; fpemu.train.blockwise_fp8).

The cast against an exact model written here from TE's source
(``common/recipe/recipe_common.cuh: compute_scale_from_amax``: ``scale = __fdiv_rn(448, amax)``,
1 for amax 0/Inf/NaN, ``value_for_inf`` = FLT_MAX for float32 input, power of two by clearing
the mantissa bits; ``quantize_transpose_vector_blockwise.cu``: ``scale_inv = 1.0 / scale``,
elements ``static_cast<fp8e4m3>(x * scale)``, satfinite RNE), in Fraction arithmetic with the
independent Fraction codec ``reference.ref_encode``; the GEMM's wiring against ``fpemu.gemm``
with the h100 accumulator promoted every 128 products.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.formats import get_format
from fpemu.train.accumulate import accumulator_matmul
from fpemu.train.blockwise_fp8 import (
    BlockwiseFP8Recipe,
    LinearBlockwiseFP8,
    blockwise_cast,
    blockwise_matmul,
    parse_blockwise_recipe,
)
from reference import ref_decode, ref_encode

TWO = Fraction(2)
E4M3 = get_format("e4m3")
FLT_MAX = Fraction(float(np.finfo(np.float32).max))


def floor_log2(fr: Fraction) -> int:
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    return e - 1 if TWO**e > fr else e


def f32(fr: Fraction) -> Fraction | None:
    """A positive Fraction rounded to float32 (RNE, subnormals); None past FLT_MAX (Inf)."""
    q = TWO ** (max(floor_log2(fr), -126) - 23)
    n, r = divmod(fr / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    return None if n * q > FLT_MAX else n * q


def model_tile(tile: np.ndarray, pow2: bool) -> tuple[Fraction, list[Fraction]]:
    """(scale_inv, element values) of one tile, TE's steps in exact arithmetic."""
    finite = [abs(Fraction(float(v))) for v in tile.ravel() if not np.isnan(v) and not np.isinf(v)]
    amax = max(finite, default=Fraction(0))
    if amax == 0:
        scale = Fraction(1)
    else:
        scale = f32(Fraction(448) / amax)
        scale = FLT_MAX if scale is None else scale
        if pow2:
            scale = TWO ** floor_log2(scale)
    values = []
    for v in tile.ravel():
        p = Fraction(float(v)) * scale
        rounded = f32(abs(p)) if p != 0 else Fraction(0)  # fp32(x * scale); None: Inf
        code = ref_encode(float("inf") if rounded is None else rounded, E4M3, overflow="saturate")
        d = ref_decode(code, E4M3)
        values.append(d.magnitude * (-1 if p < 0 else 1))
    return f32(1 / scale), values


def _tensor(rng, shape):
    t = rng.standard_normal(shape) * 2.0 ** rng.integers(-30, 30, (shape[0], 1))
    return t.astype(np.float32)


@pytest.mark.parametrize("pow2", [True, False])
@pytest.mark.parametrize("tile", [(1, 128), (128, 1), (128, 128)])
def test_the_cast_matches_the_exact_model(pow2, tile):
    rng = np.random.default_rng([int(pow2), *tile])
    t = _tensor(rng, (130, 200))  # partial tiles on both axes
    t[5, :] = 0.0  # a zero tile (1x128): scale 1
    t[6, :3] = np.float32(1e-44)  # 448 / amax overflows: scale FLT_MAX (pow2: 2**127)
    t[6, 3:] = 0.0
    t[7, 0] = np.float32(448.0 * 1.5)  # saturation needs no clamp: 448 / amax
    q = blockwise_cast(t, tile, pow2)
    t0, t1 = tile
    checked = 0
    for i in range(0, 130, t0):
        for j in range(0, 200, t1):
            if t0 == 1 and i % 7 and i > 8:  # every 7th row of 1x128 tiles (and the special rows)
                continue
            block = t[i:i + t0, j:j + t1]
            sinv, values = model_tile(block, pow2)
            assert Fraction(float(q.scale_inv[i // t0, j // t1])) == sinv, (i, j)
            assert [Fraction(float(v)) for v in q.values[i:i + t0, j:j + t1].ravel()] == values, (i, j)
            checked += 1
    assert checked > 3


def _exact_operands(rng, m, k, n):
    """E4M3 values whose every 1x128 tile (x) and 128x128 block (w) has amax 448: scales 1."""
    vals = np.float32([v for v in (float(fpemu.decode(c, E4M3)) for c in range(0x7F)) if v == v])
    x = rng.choice(np.r_[vals, -vals], (m, k)).astype(np.float32)
    w = rng.choice(np.r_[vals, -vals], (k, n)).astype(np.float32)
    x[:, ::128] = 448.0
    for k0 in range(0, k, 128):
        for n0 in range(0, n, 128):
            w[k0, n0] = -448.0
    return x, w


def test_the_gemm_is_fpemu_gemm_promoted_every_128():
    rng = np.random.default_rng(3)
    x, w = _exact_operands(rng, 8, 512, 160)
    qx, qw = blockwise_cast(x, (1, 128)), blockwise_cast(w, (128, 128))
    assert np.all(qx.scale_inv == 1) and np.all(qw.scale_inv == 1) and np.array_equal(qx.values, x)
    h100 = fpemu.get_accumulator("h100", "e4m3")
    import dataclasses

    promoted = dataclasses.replace(h100, promote=128)
    want = fpemu.gemm(x, w, inputs="e4m3", accumulator=promoted)
    got = blockwise_matmul(qx, qw, accumulator_matmul("h100", E4M3, promote=128))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    # the test can fail: without promotion the h100's 13-bit sums differ
    assert not np.array_equal(fpemu.gemm(x, w, inputs="e4m3", accumulator=h100), want)


def test_power_of_two_scales_scale_each_partial_exactly():
    """Tiles scaled by powers of two: each 128's partial is the unit's partial of the codes,
    times the two scales, added in K order."""
    rng = np.random.default_rng(4)
    x, w = _exact_operands(rng, 4, 256, 128)
    x[:, 128:] *= np.float32(2.0**-6)  # the second K tile of x: amax 7 -> scale 64
    w[:128] *= np.float32(2.0**5)      # the first 128x128 block of w: amax 14336 -> scale 2**-5
    mm = accumulator_matmul("h100", E4M3, promote=128)
    qx, qw = blockwise_cast(x, (1, 128)), blockwise_cast(w, (128, 128))
    assert qx.scale_inv[0].tolist() == [1.0, 2.0**-6] and qw.scale_inv[:, 0].tolist() == [2.0**5, 1.0]
    got = blockwise_matmul(qx, qw, mm)
    parts = [mm(qx.values[:, :128], qw.values[:128], E4M3, E4M3) * np.float32(2.0**5),
             mm(qx.values[:, 128:], qw.values[128:], E4M3, E4M3) * np.float32(2.0**-6)]
    assert np.array_equal(got, (np.zeros_like(parts[0]) + parts[0]) + parts[1])


def test_the_layer_casts_each_gemm_operand_along_its_k():
    rng = np.random.default_rng(5)
    x, w, dy = (rng.standard_normal(s).astype(np.float32) for s in ((64, 256), (256, 130), (64, 130)))
    lin = LinearBlockwiseFP8(BlockwiseFP8Recipe(power_2_scale=False))
    y, ctx = lin.fwd(x, w, None)
    qw = blockwise_cast(w, (128, 128), False)
    assert np.array_equal(y, blockwise_matmul(blockwise_cast(x, (1, 128), False), qw))
    dx, dw, db = lin.bwd(dy, ctx, None)
    assert np.array_equal(dx, blockwise_matmul(blockwise_cast(dy, (1, 128), False), qw.T))
    assert np.array_equal(dw, blockwise_matmul(blockwise_cast(x, (128, 1), False).T, blockwise_cast(dy, (128, 1), False)))
    assert np.array_equal(db, dy.sum(axis=0))
    # close to fp32 (a sanity bound: E4M3 has 3 mantissa bits)
    assert np.abs(y - x @ w).max() < 0.2 * np.abs(x @ w).max()


def test_recipes_parse():
    assert parse_blockwise_recipe(None) == BlockwiseFP8Recipe() and parse_blockwise_recipe("fp32").label == "fp32"
    with pytest.raises(ValueError, match="'pow2'"):
        parse_blockwise_recipe("e8m0")


def test_the_transformer_and_the_mlp_run_it():
    from fpemu.train.gpt import make_gpt_precision
    from fpemu.train.policies import make_policy

    p = make_gpt_precision("fp8_block", 2, accumulator="h100")
    assert p.variant == "pow2,h100+promote128" and type(p.blocks[1]["fc2"]).__name__ == "LinearBlockwiseFP8"
    assert p.head.name == "bf16"  # the output layer and attention stay in BF16, as for fp8
    assert make_gpt_precision("fp8_block", 1, fp8_block_recipe="fp32").blocks[0]["qkv"].recipe.power_2_scale is False
    with pytest.raises(ValueError, match="promotes every 128"):
        make_gpt_precision("fp8_block", 1, accumulator="h100", promote=64)
    assert type(make_policy("fp8_block", accumulator="h100").linear(0)).__name__ == "LinearBlockwiseFP8"


def test_the_command_line_takes_it(capsys):
    from fpemu.cli import main

    assert main(["train", "--task", "gpt", "--precision", "fp8_block", "--fp8-block-scales", "fp32", "--steps", "2",
                 "--accumulator", "h100", "--json", "-q"]) == 0
    assert '"fp8_block"' in capsys.readouterr().out
    assert main(["train", "--task", "gpt", "--precision", "fp8", "--fp8-block-scales", "fp32", "--steps", "2"]) == 2
    assert "--fp8-block-scales applies to --precision fp8_block" in capsys.readouterr().err
