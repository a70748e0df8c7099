"""``fpemu gemm-error`` (fpemu/accumulator/cli.py), through the real entry point: results, and
bad arguments as one ``fpemu: error:`` line with status 2."""

from __future__ import annotations

import pytest

from fpemu.cli import main

from cli_helpers import fails


def _cli(argv: list[str]) -> int:
    return main(argv)


def test_cli_gemm_error(capsys):
    assert _cli(["gemm-error", "--inputs", "e4m3", "--accumulator", "h100", "--k", "512", "--m", "4", "--n", "4", "--promote", "128"]) == 0
    out = capsys.readouterr().out
    assert "h100/e4m3" in out and "promoted to fp32 every 128" in out and "max" in out
    assert _cli(["gemm-error", "--inputs", "e4m3,e5m2", "--k", "64", "--m", "2", "--n", "2"]) == 0
    assert "h100/e4m3xe5m2" in capsys.readouterr().out


def test_cli_gemm_error_bad_input(capsys):
    assert _cli(["gemm-error", "--accumulator", "v100", "--inputs", "e4m3", "--k", "8"]) == 2
    assert "no e4m3 inputs" in capsys.readouterr().err
    assert _cli(["gemm-error", "--k", "0"]) == 2


def test_cli_registers_gemm_error():
    from fpemu import cli

    cli._register_feature_commands()
    assert "gemm-error" in cli.build_parser().format_help()


@pytest.mark.parametrize(
    "argv,says",
    [
        (["--k", "-5"], "argument --k: must be a whole number >= 1, got '-5'"),
        (["--k", "0"], "argument --k: must be a whole number >= 1, got '0'"),
        (["--k", "1000000000000"], "A (m x k) would hold 64000000000000 values; the limit is 67108864"),
        (["--k", "1048576", "--m", "128", "--n", "128"], "A (m x k)"),
        (["--k", "262144", "--m", "256", "--n", "256"], "products is too many to emulate"),
        (["--m", "0"], "argument --m: must be a whole number >= 1"),
        (["--n", "-1"], "argument --n: must be a whole number >= 1"),
        (["--k", "1.5"], "argument --k: must be a whole number >= 1, got '1.5'"),
        (["--seed", "-1"], "argument --seed: must be a whole number >= 0"),
        (["--promote", "0"], "argument --promote: must be a whole number >= 1"),
        (["--promote", "-128"], "argument --promote: must be a whole number >= 1"),
        (["--accumulator", "nope"], "unknown accumulator 'nope'"),
        (["--accumulator", "v100"], "v100 (volta) has no e4m3 inputs"),
        (["--inputs", "e9m9"], "unknown format 'e9m9'"),
        (["--inputs", "e4m3,e5m2,fp16"], "inputs must be a format name or a pair"),
        (["--inputs", "fp16,bf16"], "does not multiply fp16 by bf16"),
        (["--distribution", "cauchy"], "invalid choice: 'cauchy'"),
    ],
)
def test_gemm_error_bad_arguments(argv, says, capsys):
    fails(["gemm-error", *argv], 2, capsys, says=says)


def test_gemm_error_small_run_is_clean(capsys):
    assert main(["gemm-error", "--k", "64", "--m", "2", "--n", "2", "--promote", "16"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "promoted to fp32 every 16" in captured.out


def test_gemm_error_json_matches_the_text(capsys):
    import json

    argv = ["gemm-error", "--inputs", "bf16", "--accumulator", "a100", "--k", "96", "--m", "3", "--n", "5"]
    assert _cli(argv) == 0
    text = capsys.readouterr().out
    assert _cli(argv + ["--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["accumulator"] == "a100/bf16" and r["shape"] == [3, 5] and r["k"] == 96 and r["promote"] is None
    assert 0 < r["mean"] <= r["max"] and f"{r['max']:.3e}" in text


def test_gemm_error_on_a_dask_scheduler_gives_the_same_numbers(capsys):
    import json

    distributed = pytest.importorskip("distributed")
    argv = ["gemm-error", "--inputs", "e4m3", "--accumulator", "h100", "--k", "128", "--m", "70", "--n", "9", "--json"]
    assert _cli(argv) == 0
    here = json.loads(capsys.readouterr().out)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert _cli(argv + ["--scheduler", cluster.scheduler_address]) == 0
    assert json.loads(capsys.readouterr().out) == here


def test_gemm_error_bad_scheduler_address(capsys):
    pytest.importorskip("distributed")
    dask = pytest.importorskip("dask")
    before = dask.config.get("scheduler", None)
    assert _cli(["gemm-error", "--k", "8", "--scheduler", "bogus://x"]) == 2
    # The half-made client is not left as the process's Dask scheduler (every later Dask
    # computation waited on it: tests/accumulator/test_dask_gemm.py hung after this test).
    assert dask.config.get("scheduler", None) == before
    err = capsys.readouterr().err
    assert err.startswith("fpemu: error: bad Dask scheduler address 'bogus://x'") and err.count("\n") == 1


def test_gemm_error_reports_progress_row_by_row():
    from fpemu.accumulator import gemm_error

    done = []
    with_steps = gemm_error("fp16", "a100", 64, m=45, n=7, step=done.append)
    assert sum(done) == 90 and len(done) > 2
    assert with_steps == gemm_error("fp16", "a100", 64, m=45, n=7)  # the pieces change nothing
