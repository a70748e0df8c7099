"""``convention=``: the issue's blocks, the options it refuses, and the statements docs/mx.md
makes about torchao and TransformerEngine (issue 17).

torchao is not installed here: each statement names torchao 0.18.0's source line and is
checked against a model of it (tests/mx/test_conventions_models.py checks the models on random
data). Where torch is installed, the one primitive torchao's eager RCEIL leans on (torch's
float32 log2 and division on CPU) is run.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import mx

from mx_helpers import EMAX, block_of

f32 = np.float32
TINY = [2.0**-120]  # one element, the others zero: scale code 0 under every rule
NEAR = [f32(448 * 2**10 * (1 + 2**-23)), 1.5]  # fp32(amax / 448) = 2**10 * (1 + 2**-23)


def q(values, fmt="mxfp8_e4m3", **kw):
    r = mx.quantize(block_of(values), fmt, **kw)
    return int(r.scales[0]), r.codes[: len(values)].tolist(), r.dequantize()[: len(values)].tolist()


# ---- the blocks -------------------------------------------------------------------------
def test_zero_scale_code_te_2_12_and_torchao_rceil_leave_the_block_unscaled():
    assert q(TINY) == (0x00, [0x70], [2.0**-120])  # the spec: 2**-120 / 2**-127 = 128
    assert q(TINY, scale_rounding="rceil") == (0x00, [0x70], [2.0**-120])
    assert q(TINY, convention="transformer_engine-2.13") == (0x00, [0x70], [2.0**-120])
    for conv, sr in [("transformer_engine-2.12", None), ("torchao-0.18", "rceil"), ("torchao_triton-0.18", None)]:
        assert q(TINY, convention=conv, scale_rounding=sr) == (0x00, [0x00], [0.0])
    assert q([-(2.0**-120)], convention="transformer_engine-2.12")[1] == [0x80]  # -0


def test_torchao_floor_scales_an_inf_block_by_inf_exponent():
    assert q([np.inf, 1.0], convention="torchao-0.18") == (0xF7, [0x7E, 0x00], [np.inf, 0.0])
    assert q([np.inf, 1.0])[0] == 0xFF  # the spec and fpemu's default: a NaN block
    for fmt, emax in EMAX.items():
        if fmt == "mxint8":
            continue
        for sr in ("floor", "ceil", "even"):
            assert q([-np.inf, 1.0], fmt, convention="torchao-0.18", scale_rounding=sr)[0] == 255 - emax
        assert q([np.inf, 1.0], fmt, convention="torchao-0.18", scale_rounding="rceil")[0] == 0xFE
    assert q([-np.inf, 3.0], "mxfp4", convention="torchao-0.18")[1] == [0xF, 0x0]  # -6, 0


def test_torchao_floor_divides_a_zero_code_block_by_2_to_the_minus_126():
    assert q(TINY, convention="torchao-0.18") == (0x00, [0x68], [2.0**-121])
    for sr in ("ceil", "even"):
        assert q(TINY, convention="torchao-0.18", scale_rounding=sr)[:2] == (0x00, [0x68])
    assert q([2.0**-119], convention="torchao-0.18")[:2] == (0x00, [0x70])  # exact code 0, half the value


def test_torchao_eager_rceil_log2_rounds_to_the_power_below():
    assert q(NEAR, convention="torchao-0.18", scale_rounding="rceil") == (0x89, [0x7E, 0x01], [458752.0, 2.0])
    assert q(NEAR, scale_rounding="rceil") == (0x8A, [0x76, 0x00], [458752.0, 0.0])
    assert q(NEAR, convention="torchao_triton-0.18") == (0x8A, [0x76, 0x00], [458752.0, 0.0])
    assert q(NEAR, convention="transformer_engine-2.12") == (0x8A, [0x76, 0x00], [458752.0, 0.0])


def test_transformer_engine_skips_nan_and_2_12_zeroes_a_0xfe_block():
    scale, codes, values = q([np.nan, 1.0, -2.0], convention="transformer_engine-2.13")
    assert (scale, codes, values[1:]) == (0x78, [0x7F, 0x70, 0xF8], [1.0, -2.0])
    assert q([np.nan, 1.0])[0] == 0xFF
    assert q([-np.inf, 1.0, -1.0], convention="transformer_engine-2.13")[:2] == (0xFE, [0xFE, 0x00, 0x80])
    assert q([-np.inf, 1.0, -1.0], convention="transformer_engine-2.12")[:2] == (0xFE, [0x7F, 0x00, 0x80])
    assert q([-np.inf, 1.0], inf="saturate")[:2] == (0xFE, [0xFE, 0x00])  # = TE 2.13 without NaN


def test_an_all_zero_block_is_scale_0_everywhere():
    """docs/mx.md: "all zeros: 0x00 (everyone agrees)"; the models of each library give 0 too."""
    for conv, sr in [(None, None), (None, "rceil"), ("torchao-0.18", "floor"), ("torchao-0.18", "ceil"),
                     ("torchao-0.18", "even"), ("torchao-0.18", "rceil"), ("torchao_triton-0.18", None),
                     ("transformer_engine-2.12", None), ("transformer_engine-2.13", None)]:
        assert q([0.0, -0.0], convention=conv, scale_rounding=sr)[:2] == (0x00, [0x00, 0x80])
    from .test_conventions_models import torchao_eager, transformer_engine, triton

    zeros = np.zeros(8, f32)
    assert {torchao_eager(zeros, "mxfp4", m)[0] for m in ("floor", "ceil", "even", "rceil")} == {0}
    assert transformer_engine(zeros, "mxfp8_e5m2", 12)[0] == triton(zeros, "mxfp8_e4m3")[0] == 0


# ---- corrected statements of docs/mx.md ---------------------------------------------------------
def test_even_near_flt_max_is_the_same_finite_scale_in_torchao():
    """torchao 0.18.0 mx_tensor.py lines 297-317: EVEN's bit trick carries a near-FLT_MAX amax
    into the Inf exponent field, which gives code 128 - emax + 127 (line 329 clamps to 128),
    not NaN (line 339 marks only a NaN amax): the finite scale fpemu's ``even`` gives."""
    for fmt in ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp4"):
        big = [f32(3.4028235e38), 1.0]
        assert q(big, fmt, scale_rounding="even")[:2] == q(big, fmt, convention="torchao-0.18",
                                                            scale_rounding="even")[:2]
        assert q(big, fmt, scale_rounding="even")[0] == 255 - EMAX[fmt]


