"""Golden vector files: written, read back bit for bit, re-checked, and checked against oracles."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import fails

from fpemu import cli
from fpemu.cli import main
from fpemu.vectors import (
    block_vectors,
    cast_vectors,
    dot_vectors,
    read_vectors,
    verify_vectors,
    write_vectors,
)

EXTS = ["npz", "csv", "json", "bin", "h"]


def _same_arrays(a: dict, b: dict) -> None:
    assert a["meta"] == b["meta"]
    for k in a:
        if k != "meta":
            x, y = np.asarray(a[k]), np.asarray(b[k])
            assert x.dtype == y.dtype and x.shape == y.shape, k
            assert np.array_equal(x.view(f"u{x.dtype.itemsize}"), y.view(f"u{y.dtype.itemsize}")), k


@pytest.mark.parametrize("ext", EXTS)
@pytest.mark.parametrize(
    "make",
    [
        lambda: cast_vectors("e4m3", "edge", overflow="saturate"),
        lambda: cast_vectors("e2m1", "random", 300, rounding="rz", nan="zero"),
        lambda: cast_vectors("bf16", "random", 300, source="f64"),
        lambda: block_vectors("mxfp8_e4m3", "edge"),
        lambda: block_vectors("nvfp4", "random", 16),
        lambda: dot_vectors("e5m2", "h100", n=50),
        lambda: dot_vectors("fp16", "v100", n=50, out="fp16"),
    ],
    ids=["cast-edge", "cast-random", "cast-f64", "mx", "nvfp4", "dot", "dot-fp16"],
)
def test_round_trip(tmp_path, make, ext):
    v = make()
    path = tmp_path / f"v.{ext}"
    write_vectors(v, path)
    back = read_vectors(path)
    _same_arrays(v, back)
    n, same = verify_vectors(path)
    assert n == same > 0


def test_tampered_file_is_caught(tmp_path):
    path = tmp_path / "v.csv"
    write_vectors(cast_vectors("e5m2", "edge"), path)
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")  # a data row: input bits, code, value
    cells[1] = f"{int(cells[1], 16) ^ 1:02X}"
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    n, same = verify_vectors(path)
    assert same == n - 1


def test_cast_vectors_agree_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    v = cast_vectors("e4m3", "edge")
    x = v["input_bits"].view(np.float32)
    with np.errstate(invalid="ignore"):  # ml_dtypes' own cast of NaN
        assert np.array_equal(x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8), v["code"])
    v = cast_vectors("bf16", "exhaustive")
    x = v["input_bits"].view(np.float32)
    assert x.size == 392448  # see tests/vectors/test_exhaustive.py for why these are all the cases
    finite = ~np.isnan(x)  # (ml_dtypes keeps NaN payloads; fpemu's default gives the canonical NaN)
    assert np.array_equal(x[finite].astype(ml_dtypes.bfloat16).view(np.uint16), v["code"][finite])
    decoded = v["code"].view(ml_dtypes.bfloat16).astype(np.float64)
    assert np.array_equal(decoded, v["value"], equal_nan=True)


def test_block_vectors_match_the_spec_table():
    v = block_vectors("mxfp8_e4m3", "edge")
    assert int(v["scale"][0]) == 0x7F
    assert [int(c) for c in v["code"][0, :5]] == [0x7E, 0xC4, 0x1D, 0x01, 0x38]
    assert int(v["scale"][3]) == 0x00  # all-zero block


def test_dot_vectors_use_the_hwdata_layout_and_reproduce_a_preset():
    from fpemu.accumulator import dot

    v = dot_vectors("fp16", "a100", n=20)
    assert set(v) == {"meta", "a", "b", "c", "d_fp32"} and v["a"].dtype == np.uint32
    f = lambda k: v[k].view(np.float32).astype(np.float64)  # noqa: E731
    d = dot(f("a"), f("b"), f("c"), inputs="fp16", accumulator="a100")
    assert np.array_equal(d.view(np.uint32), v["d_fp32"])


def test_cli_writes_and_rechecks(tmp_path, capsys):
    out = tmp_path / "e2m1.json"
    assert cli.main(["vectors", "e2m1", "--out", str(out), "--kind", "random", "--n", "100", "--nan", "zero"]) == 0
    assert "read back and re-checked: 100/100 identical" in capsys.readouterr().out
    assert cli.main(["vectors", "e4m3", "--out", str(tmp_path / "x.txt")]) == 2
    assert cli.main(["vectors", "mxfp4", "--kind", "exhaustive", "--out", str(tmp_path / "m.npz")]) == 2


def test_vectors_on_a_dask_scheduler_are_the_same_file(tmp_path):
    """`fpemu vectors --scheduler`: casts (stochastic too), blocks and dot products made on a
    LocalCluster of two processes hold the same arrays as those made here."""
    distributed = pytest.importorskip("distributed")
    runs = [
        ["e4m3", "--kind", "random", "--n", "70000", "--rounding", "sr", "--seed", "4"],
        ["nvfp4", "--kind", "random", "--n", "5000"],
        ["fp16", "--accumulator", "a100", "--n", "20000"],
    ]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        for i, argv in enumerate(runs):
            here, there = tmp_path / f"here{i}.npz", tmp_path / f"there{i}.npz"
            assert cli.main(["vectors", *argv, "--out", str(here)]) == 0
            assert cli.main(["vectors", *argv, "--out", str(there), "--scheduler", cluster.scheduler_address]) == 0
            _same_arrays(read_vectors(str(here)), read_vectors(str(there)))


def test_vectors_json_says_what_was_written(tmp_path, capsys):
    import json

    out = tmp_path / "v.bin"
    assert cli.main(["vectors", "e5m2", "--kind", "random", "--n", "300", "--out", str(out), "--json", "-q"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["path"] == str(out) and r["cases"] == r["identical"] == 300
    assert r["meta"]["format"] == "e5m2" and r["meta"]["kind"] == "random" and r["meta"]["type"] == "cast"


def test_the_summary_line_says_what_a_default_is(capsys, tmp_path):
    """Not ``overflow=None, nan=None`` (issue 42, item 9): the format's default, said so; a
    field that does not apply (an MX file's global_scale) is left out."""
    from fpemu.cli import main

    assert main(["vectors", "e4m3", "--out", str(tmp_path / "v.npz"), "-q"]) == 0
    line = capsys.readouterr().out
    assert "overflow=the format's default, nan=the format's default" in line and "None" not in line
    assert main(["vectors", "mxfp4", "--out", str(tmp_path / "b.npz"), "-q"]) == 0
    line = capsys.readouterr().out
    assert "scale_rounding=floor" in line and "None" not in line and "global_scale" not in line


@pytest.mark.parametrize("make, says", [
    (lambda p: p.write_bytes(b"hello"), "not an .npz archive (no zip signature)"),
    (lambda p: p.write_bytes(b""), "empty"),
    (lambda p: p.mkdir(), "is a directory, not a vector file"),
])  # fmt: skip
def test_verify_says_what_is_wrong_with_the_file(capsys, tmp_path, make, says):
    """Not numpy's pickle advice for a file that is no zip archive, not "got ''" for a
    directory (issue 42, item 7): one line naming the file, a usage error (2)."""
    path = tmp_path / "g.npz"
    make(path)
    assert cli.main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and str(path) in err and "pickle" not in err
    assert cli.main(["verify", "."]) == 2
    assert capsys.readouterr().err == "fpemu: error: is a directory, not a vector file: .\n"


# Regressions (each failed on the code before its fix): options and files of the command line.
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
