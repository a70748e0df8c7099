"""benchmarks/compare.py's A/B report: the ratio per path and the 10% flag (issue 25)."""

from __future__ import annotations


import pytest
from script_helpers import load_script



def load():
    return load_script("benchmarks/compare.py", "fpemu_bench_compare")


def test_report_flags_only_paths_more_than_ten_percent_slower(capsys):
    compare = load()
    best = {"work": {"a": 1.0, "b": 1.0, "c": 1.0}, "ref": {"a": 0.95, "b": 0.85, "c": 2.0}}
    flagged = compare._report("REF", best, {"a": 10**6, "b": 10**6, "c": 10**6}, 10**6, 1, 1, False)
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line[:2] in ("a ", "b ", "c ")}
    assert flagged == 1
    assert "SLOWER" in lines["b"] and "SLOWER" not in lines["a"] and "SLOWER" not in lines["c"]
    assert lines["c"].split()[1:4] == ["1.0", "0.5", "2.00"]  # M/s of each tree, ref time / work time
    compare._report("REF", {"work": {"i": 0.05}, "ref": {"i": 0.1}}, {"i": compare.ONCE}, 10**6, 1, 1, False)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("i "))
    assert line.split()[1:6] == ["50.0", "ms", "100.0", "ms", "2.00"]  # once per process: milliseconds


def test_every_path_has_a_known_suite_and_the_cli_refuses_bad_arguments():
    compare = load()
    assert set(compare.PATHS.values()) == {"codec", "options", "mx", "gemm", "import"}
    for fmt in ("bf16", "fp16", "e4m3", "e2m1"):  # issue 39's option grid, each beside its default row
        for dtype in ("f32", "f64"):
            assert compare.PATHS[f"encode {fmt} {dtype}"] == "codec"
            assert {f"encode {fmt} {dtype} {o}" for o in ("rz", "up", "saturate", "like:ptx_cvt_rn", "sr")} <= set(compare.PATHS)
    with pytest.raises(SystemExit):
        compare.main([])  # --against is required
    with pytest.raises(SystemExit):
        compare.main(["--against", "HEAD", "--suites", "nope"])
