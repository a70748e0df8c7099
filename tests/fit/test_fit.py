"""fit on the hardware dumps, and the batched kernel against fpemu.accumulator.dot (probe with fake
devices: tests/probe/test_probe.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from fpemu import cli
from fpemu.accumulator import BlockFMA, BlockModel
from fpemu.fit import Dump, DumpError, fit, load_dump, report
from fpemu.fit.dumps import infer_inputs
from fpemu.fit.kernel import batch_matches, model_matches
from fpemu.fit.search import _used_fraction_bits, candidate_models
from fpemu.vectors import dot_vectors, write_vectors

HWDATA = Path(__file__).resolve().parents[2].parent / "shared" / "hwdata"

# (file, output column) -> the GPU whose preset must be named; None: open (no model must fit).
EXPECTED = {
    ("v100_fp16", "fp32"): "v100", ("v100_fp16", "fp16"): "v100",
    ("a100_fp16", "fp32"): "a100", ("a100_fp16", "fp16"): "a100",
    ("a100_bf16", "fp32"): "a100", ("a100_tf32", "fp32"): "a100",
    ("ada_e4m3", "fp32"): "ada", ("ada_e4m3", "fp16"): "ada",
    ("ada_e5m2", "fp32"): "ada", ("ada_e5m2", "fp16"): "ada",
    ("h100_fp16", "fp32"): "h100", ("h100_fp16", "fp16"): "h100",
    ("h100_bf16", "fp32"): "h100", ("h100_tf32", "fp32"): "h100",
    ("h100_e4m3", "fp32"): "h100", ("h100_e5m2", "fp32"): "h100",
    ("h100_e4m3", "fp16"): "h100", ("h100_e5m2", "fp16"): "h100",  # issue 18's model, a preset
    ("b200_fp16", "fp32"): "b200", ("b200_fp16", "fp16"): "b200",
    ("b200_bf16", "fp32"): "b200", ("b200_tf32", "fp32"): "b200",
    ("b200_e5m2", "fp32"): None, ("b200_e4m3", "fp16"): "b200", ("b200_e5m2", "fp16"): "b200",
    # The dumps added in December 2026 (hwdata/README.md).
    ("a2_fp16", "fp32"): "a2", ("a2_fp16", "fp16"): "a2", ("a2_bf16", "fp32"): "a2", ("a2_tf32", "fp32"): "a2",
    ("ada_fp16", "fp32"): "ada", ("ada_fp16", "fp16"): "ada", ("ada_bf16", "fp32"): "ada",
    ("ada_tf32", "fp32"): "ada",
    ("l40s_fp16", "fp32"): "l40s", ("l40s_fp16", "fp16"): "l40s", ("l40s_bf16", "fp32"): "l40s",
    ("l40s_tf32", "fp32"): "l40s", ("l40s_e4m3", "fp32"): "l40s", ("l40s_e5m2", "fp32"): "l40s",
    ("h200_fp16", "fp32"): "h200", ("h200_fp16", "fp16"): "h200", ("h200_bf16", "fp32"): "h200",
    ("h200_tf32", "fp32"): "h200", ("h200_e4m3", "fp32"): "h200", ("h200_e5m2", "fp32"): "h200",
    ("h200_e4m3", "fp16"): "h200", ("h200_e5m2", "fp16"): "h200",
}  # fmt: skip
# Quick in the default run: one file per architecture and one open column.
QUICK = [("v100_fp16", "fp32"), ("a100_tf32", "fp32"), ("ada_e5m2", "fp32"), ("h100_e4m3", "fp32"),
         ("b200_bf16", "fp32"), ("h100_e5m2", "fp16"), ("b200_e5m2", "fp32"), ("h200_e4m3", "fp32")]  # fmt: skip


def _dump(name: str) -> Dump:
    path = HWDATA / f"{name}.npz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return load_dump(path)


def _check(name: str, out: str) -> None:
    result = fit(_dump(name), out)
    gpu = EXPECTED[(name, out)]
    if gpu is None:
        assert not result.fits, report(result)
        text = report(result)
        assert "NO model in the search space reproduces all 5000 rows." in text
        assert 0 < result.best_rows < 5000
    else:
        assert result.fits, report(result)
        assert gpu in result.presets, report(result)


@pytest.mark.parametrize("name,out", QUICK)
def test_fit_names_the_right_preset(name, out):
    _check(name, out)


@pytest.mark.slow
@pytest.mark.parametrize("name,out", sorted(EXPECTED))
def test_fit_names_the_right_preset_on_every_dump(name, out):
    _check(name, out)


def test_fit_pins_down_the_h100_fp8_parameters_with_c_ignored():
    result = fit(_dump("h100_e4m3"), "fp32")
    assert result.c_mode == "ignored (c = 0)"
    blocks = {(m.block, m.frac_bits, m.out_rounding, m.out_frac_bits, m.term_rounding) for m in result.models if isinstance(m, BlockModel)}
    assert blocks == {(32, 13, "rz", 13, "rz")}


def test_fit_b200_e4m3_fp32_column_is_an_exact_sum():
    # An "open" file in the README, but its fp32 column is reproduced by the exact sum
    # rounded once (and by the B200 preset, which takes SPEC's "exact sum then RNE" literally).
    result = fit(_dump("b200_e4m3"), "fp32")
    assert result.fits and {"exact", "b200"} <= set(result.presets)


def test_batched_kernel_agrees_with_accumulator_dot():
    rnd = random.Random(0)
    for name in ("v100_fp16", "ada_e4m3", "a100_bf16"):
        d = _dump(name)
        for out in d.d:
            space = list(candidate_models(d.K, out, _used_fraction_bits(d.d[out]) if out == "fp32" else 23))
            pick = rnd.sample(space, 25)
            got = batch_matches(d, d.c, out, pick, slice(0, 200))
            for m, row in zip(pick, got):
                assert np.array_equal(row, model_matches(d, d.c, out, m, slice(0, 200))), m


def test_fit_recovers_a_model_no_preset_has(tmp_path):
    model = BlockFMA("custom", block=4, frac_bits=27, out_rounding="rne")
    path = tmp_path / "custom_bf16.npz"
    write_vectors(dot_vectors("bf16", model, k=16, n=2000), path)
    result = fit(load_dump(path), "fp32")
    assert result.fits and result.presets == []
    assert {(m.block, m.frac_bits, m.out_rounding) for m in result.models} == {(4, 27, "rne")}


def test_infer_inputs_and_errors(tmp_path):
    assert infer_inputs("x/h100_e5m2.npz") == "e5m2"
    with pytest.raises(ValueError, match="pass --inputs"):
        infer_inputs("dump.npz")
    bad = tmp_path / "bad_fp16.npz"
    np.savez(bad, a=np.zeros((2, 4), np.uint32))
    with pytest.raises(DumpError, match=r"bad_fp16.npz: lacks b, c, d_fp32 or d_fp16 \(it has a;"):
        load_dump(bad)
    with pytest.raises(FileNotFoundError, match="none_fp16.npz"):
        load_dump(tmp_path / "none_fp16.npz")


def test_fit_cli_exit_codes(capsys):
    _dump("v100_fp16")
    assert cli.main(["fit", str(HWDATA / "v100_fp16.npz"), "--out", "fp32"]) == 0
    out, err = capsys.readouterr()
    assert "matching presets: v100, volta" in out and err == ""
    # A column no model reproduces: the report, then a failed run (status 1, one error line).
    assert cli.main(["fit", str(HWDATA / "b200_e5m2.npz"), "--out", "fp32"]) == 1
    out, err = capsys.readouterr()
    assert "NO model in the search space" in out
    assert err == f"fpemu: error: {HWDATA / 'b200_e5m2.npz'}: no model in the search space reproduces every row of d_fp32\n"


def test_batched_kernel_is_exact_when_block_sums_pass_2_to_the_53():
    # With F = 48, 31 ones + (1 + 2^-19) + 2^-48 sum to 2^53 + 2^29 + 1 units of 2^-48: the
    # exact value lies just above the fp32 tie 32 + 2^-19, so RNE gives 32 + 2^-18. A plain
    # int64 -> float64 conversion would drop the last unit and round the tie to 32.
    a = np.ones((2, 33))
    a[:, 31] = 1 + 2.0**-19
    a[:, 32] = 2.0**-48
    a[1] = -a[1]
    b = np.ones((2, 33))
    c = np.zeros(2)
    model = BlockFMA("wide", block=64, frac_bits=48, out_rounding="rne")
    d = {"fp32": np.float32([32 + 2.0**-18, -(32 + 2.0**-18)]).view(np.uint32)}
    dump = Dump("wide_fp32", "fp32", a, b, c, d)
    assert model_matches(dump, c, "fp32", model, slice(None)).all()  # fpemu.accumulator agrees
    assert batch_matches(dump, c, "fp32", [model], slice(None)).all()
