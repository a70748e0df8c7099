"""What inputs=, recipe= and accumulator= of fpemu.torch accept, the layer of fpemu.train each
makes, FP8 delayed scaling across forward passes as TransformerEngine steps it, and torch
missing. Skipped without torch (but the last test, which hides it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_without_torch_the_package_loads_and_its_functions_say_what_is_missing():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import fpemu, fpemu.torch as ft\n"
            "try:\n    ft.emulate(None, inputs='bf16')\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fpemu.torch needs PyTorch: pip install torch (fpemu itself needs numpy only)"


torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import fpemu  # noqa: E402
import fpemu.torch as ft  # noqa: E402
from fpemu.torch.precisions import INPUTS, make_precision  # noqa: E402
from fpemu.train import CurrentScaling, DelayedScaling, NVFP4Recipe  # noqa: E402


def test_names_recipes_and_labels():
    assert INPUTS == ("bf16", "fp16", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "mxfp8", "mxfp8_e4m3", "mxfp8_e5m2",
                      "mxfp6", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "nvfp4")
    cases = [(("BF16", None, None), ("bf16", "LinearLow")), (("fp16", "Autocast", None), ("fp16/autocast", "LinearLow")), ((" e5m2", None, "H100"), ("e5m2/current@h100", "LinearFP8")),
             (("e4m3", "delayed", None), ("e4m3/delayed", "LinearFP8")),
             (("e4m3", DelayedScaling(margin=1), None), ("e4m3/delayed", "LinearFP8")),
             (("nvfp4", None, None), ("nvfp4/2d+sr+rht", "LinearBlock")),
             (("nvfp4", "all", None), ("nvfp4/2d+sr+rht", "LinearBlock")),
             (("nvfp4", NVFP4Recipe(False, True, False, 0), "b200"), ("nvfp4/sr@b200", "LinearBlock")),
             (("mxfp4", "even", None), ("mxfp4/even", "LinearBlock")),
             (("mxfp8", "torchao-0.18", None), ("mxfp8/torchao-0.18", "LinearBlock")),
             (("mxfp6_e2m3", {"scale_rounding": "ceil", "inf": "saturate"}, None), ("mxfp6_e2m3/ceil,saturate", "LinearBlock"))]
    for (inputs, recipe, acc), (label, cls) in cases:
        p = make_precision(inputs, recipe, acc)
        assert (p.label, type(p.make(0)).__name__) == (label, cls)
    fp8 = make_precision("e5m2", "delayed", None).recipe
    assert (fp8.fwd_format, fp8.bwd_format) == ("e5m2", "e5m2")
    fnuz = make_precision("e4m3fnuz", None, "mi300x").recipe
    assert (fnuz.fwd_format, fnuz.bwd_format) == ("e4m3fnuz", "e5m2fnuz")
    assert make_precision("mxfp8", None, None).make(0).options == {"scale_rounding": "rceil"}
    assert make_precision("mxfp4", None, None).make(0).options == {}


def test_accumulator_objects_are_taken():
    unit = fpemu.get_accumulator("h100", "bf16")
    assert make_precision("bf16", None, unit).label == f"bf16@{unit.name}"
    block_unit = fpemu.get_accumulator("b200", "nvfp4")
    assert make_precision("nvfp4", None, block_unit).label.endswith(block_unit.name)


def test_recipes_a_format_does_not_take_are_refused():
    with pytest.raises(ValueError, match="the recipe's fwd_format 'e4m3' is not the inputs format 'e5m2'"):
        make_precision("e5m2", CurrentScaling(), None)
    with pytest.raises(ValueError, match="bf16_last names the transformer's blocks"):
        make_precision("nvfp4", NVFP4Recipe(), None)
    with pytest.raises(ValueError, match="unknown NVFP4 recipe element 'rhd'"):
        make_precision("nvfp4", "2d,rhd", None)
    with pytest.raises(ValueError, match="unknown MX recipe 'cell'; did you mean ceil"):
        make_precision("mxfp4", "cell", None)
    with pytest.raises(ValueError, match="an MX recipe sets convention, scale_rounding, inf; not rounding"):
        make_precision("mxfp4", {"rounding": "stochastic"}, None)
    with pytest.raises(ValueError, match="convention 'transformer_engine-2.13' quantizes mxfp8_e4m3, mxfp8_e5m2, not mxfp4"):
        make_precision("mxfp4", "transformer_engine-2.13", None)
    with pytest.raises(ValueError, match="fp8_recipe must be 'delayed', 'current' or 'unscaled'"):
        make_precision("e4m3", "dynamic", None)
    with pytest.raises(TypeError, match="inputs is a format name"):
        make_precision(None, None, None)
    with pytest.raises(ValueError, match="accumulator 'mi300x' does not take e4m3 operands: mi300x"):
        make_precision("e4m3", None, "mi300x")
    with pytest.raises(TypeError, match="accumulator is None"):
        make_precision("bf16", None, 100)


def test_delayed_scaling_steps_once_per_forward_and_not_in_eval():
    model = ft.emulate(nn.Sequential(nn.Linear(8, 4)), inputs="e4m3", recipe="delayed", stats=True)
    state = model[0].site.linear.scales
    x1, x2 = torch.full((2, 8), 2.0), torch.full((2, 8), 4.0)
    model(x1).sum().backward()
    assert float(state["x"].scale) == 1.0  # the first step has no history
    model(x2).sum().backward()  # this forward starts step 2 with the scales of step 1's amaxes
    assert float(state["x"].scale) == 448.0 / 2.0 and float(state["dy"].scale) == 57344.0 / 1.0
    # so step 2 cast 4 * 224 = 896, past E4M3's range: every element saturated (and none in step 1)
    assert ft.report(model).rows[0]["x"]["saturated"] == 0.5
    model.eval()
    with torch.no_grad():
        model(torch.full((2, 8), 100.0))  # evaluation: no amax recorded
        model(x1)
    assert float(state["x"].scale) == 448.0 / 4.0  # the history's max (step 2's 4), not 100


def test_a_deep_copy_keeps_its_own_scaling_state():
    import copy

    model = ft.emulate(nn.Sequential(nn.Linear(8, 4)), inputs="e4m3", recipe="delayed")
    twin = copy.deepcopy(model)
    for _ in range(2):
        twin(torch.full((2, 8), 2.0))
    assert float(twin[0].site.linear.scales["x"].scale) == 224.0
    assert float(model[0].site.linear.scales["x"].scale) == 1.0


def test_four_over_six_is_an_nvfp4_recipe_element_of_the_bridge():
    """recipe="...,4o6mse" makes the training layer with Four Over Six; a linear layer's output
    is that layer's forward GEMM (weights and activations with the rule)."""
    from fpemu.train.block_linears import LinearBlock

    p = make_precision("nvfp4", "2d,4o6mse", None)
    assert p.label == "nvfp4/2d+4o6mse" and p.make(0).recipe.four_over_six == "mse"
    with pytest.raises(ValueError, match="Hadamard"):
        make_precision("nvfp4", "rht,4o6", None)
    torch.manual_seed(0)
    lin = nn.Linear(32, 16)
    x = torch.randn(4, 32)
    y = ft.emulate(lin, inputs="nvfp4", recipe="2d,4o6mse")(x).detach().numpy()
    want, _ = LinearBlock("nvfp4", NVFP4Recipe(True, False, False, 0, "mse")).fwd(
        x.numpy(), lin.weight.detach().numpy().T.copy(), lin.bias.detach().numpy())
    assert np.array_equal(y, want)


def test_blockwise_fp8_is_an_e4m3_recipe_of_the_bridge():
    """recipe="blockwise" (DeepSeek-V3 / TE Float8BlockScaling) makes the training layer; with
    h100 each 128 of K goes through the unit promoted to FP32."""
    from fpemu.train.blockwise_fp8 import LinearBlockwiseFP8, blockwise_accumulator

    p = make_precision("e4m3", "blockwise", "h100")
    assert p.label == "e4m3/blockwise@h100" and isinstance(p.make(0), LinearBlockwiseFP8)
    assert make_precision("E4M3", "Blockwise_FP32", None).make(0).recipe.power_2_scale is False
    torch.manual_seed(1)
    lin = nn.Linear(256, 8)
    x = torch.randn(3, 256)
    y = ft.emulate(lin, inputs="e4m3", recipe="blockwise", accumulator="h100")(x).detach().numpy()
    want, _ = LinearBlockwiseFP8(matmul=blockwise_accumulator("h100")).fwd(
        x.numpy(), lin.weight.detach().numpy().T.copy(), lin.bias.detach().numpy())
    assert np.array_equal(y, want)
