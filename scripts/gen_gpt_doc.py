"""Regenerate every number table and figure of the transformer part of docs/training.md.

Usage: python scripts/gen_gpt_doc.py [--seeds 0 1 2 3] [--part all|runs|infer|gemm|graderr|page]
       [--redo PART]

BLAS is pinned to one OpenBLAS thread (set before NumPy loads; the training loop pins it again).
For each seed it trains the default comparison of ``fpemu train --task gpt`` and the NVFP4
ablation (the full recipe with each element removed), runs the post-training quantization of
``fpemu infer``, measures the GEMM error of the H100 FP8 accumulator model with and without
promotion on the trained model's wgrad GEMMs, and the gradient error of every policy against
FP32 on the trained weights. Results are kept in docs/figures/training_gpt.json
as they come (an interrupted run resumes where it stopped; ``--fresh`` starts over); the tables
go between the markers of docs/training.md and the figures of seed 0 to
docs/figures/training_gpt_*.png. About an hour and a half on one core.
"""

from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before NumPy loads: one thread, the pinned setting

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from fpemu import train as T  # noqa: E402
from fpemu.train.gpt.infer import quantized_inference  # noqa: E402
from fpemu.train.gpt.loop import GPT_RUNS, train_gpt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "training.md"
FIGURES = ROOT / "docs" / "figures"
CACHE = FIGURES / "training_gpt.json"
ABLATION = ("sr,rht,last", "2d,rht,last", "2d,sr,last", "2d,sr,rht")  # the full recipe minus one element
ABLATION_NAMES = {"all": "full recipe", "sr,rht,last": "without 2-D weight tiles", "2d,rht,last": "without stochastic rounding",
                  "2d,sr,last": "without the Hadamard transform", "2d,sr,rht": "without the BF16 last block",
                  "none": "none of it (plain NVFP4)"}
PARTS = ("runs", "infer", "gemm", "graderr")


def load() -> dict:
    res = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    return {k: res.get(k, {}) for k in PARTS}


def save(res: dict) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(res, indent=1))


def run_key(seed: int, p: str, fp8: str, nv: str) -> str:
    return f"{seed}|{p}|{fp8 if p == 'fp8' else ''}|{nv if p == 'nvfp4' else ''}"


def runs(res: dict, seeds: list[int]) -> None:
    todo = list(GPT_RUNS) + [("nvfp4", "delayed", nv) for nv in ABLATION]
    for seed in seeds:
        task = T.make_gpt_task(seed)
        for p, fp8, nv in todo:
            key = run_key(seed, p, fp8, nv)
            if key in res["runs"]:
                continue
            h, params = train_gpt(p, None, 300, seed, task=task, fp8_recipe=fp8, nvfp4_recipe=nv)
            s = h.summary()
            entry = {"label": h.label, "val_loss": h.final_loss, "accuracy": h.final_accuracy,
                     "underflow": s["underflow_fraction"], "by_kind": s["underflow_by_kind"],
                     "skipped": s["skipped_steps"], "time_s": h.time_s, "loss": h.loss.tolist()}
            if seed == 0:  # the figures' curves
                entry["curves"] = {"loss": h.loss.tolist(), "scale": h.scale.tolist(), "skipped": h.skipped.tolist(),
                                   "kind_underflow": {k: v.tolist() for k, v in h.kind_underflow.items()},
                                   "kind_counts": {k: v.tolist() for k, v in h.kind_counts.items()},
                                   "precision": h.precision, "loss_scale": h.loss_scale, "variant": h.variant,
                                   "low_format": h.low_format}
            res["runs"][key] = entry
            save(res)
            print(f"seed {seed} {h.label:32s} val {h.final_loss:.4f} {h.time_s:.0f}s", flush=True)


def infer(res: dict, seeds: list[int]) -> None:
    for seed in seeds:
        if str(seed) in res["infer"]:
            continue
        task = T.make_gpt_task(seed)
        _, params = train_gpt("fp32", None, 300, seed, task=task)
        res["infer"][str(seed)] = quantized_inference(params, task, seed=seed)
        save(res)
        print(f"infer seed {seed}", flush=True)


