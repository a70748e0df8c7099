"""The command line never shows a traceback: every error is one line ``fpemu: error: ...``,
exit status 2 for a usage error and 1 for a failed run. Negative numbers are values.

Each subcommand's own bad files and values are tested beside it (test_*_cli_errors.py); this
file sweeps every registered subcommand with bad arguments, and covers the core commands.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from fpemu.cli import _register_feature_commands, build_parser, main


def subcommands() -> list[str]:
    _register_feature_commands()
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(status: int, err: str, expected_status: int) -> str:
    assert status == expected_status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fpemu: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_every_command_is_swept():
    assert {"formats", "show", "table", "mx", "gemm-error", "train", "crosscheck", "fit", "probe",
            "vectors"} <= set(subcommands())


def required_arguments(command: str) -> list[str]:
    """Placeholder values for a subcommand's required arguments."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    argv = []
    for action in sub._actions:
        if action.required:
            argv += ([action.option_strings[0]] if action.option_strings else []) + ["1"]
    return argv


@pytest.mark.parametrize("command", subcommands())
def test_unknown_option_is_a_one_line_usage_error(capsys, command):
    status, _, err = run(capsys, command, *required_arguments(command), "--no-such-option")
    line = assert_one_line_error(status, err, 2)
    assert command in line and "--no-such-option" in line


def bad_format_argv(command: str, out: str = "unused.npz") -> list[str] | None:
    """The command with its required arguments (``out`` for --out) and an unknown format, or
    None."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    argv, named = [command], False
    for action in sub._actions:
        is_format = action.dest in ("format", "inputs")
        if is_format and command != "fit":  # fit --inputs reads a file first
            argv += action.option_strings[:1] + ["fp9"]
            named = True
        elif action.required:
            argv += action.option_strings[:1] + [out if action.dest == "out" else "1"]
    return argv if named else None


FORMAT_COMMANDS = [c for c in subcommands() if bad_format_argv(c)]


def test_commands_that_take_a_format():
    assert {"show", "table", "mx", "gemm-error", "probe", "vectors"} <= set(FORMAT_COMMANDS)


@pytest.mark.parametrize("command", FORMAT_COMMANDS)
def test_unknown_format_is_a_one_line_usage_error(capsys, tmp_path, command):
    out = tmp_path / "v.npz"
    status, _, err = run(capsys, *bad_format_argv(command, str(out)))
    assert_one_line_error(status, err, 2)
    assert "fp9" in err and not out.exists()


def test_no_command_prints_help(capsys):
    status, out, err = run(capsys)
    assert status == 0 and "COMMAND" in out and not err


def test_unknown_command(capsys):
    status, _, err = run(capsys, "frobnicate")
    assert "invalid choice" in assert_one_line_error(status, err, 2)


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["show", "-3e-5", "-f", "e4m3"], "-3e-5 in e4m3"),  # the input as typed (read exactly)
        (["show", "-inf", "-f", "e5m2"], "-inf in e5m2"),
        (["show", "-nan", "-f", "bf16"], "-nan in bf16"),
        (["show", "-0x1.8p1", "-f", "e2m1"], "-0x1.8p1 in e2m1"),
        (["show", "-1/3", "-f", "bf16"], "-1/3 in bf16"),
        (["show", "-.5", "-f", "e2m1"], "-.5 in e2m1"),
    ],
)
def test_negative_numbers_are_values(capsys, argv, shown):
    status, out, err = run(capsys, *argv, "--no-color")
    assert status == 0 and not err
    assert out.splitlines()[0].startswith(shown)


def test_negative_numbers_in_a_list(capsys):
    status, out, err = run(capsys, "mx", "-3,1", "-f", "mxfp4")
    assert status == 0 and not err and "block 0" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["show", "abc", "-f", "e4m3"], "cannot read 'abc'"),
        (["show", "1/0", "-f", "e4m3"], "cannot read '1/0'"),
        (["show", "nan", "-f", "e2m1"], "NaN"),
        (["show", "1", "-f", "e4m3", "-r", "sideways"], "invalid choice: 'sideways'"),
        (["show", "1", "-f", "e4m3", "-o", "inf"], "has no Inf"),
        (["table", "fp16"], "at most 8 bits"),
    ],
)
def test_core_commands_refuse_bad_values(capsys, argv, needle):
    status, _, err = run(capsys, *argv)
    assert needle in assert_one_line_error(status, err, 2)


def test_internal_errors_are_one_line_and_status_1(capsys, monkeypatch):
    import fpemu.cli as cli

    def broken(args):
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "cmd_formats", broken)
    status, _, err = run(capsys, "formats")
    line = assert_one_line_error(status, err, 1)
    assert "internal error" in line and "FPEMU_TRACEBACK=1" in line


def test_console_script_exit_status():
    done = subprocess.run([sys.executable, "-m", "fpemu", "show", "1", "-f", "nope"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("fpemu: error: unknown format 'nope'")
    assert "Traceback" not in done.stderr
