"""fpemu.testing.model_interval / assert_within_model: the interval of a model (or a family)
holds every output the model's arithmetic gives, and is tight.

Checked against fpemu.gemm for every preset (its own interval, its vendor family's, and the
any-order bound), against fpemu.gemm on permuted products (the any-order bound), against
parameter families (the hull is the members' spread), and rejected: fp16 accumulation, a
reversed order, fewer kept bits. MMA-Sim and the hardware dumps: tests/testing/test_tolerance_oracles.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tolerance_helpers import PRESETS, label, random_gemm

import fpemu
from fpemu.accumulator import get_accumulator
from fpemu.testing import (
    FAMILIES,
    assert_within_model,
    members_of,
    model_family,
    model_interval,
)

VENDOR = {p: ("amd" if p.startswith("mi") else "nvidia") for p, _ in PRESETS}
IEEE = ("exact", "fp32", "fp16", "bf16", "pairwise_fp32")


def check_preset(preset, inputs, out: str, dist: str, seed: int, k: int = 40) -> None:
    rng = np.random.default_rng(seed)
    A, B, C = random_gemm(dist, 3, k, 4, inputs, rng)
    got = fpemu.gemm(A, B, C, inputs=inputs, accumulator=preset, out=out)
    assert_within_model(got, A, B, C, accumulator=preset, inputs=inputs, out=out)
    assert_within_model(got, A, B, C, accumulator=preset, inputs=inputs, out=out, order="any")
    if preset not in IEEE:
        assert_within_model(got, A, B, C, accumulator=VENDOR[preset], inputs=inputs, out=out)


@pytest.mark.parametrize("preset,inputs", PRESETS, ids=[label(*p) for p in PRESETS])
def test_every_preset_output_lies_in_its_intervals(preset, inputs):
    for i, dist in enumerate(("uniform", "wide", "cancel")):
        check_preset(preset, inputs, "fp32", dist, seed=i, k=(40, 5, 64)[i])


@pytest.mark.parametrize("preset,inputs", PRESETS[::3], ids=[label(*p) for p in PRESETS[::3]])
@pytest.mark.parametrize("out", ["fp16", "bf16"])
def test_fp16_and_bf16_outputs_lie_in_their_intervals(preset, inputs, out):
    check_preset(preset, inputs, out, "uniform", seed=3, k=33)


@pytest.mark.slow
@pytest.mark.parametrize("preset,inputs", PRESETS, ids=[label(*p) for p in PRESETS])
@pytest.mark.parametrize("out", ["fp32", "fp16", "bf16"])
def test_every_preset_output_lies_in_its_intervals_sweep(preset, inputs, out):
    for seed in range(2):
        for dist in ("uniform", "wide", "cancel"):
            for k in (0, 1, 96):
                check_preset(preset, inputs, out, dist, seed=seed, k=k)


@pytest.mark.parametrize("preset,inputs", [("v100", "fp16"), ("a100", "bf16"), ("h100", "fp16"), ("ada", "e4m3"),
                                           ("b200", "e4m3"), ("mi300x", "bf16"), ("mi250", "fp32")])  # fmt: skip
def test_a_preset_interval_is_its_output_where_the_exponents_are_known(preset, inputs):
    """Tightness: for a block or FMA-chain model the interval is a single value, the model's
    own result, for almost every element (wider only where a block's exponent is not known)."""
    A, B, C = random_gemm("uniform", 16, 64, 16, inputs, np.random.default_rng(5))
    got = fpemu.gemm(A, B, C, inputs=inputs, accumulator=preset)
    iv = model_interval(A, B, C, accumulator=preset, inputs=inputs)
    assert iv.contains(got).all()
    point = iv.lo == iv.hi
    assert point.mean() >= 0.95, point.mean()
    assert np.array_equal(iv.lo[point], got[point])


def test_a_parameter_family_spans_exactly_its_members_outputs():
    """A100 fp16 with F in 23..26 and blocks of 4, 8, 16: the hull is the spread of the 12
    members' gemm outputs (on nearly every element), and holds each of them."""
    A, B, C = random_gemm("wide", 8, 48, 8, "fp16", np.random.default_rng(6))
    family = model_family("a100", "fp16", frac_bits=range(23, 27), block=(4, 8, 16))
    assert len(family) == 12
    outs = np.stack([fpemu.gemm(A, B, C, inputs="fp16", accumulator=m) for m in family])
    iv = model_interval(A, B, C, accumulator=family, inputs="fp16")
    assert all(iv.contains(o).all() for o in outs)
    exact = (iv.lo == outs.min(axis=0)) & (iv.hi == outs.max(axis=0))
    assert exact.mean() >= 0.95, exact.mean()
    assert (outs.max(axis=0) > outs.min(axis=0)).any()  # the members do differ


@pytest.mark.parametrize("preset,inputs", [("v100", "fp16"), ("h100", "bf16"), ("ada", "e5m2"), ("mi300x", "fp16"),
                                           ("mi100", "fp16"), ("fp32", "bf16")])  # fmt: skip
def test_the_any_order_bound_holds_permuted_products(preset, inputs):
    """The same products in 12 random orders through the preset: each result lies in the
    any-order interval; the model-order interval (of the unpermuted products) rejects some."""
    rng = np.random.default_rng(7)
    A, B, C = random_gemm("wide", 6, 64, 6, inputs, rng)
    iv_any = model_interval(A, B, C, accumulator=preset, inputs=inputs, order="any")
    iv_model = model_interval(A, B, C, accumulator=preset, inputs=inputs)
    rejected = 0
    for _ in range(12):
        perm = rng.permutation(64)
        got = fpemu.gemm(A[:, perm], B[perm], C, inputs=inputs, accumulator=preset)
        assert iv_any.contains(got).all()
        rejected += int((~iv_model.contains(got)).sum())
    assert rejected > 0


def test_different_arithmetic_is_rejected():
    """Outputs no NVIDIA FP32-accumulating unit gives: fp16 accumulation, the h100 model on the
    products in reverse order, and a unit that keeps 20 bits instead of 23-25."""
    A, B, C = random_gemm("wide", 16, 128, 16, "fp16", np.random.default_rng(8))
    iv = model_interval(A, B, C, accumulator="nvidia", inputs="fp16")
    fp16_acc = fpemu.gemm(A, B, C, inputs="fp16", accumulator="fp16")
    reversed_order = fpemu.gemm(A[:, ::-1], B[::-1], C, inputs="fp16", accumulator="h100")
    few_bits = fpemu.gemm(A, B, C, inputs="fp16", accumulator=dataclasses.replace(get_accumulator("h100", "fp16"),
                                                                                   frac_bits=20))  # fmt: skip
    for wrong, least in ((fp16_acc, 0.9), (reversed_order, 0.05), (few_bits, 0.3)):
        outside = (~iv.contains(wrong)).mean()
        assert outside >= least, outside
        with pytest.raises(AssertionError, match="elements outside what nvidia"):
            assert_within_model(wrong, A, B, C, accumulator="nvidia", inputs="fp16")


def test_the_message_names_the_element_its_interval_and_the_miss():
    A, B = np.array([[1.0, 1.0], [2.0, 2.0**-30]]), np.array([[1.0], [2.0**-24]])
    got = fpemu.gemm(A, B, inputs="fp32", accumulator="exact")
    got[1, 0] = np.nextafter(np.float32(got[1, 0]), np.float32(np.inf))
    with pytest.raises(AssertionError) as info:
        assert_within_model(got, A, B, accumulator="mi300x", inputs="fp32", err_msg="my kernel")
    text = str(info.value)
    assert text.startswith("my kernel: 1 of 2 elements outside what mi300x/fp32 can produce (fp32 output, model order)")
    assert "  [1, 0]: got 2.000000238418579, allowed [2.0, 2.0]: 1 ulps above (by 2.384185791015625e-07)" in text


def test_nan_is_allowed_only_where_an_operand_is_inf_or_nan():
    A, B = np.array([[np.inf, 1.0], [1.0, 1.0]]), np.array([[0.0], [1.0]])
    iv = model_interval(A, B, accumulator="h100", inputs="fp16")
    assert iv.may_nan.tolist() == [[True], [False]]
    assert iv.contains([[np.nan], [1.0]]).all() and iv.contains([[5.0], [1.0]]).all()
    assert not iv.contains([[np.nan], [2.0]])[1, 0]
    assert not iv.contains([[np.nan], [np.nan]])[1, 0]
    assert iv.width_ulps()[0, 0] == np.inf and iv.width_ulps()[1, 0] == 0


def test_dot_layout_matches_the_gemm_layout():
    A, B, C = random_gemm("uniform", 3, 20, 5, "bf16", np.random.default_rng(9))
    g = model_interval(A, B, C, accumulator="amd", inputs="bf16")
    a, b, c = np.repeat(A, 5, axis=0), np.tile(B.T, (3, 1)), C.reshape(-1)
    d = model_interval(a, b, c, accumulator="amd", inputs="bf16", layout="dot")
    assert np.array_equal(g.lo.reshape(-1), d.lo) and np.array_equal(g.hi.reshape(-1), d.hi)


def test_families_and_members():
    assert [m.name for m in members_of("amd", "bf16")] == ["cdna1/bf16", "cdna2/bf16", "cdna2/bf16/bf16", "cdna3/bf16",
                                                            "cdna3/bf16_k4/bf16"]  # fmt: skip
    assert len(members_of(["h100", "h200", "hopper"], "fp16")) == 1  # one model, three names
    assert set(FAMILIES["gpu"]) == set(FAMILIES["nvidia"]) | set(FAMILIES["amd"])


@pytest.mark.parametrize("kwargs,message", [
    (dict(order="sorted"), "order must be 'model' or 'any'"),
    (dict(layout="tiles"), "layout must be 'gemm' or 'dot'"),
    (dict(out="e4m3"), "out must be fp32, fp16 or bf16"),
    (dict(accumulator="nvidia", inputs="fp32"), "no model of 'nvidia' takes"),
])  # fmt: skip
def test_bad_arguments_are_named(kwargs, message):
    args = dict(accumulator="h100", inputs="fp16") | kwargs
    with pytest.raises(ValueError, match=message):
        model_interval(np.ones((2, 2)), np.ones((2, 2)), **args)


def test_bad_shapes_and_fields_are_named():
    with pytest.raises(ValueError, match=r"A \(M, K\) and B \(K, N\)"):
        model_interval(np.ones((2, 3)), np.ones((2, 3)), accumulator="h100", inputs="fp16")
    with pytest.raises(ValueError, match="frac_bit is not"):
        model_family("h100", "fp16", frac_bit=(24,))
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_within_model(np.ones(3), np.ones((2, 2)), np.ones((2, 2)), accumulator="h100", inputs="fp16")


def test_inputs_are_not_modified():
    A, B, C = random_gemm("uniform", 2, 8, 2, "fp16", np.random.default_rng(10))
    saved = [x.copy() for x in (A, B, C)]
    model_interval(A, B, C, accumulator="gpu", inputs="fp16", order="any")
    assert all(np.array_equal(x, y) for x, y in zip((A, B, C), saved))


_PROPERTY_PRESETS = [p for p in PRESETS if isinstance(p[1], str) and p[1] in ("fp16", "bf16")]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_PROPERTY_PRESETS), st.integers(0, 40), st.integers(0, 2**32 - 1),
       st.sampled_from(["uniform", "wide", "cancel"]), st.sampled_from(["fp32", "fp16"]))  # fmt: skip
