"""Regenerate every number table and figure of the MLP part of docs/training.md.

Usage: python scripts/gen_training_doc.py [--seeds 0 1 2 3] [--skip-torch] [--parts PART ...]

BLAS is pinned to one OpenBLAS thread (the environment variable is set before NumPy loads, and
``fpemu.train.run`` pins it again while it trains), so the numbers do not depend on the machine's
thread count. For seeds 0-3 it trains the default comparison and the other policies, the Adam
runs and, when torch is installed, the same runs in real PyTorch mixed precision
(scripts/torch_mlp_reference.py); it writes the tables between the markers of
docs/training.md, the raw numbers to docs/figures/training_mlp.json and the figures of seed 0
to docs/figures/training_*.png. The Adam and loss-scale sawtooth parts train the earlier default
task (``PREVIOUS``). About 15 minutes on one core.
"""

from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before NumPy loads: one thread, the pinned setting

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from fpemu import train as T  # noqa: E402
from fpemu.train.report import title_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "training.md"
FIGURES = ROOT / "docs" / "figures"
# The default comparison (fpemu train).
RUNS = [("fp32", "none", "delayed"), ("fp16", "none", "delayed"), ("fp16", "dynamic", "delayed"),
        ("bf16", "none", "delayed"), ("fp8", "none", "delayed"), ("fp8", "none", "unscaled")]
# The earlier default task (2**17 outputs, fitted over 600 steps): the Adam and loss-scale
# sawtooth sections are measured on it.
PREVIOUS = dict(n_clusters=64, n_labels=128, depth=4, n_train=16384, batch_size=1024, lr=2.0)
PREVIOUS_STEPS = 600


def label(p: str, ls: str, rec: str) -> str:
    return "fp32" if p == "fp32" else p + (f"[{rec}]" if p == "fp8" else "") + f"+{ls}"  # History.label's


def spread(values: list[float], fmt: str = "{:+.1f}") -> str:
    """'mean (min to max)' of the seeds' values."""
    v = np.asarray(values, dtype=float)
    return f"{fmt.format(v.mean())} ({fmt.format(v.min())} to {fmt.format(v.max())})"


def mlp_runs(seeds: list[int]) -> dict:
    out: dict = {}
    for seed in seeds:
        task = T.make_task(seed)
        hs = {label(*r): T.run(r[0], r[1], T.DEFAULT_STEPS, seed, task=task, fp8_recipe=r[2]) for r in RUNS}
        base = hs["fp32"].final_loss
        for name, h in hs.items():
            row = out.setdefault(name, {"excess": [], "ratio": [], "underflow": [], "kinds": [], "final": [],
                                        "acc": []})
            row["excess"].append(100 * (h.final_loss / base - 1))
            row["ratio"].append(h.final_loss / base)
            row["underflow"].append(100 * h.summary()["underflow_fraction"])
            row["kinds"].append({k: 100 * v for k, v in h.underflow_by_kind().items()})
            row["final"].append(h.final_loss)
            row["acc"].append(100 * h.final_accuracy)
        print(f"seed {seed}:", ", ".join(f"{k} {v['excess'][-1]:+.1f}%" for k, v in out.items()), flush=True)
    return out


def adam_runs(seeds: list[int], use_torch: bool) -> dict:
    out: dict = {}
    for lr in (1e-3, 1e-2):
        for seed in seeds:
            task = T.make_task(seed, **{**PREVIOUS, "optimizer": "adam", "lr": lr})
            base = T.run("fp32", "none", PREVIOUS_STEPS, seed, task=task).final_loss
            for ls in ("none", "dynamic"):
                h = T.run("fp16", ls, PREVIOUS_STEPS, seed, task=task)
                row = out.setdefault(f"{lr:g} fp16+{ls}", {"excess": [], "underflow": [], "torch_excess": []})
                row["excess"].append(100 * (h.final_loss / base - 1))
                row["underflow"].append(100 * h.summary()["underflow_fraction"])
            if use_torch:
                from torch_mlp_reference import train_torch

                t32 = train_torch(seed, "fp32", "none", PREVIOUS_STEPS, task=task)["final_loss"]
                for ls in ("none", "dynamic"):
                    t = train_torch(seed, "fp16", ls, PREVIOUS_STEPS, task=task)
                    out[f"{lr:g} fp16+{ls}"]["torch_excess"].append(100 * (t["final_loss"] / t32 - 1))
            print(f"adam lr {lr:g} seed {seed}:", {k: v["excess"][-1] for k, v in out.items() if k.startswith(f"{lr:g}")}, flush=True)
    return out


