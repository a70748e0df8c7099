"""The one place that cuts a product's rows into pieces (fpemu/accumulator/pieces.py), and
that the pieces never change a bit."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.accumulator import get_accumulator
from fpemu.accumulator.pieces import MIN_ROWS, PIECE_VALUES, row_pieces, values_per_row


@pytest.mark.parametrize("rows, per_row, workers", [(0, 5, 1), (1, 10**9, 1), (1000, 128, 1), (1000, 128, 2),
                                                    (100, 1, 4), (5000, 3, 3)])  # fmt: skip
def test_pieces_cover_the_rows_once(rows, per_row, workers):
    pieces = row_pieces(rows, per_row, workers)
    covered = np.concatenate([np.arange(rows)[p] for p in pieces]) if pieces else np.zeros(0, int)
    assert covered.tolist() == list(range(rows))
    assert all(p.stop - p.start <= max(1, PIECE_VALUES // per_row) for p in pieces)
    if workers > 1 and rows >= workers * MIN_ROWS:
        assert len(pieces) >= workers


def test_what_a_row_holds():
    assert values_per_row(get_accumulator("pairwise_fp32"), 100, 8, False) == 800  # a tree of all of K
    assert values_per_row(get_accumulator("mi250", "bf16"), 100, 8, False) == 32  # trees of 4
    assert values_per_row(get_accumulator("exact"), 100, 8, False) == 8 * 16  # the long accumulator's limbs
    assert values_per_row(get_accumulator("exact", "mxfp4"), 100, 8, False) == 8
    assert values_per_row(get_accumulator("exact", "mxfp4"), 100, 8, True) == 1


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_pieces_do_not_change_bits(workers, monkeypatch):
    monkeypatch.setattr("fpemu.accumulator.pieces.PIECE_VALUES", 64)  # many small pieces
    g = np.random.default_rng(1)
    a, b = g.standard_normal((37, 40)), g.standard_normal((40, 5))
    want = fpemu.gemm(a, b, inputs="bf16", accumulator="mi300x", workers=1)
    monkeypatch.undo()
    assert np.array_equal(want, fpemu.gemm(a, b, inputs="bf16", accumulator="mi300x", workers=workers))
    qa, qb = mx.quantize(a, "mxfp8_e4m3"), mx.quantize(b, "mxfp8_e4m3", axis=0)
    for acc in ("exact", "b200"):
        assert np.array_equal(fpemu.gemm(qa, qb, accumulator=acc, workers=1),
                              fpemu.gemm(qa, qb, accumulator=acc, workers=workers))


@pytest.mark.parametrize("accumulator, inputs, out", [
    ("h100", "e4m3", "fp32"),  # block FMA, chained in stretches of whole blocks
    ("h100", "e4m3", "fp16"),  # c_after (its fp16 output): stretches of whole instructions
    ("v100", "fp16", "fp32"), ("mi250", "bf16", "fp32"),  # another block FMA; a pairwise tree: its steps at the end
    ("exact", "fp16", "fp32"), ("fp32", "fp16", "fp32"),  # the exact model, an IEEE loop
])
def test_a_progress_bar_changes_no_bit_and_hears_every_row(accumulator, inputs, out):
    """dense_gemm with a progress bar's step: the same bits as without (a block model's K run
    in stretches chained through their results, the exact sum's terms told in stretches), and
    step told of M rows in all, more than once where the model tells them as K runs; with a
    promoted model (DeepSeek-V3's intervals) likewise."""
    import dataclasses

    from fpemu.accumulator.gemm import dense_gemm
    from fpemu.accumulator.kernels.run import ticks_as_it_goes
    from fpemu.accumulator.operands import accumulator_operand
    from fpemu.formats import get_format

    f = get_format(inputs)
    rng = np.random.default_rng(3)
    M, K, N = 12, 1000, 5  # K not a multiple of any block or instruction
    A = fpemu.quantize(rng.standard_normal((M, K)), f)
    B = fpemu.quantize(rng.standard_normal((K, N)), f)
    models = [get_accumulator(accumulator, inputs)]
    if accumulator == "h100" and out == "fp32":
        models.append(dataclasses.replace(models[0], promote=128))
    for acc in models:
        want = dense_gemm(A, B, accumulator_operand(None, (M, N), out), acc, f, f, out, 1)
        told = []
        got = dense_gemm(A, B, accumulator_operand(None, (M, N), out), acc, f, f, out, 1, told.append)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), acc.name
        assert sum(told) == M
        if ticks_as_it_goes(acc.for_output(out)):
            assert len(told) == M  # one row at a time, as K runs
