"""Tests of fpemu.train.cli: ``fpemu train`` compares, writes JSON and plots."""

from __future__ import annotations

import json

import pytest


# ---- CLI -------------------------------------------------------------------------------------
def test_cli_compare_json_and_plot(tmp_path, capsys):
    from fpemu.cli import main

    out = tmp_path / "h.json"
    assert main(["train", "--steps", "4", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    for label in ("fp32", "fp16+none", "fp16+dynamic", "bf16+none", "fp8+none"):
        assert label in table
    data = json.loads(out.read_text())
    assert [r["summary"]["run"] for r in data["runs"]][2] == "fp16+dynamic"
    assert len(data["runs"][1]["history"]["loss"]) == 4
    pytest.importorskip("matplotlib")
    assert main(["train", "-p", "fp16", "--steps", "3", "--plot", str(tmp_path / "img")]) == 0
    assert {p.name for p in (tmp_path / "img").iterdir()} == {"loss.png", "loss_scale.png", "grad_hist.png"}
    assert main(["train", "--precision", "fp16", "--loss-scale", "none", "--steps", "2", "--accumulator", "nope"]) == 2
