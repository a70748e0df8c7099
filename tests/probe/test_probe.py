"""probe (fpemu.probe) with fake devices: presets and custom models inferred exactly, the GPU path
through torch with a fake GPU, and broken devices."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import cli
from fpemu.accumulator import BlockFMA, accumulator_names, get_accumulator
from fpemu.backends import fake_device
from fpemu.probe import probe


# ---- fake GPUs -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "gpu,inputs",
    [("v100", "fp16"), ("a100", "fp16"), ("a100", "bf16"), ("a100", "tf32"), ("ada", "e4m3"),
     ("h100", "fp16"), ("h100", "tf32"), ("h100", "e4m3"), ("h100", "e5m2")],
)  # fmt: skip
def test_probe_infers_fake_gpus(gpu, inputs):
    found = probe(fake_device(gpu), inputs)
    want = get_accumulator(gpu, inputs)
    m = found.model
    assert (m.block, m.frac_bits, m.out_frac_bits) == (want.block, want.frac_bits, want.out_frac_bits)
    assert m.out_rounding == want.out_rounding
    assert found.subnormal_inputs and found.distance == 0 and gpu in found.nearest
    assert found.extra_alignment_bits == want.frac_bits - want.out_frac_bits


def test_probe_infers_rounding_flushing_and_a_model_no_preset_has():
    model = BlockFMA("odd", block=4, frac_bits=26, out_rounding="rne", flush_subnormals=True)
    found = probe(fake_device(model), "bf16")
    m = found.model
    assert (m.block, m.frac_bits, m.out_rounding, m.out_frac_bits) == (4, 26, "rne", 23)
    assert not found.subnormal_inputs
    assert found.distance > 0 and not found.notes


def test_probe_warns_below_four_products_per_block():
    found = probe(fake_device(BlockFMA("two", block=2, frac_bits=24)), "fp16")
    assert found.model.block == 2
    assert any("fewer than 4 products" in n for n in found.notes)


def test_probe_reports_the_limit_of_narrow_inputs():
    found = probe(fake_device("b200"), "e4m3")  # preset: F = 48, beyond what E4M3 products span
    assert found.model.frac_bits == 34 and found.model.out_rounding == "rne"
    assert any("F >= 34" in n for n in found.notes)


def test_probe_cli_without_cuda(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli.main(["probe", "--device", "cuda"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("fpemu: error: no CUDA device is available here") and err.count("\n") == 1


def test_probe_through_the_torch_matmul_path_with_a_fake_gpu(monkeypatch, capsys):
    """The GPU path of `fpemu probe` (one R x K by K x R matmul per question, its diagonal read
    back) with torch's CUDA calls replaced by fpemu's H100 model."""
    torch = pytest.importorskip("torch")
    from fpemu.backends import devices as backends
    from fpemu.accumulator import gemm

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Fake H100")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(backends, "_torch_matmul", lambda device: lambda A, B, i: gemm(A, B, inputs=i, accumulator="h100"))
    assert cli.main(["probe", "--device", "cuda", "--inputs", "fp16,e4m3"]) == 0
    text = capsys.readouterr().out
    assert "probing Fake H100 (sm_90)" in text
    assert "fp16: products per block 16, F = 25" in text and "e4m3: products per block 32, F = 13" in text
    assert text.count("(identical parameters)") == 2
    assert cli.main(["probe", "--device", "cuda", "--inputs", "fp16", "--json", "--quiet"]) == 0
    import json

    record = json.loads(capsys.readouterr().out)
    assert record["device"] == "Fake H100 (sm_90)"
    (one,) = record["results"]
    assert one["inputs"] == "fp16" and one["model"]["block"] == 16 and one["model"]["frac_bits"] == 25
    assert "h100" in one["nearest"] and one["distance"] == 0


# ---- probe with a broken device ---------------------------------------------------------------
def test_probe_refuses_a_device_that_drops_results():
    def broken(a, b, inputs):
        return np.zeros(max(0, a.shape[0] - 1))

    with pytest.raises(RuntimeError, match=r"the device returned \d+ results for \d+ experiments"):
        probe(broken, "fp16")


def test_probe_survives_a_device_that_answers_nan():
    found = probe(lambda a, b, inputs: np.full(a.shape[0], np.nan), "bf16")
    assert found.model.kind == "block"  # nonsense in, a (flagged) model out: no crash, no warning


# ---- every preset: no floating-point warning (issue 9) ---------------------------------------
def test_probe_every_fake_preset():
    probed = 0
    for name in accumulator_names():
        for inputs in ("fp16", "bf16", "tf32", "e4m3", "e5m2"):
            try:
                acc = get_accumulator(name, inputs)
            except ValueError:
                continue
            found = probe(fake_device(acc), inputs)
            assert found.model.kind == "block" and found.calls >= 4
            probed += 1
    assert probed > 50
