"""scripts/minilm_bridge.py (the NumPy MiniLM encoder against the same through the torch bridge)
on the tiny random BERT: what it counts is what it says, and the report it prints."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from script_helpers import load_script  # noqa: E402
from train.bert.test_model import CFG, TEXTS, tiny_vocab  # noqa: E402

from fpemu.train.bert import load_bert, random_bert, write_bert  # noqa: E402

script = load_script("scripts/minilm_bridge.py")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = write_bert(tmp_path_factory.mktemp("tiny"), CFG, random_bert(CFG, seed=3), tiny_vocab(), max_seq_length=24)
    return load_bert(d)


def test_ulps_of_amax():
    y = np.float32([4.0, 1e-9, -2.0])
    assert script.ulps_of_amax(y, y) == 0.0
    assert script.ulps_of_amax(np.float32([4.0, -1e-9, -2.0]), y) == pytest.approx(2e-9 / 2.0**-21)  # not 2^30 ulps
    assert script.ulps_of_amax(np.float32([4.0, 1e-9, -2.0 - 2.0**-22]), y) == 0.5
    assert script.ulps_of_amax(np.float32([4.0 + 2.0**-21, 1e-9, -2.0]), y) == 1.0


def test_agreement_counts_every_linear_layer(tiny, capsys):
    texts = TEXTS[:4]
    rows = script.agreement(tiny, texts, [("fp32", None), ("e4m3", None), ("mxfp4", "b200")])
    assert [r["label"] for r in rows] == ["e4m3", "mxfp4@b200"]
    layers = 6 * CFG.num_hidden_layers
    e4m3, unit = rows
    assert e4m3["layers"] == unit["layers"] == layers
    assert e4m3["same_torch_product"] == layers and unit["same_torch_product"] is None
    assert unit["same"] == layers and unit["max_ulps_of_amax"] == 0
    assert e4m3["pair_similarity_diff_torch_product"] >= 0 and unit["pair_similarity_diff_torch_product"] is None
    assert 0 <= e4m3["embedding_diff"] <= 0.25 * e4m3["numpy_to_fp32"]
    assert capsys.readouterr().out.startswith("e4m3          12/12      12/12     0")


def test_the_report(tiny, capsys):
    out = script.reports(tiny, TEXTS, ["nvfp4"])
    rows = out["nvfp4"]["rows"]
    assert len(rows) == 6 * CFG.num_hidden_layers and {r["calls"] for r in rows} == {1}
    assert rows[0]["layer"] == "encoder.layer.0.attention.self.query" and rows[0]["precision"] == "nvfp4/plain"
    assert "fpemu.torch.report, nvfp4 (formats only)" in capsys.readouterr().out
