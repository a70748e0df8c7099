"""Tests of fpemu.train.cli: ``fpemu train`` compares, writes JSON and plots."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fpemu import train as T
from fpemu.cli import main


# ---- CLI -------------------------------------------------------------------------------------
def test_cli_compare_json_and_plot(tmp_path, capsys):
    from fpemu.cli import main

    out = tmp_path / "h.json"
    assert main(["train", "--steps", "4", "--json-file", str(out)]) == 0
    table = capsys.readouterr().out
    for label in ("fp32", "fp16+none", "fp16+dynamic", "bf16+none", "fp8[delayed]+none"):
        assert label in table
    data = json.loads(out.read_text())
    assert [r["summary"]["run"] for r in data["runs"]][2] == "fp16+dynamic"
    assert len(data["runs"][1]["history"]["loss"]) == 4
    pytest.importorskip("matplotlib")
    assert main(["train", "-p", "fp16", "--steps", "3", "--plot", str(tmp_path / "img")]) == 0
    assert {p.name for p in (tmp_path / "img").iterdir()} == {"lesson.png", "loss.png", "loss_scale.png", "grad_hist.png"}
    assert main(["train", "--precision", "fp16", "--loss-scale", "none", "--steps", "2", "--accumulator", "nope"]) == 2


def test_cli_line_per_run_when_stderr_is_not_a_terminal(capsys):
    from fpemu.cli import main

    assert main(["train", "--steps", "2"]) == 0
    got = capsys.readouterr()
    lines = got.err.splitlines()  # no bar (stderr is not a terminal): a line per run, on stderr
    assert [ln.split(" (")[0] for ln in lines] == [
        "trained fp32", "trained fp16+none", "trained fp16+dynamic", "trained bf16+none", "trained fp8[delayed]+none",
        "trained fp8[unscaled]+none"]
    assert lines[5].startswith("trained fp8[unscaled]+none (6/6) in ") and got.out.startswith("fpemu train: an MLP ")
    assert main(["train", "-p", "bf16", "--steps", "2", "--quiet"]) == 0
    got = capsys.readouterr()
    assert got.out.startswith("fpemu train: an MLP ") and "\nrun " in got.out and got.err == ""


def test_cli_lines_reach_a_pipe_as_each_run_finishes():
    import subprocess
    import sys
    import time

    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "fpemu", "train", "--steps", "60"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    at_first = time.monotonic() - start
    rest, table = proc.stderr.read(), proc.stdout.read()
    assert proc.wait() == 0
    assert first.startswith("trained fp32 (1/6) in ") and "trained fp8[unscaled]+none (6/6)" in rest
    assert "what happened" in table
    assert "trained" not in table
    # fp32 is the first and fastest of six runs: its line comes long before the end (not buffered)
    assert at_first < 0.6 * (time.monotonic() - start)


def test_lesson_figure_and_sentences():
    from fpemu.train.report import what_happened

    task = T.make_task(0, n_train=2048, batch_size=256)
    base = T.run("fp32", steps=4, task=task)
    h = T.run("fp16", "dynamic", 6, 0, task=task, init_scale=2.0**30)
    assert h.skipped[:3].all()
    said = what_happened(h, None)  # no baseline: no excess loss in the sentence
    assert f"scale 2^{int(np.log2(h.scale.min()))}..2^30, {int(h.skipped.sum())} steps skipped" in said
    assert "vs fp32" not in said
    assert what_happened(base, base) == "the baseline"
    pytest.importorskip("matplotlib")
    from fpemu.train.lesson import excess_curve

    other = T.run("fp16", "none", 4, 0, task=task)
    ex = excess_curve(other, base, 1)
    assert ex.shape == (4,) and np.allclose(ex, 100 * (other.loss / base.loss - 1))


# Regressions (each failed on the code before its fix): progress lines kept out of a piped stdout.
# ---- 8. progress lines go to stderr ---------------------------------------------------------------
def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fpemu", *argv], capture_output=True, text=True, timeout=300)


def test_train_lines_per_run_go_to_stderr():
    got = _run("train", "--steps", "2")
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("fpemu train: ") and "trained" not in got.stdout
    assert "trained fp32 (1/6) in " in got.stderr and "trained fp8[unscaled]+none (6/6) in " in got.stderr
    got = _run("train", "--steps", "2", "--json")
    assert got.returncode == 0 and len(json.loads(got.stdout)["runs"]) == 6
    assert "trained fp8[unscaled]+none (6/6)" in got.stderr


def test_gpt_and_infer_lines_go_to_stderr(capsys):
    assert main(["train", "--task", "gpt", "--steps", "1"]) == 0
    got = capsys.readouterr()
    assert got.out.startswith("fpemu train: a 3-block transformer") and "trained" not in got.out
    assert got.err.count("trained ") == 8 and "(8/8)" in got.err
    got = _run("infer", "--steps", "2", "--formats", "fp8", "--json")
    assert got.returncode == 0 and [r["format"] for r in json.loads(got.stdout)["rows"]] == ["fp32", "fp8"]


def test_train_plot_lines_go_to_stderr(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["train", "-p", "fp16", "--steps", "2", "--plot", str(tmp_path / "img"), "--json"]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["runs"][0]["summary"]["run"] == "fp16+dynamic"
    assert f"wrote {tmp_path / 'img' / 'lesson.png'}" in got.err