def gemm(res: dict, seeds: list[int]) -> None:
    """Relative error of the wgrad GEMM of every block's fc1 on the trained model, E4M3 x E5M2
    operands as TE's FP8 casts them, through H100's accumulator with and without promotion,
    against exact sums of the same operands; for the training batch (K = 256 tokens) and a
    16 times larger one (K = 4096)."""
    from fpemu.train.accumulate import accumulator_matmul
    from fpemu.train.linears import LinearFP8
    from fpemu.train.gpt.model import forward, loss_and_grads
    from fpemu.train.gpt.precision import make_gpt_precision
    from fpemu.train.gpt.task import batch
    from fpemu.train.recipes import CurrentScaling

    for seed in seeds:
        if str(seed) in res["gemm"]:
            continue
        task = T.make_gpt_task(seed)
        _, params = train_gpt("fp32", None, 300, seed, task=task)
        out = {}
        for b in (task.batch_size, 16 * task.batch_size):
            x, y = batch(task.train, np.random.default_rng([seed, 9]), b, task.config.context)
            prec = make_gpt_precision("fp32", task.config.n_layer)
            _, cache = forward(params, x, task.config, prec)
            captured = {}
            orig = prec.blocks[0]["fc1"].bwd

            def grab(dy, ctx, stats, kind="act", _orig=orig):
                captured["x"], captured["dy"] = ctx[0], dy
                return _orig(dy, ctx, stats, kind)

            prec.blocks[0]["fc1"].bwd = grab
            loss_and_grads(params, x, y, task.config, prec)
            lin = LinearFP8(CurrentScaling())
            xq, ix = lin._quantize("x", captured["x"])
            dyq, idy = lin._quantize("dy", captured["dy"])
            exact = xq.T.astype(np.float64) @ dyq.astype(np.float64)
            errs = {}
            for label, promote in (("h100", None), ("h100+promote128", 128)):
                mm = accumulator_matmul("h100", lin.fwd_fmt, lin.bwd_fmt, promote=promote)
                got = mm(xq.T, dyq, lin.fwd_fmt, lin.bwd_fmt).astype(np.float64)
                # Normwise errors: wgrad entries are signed sums that cancel, so an entry's own
                # relative error says little (an exact value near 0 makes it anything).
                errs[label] = {"max": float(np.abs(got - exact).max() / np.abs(exact).max()),
                               "frobenius": float(np.linalg.norm(got - exact) / np.linalg.norm(exact))}
            out[str(b * task.config.context)] = errs
        res["gemm"][str(seed)] = out
        save(res)
        print(f"gemm seed {seed}: {out}", flush=True)


def graderr(res: dict, seeds: list[int]) -> None:
    """The gradient error of one step against FP32, on the FP32-trained weights of each seed:
    the relative error of each batch's whole gradient (every parameter), averaged over 8
    batches, and that of the 8 batches' summed gradient (random errors shrink in a sum, a
    bias does not). Each policy first sees the 8 batches once, so that delayed scaling has its
    amax history."""
    from fpemu.train.gpt.model import loss_and_grads
    from fpemu.train.gpt.precision import make_gpt_precision
    from fpemu.train.gpt.task import batch

    configs = list(GPT_RUNS) + [("nvfp4", "delayed", nv) for nv in ABLATION]
    for seed in seeds:
        if str(seed) in res["graderr"]:
            continue
        task = T.make_gpt_task(seed)
        cfg = task.config
        _, params = train_gpt("fp32", None, 300, seed, task=task)
        rng = np.random.default_rng([seed, 0x6E7])
        batches = [batch(task.train, rng, task.batch_size, cfg.context) for _ in range(8)]
        flat = lambda g: np.concatenate([g[k].ravel() for k in sorted(g)]).astype(np.float64)  # noqa: E731
        ref = [flat(loss_and_grads(params, x, y, cfg, make_gpt_precision("fp32", cfg.n_layer))[1]) for x, y in batches]
        out = {}
        for p, fp8, nv in configs[1:]:
            prec = make_gpt_precision(p, cfg.n_layer, fp8_recipe=fp8, nvfp4_recipe=nv, seed=seed)
            for x, y in batches:  # the warm-up pass
                loss_and_grads(params, x, y, cfg, prec)
                prec.end_step()
            got = []
            for x, y in batches:
                got.append(flat(loss_and_grads(params, x, y, cfg, prec)[1]))
                prec.end_step()
            per = np.mean([np.linalg.norm(g - r) / np.linalg.norm(r) for g, r in zip(got, ref)])
            summed = np.linalg.norm(sum(got) - sum(ref)) / np.linalg.norm(sum(ref))
            out[run_key(seed, p, fp8, nv)] = {"batch": float(per), "sum8": float(summed)}
        res["graderr"][str(seed)] = out
        save(res)
        print(f"graderr seed {seed}", flush=True)