def torch_runs(seeds: list[int]) -> dict:
    from torch_mlp_reference import train_torch

    out: dict = {}
    for seed in seeds:
        task = T.make_task(seed)
        t32 = train_torch(seed, "fp32", "none", T.DEFAULT_STEPS, task=task)["final_loss"]
        for p, ls in (("fp16", "none"), ("fp16", "dynamic"), ("bf16", "none")):
            t = train_torch(seed, p, ls, T.DEFAULT_STEPS, task=task)
            row = out.setdefault(f"{p}+{ls}", {"excess": [], "ratio": [], "underflow": [], "kinds": []})
            row["excess"].append(100 * (t["final_loss"] / t32 - 1))
            row["ratio"].append(t["final_loss"] / t32)
            row["underflow"].append(100 * t["underflow"])
            row["kinds"].append({k: 100 * v for k, v in t["underflow_by_kind"].items()})
        print(f"torch seed {seed}:", {k: v["excess"][-1] for k, v in out.items()}, flush=True)
    return out


def kinds_cell(kinds: list[dict]) -> str:
    names = {"loss": "loss", "act": "act", "weight": "W", "bias": "b"}
    keys = [k for k in names if k in kinds[0]]
    return ", ".join(f"{names[k]} {np.mean([d[k] for d in kinds]):.2f}" for k in keys) or "-"


def seeds_table(mlp: dict, torch: dict | None) -> str:
    lines = ["| run | final loss vs fp32 (x) | test accuracy (%) | gradient values flushed to zero (%) "
             "| by kind (%, mean) |", "|---|---|---|---|---|"]
    for name, r in mlp.items():
        if name == "fp32":
            lines.append(f"| fp32 | final loss {spread(r['final'], '{:.3e}')} | {spread(r['acc'], '{:.1f}')} | - | - |")
            continue
        ratio_fmt = "{:.2f}" if max(r["ratio"]) < 100 else "{:.2g}"  # a run that did not train: 5.9e+05
        lines.append(f"| {name} | {spread(r['ratio'], ratio_fmt)} | {spread(r['acc'], '{:.1f}')} "
                     f"| {spread(r['underflow'], '{:.2f}')} | {kinds_cell(r['kinds'])} |")
        if torch and name in torch:
            t = torch[name]
            lines.append(f"| {name}, torch autocast | {spread(t['ratio'], '{:.2f}')} | - "
                         f"| {spread(t['underflow'], '{:.2f}')} | {kinds_cell(t['kinds'])} |")
    return "\n".join(lines)


def _range(values: list[float], fmt: str = "{:.2f}") -> str:
    v = np.asarray(values, dtype=float)
    return f"{fmt.format(v.min())} to {fmt.format(v.max())}"


