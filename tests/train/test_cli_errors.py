"""``fpemu train`` with bad arguments and bad output paths, through the
real entry point ``fpemu.cli.main``: the right exit status (2: a bad argument value, 1: a run
that cannot finish, such as an unwritable file), exactly one ``fpemu: error:`` line naming the
file where there is one, no traceback, no warning, and nothing trained or written first."""

from __future__ import annotations

import os
import sys

import pytest

from fpemu.cli import main

from cli_helpers import fails


@pytest.fixture(autouse=True)
def no_training(monkeypatch):
    """Every case here must fail before training starts (training takes ~30 s)."""

    def trained(setup):
        raise AssertionError("training started before the arguments and paths were checked")

    monkeypatch.setattr("fpemu.train.loop._train_loop", trained)  # where train_setup looks it up
    monkeypatch.setattr("fpemu.train.gpt.loop._loop", trained)


# ---- train: bad values (usage errors, 2) --------------------------------------------------------
@pytest.mark.parametrize(
    "argv,says",
    [
        (["--steps", "0"], "argument --steps: must be a whole number in 1..1000000, got '0'"),
        (["--steps", "-3"], "argument --steps: must be"),
        (["--steps", "1000000000000"], "got '1000000000000'"),
        (["--steps", "1.5"], "argument --steps: must be a whole number"),
        (["--seed", "-1"], "argument --seed: must be a whole number >= 0"),
        (["--init-scale", "1e39"], "--init-scale must be a positive number whose float32 value"),
        (["-p", "fp16", "--init-scale", "1e39"], "--init-scale must be"),
        (["-p", "fp16", "--loss-scale", "static", "--init-scale", "1e39"], "--init-scale must be"),
        (["--init-scale", "nan"], "--init-scale must be"),
        (["--init-scale", "-inf"], "--init-scale must be"),
        (["--init-scale", "0"], "--init-scale must be"),
        (["--init-scale", "-1024"], "--init-scale must be"),
        (["--init-scale", "1e-45"], "--init-scale must be"),
        (["--init-scale", "big"], "invalid float value"),
        (["--growth-interval", "0"], "argument --growth-interval: must be a whole number >= 1"),
        (["--growth-interval", "-5"], "argument --growth-interval: must be"),
        (["-p", "fp32", "--accumulator", "h100"], "not fp32"),
        (["-p", "fp16", "--accumulator", "nope"], "unknown accumulator 'nope'"),
        (["-p", "bf16", "--accumulator", "v100"], "v100 (volta) has no bf16 inputs"),
        (["--accumulator", "nope"], "unknown accumulator 'nope'"),
        (["-p", "nvfp4", "--accumulator", "h100"], "not nvfp4"),
        (["--loss-scale", "static"], "--loss-scale sets the loss scaling of a single run"),
        (["--compare", "-p", "fp16"], "--compare runs the default comparison"),
        (["-p", "fp17"], "invalid choice: 'fp17'"),
        (["--fp8-recipe", "later"], "invalid choice: 'later'"),
        (["--fp8-recipe", "current"], "--fp8-recipe does not apply to the mlp comparison, which runs fp8 with "
                                      "delayed scaling and without per-tensor scaling"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_train_bad_values_are_usage_errors(argv, says, capsys, tmp_path):
    out = tmp_path / "h.json"
    fails(["train", *argv, "--json-file", str(out)], 2, capsys, says=says)
    assert not out.exists()  # refused before anything was written


@pytest.mark.parametrize("argv", [[], ["-p", "fp16", "--accumulator", "v100", "--loss-scale", "none"],
                                  ["-p", "fp8", "--fp8-recipe", "current", "--steps", "1000000"],
                                  ["-p", "fp8", "--fp8-recipe", "unscaled"]])
def test_valid_arguments_reach_training(argv, monkeypatch, tmp_path):
    """The control: when everything checks out, training is reached (and stopped there), and
    a --json-file path that was only probed is not left behind."""
    monkeypatch.setenv("FPEMU_TRACEBACK", "1")  # let the stub's AssertionError through
    target = tmp_path / "h.json"
    with pytest.raises(AssertionError, match="training started"):
        main(["train", *argv, "--json-file", str(target)])
    assert not target.exists()


# ---- train: output paths: missing or the wrong kind (usage, 2); not writable (a failed run, 1) --------
def test_json_file_path_is_a_directory(tmp_path, capsys):
    line = fails(["train", "--json-file", str(tmp_path)], 2, capsys, names=str(tmp_path))
    assert "--json-file" in line and "is a directory" in line


def test_json_file_path_in_a_missing_directory(tmp_path, capsys):
    target = tmp_path / "missing" / "h.json"
    line = fails(["train", "--json-file", str(target)], 2, capsys, names=str(target))
    assert "No such file or directory" in line
    assert not (tmp_path / "missing").exists()


def test_json_file_path_below_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    target = tmp_path / "f" / "h.json"
    fails(["train", "--json-file", str(target)], 2, capsys, names=str(target), says="Not a directory")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_json_file_path_not_writable(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        fails(["train", "--json-file", str(locked / "h.json")], 1, capsys, names=str(locked / "h.json"),
              says="Permission denied")
    finally:
        locked.chmod(0o700)


def test_json_file_check_leaves_an_existing_file_alone(tmp_path, capsys):
    target = tmp_path / "h.json"
    target.write_text("old")
    fails(["train", "--json-file", str(target), "--steps", "0"], 2, capsys)  # bad value: nothing touched
    assert target.read_text() == "old"


def test_plot_path_is_a_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "plot.png"
    target.write_text("x")
    line = fails(["train", "--plot", str(target)], 2, capsys, names=str(target))
    assert "--plot" in line and "not a directory" in line


def test_plot_path_below_a_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "f").write_text("x")
    target = tmp_path / "f" / "img"
    fails(["train", "--plot", str(target)], 2, capsys, names=str(tmp_path / "f"))


def test_plot_file_inside_is_a_directory(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "img" / "loss.png").mkdir(parents=True)
    fails(["train", "--plot", str(tmp_path / "img")], 2, capsys, names=str(tmp_path / "img" / "loss.png"),
          says="is a directory")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_plot_directory_not_writable(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        fails(["train", "--plot", str(locked)], 1, capsys, names=str(locked), says="Permission denied")
    finally:
        locked.chmod(0o700)


def test_plot_without_matplotlib(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    fails(["train", "--plot", str(tmp_path / "img")], 1, capsys, says="--plot needs matplotlib")


def test_ctrl_c_during_training_leaves_no_plot_directory(tmp_path, capsys, monkeypatch):
    """The --plot directory is checked before training but made only when the plots are
    written: Ctrl-C during the runs leaves no empty directory behind (issue 42, item 9)."""
    pytest.importorskip("matplotlib")

    def interrupted(setup):
        raise KeyboardInterrupt

    monkeypatch.setattr("fpemu.train.loop._train_loop", interrupted)
    target = tmp_path / "plots"
    assert main(["train", "--plot", str(target)]) == 130
    assert capsys.readouterr().err == "fpemu: error: interrupted\n"
    assert not target.exists()


# Regressions (each failed on the code before its fix): options that apply only to other options' values.
@pytest.mark.parametrize(
    "argv,says",
    [
        (["-p", "bf16", "--fp8-recipe", "current"], "--fp8-recipe applies to --precision fp8"),
        (["-p", "bf16", "--fp8-recipe", "delayed"], "--fp8-recipe applies to --precision fp8"),
        (["-p", "fp16", "--loss-scale", "none", "--init-scale", "8"], "--init-scale applies to"),
        (["-p", "bf16", "--init-scale", "8"], "--init-scale applies to"),
        (["-p", "fp16", "--loss-scale", "static", "--growth-interval", "10"], "--growth-interval applies to"),
        (["-p", "bf16", "--growth-interval", "2000"], "--growth-interval applies to"),
        (["-p", "fp32", "--loss-scale", "dynamic"], "--loss-scale dynamic does not apply to --precision fp32"),
        (["-p", "fp32", "--loss-scale", "static", "--init-scale", "4"], "does not apply to --precision fp32"),
        (["-p", "fp32", "--growth-interval", "10"], "--growth-interval applies to"),
        (["--task", "gpt", "-p", "bf16", "--fp8-recipe", "current"], "--fp8-recipe applies to --precision fp8"),
        (["--task", "gpt", "--fp8-recipe", "current"], "--fp8-recipe does not apply to the gpt comparison"),
        (["--task", "gpt", "-p", "fp16", "--nvfp4-recipe", "2d"], "--nvfp4-recipe applies to --precision nvfp4"),
        (["--task", "gpt", "-p", "fp32", "--loss-scale", "static"], "does not apply to --precision fp32"),
        (["--task", "gpt", "-p", "bf16", "--init-scale", "4"], "--init-scale applies to"),
        (["--task", "gpt", "-p", "fp16", "--loss-scale", "static", "--growth-interval", "5"],
         "--growth-interval applies to"),
    ],
)
def test_train_refuses_options_that_do_not_apply(argv, says, capsys, no_training):
    fails(["train", *argv], 2, capsys, says=says)


@pytest.mark.parametrize("argv", [["-p", "fp16", "--growth-interval", "10"], ["-p", "fp16", "--loss-scale", "static",
                                  "--init-scale", "8"], ["-p", "fp8", "--fp8-recipe", "unscaled"], ["--init-scale", "8"],
                                  ["--growth-interval", "10"], ["-p", "fp32", "--loss-scale", "none"],
                                  ["-p", "fp8", "--fp8-recipe", "delayed"], ["-p", "bf16", "--loss-scale", "dynamic",
                                  "--growth-interval", "10", "--init-scale", "2"],
                                  ["--task", "gpt", "-p", "fp8", "--fp8-recipe", "current"],
                                  ["--task", "gpt", "--nvfp4-recipe", "none"], ["--task", "gpt", "--init-scale", "8"],
                                  ["--task", "gpt", "-p", "nvfp4", "--nvfp4-recipe", "2d"]])
def test_train_options_that_apply_reach_training(argv, monkeypatch, no_training):
    monkeypatch.setenv("FPEMU_TRACEBACK", "1")
    with pytest.raises(AssertionError, match="training started"):
        main(["train", *argv])


def test_infer_refuses_empty_format_fields(capsys, no_training):
    fails(["infer", "--formats", "nvfp4,,fp8"], 2, capsys, says="--formats: field 2 of 'nvfp4,,fp8' is empty")


# ---- 5. train --plot in a missing directory --------------------------------------------------------
def test_train_plot_in_a_missing_directory(tmp_path, capsys, no_training):
    pytest.importorskip("matplotlib")
    target = tmp_path / "missing" / "dir" / "img"
    fails(["train", "--plot", str(target)], 2, capsys, names=str(target), says="does not exist")
    assert not (tmp_path / "missing").exists()


def test_train_plot_takes_a_directory_not_an_image_name(tmp_path, capsys, no_training):
    pytest.importorskip("matplotlib")
    fails(["train", "--plot", str(tmp_path / "x.png")], 2, capsys, says="--plot takes a directory")
    assert not (tmp_path / "x.png").exists()


def test_json_file_is_checked_before_the_work(tmp_path, capsys, no_training):
    target = tmp_path / "missing" / "o.json"
    for argv in (["train"], ["infer"], ["crosscheck", "--backend", "numpy", "--n", "10"]):
        line = fails([*argv, "--json-file", str(target)], 2, capsys, names=str(target))
        assert argv[0] == "crosscheck" or "--json-file" in line
