"""The core CLI commands: formats, show, table, and their error handling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fpemu.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_formats_lists_every_format(capsys):
    code, out, _ = run(capsys, "formats")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "e4m3" in rows and "448" in rows["e4m3"]
    assert "57344" in rows["e5m2"] and "240" in rows["e4m3fnuz"]
    assert "1.7014118e+38" in rows["e8m0"] and "2^-127" in rows["e8m0"] and "binary8p3se" in rows


def test_show_explains_fields_and_error(capsys):
    code, out, _ = run(capsys, "show", "0.3", "--format", "e4m3")
    assert code == 0
    assert "0x2A = 0 0101 010" in out
    assert "value     0.3125" in out
    assert "relative ≈+4.17%" in out


def test_show_overflow_options(capsys):
    _, out, _ = run(capsys, "show", "1000", "-f", "e4m3")
    assert "0x7F" in out and "nan" in out
    _, out, _ = run(capsys, "show", "1000", "-f", "e4m3", "--overflow", "saturate")
    assert "0x7E" in out and "448.0" in out


def test_show_reads_hex_floats_and_fractions(capsys):
    _, out, _ = run(capsys, "show", "0x1.8p1", "-f", "e2m1")
    assert "value     3.0" in out
    _, out, _ = run(capsys, "show", "1/3", "-f", "bf16")
    assert "value     0.333984375" in out


def test_table_lists_every_code(capsys):
    code, out, _ = run(capsys, "table", "e2m1")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 + 16
    assert lines[-1].split()[-2:] == ["-6", "normal"]
    assert "0x9" in lines[2 + 9] and "-0.5" in lines[2 + 9] and "subnormal" in lines[2 + 9]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "1", "-f", "fp9"], "unknown format 'fp9'"),
        (["show", "abc", "-f", "e4m3"], "cannot read 'abc' as a number"),
        (["show", "1", "-f", "e2m1", "--overflow", "inf"], "has no Inf"),
        (["show", "nan", "-f", "e2m1"], "1 NaN value"),
        (["table", "bf16"], "at most 8 bits"),
        (["show", "1", "-f", "e4m3", "-r", "banana"], "invalid choice: 'banana'"),
    ],
)
def test_errors_print_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("fpemu: error: ") and message in err
    assert err.count("\n") == 1


def test_console_script_help_lists_subcommands():
    done = subprocess.run([sys.executable, "-m", "fpemu", "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for command in ("formats", "show", "table", "mx", "gemm-error", "train", "crosscheck", "fit",
                    "probe", "vectors"):
        assert command in done.stdout


def test_formats_doc_is_fresh():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_formats_doc.py"), "--check"],
        capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)},  # uninstalled too
    )
    assert done.returncode == 0, done.stderr


def test_version(capsys):
    from fpemu import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"fpemu {__version__}"


def test_json_output_of_the_core_commands(capsys):
    import json

    assert main(["show", "0.3", "-f", "e4m3", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["code"], record["code_hex"], record["value"]) == (0x2A, "0x2A", 0.3125)
    assert main(["show", "1e9", "-f", "e4m3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == "nan"  # valid JSON: NaN as text
    assert main(["table", "e2m1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 16 and rows[15] == {"code": 15, "bits": "1 11 1", "value": -6.0, "class": "normal"}
    assert main(["formats", "--json"]) == 0
    formats = {f["name"]: f for f in json.loads(capsys.readouterr().out)}
    assert formats["e4m3"]["max"] == 448.0 and formats["e8m0"]["subnormals"] is False


def test_help_lists_the_choices(capsys):
    assert main(["show", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("nearest_away", "stochastic_a", "sat_none", "ones_with_sign", "ml_dtypes"):
        assert name in out


def test_show_stochastic_seed_repeats_and_draws_both_neighbours(capsys):
    """-r stochastic --seed N: one seed, one result (as fpemu.encode with rng=N); over seeds
    0.3 in e4m3 goes to each of its neighbours 0.28125 and 0.3125 (probability 0.4 and 0.6)."""
    import fpemu

    values = set()
    for seed in range(12):
        code, out, _ = run(capsys, "show", "0.3", "-f", "e4m3", "-r", "stochastic", "--seed", str(seed), "--json")
        assert code == 0
        shown = json.loads(out)
        again = json.loads(run(capsys, "show", "0.3", "-f", "e4m3", "-r", "stochastic", "--seed", str(seed),
                               "--json")[1])
        assert again["code"] == shown["code"] == int(fpemu.encode("0.3", "e4m3", rounding="stochastic", rng=seed))
        values.add(shown["value"])
    assert values == {0.28125, 0.3125}
    code, out, _ = run(capsys, "show", "0.3", "-f", "e4m3", "-r", "stochastic_a", "--sr-bits", "2", "--seed", "1")
    assert code == 0 and "stochastic_a with 2 random bits takes 0.3125 with probability 0.5" in out


@pytest.mark.parametrize("argv, message", [
    (["--seed", "3"], "--seed applies to the stochastic roundings (-r stochastic, "),
    (["-r", "stochastic", "--sr-bits", "4"], "--sr-bits applies to -r stochastic_a, "),
    (["-r", "stochastic_a"], "-r stochastic_a needs --sr-bits N"),
    (["-r", "stochastic_a", "--sr-bits", "99"], "argument --sr-bits: must be a whole number in 1..32, got '99'"),
    (["-r", "stochastic", "--seed", "-5"], "argument --seed: must be a whole number >= 0, got '-5'"),
])
def test_show_seed_and_sr_bits_refuse_what_does_not_apply(capsys, argv, message):
    code, _, err = run(capsys, "show", "0.3", "-f", "e4m3", *argv)
    assert code == 2 and err.startswith("fpemu: error: ") and message in err and err.count("\n") == 1


# Regressions (each failed on the code before its fix): one meaning of --json.
# ---- 7. --json prints JSON on every command; --json-file writes it -------------------------------------
def _subcommands():
    from fpemu.cli import _register_feature_commands, build_parser

    _register_feature_commands()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices


def test_json_is_a_flag_on_every_command():
    with_json = {}
    for name, p in _subcommands().items():
        for action in p._actions:
            if "--json" in action.option_strings:
                with_json[name] = action.nargs
    assert {"formats", "show", "mx", "vectors", "plot", "train", "infer", "crosscheck"} <= set(with_json)
    assert all(nargs == 0 for nargs in with_json.values()), with_json  # store_true: no FILE
    for name in ("train", "infer", "crosscheck"):
        assert any("--json-file" in a.option_strings for a in _subcommands()[name]._actions), name


@pytest.mark.parametrize("argv", [["train", "-p", "bf16", "--steps", "2"],
                                  ["infer", "--steps", "2", "--formats", "fp8"],
                                  ["crosscheck", "--backend", "numpy", "--n", "20", "--formats", "fp16"]])
def test_json_prints_what_json_file_writes(tmp_path, capsys, argv):
    out = tmp_path / "o.json"
    assert main([*argv, "--json", "--json-file", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)  # stdout is the JSON alone
    assert printed == json.loads(out.read_text())
    assert main([*argv, "--json-file", str(out)]) == 0  # without --json: the table, and the file
    text = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert json.loads(out.read_text())
