"""fpemu.torch's formats-only MXFP8 against torchao's emulated MXFP8 linear layer
(torchao 0.18: ``MXFP8Linear`` with ``KernelPreference.EMULATED``: blocks of 32 E4M3 along each
GEMM's K, gradients in E4M3 too, RCEIL scales from its eager ``to_mx``, the dequantized operands
multiplied by torch in the input's dtype), on the same layer, input and output gradient: the
forward output, dgrad, wgrad and bias gradient bit for bit. The bridge takes torchao's scale rule
as ``recipe={"convention": "torchao-0.18", "scale_rounding": "rceil"}``. Skipped without torch
or torchao (CI installs torch only)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")
mxfp8_linear = pytest.importorskip("torchao.prototype.moe_training.mxfp8_linear")
from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402
from torchao.quantization.quantize_.common.kernel_preference import KernelPreference  # noqa: E402

import fpemu.torch as ft  # noqa: E402

TORCHAO = {"convention": "torchao-0.18", "scale_rounding": "rceil"}


@pytest.mark.parametrize("tokens, d_in, d_out, scale", [(64, 64, 32, 1.0), (96, 128, 64, 1e-3), (32, 32, 96, 300.0)])
def test_mxfp8_equals_torchaos_emulated_mx_linear(tokens, d_in, d_out, scale):
    torch.manual_seed(tokens + d_out)
    theirs = mxfp8_linear.MXFP8Linear(d_in, d_out, kernel_preference=KernelPreference.EMULATED,
                                      scale_calculation_mode=ScaleCalculationMode.RCEIL)
    plain = torch.nn.Linear(d_in, d_out)
    plain.load_state_dict(theirs.state_dict())
    ours = ft.emulate(copy.deepcopy(plain), inputs="mxfp8", recipe=TORCHAO)
    x = (scale * torch.randn(tokens, d_in)).requires_grad_(True)
    x2 = x.detach().clone().requires_grad_(True)
    dy = torch.randn(tokens, d_out) * scale
    y_theirs, y_ours = theirs(x), ours(x2)
    assert torch.equal(y_ours, y_theirs)
    y_theirs.backward(dy)
    y_ours.backward(dy)
    assert torch.equal(x2.grad, x.grad)  # dgrad
    assert torch.equal(ours.weight.grad, theirs.weight.grad)  # wgrad
    assert torch.equal(ours.bias.grad, theirs.bias.grad)


def test_the_scale_rules_differ_so_the_test_can_fail():
    # NVIDIA's rceil (the bridge's default) and torchao's eager one part just above a power of two:
    # amax = the float after 7: amax / 448 is the float after 2^-6, whose log2 rounds to -6 in
    # float32 (torchao: scale 2^-6) where the exact ceiling is -5 (NVIDIA); 1.25 * 2^-15 is then
    # 1.25 or 0.625 E4M3 subnormal steps: 2^-15 or 2^-14
    torch.manual_seed(0)
    theirs = mxfp8_linear.MXFP8Linear(32, 32, kernel_preference=KernelPreference.EMULATED,
                                      scale_calculation_mode=ScaleCalculationMode.RCEIL)
    plain = torch.nn.Linear(32, 32)
    plain.load_state_dict(theirs.state_dict())
    x = torch.full((32, 32), 1.25 * 2.0**-15)
    x[:, 0] = torch.tensor(7.0).nextafter(torch.tensor(8.0))
    default = ft.emulate(copy.deepcopy(plain), inputs="mxfp8")(x)
    torchao = ft.emulate(copy.deepcopy(plain), inputs="mxfp8", recipe=TORCHAO)(x)
    assert torch.equal(torchao, theirs(x)) and not torch.equal(default, torchao)