def table_graderr(res: dict, seeds: list[int]) -> str:
    lines = ["| run | gradient error of one batch (%) | error of the sum of 8 batches' gradients (%) |", "|---|---|---|"]
    configs = list(GPT_RUNS[1:]) + [("nvfp4", "delayed", nv) for nv in ABLATION]
    for p, fp8, nv in configs:
        rows = [res["graderr"][str(s)][run_key(s, p, fp8, nv)] for s in seeds]
        name = res["runs"][run_key(seeds[0], p, fp8, nv)]["label"]
        if p == "nvfp4" and nv != "all":
            name = f"nvfp4 {ABLATION_NAMES[nv]}"
        lines.append(f"| {name} | {spread([100 * r['batch'] for r in rows], '{:.2f}')} | "
                     f"{spread([100 * r['sum8'] for r in rows], '{:.2f}')} |")
    return "\n".join(lines)


def spread(v, fmt="{:+.1f}") -> str:
    v = np.asarray(v, float)
    return f"{fmt.format(v.mean())} ({fmt.format(v.min())} to {fmt.format(v.max())})"


def table_runs(res: dict, seeds: list[int], todo, names=None) -> str:
    lines = ["| run | validation loss | over fp32 (%) | training loss over fp32, last 50 steps (%) "
             "| next-character accuracy (%) | gradient values flushed to zero (%) |",
             "|---|---|---|---|---|---|"]
    for p, fp8, nv in todo:
        rows = [res["runs"][run_key(s, p, fp8, nv)] for s in seeds]
        bases = [res["runs"][run_key(s, "fp32", "", "")] for s in seeds]
        ex = [100 * (r["val_loss"] / b["val_loss"] - 1) for r, b in zip(rows, bases)]
        tail = [100 * (np.mean(r["loss"][-50:]) / np.mean(b["loss"][-50:]) - 1) for r, b in zip(rows, bases)]
        name = (names or {}).get(nv, rows[0]["label"])
        lines.append(f"| {name} | {spread([r['val_loss'] for r in rows], '{:.3f}')} | "
                     f"{'-' if p == 'fp32' else spread(ex)} | {'-' if p == 'fp32' else spread(tail)} | "
                     f"{spread([100 * r['accuracy'] for r in rows], '{:.1f}')} | "
                     f"{'-' if p == 'fp32' else spread([100 * r['underflow'] for r in rows], '{:.2f}')} |")
    return "\n".join(lines)


