"""fpemu.torch.report: every number of a row counted by hand on a layer built to flush and
saturate known elements; the table and the JSON; the report of a whole model; bad input.
Skipped without torch."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import fpemu.torch as ft  # noqa: E402
from torch_helpers import F32, gemm_by_hand, inputs, net  # noqa: E402


def _layer():
    lin = nn.Linear(32, 4, bias=False)
    with torch.no_grad():
        lin.weight.fill_(0.5)  # quantized along K: amax 0.5, MXFP4 scale 2^(-1-2), 0.5 = 4 * 2^-3 exactly
    return lin


X = np.ones((2, 32), F32)
X[0, :3] = [7.0, 1e-4, 1.0]  # block amax 7: scale 2^(2-2) = 1, 7 saturates to 6, 1e-4 flushes to 0
X[0, 3:] = 0.0


def test_a_row_counted_by_hand():
    model = ft.emulate(nn.Sequential(_layer()), inputs="mxfp4", stats=True)
    for _ in range(2):
        y = model(torch.from_numpy(X)).detach().numpy()
    row = ft.report(model).rows[0]
    ref = X @ np.full((32, 4), 0.5, F32)  # exact in float32 here
    signal, noise = 2 * np.sum(ref.astype(np.float64) ** 2), 2 * np.sum((y - ref).astype(np.float64) ** 2)
    assert np.array_equal(y, gemm_by_hand("mxfp4", X, np.full((32, 4), 0.5, F32)))
    assert row["layer"] == "0" and row["kind"] == "linear" and row["precision"] == "mxfp4" and row["calls"] == 2
    assert row["sqnr_db"] == pytest.approx(10 * math.log10(signal / noise), rel=1e-12)
    assert row["x"] == {"elements": 128, "nonzero": 70, "amax": 7.0, "flushed": 2 / 70, "saturated": 2 / 70,
                        "scale_min": 0.25, "scale_max": 1.0}
    assert row["w"] == {"elements": 256, "nonzero": 256, "amax": 0.5, "flushed": 0.0, "saturated": 0.0,
                        "scale_min": 0.125, "scale_max": 0.125}


def test_the_table_and_the_json():
    model = ft.emulate(nn.Sequential(_layer(), nn.ReLU(), nn.Linear(4, 2, bias=False)), inputs="bf16",
                       recipe="autocast", stats=True)  # the first layer's output rounded to bf16
    with torch.no_grad():
        model[2].weight.copy_(torch.tensor([[1.0, 2.0, 0.0, 0.5], [0.25, 0.0, 0.0, 1.0]]))
    model(torch.from_numpy(X))
    text = str(ft.report(model))
    lines = text.splitlines()
    assert lines[0].split() == ["layer", "precision", "calls", "SQNR", "dB", "X", "amax", "X", "flush", "X", "sat",
                                "X", "scale", "W", "amax", "W", "flush", "W", "sat", "W", "scale"]
    assert set(lines[1]) == {"-", " "} and len(lines) == 4
    # the second layer's operands are bf16 values with exact products: its SQNR is infinite
    first = lines[2].split()
    assert first[:3] == ["0", "bf16/autocast", "1"] and float(first[3]) > 50 and first[4:] == ["7", "0", "0", "-", "0.5", "0", "0", "-"]
    assert lines[3].split()[:4] == ["2", "bf16/autocast", "1", "inf"]
    rows = json.loads(ft.report(model, json=True))
    assert [r["layer"] for r in rows] == ["0", "2"] and rows[1]["sqnr_db"] == "inf"
    assert rows[0]["x"]["scale_min"] is None  # bf16 has no scale
    assert ft.report(model).to_json() == ft.report(model, json=True)


def test_a_whole_model_with_attention():
    model = ft.emulate(net(), inputs="e4m3", recipe="current", stats=True)
    with ft.emulating(model):
        model(inputs())
    rows = ft.report(model).rows
    assert [r["layer"] for r in rows] == ["inp", "attn.qkv", "attn.out", "head", "attn.matmul.0", "attn.matmul.1"]
    assert [r["calls"] for r in rows] == [1, 1, 1, 1, 4, 4]  # one call per matrix of the batched products
    for r in rows:  # current scaling: the amax lands on 448, nothing saturates; E4M3 keeps ~30 dB
        assert r["x"]["saturated"] == 0 and r["w"]["saturated"] == 0 and 20 < r["sqnr_db"] < 40
        assert r["x"]["scale_min"] == pytest.approx(r["x"]["amax"] / 448, rel=1e-6) or r["calls"] > 1


def test_bad_input():
    with pytest.raises(ValueError, match="pass stats=True"):
        ft.report(ft.emulate(net(), inputs="bf16"))
    with pytest.raises(ValueError, match="no emulated layers"):
        ft.report(net())
    with pytest.raises(TypeError, match="report takes a model"):
        ft.report("model")
    with pytest.raises(TypeError, match="json must be True or False"):
        ft.report(ft.emulate(net(), inputs="bf16", stats=True), json="yes")