@example(("mi100", "fp16"), 6, 0, "cancel", "fp32")  # the any-order bound alone was above the model's lo
def test_property_gemm_lies_in_the_interval_and_a_family_holds_its_members(case, k, seed, dist, out):
    preset, inputs = case
    A, B, C = random_gemm(dist, 2, k, 3, inputs, np.random.default_rng(seed))
    got = fpemu.gemm(A, B, C, inputs=inputs, accumulator=preset, out=out)
    own = model_interval(A, B, C, accumulator=preset, inputs=inputs, out=out)
    assert own.contains(got).all()
    family = "amd" if preset.startswith("mi") else "nvidia" if preset not in IEEE else [preset, "fp32"]
    wide = model_interval(A, B, C, accumulator=family, inputs=inputs, out=out, order="any")
    assert (wide.lo <= own.lo).all() and (wide.hi >= own.hi).all()


def test_torch_tensors_are_read_by_their_values():
    torch = pytest.importorskip("torch")
    A, B, C = random_gemm("uniform", 3, 24, 2, "bf16", np.random.default_rng(11))
    got = fpemu.gemm(A, B, C, inputs="bf16", accumulator="a100", out="bf16")
    tA, tB, tgot = (torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16) for x in (A, B, got))
    assert_within_model(tgot, tA, tB, C, accumulator="nvidia", inputs="bf16", out="bf16")
    with pytest.raises(AssertionError, match="elements outside"):
        assert_within_model(tgot * 1.5, tA, tB, C, accumulator="nvidia", inputs="bf16", out="bf16")


@pytest.mark.parametrize("preset", ["mi100", "mi250", "mi300x", "h100", "fp32", "pairwise_fp32"])
def test_an_overflowing_product_claims_nothing(preset):
    """bf16 products beyond fp32's range: Inf in some models, the largest value in others;
    the interval is [-inf, inf] with NaN allowed, and the other elements stay claimed."""
    A, B = np.array([[2.0**100, 1.0], [1.0, 1.0]]), np.array([[2.0**100], [1.0]])
    got = fpemu.gemm(A, B, inputs="bf16", accumulator=preset)
    iv = model_interval(A, B, accumulator=preset, inputs="bf16")
    assert iv.may_nan.tolist() == [[True], [False]] and iv.contains(got).all()
