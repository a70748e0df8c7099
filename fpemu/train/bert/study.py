"""The MiniLM table: the built-in sentence pairs embedded in FP32 and in each emulated
precision, formats only and through the matrix units that take the format, each compared
with FP32.

Per row (each number against the FP32 row, on the same sentences):

* ``cos mean``, ``cos min``: the cosine similarity of each sentence's embedding to its FP32
  embedding, mean and smallest over the sentences;
* ``rho``: Spearman's rank correlation of the pairs' similarities with the FP32 ones;
* ``order kept``: of every two pairs, the fraction whose similarities are ordered as in FP32
  (a tie counts as kept only where FP32 ties too);
* ``top-1 kept``: the fraction of first sentences whose most similar second sentence, among
  those of all the pairs, is the one FP32 finds (retrieval unchanged);
* ``max dsim``: the largest change of a pair's similarity;
* ``unit dsim``: for a row through a unit, the largest change of a pair's similarity from the
  same format's formats-only row (what the unit's sums change);
* ``para``, ``near``, ``unrel``: the mean similarity of the paraphrases, the near misses and the
  unrelated pairs (the FP32 row shows the model's own behaviour);
* ``time``: seconds to embed the sentences.

A unit whose model for a format is the same as an earlier row's (B200 and H100 sum BF16 and FP16
alike) is not run twice: the row repeats that row's embeddings and says so.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import numpy as np

from ... import mx
from ...accumulator import get_accumulator
from ..gemm_precisions import GEMM_PRECISIONS, block_format, forward_linear, gemm_precision, precision_label
from .files import Bert
from .model import BATCH_TOKENS, batches, encode
from .pairs import KINDS, PAIRS

__all__ = ["FORMATS", "UNITS", "study_rows", "run_study", "compare", "study_table"]

#: The default table's formats (issue 38's); ``--formats`` takes every precision of
#: :data:`~fpemu.train.gemm_precisions.GEMM_PRECISIONS` (Four Over Six's and blockwise FP8's too).
FORMATS = ("bf16", "fp16", "e4m3", "mxfp8", "mxfp6", "mxfp4", "nvfp4")
UNITS = ("h100", "b200")


def study_rows(formats: Sequence[str] = FORMATS, units: Sequence[str] = UNITS) -> list[tuple[str, str | None]]:
    """``(precision, unit)`` of every row: FP32, each format alone, then each unit with each
    format it has an MMA for (a unit without one for a format has no row for it).

    >>> [precision_label(*r) for r in study_rows(("e4m3", "mxfp4"), ("h100", "b200"))]
    ['fp32', 'e4m3', 'mxfp4', 'e4m3@h100', 'e4m3@b200', 'mxfp4@b200']
    """
    formats = [gemm_precision(f) for f in formats]
    rows: list[tuple[str, str | None]] = [("fp32", None)] + [(f, None) for f in formats if f != "fp32"]
    for unit in units:
        for f in formats:
            if f == "fp32":
                continue
            try:
                _unit_model(f, unit)
            except ValueError:  # no MMA of this unit takes the format
                continue
            rows.append((f, unit))
    return rows


def _unit_model(precision: str, unit: str):
    """The unit's model for the precision's operands (what its GEMMs run through)."""
    block = block_format(precision)
    if block is not None:
        return get_accumulator(unit, block)
    return get_accumulator(unit, "e4m3" if precision in ("e4m3", "fp8_block") else precision)


def _model_key(precision: str, unit: str | None) -> tuple:
    """What decides a row's numbers: the precision and its unit's model (its name and source
    aside), so two units with the same model share one run."""
    if unit is None:
        return (precision, None)
    model = _unit_model(precision, unit)
    fields = tuple((f.name, repr(getattr(model, f.name))) for f in dataclasses.fields(model) if f.name not in ("name", "source"))
    return (precision, type(model).__name__, fields)


def _ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n, equal values sharing their mean rank.

    >>> _ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist()
    [3.5, 1.0, 3.5, 2.0]
    """
    order = np.argsort(v, kind="stable")
    _, first, counts = np.unique(v[order], return_index=True, return_counts=True)
    ranks = np.empty(len(v))
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: the Pearson correlation of the ranks (1.0 where either is constant).

    >>> spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 30.0, 20.0]))
    0.5
    """
    ra, rb = _ranks(np.asarray(a, np.float64)), _ranks(np.asarray(b, np.float64))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return 1.0 if den == 0 else float((ra * rb).sum() / den)


def compare(emb: np.ndarray, ref: np.ndarray, kinds: Sequence[str]) -> dict:
    """The numbers of one row: ``emb`` and ``ref`` (FP32) hold the sentences of the pairs, the
    first and second sentence of pair ``i`` in rows ``2i`` and ``2i+1``."""
    e, r = emb.astype(np.float64), ref.astype(np.float64)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    cos = (e * r).sum(axis=1)
    cross, cross_ref = e[0::2] @ e[1::2].T, r[0::2] @ r[1::2].T
    sims, sims_ref = np.diag(cross), np.diag(cross_ref)
    i, j = np.triu_indices(len(sims), 1)
    kept = np.sign(sims[i] - sims[j]) == np.sign(sims_ref[i] - sims_ref[j])
    kinds = np.asarray(kinds)
    return {
        "cos_mean": float(cos.mean()), "cos_min": float(cos.min()), "spearman": spearman(sims, sims_ref),
        "order_kept": float(kept.mean()) if len(kept) else 1.0,
        "top1_kept": float(np.mean(cross.argmax(axis=1) == cross_ref.argmax(axis=1))),
        "max_dsim": float(np.abs(sims - sims_ref).max()),
        "similarity": {k: float(sims[kinds == k].mean()) for k in KINDS if np.any(kinds == k)},
        "pair_similarities": sims.tolist(),
    }


def run_study(bert: Bert, rows: Sequence[tuple[str, str | None]], pairs: Sequence[tuple[str, str, str]] = PAIRS, *,
              batch_tokens: int = BATCH_TOKENS, step: Callable[[], None] | None = None,
              done: Callable[[dict], None] | None = None, encoder: Callable[..., np.ndarray] = encode,
              workers: int | None = None) -> list[dict]:
    """Embed the pairs' sentences for every row (``rows[0]`` must be FP32) and compare each
    with FP32. ``step()`` after each layer of each batch, ``done(row)`` after each row, in
    row order. ``encoder`` embeds one row, with the arguments of :func:`.model.encode` (the
    same encoder through the torch bridge: :func:`fpemu.torch.bert.encode`).

    The rows are independent: ``workers`` threads may embed several at once (default one
    row at a time: each unit's GEMM already runs on every core, and on 2 cores two rows side by
    side took 152 s for the whole table against 133 s one at a time). Each row's arithmetic is
    the same whichever thread runs it (BLAS pinned to one thread per call by the caller's
    ``single_threaded_blas``), so the table's numbers do not depend on ``workers``; a row's
    ``time_s`` is its wall time, shared with any row beside it."""
    if not rows or rows[0] != ("fp32", None):
        raise ValueError("the first row is the fp32 reference")
    texts = [s for _, a, b in pairs for s in (a, b)]
    kinds = [k for k, _, _ in pairs]
    for precision, unit in rows:
        forward_linear(precision, unit)  # a bad name or a unit without the format fails before any work
    first: dict[tuple, tuple[str, str | None, str]] = {}  # a model's key -> the first row that runs it
    for precision, unit in rows:
        first.setdefault(_model_key(precision, unit), (precision, unit, precision_label(precision, unit)))

    def embed(precision: str, unit: str | None) -> tuple[np.ndarray, float]:
        start = time.perf_counter()
        emb = encoder(bert, texts, precision, unit, batch_tokens=batch_tokens, step=step)
        return emb, time.perf_counter() - start

    n = 1 if workers is None else max(1, workers)
    out, ref = [], None
    with ThreadPoolExecutor(max_workers=n) as pool:
        runs = {key: pool.submit(embed, p, u) for key, (p, u, _) in first.items()}
        for precision, unit in rows:
            key = _model_key(precision, unit)
            label = precision_label(precision, unit)
            emb, seconds = runs[key].result()
            same = None if first[key][2] == label else first[key][2]
            if same is not None:
                seconds = 0.0
                if step is not None:  # the progress counts the row it did not need to run
                    for _ in range(bert.config.num_hidden_layers * _n_batches(bert, texts, batch_tokens)):
                        step()
            ref = emb if ref is None else ref
            row = {"precision": precision, "unit": unit, "label": label, "same_as": same, "time_s": seconds,
                   **compare(emb, ref, kinds)}
            out.append(row)
            if done is not None:
                done(row)
    return out


def _n_batches(bert: Bert, texts: Sequence[str], batch_tokens: int) -> int:
    return len(batches([len(bert.tokenizer.encode(t, bert.max_seq_length)) for t in texts], batch_tokens))


def study_steps(bert: Bert, rows: Sequence, pairs: Sequence = PAIRS, batch_tokens: int = BATCH_TOKENS) -> int:
    """How many times :func:`run_study` calls ``step``."""
    texts = [s for _, a, b in pairs for s in (a, b)]
    return len(rows) * bert.config.num_hidden_layers * _n_batches(bert, texts, batch_tokens)


def unit_changes(rows: Sequence[dict]) -> dict[str, float]:
    """For each row through a unit whose format also has a formats-only row: the largest change
    of a pair's similarity between the two (what the unit's sums alone change).

    >>> unit_changes([{"label": "e4m3", "precision": "e4m3", "unit": None, "pair_similarities": [0.5, 0.25]},
    ...               {"label": "e4m3@h100", "precision": "e4m3", "unit": "h100", "pair_similarities": [0.5, 0.5]}])
    {'e4m3@h100': 0.25}
    """
    alone = {r["precision"]: np.asarray(r["pair_similarities"]) for r in rows if r["unit"] is None}
    return {r["label"]: float(np.abs(np.asarray(r["pair_similarities"]) - alone[r["precision"]]).max())
            for r in rows if r["unit"] is not None and r["precision"] in alone}


def study_table(rows: list[dict]) -> str:
    """The rows of :func:`run_study` as a text table."""
    head = ("precision", "GEMM sums", "cos mean", "cos min", "rho", "order kept", "top-1 kept", "max dsim",
            "unit dsim", "para", "near", "unrel", "time")
    body = []
    changes = unit_changes(rows)
    for r in rows:
        sim = r["similarity"]
        body.append((r["precision"], "fp32" if r["precision"] == "fp32" else (r["unit"] or "fp32 (formats only)"),
                     f"{r['cos_mean']:.6f}", f"{r['cos_min']:.6f}", f"{r['spearman']:.4f}",
                     f"{100 * r['order_kept']:.1f}%", f"{100 * r['top1_kept']:.1f}%", f"{r['max_dsim']:.4f}",
                     f"{changes[r['label']]:.4f}" if r["label"] in changes else "-",
                     *(f"{sim[k]:.3f}" if k in sim else "-" for k in KINDS),
                     f"= {r['same_as']}" if r["same_as"] else f"{r['time_s']:.1f} s"))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))).rstrip()
                     for line in [head, *body])
