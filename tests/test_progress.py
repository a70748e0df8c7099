"""fpemu.progress: where stderr is not a terminal (a pipe, a log, CI), every long command prints
a progress line every few seconds (issue 39, item 4), never on stdout, and none with --quiet."""

from __future__ import annotations

import pytest

import fpemu.progress
from fpemu.cli import main
from fpemu.progress import progress, step_lines


@pytest.fixture
def every_step(monkeypatch):
    monkeypatch.setattr(fpemu.progress, "LINES_EVERY_S", 0.0)  # a line at every step


def test_lines_where_stderr_is_not_a_terminal(every_step, capsys):
    with progress(3, "work") as step:
        for _ in range(3):
            step()
    err = capsys.readouterr().err.splitlines()
    assert [ln.split(" (")[0] for ln in err] == ["work: 1/3", "work: 2/3", "work: 3/3"]
    with progress(3, "work", enabled=False) as step:  # --quiet
        step()
    assert capsys.readouterr().err == ""


def test_a_short_run_stays_silent(capsys):
    with progress(3, "work", lines_every=3600.0) as step:
        step(3)
    show = step_lines(every=3600.0)
    show("fp32", 1, 10)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv,label", [
    (["gemm-error", "--k", "64", "--m", "4", "--n", "4"], "gemm-error: "),
    (["train", "--steps", "3", "--precision", "fp32"], "fp32: step "),
])  # fmt: skip
def test_long_commands_print_lines_to_a_pipe(every_step, capsys, argv, label):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.startswith(label)]
    assert lines and label not in out, err
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
