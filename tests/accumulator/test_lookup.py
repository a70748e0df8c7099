"""The one lookup (fpemu/accumulator/lookup.py): one grammar ``gpu[/family[/instruction]]`` for
dense and block-scaled models, the same name accepted (and the same message refusing one)
whichever entry point reads it: get_accumulator, gemm and dot of plain arrays or of block
arrays (issue 37: "b200/mxf8f6f4" worked in fpemu.gemm and not in fpemu.mx.matmul)."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.accumulator import (BlockFMA, BlockScaledFMA, Blockwise, Exact, accumulator_names, get_accumulator)  # fmt: skip
from fpemu.accumulator.lookup import wrong_operands


def _block_operands(fmt="mxfp4", k=64):
    rng = np.random.default_rng(5)
    a = mx.quantize(rng.standard_normal((2, k)), fmt)
    b = mx.quantize(rng.standard_normal((k, 3)), fmt, axis=0)
    return a, b


def _entry_points(name, block_scaled, instruction=None):
    """Every public way a name is read: the lookup, gemm and dot, for the operands of its kind."""
    if block_scaled:
        a, b = _block_operands()
        rows = mx.quantize(np.ones((2, 64)), "mxfp4")
        return [lambda: get_accumulator(name, "mxfp4", instruction=instruction),
                lambda: fpemu.gemm(a, b, accumulator=name, instruction=instruction),
                lambda: fpemu.dot(rows, rows, accumulator=name, instruction=instruction)]
    x = np.ones((2, 8))
    return [lambda: get_accumulator(name, "bf16", instruction=instruction),
            lambda: fpemu.gemm(x, x.T, inputs="bf16", accumulator=name, instruction=instruction),
            lambda: fpemu.dot(x, x, inputs="bf16", accumulator=name, instruction=instruction)]


@pytest.mark.parametrize("name, instruction, block_scaled", [
    ("b200/mxf8f6f4", None, True), ("B200", "mxf8f6f4", True), ("blackwell/mxf4nvf4", None, True),
    ("mmasim-blackwell/mxf8f6f4", None, True), ("exact", None, True),
    ("mi250/bf16", None, False), ("mi250", "v_mfma_f32_16x16x8bf16", False), ("mi250/bf16/f32_16x16x8bf16", None, False),
    ("cdna2/v_mfma_f32_16x16x8bf16", None, False), (" H100 ", None, False), ("exact", None, False),
])  # fmt: skip
def test_a_name_works_through_every_entry_point(name, instruction, block_scaled):
    results = [f() for f in _entry_points(name, block_scaled, instruction)]
    assert type(results[0]) is (BlockScaledFMA if name != "exact" else Blockwise) if block_scaled else True
    assert all(np.all(np.isfinite(np.asarray(r, dtype=np.float64))) for r in results[1:])


@pytest.mark.parametrize("name, block_scaled, message", [
    ("zzz", True, "unknown accumulator 'zzz'; `fpemu accumulators` lists them all"),
    ("zzz", False, "unknown accumulator 'zzz'; `fpemu accumulators` lists them all"),
    ("h10", False, "unknown accumulator 'h10'; did you mean h100"),
    ("h100", True, "h100 (hopper) has no block-scaled MMA: block arrays take exact, b200, rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell"),
    ("fp32", True, "fp32 has no block-scaled MMA: block arrays take exact, b200, rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell"),
    ("mmasim-blackwell", False, "mmasim-blackwell has no dense MMA: plain arrays take a dense model "
                                "(`fpemu accumulators` lists them)"),
    ("b200/f8f6f4", True, "b200 (blackwell) has no instruction family 'f8f6f4'; it has: mxf4nvf4, mxf8f6f4"),
    ("b200/mxf8f6f4", False, "b200 (blackwell) has no instruction family 'mxf8f6f4'; it has: f16, tf32, f8f6f4"),
    ("exact/mxf8f6f4", True, "the exact model has no instructions"),
    ("a/b/c/d", False, "unknown accumulator 'a/b/c/d'"),
])  # fmt: skip
def test_one_message_whichever_entry_point(name, block_scaled, message):
    for call in _entry_points(name, block_scaled):
        with pytest.raises(ValueError) as info:
            call()
        assert message in str(info.value)


def test_a_model_of_the_other_kind_is_refused_in_the_same_words():
    a, b = _block_operands()
    dense, scaled = get_accumulator("h100", "e4m3"), get_accumulator("b200", "mxfp4")
    with pytest.raises(ValueError, match=r"BlockFMA 'h100/e4m3' has no block-scaled MMA: block arrays take exact"):
        fpemu.gemm(a, b, accumulator=dense)
    with pytest.raises(ValueError, match=r"BlockScaledFMA 'b200/mxf4nvf4/e2m1' has no dense MMA: plain arrays take"):
        fpemu.gemm(np.ones((2, 2)), np.ones((2, 2)), inputs="fp16", accumulator=scaled)
    assert wrong_operands("x", True).startswith("x has no block-scaled MMA")
    with pytest.raises(ValueError, match="instruction= picks a preset's instruction family; a model already is one"):
        fpemu.gemm(a, b, accumulator=scaled, instruction="mxf8f6f4")
    with pytest.raises(ValueError, match="instruction= picks a preset's instruction family; a model already is one"):
        fpemu.gemm(np.ones((2, 2)), np.ones((2, 2)), inputs="fp16", accumulator=dense, instruction="f16")


def test_names_list_both_kinds():
    names = accumulator_names()
    assert names.count("exact") == 1 and {"h100", "b200", "mmasim-blackwell", "cdna2/bf16"} <= set(names)
    assert accumulator_names(block_scaled=True) == [
        "exact", "b200", "rtx5090", "rtx5080", "rtxpro6000", "blackwell", "rtx-blackwell", "mmasim-blackwell"]
    assert "mmasim-blackwell" not in accumulator_names(block_scaled=False)
    for name in names:  # every listed name is a model of some operands
        assert any(_builds(name, f) for f in ("fp16", "bf16", "fp32", "tf32", "e4m3", "e4m3fnuz", "mxfp8_e4m3")), name


def _builds(name, inputs) -> bool:
    try:
        return bool(get_accumulator(name, inputs))
    except ValueError:
        return False


def test_formats_tell_the_kind():
    assert type(get_accumulator("exact", "nvfp4")) is Blockwise and type(get_accumulator("exact")) is Exact
    assert type(get_accumulator("b200", ("mxfp8_e4m3", "mxfp6_e2m3"))) is BlockScaledFMA
    assert type(get_accumulator("b200", "e4m3")) is BlockFMA
    with pytest.raises(ValueError, match="two element formats or two block formats, got e4m3 and mxfp4"):
        get_accumulator("b200", ("e4m3", "mxfp4"))
    with pytest.raises(ValueError, match="unknown format 'mxfp9'.*block formats: mxfp8_e4m3"):
        get_accumulator("b200", "mxfp9")
    with pytest.raises(ValueError, match="block_size= is the K-block size of block formats"):
        get_accumulator("b200", "e4m3", block_size=32)
    assert get_accumulator("b200", "mxfp4", block_size=16).instruction_k == 64
    with pytest.raises(ValueError, match="no block-scaled MMA for e2m1 x e2m1 with e8m0 blocks of 8"):
        get_accumulator("b200", "mxfp4", block_size=8)


def test_unknown_preset_lists_the_names():
    q = mx.quantize(np.ones((1, 32)), "mxfp8_e4m3")
    with pytest.raises(ValueError, match="h100 \\(hopper\\) has no block-scaled MMA: block arrays take exact, b200, "
                                         "rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell"):
        fpemu.gemm(q, mx.quantize(np.ones((32, 1)), "mxfp8_e4m3", axis=0), accumulator="h100")
    assert accumulator_names(block_scaled=True) == [
        "exact", "b200", "rtx5090", "rtx5080", "rtxpro6000", "blackwell", "rtx-blackwell", "mmasim-blackwell"]


def test_lookup_errors():
    with pytest.raises(ValueError, match="no block-scaled MMA for int8 x int8"):
        get_accumulator("b200", "mxint8")
    with pytest.raises(ValueError, match="b200 \\(blackwell\\) has no instruction family 'mxf9'; it has: mxf4nvf4, mxf8f6f4"):
        get_accumulator("b200", "mxfp4", instruction="mxf9")
    with pytest.raises(ValueError, match="cannot mix MX and NVFP4"):
        get_accumulator("b200", ("mxfp4", "nvfp4"))
    with pytest.raises(ValueError, match="exact model has no instructions"):
        get_accumulator("exact", "mxfp4", instruction="mxf4nvf4")
    assert get_accumulator("b200", "mxfp4", instruction="mxf8f6f4").instruction_k == 32
    assert get_accumulator("blackwell", "nvfp4").sub_block == 16
