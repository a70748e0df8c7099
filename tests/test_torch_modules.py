"""fpemu.torch on a small model (Linear layers, attention through ``emulating``, a residual):
every emulated GEMM equal bit for bit to its operands cast by fpemu's public functions and
multiplied by torch in float32 (formats only) or by ``fpemu.gemm`` with the preset; the
gradients of one backward step equal to fpemu.train's layer on the same operands and to an
explicit recomputation; exclusion; the modules left in float32. Skipped without torch."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import fpemu  # noqa: E402
import fpemu.torch as ft  # noqa: E402
from fpemu import mx  # noqa: E402
from fpemu.train.block_linears import LinearBlock, NVFP4Recipe  # noqa: E402
from fpemu.train.linears import LinearFP8, LinearLow  # noqa: E402
from fpemu.train.recipes import CurrentScaling  # noqa: E402
from torch_helpers import F32, deq, gemm_by_hand, inputs, linear_io, net, t_mm  # noqa: E402

FORMATS = ["bf16", "fp16", "e4m3", "e5m2", "e4m3fnuz", "mxfp8", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "nvfp4"]
WITH_UNITS = [("bf16", "h100"), ("fp16", "a100"), ("bf16", "mi300x"), ("e4m3", "h100"), ("e5m2", "b200"), ("e4m3fnuz", "mi300x"),
              ("mxfp8", "b200"), ("mxfp6_e3m2", "b200"), ("mxfp4", "b200"), ("nvfp4", "b200")]


def _run(precision: str, accumulator: str | None = None, recipe=None):
    model = ft.emulate(net(), inputs=precision, accumulator=accumulator, recipe=recipe)
    io = linear_io(model)
    with ft.emulating(model):
        y = model(inputs())
    return model, io, y


def _check_forward(precision, accumulator, model, io, autocast=False):
    for name, (x, y) in io.items():
        lin = model.get_submodule(name)
        w, b = lin.weight.detach().numpy().T, lin.bias.detach().numpy()
        assert np.array_equal(y, gemm_by_hand(precision, x, w, b, accumulator, autocast)), name
    seen = model.attn.seen
    for i in range(2):
        for h in range(2):  # one GEMM per matrix of the batched product
            s = {k: v[i, h].detach().numpy() for k, v in seen.items()}
            assert np.array_equal(s["scores"], gemm_by_hand(precision, s["q"], s["kt"], None, accumulator, autocast))
            assert np.array_equal(s["pv"], gemm_by_hand(precision, s["att"], s["v"], None, accumulator, autocast))


@pytest.mark.parametrize("precision", FORMATS)
def test_formats_only_is_the_casts_then_torchs_float32_product(precision):
    model, io, y = _run(precision)
    assert sorted(io) == ["attn.out", "attn.qkv", "head", "inp"]
    _check_forward(precision, None, model, io)
    assert torch.isfinite(y).all() and not torch.equal(y, net()(inputs()))  # it did round something


@pytest.mark.parametrize("precision, accumulator", WITH_UNITS)
def test_accumulator_mode_is_fpemu_gemm_with_the_preset(precision, accumulator):
    model, io, _ = _run(precision, accumulator)
    _check_forward(precision, accumulator, model, io)


@pytest.mark.parametrize("precision, accumulator", [("bf16", None), ("fp16", None), ("bf16", "h100")])
def test_autocast_rounds_the_bias_and_the_output_too(precision, accumulator):
    model, io, _ = _run(precision, accumulator, recipe="autocast")
    _check_forward(precision, accumulator, model, io, autocast=True)
    _, io_plain, _ = _run(precision, accumulator)
    assert not np.array_equal(io["inp"][1], io_plain["inp"][1])


def test_the_preset_changes_the_bits():
    # h100's truncating fp32 sums of e4m3 products differ from torch's float32 product somewhere
    _, io_plain, y_plain = _run("e4m3")
    _, io_unit, y_unit = _run("e4m3", "h100")
    assert any(not np.array_equal(io_plain[n][1], io_unit[n][1]) for n in io_plain)
    # bf16: 1 + 2^-8 + 1.5 * 2^-24 rounds up in torch's fp32 sum; h100 keeps it exactly and rounds
    # toward zero; with autocast's output rounding that is 1 + 2^-7 (above bf16's tie) against 1
    # (on the tie: to even)
    lin = nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 2.0**-8, 1.5 * 2.0**-24]]))
    got = {(a, r): float(ft.emulate(lin, inputs="bf16", accumulator=a, recipe=r)(torch.ones(1, 3)).detach())
           for a in (None, "h100") for r in (None, "autocast")}
    assert got == {(None, None): 1 + 2.0**-8 + 2.0**-23, ("h100", None): 1 + 2.0**-8,
                   (None, "autocast"): 1 + 2.0**-7, ("h100", "autocast"): 1.0}


def _grads(precision, recipe=None, backward=True, seed=0):
    """One forward and backward of a model whose layers are all Linear (no attention), with the
    inputs, outputs and output gradients of its layers recorded."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(32, 48), nn.GELU(), nn.Linear(48, 16))
    model = ft.emulate(model, inputs=precision, recipe=recipe, backward=backward, seed=seed)
    io = linear_io(model)
    douts = {}
    for name in ("0", "2"):
        model.get_submodule(name).register_full_backward_hook(
            lambda m, gin, gout, name=name: douts.__setitem__(name, (gout[0].reshape(-1, gout[0].shape[-1]).numpy().copy(),
                                                                     None if gin[0] is None else gin[0].reshape(-1, gin[0].shape[-1]).numpy().copy())))
    x = inputs(3, (2, 16, 32)).requires_grad_(True)
    model(x).pow(2).sum().backward()
    return model, io, douts