def claims_text(mlp: dict, torch: dict | None, seeds: list[int]) -> str:
    """The lesson's claims, each with its measured range over the seeds (and torch's)."""
    def ratio(name: str) -> str:
        r = f"{_range(mlp[name]['ratio'])}x FP32's loss"
        if torch and name in torch:
            r += f" (torch autocast: {_range(torch[name]['ratio'])}x)"
        return r

    n = len(seeds)
    unscaled = mlp["fp8[unscaled]+none"]
    return "\n".join([
        f"Over the {n} seeds:",
        "",
        f"1. **FP16 without loss scaling stalls**: it flushes {_range(mlp['fp16+none']['underflow'], '{:.1f}')}% of its "
        f"gradient values to zero and ends at {ratio('fp16+none')}.",
        f"2. **Dynamic loss scaling recovers FP32** (`torch.amp.GradScaler` semantics, scale 2^16): "
        f"{ratio('fp16+dynamic')}.",
        f"3. **BF16 needs no scaling** (FP32's exponent range: {_range(mlp['bf16+none']['underflow'], '{:.2f}')}% "
        f"flushed): {ratio('bf16+none')}.",
        f"4. **FP8 trains with per-tensor scaling** (TransformerEngine's delayed scaling): {ratio('fp8[delayed]+none')}, "
        f"test accuracy {_range(mlp['fp8[delayed]+none']['acc'], '{:.1f}')}%; **without it, it does not train**: "
        f"{_range(unscaled['underflow'], '{:.1f}')}% of its gradient values flush, its final loss stays at "
        f"{_range(unscaled['final'], '{:.3f}')} (ln 2 = 0.693 is a coin toss) and its test accuracy at "
        f"{_range(unscaled['acc'], '{:.1f}')}%.",
    ])


def adam_table(adam: dict) -> str:
    has_torch = any(r["torch_excess"] for r in adam.values())
    head = "| Adam lr, run | final loss over fp32 (%) | flushed to zero (%) |" + (" torch autocast: over fp32 (%) |" if has_torch else "")
    lines = [head, "|---|---|---|" + ("---|" if has_torch else "")]
    for name, r in adam.items():
        cells = f"| {name} | {spread(r['excess'])} | {spread(r['underflow'], '{:.2f}')} |"
        lines.append(cells + (f" {spread(r['torch_excess'])} |" if has_torch else ""))
    return "\n".join(lines)


