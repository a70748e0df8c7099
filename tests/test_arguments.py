"""Tests of fpemu.arguments, the one rule for each kind of argument: what a whole number is
(NumPy integers included), the case of option names, and the unknown-name errors that name the
closest matches. These began as regressions, each failing on the code before its fix (deac082);
the callers' own cases (p3109, workers, tile granularity, staged models, the explorer's codes)
live with their modules' tests."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu import mx
from fpemu.accumulator import gemm, get_accumulator
from fpemu.cli import main
from fpemu.arguments import is_whole
from fpemu.formats import get_format

from cli_helpers import fails


def _message(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


# ---- 1. NumPy integers wherever an int is taken ------------------------------------------------
def test_one_helper_decides_what_a_whole_number_is():
    assert all(is_whole(v) for v in (0, -3, np.int8(1), np.uint64(2**63), np.int64(-1)))
    assert not any(is_whole(v) for v in (True, False, np.bool_(True), 1.0, np.float64(1), "1", None))


# ---- 2. one rule for the case of option names ---------------------------------------------------
def test_block_and_scaled_options_ignore_case():
    x = np.linspace(-3, 5, 64)
    want = mx.quantize(x, "mxfp8_e4m3", scale_rounding="rceil", inf="saturate", rounding="rz")
    got = mx.quantize(x, "MXFP8_E4M3", scale_rounding="RCEIL", inf="Saturate", rounding="RZ")
    np.testing.assert_array_equal(got.codes, want.codes)
    np.testing.assert_array_equal(got.scales, want.scales)
    assert got.scale_rounding == "rceil"
    conv = mx.quantize(x, "mxfp8_e4m3", convention="TorchAO-0.18")
    np.testing.assert_array_equal(conv.scales, mx.quantize(x, "mxfp8_e4m3", convention="torchao-0.18").scales)
    assert mx.quantize(x, "mxfp8_e4m3", convention="OCP").scale_rounding == "floor"
    nv = mx.quantize(x, "nvfp4", variant="TorchAO")
    assert nv.variant == "torchao"
    t = fpemu.scaled_cast(x.reshape(8, 8), "e4m3", granularity="Row", rounding="RZ")
    w = fpemu.scaled_cast(x.reshape(8, 8), "e4m3", granularity="row", rounding="rz")
    np.testing.assert_array_equal(t.codes, w.codes)
    assert t.granularity == "row"
    a = np.ones((2, 4))
    np.testing.assert_array_equal(gemm(a, a.T, inputs="FP16", accumulator="H100", out="FP16", returns="NumPy"),
                                  gemm(a, a.T, inputs="fp16", accumulator="h100", out="fp16"))


def test_cli_enum_options_ignore_case(capsys):
    assert main(["mx", "7,3,1,0.4", "-f", "MXFP4", "--scale-rounding", "RCEIL", "--inf", "Saturate"]) == 0
    assert "rceil" in capsys.readouterr().out
    assert main(["mx", "7,3,1,0.4", "-f", "nvfp4", "--variant", "TE"]) == 0
    assert main(["mx", "7,3,1,0.4", "-f", "mxfp8_e4m3", "--convention", "OCP"]) == 0
    capsys.readouterr()


def test_cli_vectors_rounding_ignores_case(tmp_path):
    import json

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["vectors", "E4M3", "--kind", "EDGE", "--rounding", "RNE", "--overflow", "Saturate",
                 "--source", "F32", "--out", str(a), "-q"]) == 0
    assert main(["vectors", "e4m3", "--kind", "edge", "--rounding", "rne", "--overflow", "saturate",
                 "--source", "f32", "--out", str(b), "-q"]) == 0
    got, want = json.loads(a.read_text()), json.loads(b.read_text())
    assert got["arrays"] == want["arrays"]
    assert got["meta"]["rounding"] == want["meta"]["rounding"] and got["meta"]["overflow"] == "saturate"




# ---- 3. unknown names: the closest matches, not every name ----------------------------------------
def test_unknown_format_names_the_closest_matches():
    message = _message(lambda: get_format("e4m4"))
    assert message.startswith("unknown format 'e4m4'")
    assert "e4m3" in message and "fpemu formats" in message
    assert len(message) < 200, message
    assert "fpemu formats" in _message(lambda: get_format("zzzzzz"))


def test_unknown_format_on_the_command_line_is_short(capsys):
    line = fails(["table", "e4m4"], 2, capsys, says="unknown format 'e4m4'")
    assert "e4m3" in line and "fpemu formats" in line and len(line) < 220


def test_unknown_block_format_and_accumulator_name_the_closest_matches():
    message = _message(lambda: mx.get_block_format("mxfp5"))
    assert message.startswith("unknown block format 'mxfp5'") and "mxfp4" in message
    message = _message(lambda: get_accumulator("h10", "fp16"))
    assert message.startswith("unknown accumulator 'h10'") and "h100" in message
    assert "`fpemu accumulators` lists the rest" in message and len(message) < 200, message