def _torch_mm(a, b, fa=None, fb=None):
    return t_mm(a, b)


def _t_sum(t):
    """torch's sum over the rows: the order nn.Linear's bias gradient has, which the bridge keeps."""
    return torch.from_numpy(np.ascontiguousarray(t, F32)).sum(dim=0).numpy()


def _train_layer(precision, name, seed):
    """fpemu.train's layer for a precision, built directly, with torch's float32 product and
    bias-gradient sum."""
    if precision in ("bf16", "fp16"):
        layer = LinearLow(precision, _torch_mm, round_dx=False, round_output=False)
    elif precision == "e4m3":
        layer = LinearFP8(CurrentScaling(), _torch_mm)
    else:
        layer_seed = seed * 2**32 + zlib.crc32(name.encode())  # docs/torch.md: each layer's seed
        layer = LinearBlock(precision, NVFP4Recipe(bf16_last=0) if precision == "nvfp4" else None, seed=layer_seed,
                            matmul=lambda a, b: t_mm(deq(a), deq(b)))
    layer.sum_rows = _t_sum
    return layer


@pytest.mark.parametrize("precision", ["bf16", "e4m3", "mxfp8", "mxfp4", "nvfp4"])
def test_gradients_are_fpemu_trains_layer_on_the_same_operands(precision):
    model, io, douts = _grads(precision, seed=5)
    for name in ("0", "2"):
        x, y = io[name]
        lin = model.get_submodule(name)
        layer = _train_layer(precision, name, 5)
        y_ref, held = layer.fwd(x, lin.weight.detach().numpy().T, lin.bias.detach().numpy())
        assert np.array_equal(y, y_ref)
        dy, dx = douts[name]
        dx_ref, dw_ref, db_ref = layer.bwd(dy, held, None)
        assert np.array_equal(lin.weight.grad.numpy(), dw_ref.T), name  # wgrad (NVFP4: stochastic, RHT)
        assert np.array_equal(lin.bias.grad.numpy(), db_ref), name
        assert np.array_equal(dx, dx_ref), name  # dgrad


def test_gradients_by_hand():
    # bf16 (dY rounded; autocast: dX, dW, db too), e4m3 (E5M2 dY with its own current scale),
    # mxfp8 and nvfp4 without stochastic rounding or RHT (each GEMM's operands along its own K)
    for precision, recipe in (("bf16", None), ("bf16", "autocast"), ("e4m3", None), ("mxfp8", None), ("nvfp4", "2d")):
        model, io, douts = _grads(precision, recipe)
        x, _ = io["2"]
        dy, dx = douts["2"]
        lin = model.get_submodule("2")
        W, dW, db = lin.weight.detach().numpy(), lin.weight.grad.numpy(), lin.bias.grad.numpy()
        if precision == "bf16":
            q = lambda t: np.asarray(fpemu.quantize(np.asarray(t, F32), "bf16"), F32)  # noqa: E731
            ref = t_mm(q(dy), q(W)), t_mm(q(x).T, q(dy)).T, _t_sum(dy)
            if recipe == "autocast":
                ref = q(t_mm(q(dy), q(W))), q(t_mm(q(x).T, q(dy))).T, q(_t_sum(q(dy)))
        elif precision == "e4m3":
            tdy, tw, tx = fpemu.scaled_cast(dy, "e5m2"), fpemu.scaled_cast(W.T, "e4m3"), fpemu.scaled_cast(x, "e4m3")
            v = lambda t: np.asarray(fpemu.decode(t.codes, t.format), F32)  # noqa: E731
            ref = (t_mm(v(tdy), v(tw).T) * tdy.scale_inv * tw.scale_inv,
                   (t_mm(v(tx).T, v(tdy)) * tx.scale_inv * tdy.scale_inv).T, _t_sum(dy))
        else:
            block, kw = ("mxfp8_e4m3", {"scale_rounding": "rceil"}) if precision == "mxfp8" else ("nvfp4", {})
            tiles = {"axis": (0, 1), "block_size": (16, 16)} if precision == "nvfp4" else {"axis": 1}
            wq = deq(mx.quantize(W.T, block, **tiles, **kw))  # dgrad: W along d_out (NVFP4: its 16x16 tiles)
            ref = (t_mm(deq(mx.quantize(dy, block, axis=1, **kw)), wq.T),
                   t_mm(deq(mx.quantize(x, block, axis=0, **kw)).T, deq(mx.quantize(dy, block, axis=0, **kw))).T,
                   _t_sum(dy))
        for got, want in zip((dx, dW, db), ref):
            assert np.array_equal(got, want), precision