def test_torchao_nvfp4_two_level_is_all_nan_on_degenerate_tensors():
    """torchao 0.18.0 nvfp4_tensor.py: per_tensor_amax_to_scale (line 769) is amax / 2688, and
    nvfp4_quantize (lines 837-848) divides the block scales by it and multiplies the data by
    its reciprocal: NaN/Inf/zero tensors read back NaN everywhere (get_hp_scales, line 256,
    multiplies by the per-tensor scale). fpemu's variant="torchao" keeps pts = 1 instead."""
    def torchao_dequantized(x):  # float32 arithmetic of the lines above, e4m3 by ml_dtypes
        ml_dtypes = pytest.importorskip("ml_dtypes")
        with np.errstate(all="ignore"):
            pts = f32(np.max(np.abs(x))) / f32(2688)
            block = np.max(np.abs(x.reshape(-1, 16)), axis=1) / f32(6)
            s8 = np.clip(block / pts, f32(2**-6), f32(448)).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
            data = np.clip(x.reshape(-1, 16) * ((f32(1) / pts) / s8)[:, None], -6, 6)
            e2m1 = data.astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
            return e2m1 * (pts * s8)[:, None]

    for x in (block_of([np.inf, 1.0], 32), np.zeros(32, f32), block_of([np.nan, 1.0], 32)):
        assert np.isnan(torchao_dequantized(x)).all()
    good = block_of([100.0, -37.0, 5.0], 32)
    assert np.array_equal(torchao_dequantized(good).ravel(), mx.quantize(good, "nvfp4", variant="torchao").dequantize())
    ours = mx.quantize(block_of([np.inf] + [0.0] * 15 + [1.0], 32), "nvfp4", variant="torchao")
    assert ours.global_scale == 1 and ours.dequantize()[16] == 1.03125  # 6 * UE4M3(1/6)


# ---- options ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    ({"convention": "transformer-engine-2.13"}, "did you mean transformer_engine-2.13"),  # one spelling
    ({"convention": "torchao-0.18-triton"}, "did you mean torchao_triton"),
    ({"convention": "ml_dtypes"}, "'ml_dtypes' has no MX block rules"),
    ({"convention": "torchao-0.17"}, "no rules for torchao 0.17; known releases: 0.18"),
    ({"convention": "transformer_engine-2.12", "scale_rounding": "floor"}, "offers scale_rounding 'rceil'"),
    ({"convention": "torchao_triton-0.18", "scale_rounding": "floor"}, "offers scale_rounding"),
    ({"convention": "torchao-0.18", "inf": "nan"}, "leave inf= out"),
    ({"convention": "torchao-0.18", "rounding": "stochastic", "rng": 1}, "leave rounding= out"),
    ({"convention": "transformer_engine-2.13", "fmt": "mxfp4"}, "quantizes mxfp8_e4m3, mxfp8_e5m2, not mxfp4"),
    ({"convention": "torchao-0.18", "fmt": "mxint8"}, "not mxint8"),
    ({"convention": "torchao_triton-0.18", "fmt": "nvfp4"}, "has no NVFP4 rule"),
    ({"convention": "torchao-0.18", "variant": "te", "fmt": "nvfp4"}, "variant 'torchao', not variant='te'"),
    ({"convention": "transformer_engine-2.13", "fmt": "nvfp4_ue5m3", "variant": "torchao"}, "not variant="),
    ({"scale_rounding": "round"}, "unknown scale_rounding"),
    ({"inf": "clip"}, "inf must be"),
])  # fmt: skip
def test_refused_options(kw, match):
    kw = dict(kw)
    fmt = kw.pop("fmt", "mxfp8_e4m3")
    with pytest.raises(ValueError, match=match):
        mx.quantize(np.ones(32), fmt, **kw)


