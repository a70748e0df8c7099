"""``fpemu train --task gpt`` and ``fpemu infer`` through the real entry point: tables, JSON,
and one-line errors before any training."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails

from fpemu.cli import main


def test_gpt_single_run_and_json(tmp_path, capsys):
    out = tmp_path / "g.json"
    assert main(["train", "--task", "gpt", "-p", "nvfp4", "--nvfp4-recipe", "2d,sr", "--steps", "2",
                 "--json-file", str(out)]) == 0
    table = capsys.readouterr().out
    assert "nvfp4[2d+sr]+none" in table and "what happened" in table
    data = json.loads(out.read_text())
    assert data["task"] == "gpt" and data["steps"] == 2
    assert data["runs"][0]["summary"]["task"] == "gpt" and len(data["runs"][0]["history"]["loss"]) == 2


def test_gpt_comparison_runs_every_policy(capsys):
    assert main(["train", "--task", "gpt", "--steps", "1"]) == 0
    got = capsys.readouterr()
    err, lines = got.err.splitlines(), got.out.splitlines()
    want = ["fp32", "fp16+dynamic", "bf16+none", "fp8[delayed]+none", "fp8[current]+none",
            "mxfp8+none", "nvfp4[2d+sr+rht+last1]+none", "nvfp4[plain]+none"]
    # stderr is not a terminal here: a line per run on stderr as it finishes; stdout: the table
    assert [ln.split()[1] for ln in err] == want and err[7].startswith("trained nvfp4[plain]+none (8/8) in ")
    assert lines[0].startswith("fpemu train: a 3-block transformer") and lines[1].startswith("Lesson: fp16 ")
    head = next(i for i, ln in enumerate(lines) if ln.startswith("run "))
    rows = lines[head + 1 : head + 1 + len(want)]
    assert [ln.split()[0] for ln in rows] == want and lines[head + 1 + len(want)] == ""
    assert rows[0].endswith("the baseline") and "fp32" in rows[1].split("  ")[-1]


def test_infer_quiet_and_no_bar_in_a_pipe(capsys):
    assert main(["infer", "--steps", "2", "--formats", "fp8", "--quiet"]) == 0
    got = capsys.readouterr()
    assert got.err == "" and got.out.splitlines()[1].startswith("format")


def test_infer_table(tmp_path, capsys):
    out = tmp_path / "i.json"
    assert main(["infer", "--steps", "3", "--formats", "nvfp4,fp8", "--json-file", str(out)]) == 0
    text = capsys.readouterr().out
    assert "perplexity" in text and "nvfp4" in text
    rows = json.loads(out.read_text())["rows"]
    assert [r["format"] for r in rows] == ["fp32", "nvfp4", "fp8"]
    assert rows[0]["perplexity_change"] == 0.0 and rows[1]["logit_rel_rms"] > 0


@pytest.fixture
def no_gpt_training(monkeypatch):
    def trained(setup):
        raise AssertionError("training started before the arguments and paths were checked")

    monkeypatch.setattr("fpemu.train.gpt.loop._loop", trained)


@pytest.mark.parametrize(
    "argv,status,says",
    [
        (["train", "--task", "gpt", "--nvfp4-recipe", "2d,hadamard"], 2, "unknown NVFP4 recipe element 'hadamard'"),
        (["train", "--task", "gpt", "-p", "fp8", "--promote", "128"], 2, "give --accumulator too"),
        (["train", "--task", "gpt", "-p", "mxfp8", "--accumulator", "h100"], 2, "not mxfp8"),
        (["train", "--task", "gpt", "--accumulator", "h100"], 2, "applies to a single run"),
        (["train", "--task", "gpt", "-p", "nvfp4", "--nvfp4-recipe", "last9"], 2, "keeps the last 9 blocks"),
        (["train", "--task", "gpt", "-p", "fp8", "--accumulator", "h100", "--promote", "0"], 2, "argument --promote: must be a whole number >= 1"),
        (["train", "--nvfp4-recipe", "all"], 2, "--nvfp4-recipe applies to --task gpt"),
        (["train", "--task", "gpt", "--steps", "0"], 2, "argument --steps: must be a whole number in 1..1000000"),
        (["train", "--task", "transformer"], 2, "invalid choice: 'transformer'"),
        (["infer", "--formats", "fp7"], 2, "unknown format 'fp7'"),
        (["infer", "--steps", "-1"], 2, "argument --steps: must be"),
        (["infer", "--json-file", "/nonexistent-dir/x.json"], 2, "cannot write --json-file"),
    ],
)
def test_bad_arguments_fail_in_one_line_before_training(argv, status, says, capsys, no_gpt_training):
    fails(argv, status, capsys, says=says)
