"""The MiniLM table's rows and numbers: which (precision, unit) rows exist, the measures on
embeddings made up here (each computed by hand), a unit with the same model not run twice."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu.train.bert.pairs import KINDS, PAIRS, first_pairs
from fpemu.train.bert.study import compare, run_study, spearman, study_rows, study_steps, study_table


def test_rows_are_the_units_that_take_each_format():
    formats = ("bf16", "fp16", "e4m3", "mxfp8", "mxfp6", "mxfp4", "nvfp4")  # the default table: issue 38's
    rows = study_rows()
    assert rows[:8] == [("fp32", None)] + [(p, None) for p in formats]
    assert [p for p, u in rows if u == "h100"] == ["bf16", "fp16", "e4m3"]  # no block-scaled MMA on Hopper
    assert [p for p, u in rows if u == "b200"] == list(formats)
    extra = ("nvfp4_4o6mae", "nvfp4_4o6mse", "fp8_block")  # asked for by --formats
    # blockwise FP8 is E4M3 MMAs promoted every 128: Hopper runs it; Four Over Six is NVFP4's
    assert [(p, u) for p, u in study_rows(extra) if u] == [("fp8_block", "h100"), ("nvfp4_4o6mae", "b200"),
                                                          ("nvfp4_4o6mse", "b200"), ("fp8_block", "b200")]
    assert study_rows(("fp16",), ("mi300x", "v100")) == [("fp32", None), ("fp16", None), ("fp16", "mi300x"),
                                                       ("fp16", "v100")]


def _unit(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_measures_on_made_up_embeddings():
    # Three pairs in 2-D: FP32's pair similarities are cos(0), cos(30), cos(60) degrees.
    ang = np.radians([0, 0, 0, 30, 0, 60])
    ref = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    same = compare(ref.astype(np.float32), ref.astype(np.float32), ["paraphrase", "near miss", "unrelated"])
    assert same["spearman"] == 1.0 and same["order_kept"] == 1.0 and same["top1_kept"] == 1.0
    assert same["max_dsim"] < 1e-7 and same["similarity"]["paraphrase"] == pytest.approx(1.0)
    # Move the second sentence of pair 3 to 20 degrees: pairs 2 and 3 swap (order of 1 of 3 pairs of pairs lost).
    moved = ref.copy()
    moved[5] = [np.cos(np.radians(20)), np.sin(np.radians(20))]
    got = compare(moved, ref, ["paraphrase", "near miss", "unrelated"])
    assert got["order_kept"] == pytest.approx(2 / 3) and got["spearman"] == pytest.approx(0.5)
    assert got["cos_min"] == pytest.approx(np.cos(np.radians(40))) and got["cos_mean"] == pytest.approx(
        (5 + np.cos(np.radians(40))) / 6)
    assert got["max_dsim"] == pytest.approx(np.cos(np.radians(20)) - 0.5)
    assert got["top1_kept"] == 1.0  # every first sentence sits at 0 degrees: pair 1's second stays nearest


def test_retrieval_kept():
    # Pair 1 at 0 and 10 degrees, pair 2 at 90 and 75; moving pair 2's second to 5 degrees makes it the
    # nearest second sentence of pair 1's first, and pair 1's second that of pair 2's first.
    def emb(deg):
        r = np.radians(deg)
        return np.stack([np.cos(r), np.sin(r)], axis=1)

    got = compare(emb([0, 10, 90, 5]), emb([0, 10, 90, 75]), ["paraphrase", "paraphrase"])
    assert got["top1_kept"] == 0.0 and got["order_kept"] == 1.0


def test_spearman_with_ties():
    assert spearman(np.array([1.0, 2.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(0.9486832980505138)
    assert spearman(np.ones(3), np.arange(3.0)) == 1.0


def test_pairs_data():
    assert len(PAIRS) == 32 and {k for k, _, _ in PAIRS} == set(KINDS)
    assert [sum(k == kind for k, _, _ in PAIRS) for kind in KINDS] == [12, 10, 10]
    lengths = [len(s.split()) for _, a, b in PAIRS for s in (a, b)]
    assert min(lengths) <= 4 and max(lengths) >= 20
    assert len(set(first_pairs(32))) == 32 and [k for k, _, _ in first_pairs(5)] == [*KINDS, *KINDS[:2]]


@pytest.fixture(scope="module")
def tiny():
    from train.bert.test_model import CFG, tiny_vocab

    from fpemu.train.bert.files import Bert, random_bert
    from fpemu.train.bert.tokenizer import WordPiece

    return Bert(CFG, random_bert(CFG, seed=5), WordPiece(tiny_vocab()), 32, "tiny")


def test_a_unit_with_the_same_model_runs_once(tiny):
    rows = [("fp32", None), ("bf16", "h100"), ("bf16", "b200"), ("e4m3", "h100"), ("e4m3", "b200")]
    done = []
    out = run_study(tiny, rows, first_pairs(4), done=done.append)
    assert [r["label"] for r in out] == ["fp32", "bf16@h100", "bf16@b200", "e4m3@h100", "e4m3@b200"] and done == out
    assert out[2]["same_as"] == "bf16@h100" and out[2]["pair_similarities"] == out[1]["pair_similarities"]
    assert out[4]["same_as"] is None  # B200 sums FP8 products with more bits than H100
    assert out[0]["cos_min"] == pytest.approx(1.0) and out[0]["spearman"] == 1.0
    table = study_table(out).splitlines()
    assert table[0].split()[:3] == ["precision", "GEMM", "sums"] and table[3].endswith("= bf16@h100")
    with pytest.raises(ValueError, match="the first row is the fp32 reference"):
        run_study(tiny, rows[1:], first_pairs(2))
    with pytest.raises(ValueError, match="h100 \\(hopper\\) has no block-scaled MMA"):
        run_study(tiny, [("fp32", None), ("mxfp4", "h100")], first_pairs(2))


def test_the_rows_are_the_same_on_one_thread_or_several(tiny):
    """Rows run side by side on threads; each row's arithmetic does not depend on it."""
    rows = [("fp32", None), ("bf16", None), ("e4m3", "h100"), ("mxfp4", None), ("nvfp4", "b200"), ("bf16", "b200")]
    steps = []
    one = run_study(tiny, rows, first_pairs(6), workers=1)
    four = run_study(tiny, rows, first_pairs(6), workers=4, step=lambda: steps.append(1))
    drop = ("time_s",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in one] == \
           [{k: v for k, v in r.items() if k not in drop} for r in four]
    assert len(steps) == study_steps(tiny, rows, first_pairs(6))  # every row counted once
