"""The command line never shows a traceback: every error is one line ``fpemu: error: ...``,
exit status 2 for a usage error and 1 for a failed run. Negative numbers are values.

Each subcommand's own bad files and values are tested beside it (test_*_cli_errors.py); this
file sweeps every registered subcommand with bad arguments, and covers the core commands.
"""

from __future__ import annotations

import json
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


def test_no_command_is_a_usage_error_with_the_help_on_stderr(capsys):
    """``fpemu`` alone (issue 42, item 6): the help, on stderr, and status 2 as any usage error."""
    status, out, err = run(capsys)
    assert status == 2 and "COMMAND" in err and not out
    assert "exit status: 0 done; 2 a usage error" in " ".join(err.split())  # the rule, where a user looks first
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "COMMAND" in out


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


# ---- issue 42, item 5: messages name the command line's flags, not Python's parameters ---------------
def numeric_options() -> list[tuple[str, str]]:
    """(command, --flag) of every option that takes a number."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    found = []
    for command, sub in sorted(commands.items()):
        for action in sub._actions:
            parse = action.type
            if parse in (int, float) or getattr(parse, "__qualname__", "").startswith("whole_number"):
                found.append((command, next(o for o in action.option_strings if o.startswith("--"))))
    return found


def test_no_option_takes_a_bare_int():
    """Each whole-number option has its range in its parser (arguments.whole_number), so that
    the error names the flag before any work."""
    parser = build_parser()
    for command, sub in next(a for a in parser._actions if a.dest == "command").choices.items():
        bare = [a.option_strings for a in sub._actions if a.type is int]
        assert not bare, (command, bare)
    assert ("train", "--steps") in numeric_options() and ("show", "--sr-bits") in numeric_options()


PLACEHOLDERS = {"show": ["1", "-f", "e4m3"], "mx": ["1,2"], "vectors": ["e4m3", "--out", "unused.npz"]}


@pytest.mark.parametrize("command, flag", numeric_options())
def test_a_bad_number_is_refused_naming_its_flag(capsys, command, flag):
    status, _, err = run(capsys, command, *PLACEHOLDERS.get(command, []), flag, "-1")
    line = assert_one_line_error(status, err, 2)
    assert flag in line, line
    for parameter in ("rng", "sr_bits", "init_scale", "growth_interval", "block size must"):
        assert parameter not in line, line


@pytest.mark.parametrize("argv, says", [
    (["show", "1", "-f", "e4m3", "--seed", "5"], "--seed applies to the stochastic roundings (-r stochastic, "),
    (["show", "1", "-f", "e4m3", "-r", "stochastic_a", "--sr-bits", "99"],
     "show: argument --sr-bits: must be a whole number in 1..32, got '99'"),
    (["show", "1", "-f", "e4m3", "-r", "stochastic_b"], "-r stochastic_b needs --sr-bits N"),
    (["vectors", "e4m3", "--rounding", "stochastic_a", "--out", "unused.npz"],
     "--rounding stochastic_a rounds with random bits given per value, which fpemu vectors does not take"),
    (["mx", "1,2", "-f", "nvfp4", "--scale-rounding", "rceil"], "--scale-rounding applies to MX formats, not to nvfp4"),
    (["gemm-error", "--accumulator", "nope"], "unknown accumulator 'nope'; did you mean hopper? `fpemu accumulators` lists the rest"),
    (["mx", "1,2,3", "-f", "e4m3"], "unknown block format 'e4m3'; did you mean mxfp8_e4m3? choose one of mxfp8_e4m3,"),
])  # fmt: skip
def test_messages_name_flags_and_listed_names(capsys, argv, says):
    status, _, err = run(capsys, *argv)
    assert says in assert_one_line_error(status, err, 2)


def test_accumulators_lists_the_names_the_errors_point_to(capsys):
    from fpemu.accumulator import accumulator_names

    status, out, err = run(capsys, "accumulators")
    assert status == 0 and not err
    listed = out.split()
    assert set(accumulator_names()) <= set(listed)
    assert "h100" in listed and "mmasim-blackwell" in listed and max(map(len, out.splitlines())) <= 80
    status, out, _ = run(capsys, "accumulators", "--json")
    assert status == 0 and json.loads(out) == {"dense": accumulator_names(block_scaled=False),
                                                 "block_scaled": accumulator_names(block_scaled=True)}


# ---- issue 42, item 6: one exit-code rule (2 usage, 1 a failed run) ---------------------------------
def missing_path_commands(tmp_path) -> list[list[str]]:
    gone = tmp_path / "no" / "such"
    commands = [["verify", str(tmp_path / "missing.npz")], ["verify", str(tmp_path)],
                ["vectors", "e4m3", "--out", str(gone / "x.npz")], ["fit", str(tmp_path / "missing_e4m3.npz")],
                ["mx", str(tmp_path / "missing.npy")], ["train", "--json-file", str(gone / "x.json")],
                ["crosscheck", "--backend", "numpy", "--n", "1", "--json-file", str(gone / "x.json")]]
    try:
        import matplotlib  # noqa: F401  (plot checks matplotlib before its output path)

        commands += [["plot", "e4m3", "--out", str(gone / "x.png")], ["train", "--plot", str(gone / "dir")]]
    except ImportError:
        pass
    return commands


def test_a_path_that_does_not_exist_is_a_usage_error(capsys, tmp_path):
    """A file or directory given on the command line that is not there, or is the wrong kind
    (a directory for a file), is what was typed being wrong: status 2, as any bad value."""
    for argv in missing_path_commands(tmp_path):
        status, _, err = run(capsys, *argv)
        line = assert_one_line_error(status, err, 2)
        assert str(tmp_path) in line, (argv, line)
    assert not (tmp_path / "no").exists()


def test_a_missing_optional_package_is_a_failed_run(capsys):
    from argparse import Namespace

    from fpemu.cli import run_command
    from fpemu.errors import optional_module

    status = run_command(Namespace(func=lambda args: optional_module("no_such_package", "fpemu example")))
    line = assert_one_line_error(status, capsys.readouterr().err, 1)
    assert line == "fpemu: error: fpemu example needs no_such_package, which is not installed: pip install no_such_package"


def test_the_rule_is_written_where_users_read_it():
    """One rule, in one place (fpemu.cli.EXIT_RULE): fpemu --help ends with it and docs/cli.md
    states it."""
    from pathlib import Path

    from fpemu.cli import EXIT_RULE

    help_text = " ".join(build_parser().format_help().split())
    assert EXIT_RULE in help_text
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    assert EXIT_RULE in " ".join(page.split())
