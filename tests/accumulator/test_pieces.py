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
