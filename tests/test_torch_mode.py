"""``with fpemu.torch.emulating(...)``: the products of forward code through fpemu with torch's
shapes (vectors, batches, broadcasting), their gradients, the names of the call sites, the
mode gone on exit (exceptions included), the functions left in float32 named, bad input.
Skipped without torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import fpemu  # noqa: E402
import fpemu.torch as ft  # noqa: E402
from torch_helpers import F32, gemm_by_hand, inputs, net, t_mm  # noqa: E402

G = torch.Generator().manual_seed(7)


def rand(*shape):
    return torch.randn(*shape, generator=G)


@pytest.mark.parametrize("sa, sb", [((5, 8), (8, 3)), ((8,), (8, 3)), ((5, 8), (8,)), ((8,), (8,)),
                                    ((2, 3, 5, 8), (8, 4)), ((2, 1, 5, 8), (3, 8, 4)), ((3, 5, 8), (3, 8, 4))])
def test_matmul_shapes_are_torchs_and_each_matrix_is_one_gemm(sa, sb):
    a, b = rand(*sa), rand(*sb)
    with ft.emulating(inputs="e4m3") as block:
        got = a @ b
    assert got.shape == (a @ b).shape
    A = a.numpy()[None] if a.dim() == 1 else a.numpy()
    B = b.numpy()[:, None] if b.dim() == 1 else b.numpy()
    if B.ndim == 2:  # A's leading axes are rows of one GEMM, with one per-tensor scale
        want = gemm_by_hand("e4m3", A.reshape(-1, A.shape[-1]), B)
    else:
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
        As = np.broadcast_to(A, batch + A.shape[-2:]).reshape(-1, *A.shape[-2:])
        Bs = np.broadcast_to(B, batch + B.shape[-2:]).reshape(-1, *B.shape[-2:])
        want = np.stack([gemm_by_hand("e4m3", x, w) for x, w in zip(As, Bs)])
    assert np.array_equal(got.numpy().ravel(), want.ravel())
    assert list(block.emulation.sites) == ["matmul.0"]


def test_bmm_mm_and_linear_and_rmatmul():
    a, b, w, bias = rand(3, 4, 16), rand(3, 16, 5), rand(6, 16), rand(6)
    with ft.emulating(inputs="bf16") as block:
        y_bmm = torch.bmm(a, b)
        y_mm = a[0].mm(b[0])
        y_lin = F.linear(a, w, bias)
        y_r = b[0].__rmatmul__(a[0])  # a[0] @ b[0]
    for i in range(3):
        assert np.array_equal(y_bmm[i].numpy(), gemm_by_hand("bf16", a[i].numpy(), b[i].numpy()))
    assert np.array_equal(y_mm.numpy(), gemm_by_hand("bf16", a[0].numpy(), b[0].numpy()))
    assert np.array_equal(y_r.numpy(), y_mm.numpy())
    want = gemm_by_hand("bf16", a.numpy().reshape(-1, 16), w.numpy().T, bias.numpy())
    assert np.array_equal(y_lin.numpy(), want.reshape(3, 4, 6))
    assert list(block.emulation.sites) == ["bmm.0", "mm.0", "linear.0", "matmul.0"]


def test_gradients_of_a_batched_product_go_through_the_layer_per_matrix():
    a, b = rand(2, 4, 32).requires_grad_(True), rand(2, 32, 16).requires_grad_(True)
    dy = rand(2, 4, 16)
    with ft.emulating(inputs="bf16"):
        y = a @ b
    y.backward(dy)
    q = lambda t: np.asarray(fpemu.quantize(np.asarray(t, F32), "bf16"), F32)  # noqa: E731
    for i in range(2):  # dY rounded to bf16 as the backward GEMMs' operand; FP32 dA and dB
        A, B, D = a[i].detach().numpy(), b[i].detach().numpy(), dy[i].numpy()
        assert np.array_equal(a.grad[i].numpy(), t_mm(q(D), q(B).T))
        assert np.array_equal(b.grad[i].numpy(), t_mm(q(A).T, q(D)))


def test_sites_are_named_after_the_module_and_the_call_order():
    model = ft.emulate(net(), inputs="mxfp8")
    with ft.emulating(model):
        model(inputs())
    names = list(model._fpemu_emulations[0].sites)
    assert names == ["inp", "attn.qkv", "attn.out", "head", "attn.matmul.0", "attn.matmul.1"]
    plain = net()  # no emulate(): the block's own precision, the Linears' F.linear named after them
    with ft.emulating(plain, inputs="bf16") as block:
        plain(inputs())
        plain(inputs(2))  # the same sites again, not new ones
    assert list(block.emulation.sites) == ["inp", "attn.qkv", "attn.matmul.0", "attn.matmul.1", "attn.out", "head"]
    assert block.emulation.sites["attn.matmul.0"].linear.name == "bf16"


def test_the_mode_is_gone_after_the_block_even_after_an_error():
    a, b = rand(4, 8), rand(8, 4)
    block = ft.emulating(inputs="mxfp4")
    with pytest.raises(KeyError):
        with block:
            a @ b
            raise KeyError("inside")
    assert torch.equal(a @ b, torch.matmul(a, b)) and len(block.emulation.sites) == 1
    model = net()
    model(inputs())  # the naming hooks are gone too: a forward outside makes no site
    assert len(block.emulation.sites) == 1
    with block:  # a block can be entered again
        a @ b
    with pytest.raises(RuntimeError, match="already active"):
        with block:
            with block:
                pass


def test_emulated_layers_are_not_emulated_twice_inside_the_block():
    model = ft.emulate(nn.Sequential(nn.Linear(16, 8)), inputs="nvfp4", recipe="none")
    x = rand(4, 16)
    with ft.emulating(model):
        inside = model(x)
    assert torch.equal(inside, model(x)) and list(model._fpemu_emulations[0].sites) == ["0"]


def test_gemms_left_in_float32_are_named_in_one_warning():
    q, k, v = rand(1, 2, 4, 8), rand(1, 2, 4, 8), rand(1, 2, 4, 8)
    with pytest.warns(UserWarning) as record:
        with ft.emulating(inputs="bf16"):
            torch.einsum("bhtd,bhsd->bhts", q, k)
            F.scaled_dot_product_attention(q, k, v)
            F.scaled_dot_product_attention(q, k, v)
            q @ k.transpose(-1, -2)  # emulated: not named
    assert len(record) == 1
    assert str(record[0].message).endswith("torch.einsum (1 call), F.scaled_dot_product_attention (2 calls)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = ft.emulate(net(), inputs="bf16", exclude="attn")
        with ft.emulating(model):  # inside an excluded module: float32 by request, no warning
            model(inputs())


def test_bad_input_in_the_block():
    a = rand(4, 8)
    with ft.emulating(inputs="bf16"):
        with pytest.raises(ValueError, match="does not write into out="):
            torch.matmul(a, a.T, out=torch.empty(4, 4))
        with pytest.raises(ValueError, match="the first operand of matmul is torch.int64"):
            torch.ones(2, 2, dtype=torch.int64) @ torch.ones(2, 2, dtype=torch.int64)
        with pytest.raises(ValueError, match="the second operand of matmul is torch.float64"):
            a @ a.T.double()
        with pytest.raises(ValueError, match="cannot be multiplied"):
            a @ a
    with pytest.raises(ValueError, match="needs inputs="):
        ft.emulating(net())
    with pytest.raises(ValueError, match="takes the options emulate"):
        ft.emulating(ft.emulate(net(), inputs="bf16"), stats=True)
    with pytest.raises(TypeError, match="emulating takes an nn.Module"):
        ft.emulating("bf16")