def test_convention_names_nvfp4s_variant_too():
    """One keyword names a library for MX and NVFP4 alike: convention= gives the codes,
    scales and per-tensor scale of the variant it stands for."""
    x = np.random.default_rng(4).standard_normal((4, 64)).astype(np.float32)
    for convention, variant in (("torchao-0.18", "torchao"), ("transformer_engine-2.13", "te")):
        a, b = mx.quantize(x, "nvfp4", convention=convention), mx.quantize(x, "nvfp4", variant=variant)
        assert a.variant == variant and a.global_scale == b.global_scale
        assert np.array_equal(a.scales, b.scales) and np.array_equal(a.codes, b.codes)
    # The two per-tensor scales round differently (1 / fp32(2688 / amax) against amax / 2688):
    # the first of a seeded search where they part, so the test tells the variants apart.
    rng = np.random.default_rng(0)
    y = (rng.standard_normal(64) * rng.uniform(0.1, 10)).astype(np.float32)
    te, ao = mx.quantize(y, "nvfp4"), mx.quantize(y, "nvfp4", convention="torchao-0.18")
    assert te.variant == "te" and te.global_scale != ao.global_scale


def test_default_is_the_ocp_spec_and_unchanged():
    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32) * np.float32(1e-3)
    x[0, 5], x[1, 7], x[2, :32] = np.inf, np.nan, 2.0**-130
    for sr in ("floor", "rceil", "ceil", "even"):
        a, b = mx.quantize(x, "mxfp6_e3m2", scale_rounding=sr), mx.quantize(x, "mxfp6_e3m2", scale_rounding=sr, convention="ocp")
        assert np.array_equal(a.scales, b.scales) and np.array_equal(a.codes, b.codes) and a.scale_rounding == sr
    assert mx.quantize(x, "mxfp4").scale_rounding == "floor"
    assert mx.quantize(x, "mxfp8_e4m3", convention="transformer_engine-2.12").scale_rounding == "rceil"


def test_a_convention_takes_the_float32_values_of_wider_input():
    x = np.random.default_rng(4).standard_normal(96) * 10.0 ** np.random.default_rng(5).integers(-40, 38, 96)
    a = mx.quantize(x, "mxfp4", convention="torchao-0.18")
    b = mx.quantize(x.astype(np.float32), "mxfp4", convention="torchao-0.18")
    assert np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales)
    ints = mx.quantize(np.arange(64), "mxfp8_e5m2", convention="transformer_engine-2.13")
    assert ints.scales.tolist() == [117, 118]  # 31 / 57344 and 63 / 57344 round up to 2**-10, 2**-9
    with pytest.raises(ValueError, match="computes in float32"):
        mx.quantize([1e39, 1.0], "mxfp4", convention="torchao-0.18")


def test_cli_convention(capsys):
    from .test_cli import run_cli

    assert run_cli(["mx", "inf,1", "--convention", "torchao-0.18"]) == 0
    out = capsys.readouterr().out
    assert "scale 0xF7 = 2^120" in out and "codes:  7E 00" in out and "(floor)" in out
    assert run_cli(["mx", "1e-36", "-c", "transformer_engine-2.12"]) == 0
    assert "scale 0x00" in (out := capsys.readouterr().out) and "codes:  00" in out and "(rceil)" in out


# ---- torch, where installed ---------------------------------------------------------------------
def test_torch_cpu_log2_and_division_are_the_modelled_ones():
    """torchao's eager RCEIL (mx_tensor.py lines 133 and 176) computes ``max_abs / max_pos`` and
    ``torch.ceil(torch.log2(descale))`` in float32: on CPU the division is correctly rounded and
    log2 rounds to the power below exactly where fpemu's table says (checked for torch 2.13)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    k = rng.integers(-127, 126, 4000)
    d = (np.exp2(k).astype(np.float32).view(np.uint32) + rng.integers(0, 30, 4000).astype(np.uint32)).view(np.float32)
    d = np.concatenate([d, rng.random(4000).astype(np.float32) * np.exp2(k).astype(np.float32)])
    for fmt, mx_ in (("mxfp8_e4m3", 448.0), ("mxfp4", 6.0), ("mxfp6_e2m3", 7.5)):
        with np.errstate(over="ignore"):
            amax = (d.astype(np.float64) * mx_).astype(np.float32)
        amax = amax[np.isfinite(amax) & (amax > 0)]
        t = torch.from_numpy(amax) / mx_
        assert np.array_equal(t.numpy(), (amax.astype(np.float64) / mx_).astype(np.float32))
        codes = (torch.clamp(torch.ceil(torch.log2(t)), -127, 127) + 127).to(torch.uint8).numpy()
        ours = mx.quantize(amax[:, None], fmt, block_size=1, convention="torchao-0.18", scale_rounding="rceil")
        assert np.array_equal(ours.scales[:, 0], codes)
