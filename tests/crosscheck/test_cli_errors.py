"""Every failure of `crosscheck`, `fit`, `probe` and `vectors` is one line `fpemu: error: ...` on
stderr with the right exit status (2: a bad argument, 1: a failed run), names the file where
there is one, and never shows a traceback or an internal error (issue 9)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from fpemu import cli
from fpemu.vectors import dot_vectors, write_vectors
from cli_helpers import fails


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """One bad file of every kind, and a good dump."""
    d = tmp_path_factory.mktemp("bad")
    good = d / "good_fp16.npz"
    write_vectors(dot_vectors("fp16", "h100", k=16, n=20), good)
    data = good.read_bytes()
    made = {
        "good": good,
        "dir": d / "a_dir.npz",
        "missing": d / "missing_fp16.npz",
        "empty": d / "empty_fp16.npz",
        "truncated": d / "truncated_fp16.npz",
        "npy": d / "array_fp16.npy",
        "text": d / "notes_fp16.npz",
        "lacking": d / "lacking_fp16.npz",
        "floats": d / "floats_fp16.npz",
        "fp32only": d / "only32_fp16.npz",
        "noname": d / "dump.npz",
        "afile": d / "plain.txt",
    }
    made["dir"].mkdir()
    made["empty"].write_bytes(b"")
    made["truncated"].write_bytes(data[: len(data) // 2])
    np.save(made["npy"], np.zeros(3, np.uint32))
    made["text"].write_text("a,b,c\n1,2,3\n")
    np.savez(made["lacking"], a=np.zeros((2, 4), np.uint32))
    with np.load(good) as z:
        arrays = {k: z[k] for k in ("a", "b", "c", "d_fp32")}
    np.savez(made["floats"], **{k: v.view(np.float32) for k, v in arrays.items()})
    np.savez(made["fp32only"], **arrays)
    np.savez(made["noname"], **arrays)
    made["afile"].write_text("not a directory")
    return made


def _fails(capsys, argv: list[str], status: int, *named: str) -> str:
    """Run argv; check the status, a single `fpemu: error:` line naming each of `named`, and
    that nothing ran first (no output: every check comes before the work)."""
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == status, (argv, code, out, err)
    assert out == "", out
    assert err.startswith("fpemu: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err + out and "internal error" not in err, err
    for name in named:
        assert name in err, (name, err)
    return err


# ---- crosscheck -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,status,says",
    [
        (["--backend", "bogus"], 2, "unknown backend 'bogus'"),
        (["--backend", "numpy,bogus"], 2, "unknown backend 'bogus'"),
        (["--n", "-1"], 2, "argument --n: must be a whole number in 0..1000000, got '-1'"),
        (["--n", str(10**12)], 2, "got '1000000000000'"),
        (["--n", "lots"], 2, "argument --n: must be a whole number in 0..1000000, got 'lots'"),
        (["--seed", "-1"], 2, "argument --seed: must be a whole number >= 0"),
        (["--formats", "nope"], 2, "unknown format 'nope'"),
        (["--formats", ","], 2, "--formats names no format"),
        (["--backend", "numpy", "--formats", "e2m1"], 2, "e2m1: not implemented by numpy"),
        (["--bogus-option"], 2, "unrecognized arguments: --bogus-option"),
    ],
)  # fmt: skip
def test_crosscheck_bad_arguments(capsys, args, status, says):
    assert says in _fails(capsys, ["crosscheck", "--backend", "numpy", *args] if "--backend" not in args
                          else ["crosscheck", *args], status)  # fmt: skip


@pytest.mark.parametrize("where,says", [("dir", "is a directory"), ("under_file", "is not a directory"),
                                        ("missing_dir", "does not exist")])  # fmt: skip
def test_crosscheck_json_that_cannot_be_written(capsys, files, tmp_path, where, says):
    target = {"dir": files["dir"], "under_file": files["afile"] / "cc.json", "missing_dir": tmp_path / "no" / "cc.json"}[where]
    _fails(capsys, ["crosscheck", "--backend", "numpy", "--n", "10", "--json-file", str(target)], 2, str(target), says)


# ---- fit --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "which,status,says",
    [
        ("missing", 2, "no such dump file"),
        ("dir", 2, "is a directory, not a dump file"),
        ("empty", 2, "the file is empty"),
        ("truncated", 2, "not a readable .npz archive (File is not a zip file; truncated or damaged?)"),
        ("npy", 2, "a single .npy array, not an .npz archive"),
        ("text", 2, "not an .npz archive (no zip signature"),
        ("lacking", 2, "lacks b, c, d_fp32 or d_fp16 (it has a;"),
        ("floats", 2, "a holds float32 floating-point values"),
        ("noname", 2, "dump.npz"),
    ],
)  # fmt: skip
def test_fit_bad_files(capsys, files, which, status, says):
    if which == "noname":  # no format in the name and no metadata: the user must say
        err = _fails(capsys, ["fit", str(files[which])], 2, "cannot tell the input format from the file name 'dump.npz'")
        return
    err = _fails(capsys, ["fit", str(files[which])], status, str(files[which]))
    assert says in err


@pytest.mark.parametrize(
    "args,status,says",
    [
        (["--inputs", "nope"], 2, "unknown format 'nope'"),
        (["--inputs", "bf16"], 2, "a holds values that are not bf16"),
        (["--out", "fp16"], 2, "has no d_fp16 column (it has d_fp32)"),
        (["--out", "fp8"], 2, "invalid choice: 'fp8'"),
    ],
)  # fmt: skip
def test_fit_bad_arguments(capsys, files, args, status, says):
    err = _fails(capsys, ["fit", str(files["fp32only"]), *args], status)
    assert says in err


def test_fit_without_a_file(capsys):
    assert "the following arguments are required: dump" in _fails(capsys, ["fit"], 2)


# ---- probe ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,says",
    [
        (["--device", "cpu"], "only --device cuda is supported, got 'cpu'"),
        (["--inputs", "nope"], "unknown format 'nope'"),
        (["--inputs", "fp16,e2m1"], "probe runs fp16, bf16, tf32, e4m3, e5m2 through torch; not e2m1"),
        (["--inputs", " , "], "--inputs names no format"),
    ],
)  # fmt: skip
def test_probe_bad_arguments(capsys, args, says):
    assert says in _fails(capsys, ["probe", *args], 2)


def test_probe_without_torch(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert "torch is not installed" in _fails(capsys, ["probe"], 1)


def test_probe_without_a_gpu(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert "no CUDA device is available here" in _fails(capsys, ["probe"], 1)


# ---- vectors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,status,says",
    [
        (["nope"], 2, "unknown format 'nope'"),
        (["e4m3", "--rounding", "bogus"], 2, "unknown rounding 'bogus'"),
        (["e4m3", "--overflow", "inf"], 2, "format e4m3 has no Inf"),
        (["e4m3", "--kind", "random", "--n", "0"], 2, "argument --n: must be a whole number >= 1, got '0'"),
        (["fp32", "--kind", "exhaustive"], 2, "at most 16 bits"),
        (["fp16", "--accumulator", "nope"], 2, "nope"),
        (["e4m3", "--kind", "random", "--seed", "-1"], 2, "argument --seed: must be a whole number >= 0"),
        (["mxfp4", "--kind", "exhaustive"], 2, "block vectors come in kinds 'random' and 'edge'"),
    ],
)  # fmt: skip
def test_vectors_bad_arguments(capsys, tmp_path, args, status, says):
    out = tmp_path / "v.npz"
    assert says in _fails(capsys, ["vectors", *args, "--out", str(out)], status)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("where,status,says", [
    ("dir", 2, "is a directory, not a file"),
    ("under_file", 2, "is not a directory"),
    ("missing_dir", 2, "does not exist"),
    ("txt", 2, "vector files are .npz, .csv, .json, .bin or .h (any case), got 'v.txt'"),
])  # fmt: skip
def test_vectors_output_that_cannot_be_written(capsys, files, tmp_path, where, status, says):
    target = {"dir": files["dir"], "under_file": files["afile"] / "v.npz", "missing_dir": tmp_path / "no" / "v.npz",
              "txt": tmp_path / "v.txt"}[where]  # fmt: skip
    err = _fails(capsys, ["vectors", "e4m3", "--out", str(target)], status, says)
    if where != "txt":
        assert str(target) in err
    assert not (tmp_path / "v.txt").exists() and list(files["dir"].iterdir()) == []


# ---- the library refuses absurd sizes before allocating ----------------------------------------
@pytest.mark.parametrize("call,says", [
    (lambda: __import__("fpemu.crosscheck").crosscheck.random_cases("e4m3", n=10**12), "n must be in 0..16,777,216"),
    (lambda: __import__("fpemu.crosscheck").crosscheck.random_cases("e4m3", n=-2), "got -2"),
    (lambda: __import__("fpemu.cases").cases.matmul_inputs("fp16", 10**6, 10**6, 8), "m * k + k * n"),
    (lambda: __import__("fpemu.crosscheck.matmul").crosscheck.matmul.compare_matmul(None, "h100", "fp16", k=16, m=10**5, n=10**5), "m * n"),
    (lambda: __import__("fpemu.crosscheck").crosscheck.run_crosscheck(["numpy"], n_random=10**9), "n (random cases per cast)"),
    (lambda: __import__("fpemu.fit").fit.probe(None, "fp16", max_k=10**6), "max_k must be an integer in 8..1024"),
    (lambda: __import__("fpemu.vectors").vectors.cast_vectors("e4m3", "random", 10**12), "n = 1,000,000,000,000 is too large"),
    (lambda: __import__("fpemu.vectors").vectors.block_vectors("mxfp4", "random", 10**9), "block elements per file"),
    (lambda: __import__("fpemu.vectors").vectors.dot_vectors("fp16", "h100", k=10**7), "k = 10,000,000 is too large"),
])  # fmt: skip
def test_library_sizes_are_bounded(call, says):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=re.escape(says)):
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20


# Regressions (each failed on the code before its fix): empty fields.
@pytest.mark.parametrize("argv,says", [(["--backend", "numpy,,torch"], "--backend: field 2 of 'numpy,,torch' is empty"),
                                       (["--backend", "numpy", "--formats", "fp16,"], "--formats: field 2 of 'fp16,'")])
def test_crosscheck_refuses_empty_fields(capsys, argv, says):
    fails(["crosscheck", *argv, "--n", "10"], 2, capsys, says=says)