def test_backward_false_gives_the_float32_gradients():
    model, io, douts = _grads("mxfp4", backward=False)
    x, _ = io["2"]
    dy, dx = douts["2"]
    lin = model.get_submodule("2")
    W = lin.weight.detach().numpy()
    assert np.array_equal(dx, t_mm(dy, W)) and np.array_equal(lin.weight.grad.numpy(), t_mm(x.T, dy).T)


def test_exclude_keeps_the_matched_modules_and_their_children_in_float32():
    model = ft.emulate(net(), inputs="mxfp4", exclude=["inp", "attn"])
    assert type(model.inp) is nn.Linear and type(model.attn.qkv) is nn.Linear
    assert type(model.head).__name__ == "EmulatedLinear"
    with ft.emulating(model):
        model(inputs())
    assert [s for s in model._fpemu_emulations[0].sites] == ["head"]  # attention's matmuls too
    # the recipes' split: block formats inside, the first and last layers in BF16
    model = ft.emulate(ft.emulate(net(), inputs="nvfp4", exclude=["inp", "head"]), inputs="bf16")
    assert [lin.site.label for lin in (model.inp, model.attn.qkv, model.head)] == ["bf16", "nvfp4/2d+sr+rht", "bf16"]
    with pytest.raises(ValueError, match="exclude pattern 'atn' matches no module"):
        ft.emulate(net(), inputs="bf16", exclude="atn")


class OwnForward(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


def test_modules_with_gemms_the_bridge_does_not_emulate_are_named_in_one_warning():
    model = nn.ModuleDict({"conv": nn.Conv1d(4, 4, 3), "mha": nn.MultiheadAttention(8, 2), "bil": nn.Bilinear(4, 4, 2),
                           "rnn": nn.LSTM(4, 4), "emb": nn.Embedding(10, 4), "own": OwnForward(4, 4),
                           "enc": nn.TransformerEncoderLayer(8, 2, 16), "fc": nn.Linear(4, 4)})
    with pytest.warns(UserWarning) as record:
        ft.emulate(model, inputs="bf16")
    assert len(record) == 1
    text = str(record[0].message)
    for name in ("conv (Conv1d)", "mha (MultiheadAttention)", "bil (Bilinear)", "rnn (LSTM)", "own (OwnForward)",
                 "enc (TransformerEncoderLayer)"):
        assert name in text
    assert "emb" not in text and "out_proj" not in text and "6 module(s)" in text
    assert type(model["fc"]).__name__ == "EmulatedLinear" and type(model["mha"].out_proj).__name__ != "EmulatedLinear"
    assert type(model["enc"].linear1) is nn.Linear  # inside a module left in float32


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown inputs format 'e4m2'; did you mean e5m2 or e4m3"):
        ft.emulate(net(), inputs="e4m2")
    with pytest.raises(ValueError, match="unknown GPU or model 'h1000'|h1000"):
        ft.emulate(net(), inputs="bf16", accumulator="h1000")
    with pytest.raises(ValueError, match="accumulator 'v100' does not take bf16 operands"):
        ft.emulate(net(), inputs="bf16", accumulator="v100")
    with pytest.raises(ValueError, match="accumulator 'h100' does not take mxfp8 operands"):
        ft.emulate(net(), inputs="mxfp8", accumulator="h100")
    with pytest.raises(ValueError, match="bf16's recipe is None .* or 'autocast'"):
        ft.emulate(net(), inputs="bf16", recipe="current")
    with pytest.raises(TypeError, match="emulate takes an nn.Module"):
        ft.emulate(np.ones(3), inputs="bf16")
    with pytest.raises(ValueError, match="the weight of inp is torch.float64"):
        ft.emulate(net().double(), inputs="bf16")
    with pytest.raises(ValueError, match="the weight of inp is torch.float16"):
        ft.emulate(net().half(), inputs="bf16")
    model = ft.emulate(net(), inputs="bf16")
    with pytest.raises(ValueError, match="the input of inp is torch.float64"):
        model(inputs().double())
    with pytest.raises(ValueError, match="the input of inp is torch.int64"):
        model(torch.ones(2, 3, 16, dtype=torch.int64))
    with pytest.raises(ValueError, match="is on meta; fpemu computes on the CPU"):
        ft.emulate(nn.Linear(4, 4, device="meta"), inputs="bf16")
    with pytest.raises(ValueError, match="the input of inp is on meta"):
        model(torch.ones(2, 3, 16, device="meta"))
