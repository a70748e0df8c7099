"""Tests of the ``fpemu mx`` command (fpemu.mx.cli): the report, files and value lists, one-line
errors, huge block sizes, no warning printed (issue 9, items 5-7)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from fpemu import mx
from fpemu.cli import main

from mx_helpers import NV_X
from cli_helpers import fails


def run_cli(argv: list[str]) -> int:
    """The ``fpemu mx`` subcommand through argparse, as fpemu.cli wires it (its main() also
    loads the other feature modules, which this test should not depend on)."""
    import argparse

    parser = argparse.ArgumentParser(prog="fpemu")
    mx.register_cli(parser.add_subparsers())
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"fpemu: error: {exc}", file=__import__("sys").stderr)
        return 2


def test_cli_mx(capsys, tmp_path):
    main = run_cli
    assert main(["mx", "7,3,1,0.4,-0.24,0.26,5", "--format", "mxfp4"]) == 0
    out = capsys.readouterr().out
    assert "scale 0x7F" in out and "codes:  7 5 2 1 8 1 6" in out and "errors:" in out
    f = tmp_path / "v.npy"
    np.save(f, NV_X)
    assert main(["mx", str(f), "--format", "nvfp4"]) == 0
    out = capsys.readouterr().out
    assert "block 1: scale 0x02" in out
    assert main(["mx", "1,2", "--format", "mxfp9"]) == 2
    assert "unknown block format" in capsys.readouterr().err


# ---- item 5: command line files ----------------------------------------------------------------------
def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["mx", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fpemu: error: "), err
    for p in parts:
        assert p in lines[0], (p, err)


def test_cli_complex_npy_is_refused_like_the_api(capsys, tmp_path):
    f = tmp_path / "complex.npy"
    np.save(f, np.array([1 + 2j, 3.0]))
    code, out, err = cli(capsys, str(f))
    with pytest.raises(TypeError) as api:
        mx.quantize(np.array([1 + 2j, 3.0]), "mxfp8_e4m3")
    assert code == 2 and not out
    one_line_error(err, str(f), str(api.value))


@pytest.mark.parametrize("make, status, text", [
    (lambda p: None, 2, "No such file or directory"),  # a path that is not there: usage (2)
    (lambda p: p.mkdir(), 2, "Is a directory"),
    (lambda p: p.write_bytes(b"\x93NUMPY"), 2, "not a valid .npy file"),
    (lambda p: np.save(p, np.array(["a", "b"])), 2, "cannot quantize"),
    (lambda p: np.save(p, np.array([1, "a"], dtype=object), allow_pickle=True), 2, "Python objects"),
    (lambda p: np.save(p, np.zeros(0)), 2, "no values"),
])
def test_cli_bad_npy_files(capsys, tmp_path, make, status, text):
    f = tmp_path / "data.npy"
    make(f)
    code, out, err = cli(capsys, str(f))
    assert code == status and not out
    one_line_error(err, str(f), text)


def test_cli_truncated_npy(capsys, tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.arange(10, dtype=np.float32))
    f = tmp_path / "cut.npy"
    f.write_bytes(good.read_bytes()[:-7])
    code, out, err = cli(capsys, str(f))
    assert code == 2 and not out  # not the kind of file mx reads: the file given is wrong (usage)
    one_line_error(err, str(f), "not a valid .npy file")


def test_cli_text_files(capsys, tmp_path):
    f = tmp_path / "v.txt"
    f.write_text("7, 3\n1 0.4\n")
    code, out, _ = cli(capsys, str(f), "-f", "mxfp4")
    assert code == 0 and "codes:  7 5 2 1" in out
    f.write_text("1 2 x")
    code, _, err = cli(capsys, str(f))
    assert code == 2
    one_line_error(err, str(f), "neither a .npy file nor text of numbers")
    f.write_bytes(bytes(range(256)))
    code, _, err = cli(capsys, str(f))
    assert code == 2
    one_line_error(err, str(f))
    code, _, err = cli(capsys, str(tmp_path / "missing.txt"))
    assert code == 2
    one_line_error(err, "missing.txt", "No such file")


def test_cli_long_value_lists_are_values(capsys):
    """A value list longer than a file name may be: not 'File name too long'."""
    code, out, err = cli(capsys, ",".join(["1.5"] * 3000), "-f", "mxfp4")
    assert code == 0 and not err and out.startswith("mxfp4: 3000 values, 94 blocks of 32")
    code, _, err = cli(capsys, "1/3")
    assert code == 2
    one_line_error(err, "cannot read '1/3' as numbers or an existing file")


def test_cli_float32_npy_is_quantized_as_float32(capsys, tmp_path):
    f = tmp_path / "x.npy"
    x = np.float32([7, 3, 1, 0.4])
    np.save(f, x)
    code, out, _ = cli(capsys, str(f))
    q = mx.quantize(x, "mxfp8_e4m3")
    assert code == 0 and "codes:  " + " ".join(f"{c:02X}" for c in q.codes) in out


def test_cli_huge_block_size(capsys):
    t0 = time.perf_counter()
    code, out, _ = cli(capsys, "1,2,3", "-b", "1000000000")
    assert code == 0 and "3 values, 1 block of 1000000000" in out
    assert time.perf_counter() - t0 < 5
    for bad in ("0", "-4", "3000000000"):
        code, _, err = cli(capsys, "1,2,3", "-b", bad)
        assert code == 2
        one_line_error(err, "argument --block-size/-b: must be a whole number in 1..2147483648")


def test_cli_huge_value_prints_no_warning(capfd):
    assert main(["mx", "1e300,1"]) == 0
    out, err = capfd.readouterr()
    assert "Warning" not in err and not err
    assert "values: 7.62233e+40 0" in out and "max |error| 1e+300, rms error 7.071e+299" in out


def test_mx_json_holds_every_block(capsys):
    import json

    from fpemu.cli import main

    assert main(["mx", "7,3,0.4,nan" + ",1" * 30, "-f", "mxfp4", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["format"], r["n"], r["block_size"], r["scale_rounding"]) == ("mxfp4", 34, 32, "floor")
    first, second = r["blocks"]
    assert first["scale"] == 255 and first["values"][0] == "nan" and first["inputs"][3] == "nan"
    assert second == {"scale": 125, "codes": [6, 6], "values": [1.0, 1.0], "inputs": [1.0, 1.0], "errors": [0.0, 0.0]}
    assert main(["mx", "100,-37,5", "-f", "nvfp4", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["variant"] == "te" and r["global_amax"] == 100.0 and r["blocks"][0]["codes"] == [7, 12, 1]


def test_an_error_is_value_minus_input_as_show_says_it(capsys):
    """One sign for "error" everywhere (issue 42, item 4): 500 saturates to 448 in e4m3, an
    error of -52 in ``fpemu show`` and in ``fpemu mx`` (text and JSON) alike."""
    assert main(["show", "500", "-f", "e4m3", "-o", "saturate", "--no-color"]) == 0
    assert "error     -52 " in capsys.readouterr().out
    assert main(["mx", "500,0.1", "-f", "mxfp8_e4m3"]) == 0
    out = capsys.readouterr().out
    assert "errors: -52 0.001562" in out and "max |error| 52," in out
    assert main(["mx", "500,0.1", "-f", "mxfp8_e4m3", "--json"]) == 0
    errors = json.loads(capsys.readouterr().out)["blocks"][0]["errors"]
    assert errors[0] == -52.0 and errors[1] == 0.1015625 - 0.1


# Regressions (each failed on the code before its fix): empty fields.
# ---- 3. mx: empty fields and an empty argument ---------------------------------------------------
@pytest.mark.parametrize("values,says", [("1,2,,3", "field 3 of '1,2,,3' is empty"),
                                         ("1,2,3,", "field 4 of '1,2,3,' is empty"),
                                         (",1", "field 1 of ',1' is empty"),
                                         ("", "the values are empty"), ("  ", "the values are empty")])
def test_mx_refuses_empty_fields(capsys, values, says):
    fails(["mx", values], 2, capsys, says=says)


def test_mx_refuses_empty_fields_in_a_file(tmp_path, capsys):
    path = tmp_path / "v.txt"
    path.write_text("1,2\n3,,4\n")
    fails(["mx", str(path)], 2, capsys, names=str(path), says="line 2")
    path.write_text("1, 2\n\n3 4\n5,6\n")  # blank lines and spaces are separators, not fields
    assert main(["mx", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 6


@pytest.mark.parametrize("variant", ["te", "torchao"])
def test_mx_refuses_variant_for_mx_formats(capsys, variant):
    fails(["mx", "1,2", "-f", "mxfp4", "--variant", variant], 2, capsys, says="--variant applies to NVFP4")
    assert main(["mx", "1,2", "-f", "nvfp4", "--variant", variant, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["variant"] == variant