def table_infer(res: dict, seeds: list[int]) -> str:
    lines = ["| format | perplexity change (%) | logit RMS error (% of RMS) | max abs logit error | top-1 = fp32 (%) |",
             "|---|---|---|---|---|"]
    fmts = [r["format"] for r in res["infer"][str(seeds[0])]][1:]
    for i, f in enumerate(fmts, 1):
        rows = [res["infer"][str(s)][i] for s in seeds]
        lines.append(f"| {f} | {spread([r['perplexity_change'] for r in rows], '{:+.2f}')} | "
                     f"{spread([100 * r['logit_rel_rms'] for r in rows], '{:.1f}')} | "
                     f"{spread([r['logit_max_abs'] for r in rows], '{:.2f}')} | "
                     f"{spread([100 * r['top1_agreement'] for r in rows], '{:.1f}')} |")
    return "\n".join(lines)


def table_gemm(res: dict, seeds: list[int]) -> str:
    lines = ["| K (tokens) | accumulator | max abs error / max abs entry (%) | Frobenius relative error (%) |",
             "|---|---|---|---|"]
    for k in res["gemm"][str(seeds[0])]:
        for acc in ("h100", "h100+promote128"):
            rows = [res["gemm"][str(s)][k][acc] for s in seeds]
            lines.append(f"| {k} | {acc} | {spread([100 * r['max'] for r in rows], '{:.3f}')} | "
                         f"{spread([100 * r['frobenius'] for r in rows], '{:.4f}')} |")
    return "\n".join(lines)


def figures(res: dict) -> None:
    hs = []
    for p, fp8, nv in GPT_RUNS:
        e = res["runs"][run_key(0, p, fp8, nv)]
        c = e["curves"]
        n = len(c["loss"])
        h = T.History(c["precision"], c["loss_scale"], None, 0, n, c["low_format"], np.array(c["loss"]),
                      np.array(c["scale"]), np.array(c["skipped"]), np.zeros(n), np.zeros(n), np.zeros(105, np.int64),
                      final_loss=e["val_loss"], variant=c["variant"], task_name="gpt",
                      kind_counts={k: np.array(v) for k, v in c["kind_counts"].items()},
                      kind_underflow={k: np.array(v) for k, v in c["kind_underflow"].items()})
        hs.append(h)
    with tempfile.TemporaryDirectory() as tmp:
        T.plot(hs, tmp)
        shutil.copy(Path(tmp) / "lesson.png", FIGURES / "training_gpt_lesson.png")


def replace(page: str, name: str, text: str) -> str:
    begin, end = f"<!-- {name}:begin (generated by scripts/gen_gpt_doc.py) -->", f"<!-- {name}:end -->"
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{text}\n{end}{tail}"


def page(res: dict, seeds: list[int]) -> None:
    where = f"mean (lowest to highest) over seeds {', '.join(map(str, seeds))}; NumPy {np.__version__}, one OpenBLAS thread, {platform.machine()}"
    text = PAGE.read_text()
    text = replace(text, "gpt-table", table_runs(res, seeds, GPT_RUNS) + f"\n\n({where}.)")
    abl = [("nvfp4", "delayed", nv) for nv in ("all", *ABLATION, "none")]
    text = replace(text, "gpt-ablation", table_runs(res, seeds, abl, ABLATION_NAMES) + f"\n\n({where}.)")
    text = replace(text, "gpt-infer", table_infer(res, seeds) + f"\n\n({where}.)")
    text = replace(text, "gpt-gemm", table_gemm(res, seeds) + f"\n\n({where}.)")
    text = replace(text, "gpt-graderr", table_graderr(res, seeds) + f"\n\n({where}.)")
    PAGE.write_text(text)
    figures(res)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--part", choices=("all", "runs", "infer", "gemm", "graderr", "page"), default="all")
    ap.add_argument("--fresh", action="store_true", help="forget the results kept so far")
    ap.add_argument("--redo", choices=("runs", "infer", "gemm", "graderr"), help="forget this part's results")
    args = ap.parse_args(argv)
    res = {k: {} for k in PARTS} if args.fresh else load()
    if args.redo:
        res[args.redo] = {}
    for part, compute in (("infer", infer), ("gemm", gemm), ("graderr", graderr), ("runs", runs)):
        if args.part in ("all", part):
            compute(res, args.seeds)
    if args.part in ("all", "page"):
        page(res, args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
