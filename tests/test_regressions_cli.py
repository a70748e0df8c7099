"""Regressions of the command line: options that were silently dropped, files that gave a bare
KeyError, empty fields, output paths, image types, one meaning of --json, and progress lines
kept out of a piped stdout. Each test failed on the code before its fix."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import fails

from fpemu.cli import main


# ---- 1. vectors: an option that does not apply is refused, never dropped ---------------------------
@pytest.mark.parametrize(
    "argv,says",
    [
        (["nvfp4", "--scale-rounding", "rceil"], "--scale-rounding does not apply to block vectors (nvfp4)"),
        (["nvfp4", "--kind", "random", "--scale-rounding", "floor"], "--scale-rounding does not apply"),
        (["e4m3", "--seed", "3"], "--seed applies to --kind random"),
        (["e4m3", "--kind", "exhaustive", "--seed", "3"], "--seed applies to --kind random"),
        (["mxfp4", "--kind", "edge", "--seed", "3"], "--seed applies to --kind random"),
        (["nvfp4", "--kind", "edge", "--seed", "0"], "--seed applies to --kind random"),
        (["nvfp4", "--accumulator", "b200", "--n", "2", "--scheduler", "tcp://127.0.0.1:9"],
         "--scheduler does not apply to block-scaled GEMM vectors"),
    ],
)
def test_vectors_refuse_options_that_do_not_apply(tmp_path, capsys, argv, says):
    out = tmp_path / "v.npz"
    fails(["vectors", *argv, "--out", str(out)], 2, capsys, says=says)
    assert not out.exists()


def test_vectors_options_that_apply_still_work(tmp_path, capsys):
    from fpemu.vectors import block_vectors, read_vectors

    for argv in (["e4m3", "--rounding", "sr", "--seed", "7"], ["e4m3", "--kind", "random", "--n", "20", "--seed", "3"],
                 ["mxfp4", "--kind", "random", "--n", "4", "--scale-rounding", "rceil", "--seed", "2"],
                 ["nvfp4", "--kind", "random", "--n", "4", "--seed", "2"]):
        out = tmp_path / "v.npz"
        assert main(["vectors", *argv, "--out", str(out)]) == 0, capsys.readouterr().err
        meta = read_vectors(out)["meta"]
        assert meta["seed"] == int(argv[argv.index("--seed") + 1])
    assert meta["format"] == "nvfp4" and meta["scale_rounding"] is None
    assert read_vectors(tmp_path / "v.npz")["meta"]["seed"] == 2
    with pytest.raises(ValueError, match="scale_rounding"):
        block_vectors("nvfp4", n=2, scale_rounding="rceil")  # the library refuses it too


# ---- 2. verify_vectors on a file that is not a vector file ------------------------------------------
def _not_vector_files(tmp_path):
    files = {}
    files["cases.json"] = tmp_path / "cases.json"
    files["cases.json"].write_text('{"cases": []}')
    files["empty.csv"] = tmp_path / "empty.csv"
    files["empty.csv"].write_text("")
    files["hwdata.npz"] = tmp_path / "hwdata.npz"
    np.savez(files["hwdata.npz"], a=np.zeros((2, 4), np.uint32), b=np.zeros((2, 4), np.uint32), c=np.zeros(2, np.uint32),
             d_fp32=np.zeros(2, np.uint32))
    files["text.json"] = tmp_path / "text.json"
    files["text.json"].write_text("not json")
    files["list.json"] = tmp_path / "list.json"
    files["list.json"].write_text("[1, 2]")
    files["garbage.npz"] = tmp_path / "garbage.npz"
    files["garbage.npz"].write_bytes(b"PK\x03\x04 not really a zip")
    files["garbage.bin"] = tmp_path / "garbage.bin"
    files["garbage.bin"].write_bytes(b"\x00\x01\x02")
    files["garbage.h"] = tmp_path / "garbage.h"
    files["garbage.h"].write_text("int x;\n")
    files["header.csv"] = tmp_path / "header.csv"
    files["header.csv"].write_text('# {"type": "cast"}\n')
    return files


def _meta_only_npz(tmp_path, meta: dict):
    path = tmp_path / "meta.npz"
    np.savez(path, meta=json.dumps(meta), code=np.zeros(3, np.uint8))
    return path


@pytest.mark.parametrize("name,says", [("cases.json", "arrays"), ("empty.csv", "empty"), ("hwdata.npz", "meta"),
                                       ("text.json", "JSON"), ("list.json", "meta"), ("garbage.npz", ""),
                                       ("garbage.bin", ""), ("garbage.h", ""), ("header.csv", "arrays")])
def test_verify_vectors_names_the_file_and_what_is_missing(tmp_path, name, says):
    from fpemu.vectors import VectorFileError, verify_vectors

    path = _not_vector_files(tmp_path)[name]
    with pytest.raises(VectorFileError) as info:
        verify_vectors(path)
    assert isinstance(info.value, ValueError)
    assert str(path) in str(info.value) and says in str(info.value)


@pytest.mark.parametrize("meta,says", [({"fpemu": "0"}, "'type'"), ({"type": "cast", "format": "e4m3"}, "input_bits"),
                                       ({"type": "mystery"}, "unknown vector type 'mystery'")])
def test_verify_vectors_names_missing_meta_and_arrays(tmp_path, meta, says):
    from fpemu.vectors import VectorFileError, verify_vectors

    path = _meta_only_npz(tmp_path, meta)
    with pytest.raises(VectorFileError, match=says) as info:
        verify_vectors(path)
    assert str(path) in str(info.value)


def test_verify_on_the_command_line(tmp_path, capsys):
    files = _not_vector_files(tmp_path)
    for name in ("cases.json", "empty.csv", "hwdata.npz", "garbage.npz"):
        fails(["verify", str(files[name])], 2, capsys, names=str(files[name]))
    good = tmp_path / "good.npz"
    assert main(["vectors", "e2m1", "--out", str(good)]) == 0
    capsys.readouterr()
    assert main(["verify", str(good)]) == 0
    assert f"{good}: " in capsys.readouterr().out
    assert main(["verify", str(good), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["path"] == str(good) and doc["cases"] == doc["identical"] > 0
    fails(["verify", str(tmp_path / "missing.npz")], 2, capsys, names=str(tmp_path / "missing.npz"))
    fails(["verify", str(tmp_path / "v.txt")], 2, capsys, says="vector files are .npz")


def test_verify_fails_on_a_file_that_differs(tmp_path, capsys):
    from fpemu.vectors import cast_vectors, write_vectors

    v = cast_vectors("e2m1", "edge")
    v["code"] = v["code"].copy()
    v["code"][3] ^= 1
    path = tmp_path / "bad.json"
    write_vectors(v, path)
    assert main(["verify", str(path)]) == 1
    got = capsys.readouterr()
    assert "1 of" in got.err and got.err.startswith("fpemu: error: ") and got.err.count("\n") == 1


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


# ---- 4. train/infer: options that apply only to other options' values --------------------------------
@pytest.fixture
def no_training(monkeypatch):
    def trained(setup):
        raise AssertionError("training started before the arguments were checked")

    monkeypatch.setattr("fpemu.train.loop._train_loop", trained)
    monkeypatch.setattr("fpemu.train.gpt.loop._loop", trained)


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


@pytest.mark.parametrize("argv,says", [(["--backend", "numpy,,torch"], "--backend: field 2 of 'numpy,,torch' is empty"),
                                       (["--backend", "numpy", "--formats", "fp16,"], "--formats: field 2 of 'fp16,'")])
def test_crosscheck_refuses_empty_fields(capsys, argv, says):
    fails(["crosscheck", *argv, "--n", "10"], 2, capsys, says=says)


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


# ---- 6. plot: the image type of the suffix ---------------------------------------------------------
@pytest.mark.parametrize("suffix,magic", [(".jpg", b"\xff\xd8\xff"), (".JPEG", b"\xff\xd8\xff"), (".png", b"\x89PNG"),
                                          (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_plot_writes_the_type_of_the_suffix(tmp_path, capsys, suffix, magic):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"r{suffix}"
    assert main(["plot", "e2m1", "--kind", "ranges", "--out", str(out)]) == 0
    assert out.read_bytes().startswith(magic)
    assert str(out) in capsys.readouterr().out


@pytest.mark.parametrize("name,says", [("r.txt", "'.txt'"), ("r", "no suffix"), ("r.png.part", "'.part'")])
def test_plot_refuses_a_suffix_matplotlib_cannot_write(tmp_path, capsys, name, says):
    pytest.importorskip("matplotlib")
    fails(["plot", "e2m1", "--kind", "ranges", "--out", str(tmp_path / name)], 2, capsys, says=says)
    assert not list(tmp_path.iterdir())


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


def test_json_file_is_checked_before_the_work(tmp_path, capsys, no_training):
    target = tmp_path / "missing" / "o.json"
    for argv in (["train"], ["infer"], ["crosscheck", "--backend", "numpy", "--n", "10"]):
        line = fails([*argv, "--json-file", str(target)], 2, capsys, names=str(target))
        assert argv[0] == "crosscheck" or "--json-file" in line


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