def figures() -> dict:
    """The figures of seed 0: the default comparison, and the scaler's sawtooth."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    task = T.make_task(0)
    hs = T.compare(task=task)
    table = T.summary_table(hs, title_line(task.description, T.DEFAULT_STEPS, 0))
    with tempfile.TemporaryDirectory() as tmp:
        T.plot(hs, tmp)
        for name in ("lesson", "grad_hist"):
            shutil.copy(Path(tmp) / f"{name}.png", FIGURES / f"training_{name}.png")
    old = T.make_task(0, **PREVIOUS)
    saw = [T.run("fp32", steps=PREVIOUS_STEPS, task=old),
           T.run("fp16", "dynamic", PREVIOUS_STEPS, 0, init_scale=2.0**30, growth_interval=50, task=old)]
    with tempfile.TemporaryDirectory() as tmp:
        T.plot(saw, tmp)
        shutil.copy(Path(tmp) / "lesson.png", FIGURES / "training_sawtooth.png")
    s = saw[1]
    return {"table": table, "sawtooth": {
        "skipped": int(s.skipped.sum()), "first_skipped": int(np.argmin(s.skipped)),
        "min_log2": float(np.log2(s.scale.min())), "final_log2": float(np.log2(s.scale[-1])),
        "excess": 100 * (s.final_loss / saw[0].final_loss - 1)}}


def replace(page: str, name: str, text: str) -> str:
    begin, end = f"<!-- {name}:begin (generated by scripts/gen_training_doc.py) -->", f"<!-- {name}:end -->"
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{text}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--parts", nargs="*", default=["figures", "mlp", "torch", "adam", "dynamics"],
                    choices=["figures", "mlp", "torch", "adam", "dynamics"],
                    help="what to (re)compute; the rest comes from docs/figures/training_mlp.json "
                    "(--parts with nothing after it: rewrite the page only)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    use_torch = not args.skip_torch
    if use_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            use_torch = False
    cache = FIGURES / "training_mlp.json"
    results = json.loads(cache.read_text()) if cache.exists() else {}
    parts = set(args.parts)
    if "figures" in parts:
        results["figures"] = figures()
        print(results["figures"]["table"], flush=True)
    if "mlp" in parts:
        results["mlp"] = mlp_runs(args.seeds)
    if "torch" in parts:
        results["torch"] = torch_runs(args.seeds) if use_torch else None
    if "adam" in parts:
        results["adam"] = adam_runs(args.seeds, use_torch)
    if "dynamics" in parts:
        results["dynamics"] = dynamics(args.seeds)
    if parts:
        results["seeds"] = args.seeds
        results["where"] = (f"seeds {', '.join(map(str, args.seeds))}; NumPy {np.__version__}, one OpenBLAS "
                            f"thread, {platform.machine()}")
        cache.write_text(json.dumps(results, indent=1))
    write_page(results)
    return 0


def dynamics(seeds: list[int]) -> dict:
    """Over the seeds: what the lesson figure shows of seed 0 — the excess and the underflow per
    kind of the last 100 steps, and the loss-scale sawtooth of a scaler started at 2^30."""
    out: dict = {"late": {}, "sawtooth": []}
    for seed in seeds:
        task = T.make_task(seed, **PREVIOUS)
        base = T.run("fp32", "none", PREVIOUS_STEPS, seed, task=task)
        for ls in ("none", "dynamic"):
            h = T.run("fp16", ls, PREVIOUS_STEPS, seed, task=task)
            row = out["late"].setdefault(f"fp16+{ls}", {"excess_curve_end": [], "kinds": []})
            row["excess_curve_end"].append(float(np.mean(100 * (h.loss[-100:] / base.loss[-100:] - 1))))
            row["kinds"].append({k: 100 * float(v[-100:].mean()) for k, v in h.kind_underflow.items()})
        s = T.run("fp16", "dynamic", PREVIOUS_STEPS, seed, task=task, init_scale=2.0**30, growth_interval=50)
        out["sawtooth"].append({"skipped": int(s.skipped.sum()), "min_log2": float(np.log2(s.scale.min())),
                                "final_log2": float(np.log2(s.scale[-1])),
                                "excess": 100 * (s.final_loss / base.final_loss - 1)})
        print(f"dynamics seed {seed}: {out['sawtooth'][-1]}", flush=True)
    return out


def dynamics_text(d: dict) -> str:
    lines = ["| last 100 steps, run | training loss over fp32 (%) | loss gradients flushed (%) | activation gradients flushed (%) |",
             "|---|---|---|---|"]
    for name, r in d["late"].items():
        lines.append(f"| {name} | {spread(r['excess_curve_end'])} | {spread([k['loss'] for k in r['kinds']], '{:.1f}')} | "
                     f"{spread([k['act'] for k in r['kinds']], '{:.2f}')} |")
    saw = d["sawtooth"]
    lines.append("")
    lines.append(f"Scaler started at 2^30, growth every 50 steps: {spread([x['skipped'] for x in saw], '{:.1f}')} skipped "
                 f"steps, lowest scale 2^{spread([x['min_log2'] for x in saw], '{:.1f}')}, final scale "
                 f"2^{spread([x['final_log2'] for x in saw], '{:.1f}')}, final loss {spread([x['excess'] for x in saw])}% "
                 "over fp32.")
    return "\n".join(lines)


def write_page(results: dict) -> None:
    fig, mlp, torch, adam, where = (results[k] for k in ("figures", "mlp", "torch", "adam", "where"))
    page = PAGE.read_text()
    page = replace(page, "mlp-table", f"```\n$ fpemu train\n{fig['table']}\n```")
    page = replace(page, "mlp-seeds", f"{seeds_table(mlp, torch)}\n\n(mean, and lowest to highest, over {where}.)")
    page = replace(page, "mlp-claims", claims_text(mlp, torch, results.get("seeds", [0, 1, 2, 3])))
    page = replace(page, "mlp-adam", f"{adam_table(adam)}\n\n(mean, and lowest to highest, over {where}.)")
    if "dynamics" in results:
        page = replace(page, "mlp-dynamics", f"{dynamics_text(results['dynamics'])}\n\n(mean, and lowest to highest, "
                       f"over {where}.)")
    PAGE.write_text(page)


if __name__ == "__main__":
    raise SystemExit(main())
