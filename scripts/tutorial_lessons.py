"""The numbers and pictures of the ML lessons in docs/tutorial.md (sections 7 to 12): each
``*_data`` function measures with fpemu what its figure shows and returns plain arrays (held
to exact arithmetic by tests/teach/test_tutorial.py); each ``draw_*`` draws them on matplotlib
axes. scripts/gen_tutorial_figures.py writes the figures; ``quick=True`` shrinks the sizes for
the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fpemu
from fpemu.teach.plots import FORMAT_COLOURS, SUBNORMAL_COLOUR

SEED = 0


def fp8_tensors(n: int = 4096) -> dict[str, np.ndarray]:
    """The tensors of section 7: activations ~ N(0, 0.01^2) and gradients of magnitude
    2**-20 spread log-normally (about 26 binades), float32, from one seed."""
    rng = np.random.default_rng(SEED)
    act = (rng.standard_normal(n) * 0.01).astype(np.float32)
    grad = (rng.standard_normal(n) * 2.0**-20 * np.exp(2 * rng.standard_normal(n))).astype(np.float32)
    return {"activations": act, "gradients": grad}


def fp8_scaling_data(n: int = 4096) -> dict[str, Any]:
    """Per tensor and format: the share of nonzero values flushed to zero by a plain cast and
    by a cast with the per-tensor amax scale (fpemu.scaled_cast), the scale, and the window
    of magnitudes the scaled cast keeps (smallest subnormal to max, divided by the scale)."""
    out: dict[str, Any] = {"tensors": fp8_tensors(n), "rows": []}
    for tensor, x in out["tensors"].items():
        for fmt in ("e4m3", "e5m2"):
            f = fpemu.get_format(fmt)
            scaled = fpemu.scaled_cast(x, fmt)
            scale = float(scaled.scale)
            out["rows"].append({
                "tensor": tensor, "format": fmt, "scale": scale,
                "plain_flushed": float(np.mean(fpemu.quantize(x, fmt) == 0)),
                "scaled_flushed": float(np.mean(scaled.dequantize() == 0)),
                "window": (f.min_subnormal / scale, f.max / scale),
                "plain_window": (f.min_subnormal, f.max),
            })
    return out


def loss_scaling_data(n: int = 4096, scale: float = 2.0**16) -> dict[str, Any]:
    """Gradients around 2**-26 (log-normal), their share lost to zero in fp16 before and
    after multiplying by ``scale``, and whether unscaling in fp32 gives back every survivor
    to within fp16's rounding."""
    rng = np.random.default_rng(SEED)
    g = 2.0**-26 * np.exp(1.5 * rng.standard_normal(n)) * rng.choice([-1.0, 1.0], n)
    plain = fpemu.quantize(g, "fp16")
    scaled = fpemu.quantize(g * scale, "fp16")
    back = scaled.astype(np.float64) / scale  # a power-of-2 scale: exact in fp32 and float64
    return {"gradients": g, "scale": scale, "lost_plain": float(np.mean(plain == 0)),
            "lost_scaled": float(np.mean(scaled == 0)), "relative_error_scaled": np.abs(back - g) / np.abs(g)}


def block_amax_breakpoints() -> np.ndarray:
    """Where each rule's answer for a block's amax jumps, in [1, 16): the floor rule's scaled
    amax (in [4, 8)) at the ties 5 and 7 and where it passes 6; rceil's (in (3, 6]) at 3.5, 5
    and 6; NVFP4's block scale 28 x amax (tensor amax 16: 1 / (16 / 2688)) at each midpoint
    of UE4M3's grid (1 + (2m+1)/16) x 2^e, where it rounds up by 18/17 just past it and down
    by 16/17 on it. The sweep takes each point and its float64 neighbours, so the figure holds
    the peaks a smooth sweep misses.

    >>> b = block_amax_breakpoints()
    >>> bool(((b >= 1) & (b < 16)).all()), 1.25 in b, 34 / 28 in b  # floor's 5/4; NVFP4's 28 a = 34
    (True, True, True)
    """
    k = 2.0 ** np.arange(-3, 5)
    floor = np.concatenate([k * f for f in (1.25, 1.5, 1.75)])
    rceil = np.concatenate([k * f for f in (3.5, 5.0, 6.0)])
    nvfp4 = np.array([(16 + 2 * m + 1) / 16 * 2.0**e / 28 for m in range(8) for e in range(4, 10)])
    points = np.concatenate([floor, rceil, nvfp4])
    return np.unique(points[(points >= 1) & (points < 16)])


def block_amax_data(points: int = 400) -> dict[str, Any]:
    """A block's largest element swept over [1, 16) with the rest of its block small (0.01):
    what MXFP4 under the OCP floor rule and under rceil, and NVFP4 (its tensor amax 16 in
    a block of its own), give back for it, divided by it. The sweep: ``points`` evenly on a
    log scale, and every breakpoint of :func:`block_amax_breakpoints` with its neighbours (the
    peaks: 6/5 for floor and rceil, 18/17 and 16/17 for NVFP4)."""
    edges = block_amax_breakpoints()
    # each breakpoint, its float64 neighbours (MX) and points 2^-20 away (NVFP4 computes in float32)
    near = np.concatenate([edges * (1 - 2.0**-20), np.nextafter(edges, 0), edges, np.nextafter(edges, np.inf),
                           edges * (1 + 2.0**-20)])
    amax = np.unique(np.concatenate([np.geomspace(1.0, 16.0, points, endpoint=False), near[near < 16]]))
    points = amax.size
    rows = np.full((points + 1, 32), 0.01)
    rows[:-1, 0], rows[-1, 0] = amax, 16.0  # the last row only sets NVFP4's tensor amax
    back, ratio = {}, {}
    for label, fmt, rule in (("MXFP4, floor (OCP)", "mxfp4", "floor"), ("MXFP4, rceil", "mxfp4", "rceil"),
                             ("NVFP4 (UE4M3 x FP32)", "nvfp4", None)):
        q = fpemu.mx.quantize(rows, fmt, **({"scale_rounding": rule} if rule else {}))
        back[label] = q.dequantize(np.float64)[:-1, 0]
        ratio[label] = back[label] / amax
    return {"amax": amax, "given_back": back, "ratio": ratio}


def spacing_zoom_data(formats: tuple[str, ...] = ("fp16", "bf16"), low: float = 0.25, high: float = 16.0) -> dict[str, Any]:
    """The gaps of each format between ``low`` and ``high`` (a few binades, where each
    binade's sawtooth can be seen; over BF16's 261 binades the teeth fuse into a band) and
    the largest relative error of round to nearest in each gap (fpemu.teach.spacing), with
    each format's bound 2^-(m+1) and the error attained at the first gap's midpoint."""
    from fpemu.teach import spacing

    out = {}
    for name in formats:
        s = spacing(name)
        keep = (s["lower"] >= low) & (s["upper"] <= high)
        lower, upper, rel = s["lower"][keep], s["upper"][keep], s["relative_bound"][keep]
        out[name] = {"edges": np.append(lower, upper[-1:]), "gap": upper - lower, "relative": rel,
                     "bound": s["unit_roundoff"], "attained": float(rel.max())}
    return {"formats": out, "low": low, "high": high}


def stochastic_rounding_data(steps: int = 300, copies: int = 200, step: float = 0.003) -> dict[str, Any]:
    """A bf16 weight of 1.0 updated ``steps`` times by ``+step`` (below half of bf16's gap
    2**-7 at 1): the exact sum, round to nearest even (stuck at 1) and stochastic rounding
    (``copies`` weights, one seed): their mean, lowest and highest after each step."""
    rng = np.random.default_rng(SEED)
    rne = np.ones(1)
    sr = np.ones(copies)
    history = np.empty((steps + 1, 4))
    history[0] = 1.0
    for k in range(1, steps + 1):  # each step needs the previous one: a loop over time only
        rne = fpemu.quantize(rne + step, "bf16")
        sr = fpemu.quantize(sr + step, "bf16", rounding="stochastic", rng=rng)
        history[k] = rne[0], sr.mean(), sr.min(), sr.max()
    return {"step": np.arange(steps + 1), "exact": 1.0 + step * np.arange(steps + 1), "rne": history[:, 0],
            "sr_mean": history[:, 1], "sr_low": history[:, 2], "sr_high": history[:, 3]}


def accumulation_data(sizes: tuple[int, ...] = (32, 128, 512, 2048, 8192)) -> dict[str, Any]:
    """Dot products of K uniform [0, 1) E4M3 values (one seed) on H100 and B200 tensor cores
    (FP8 inputs, FP32 output) against the exact sum rounded once: relative error per K."""
    rng = np.random.default_rng(SEED)
    err: dict[str, list[float]] = {"h100": [], "b200": []}
    for k in sizes:
        a, b = rng.uniform(0, 1, (1, k)), rng.uniform(0, 1, (k, 1))
        exact = float(fpemu.gemm(a, b, inputs="e4m3", accumulator="exact")[0, 0])
        for acc in err:
            err[acc].append(abs(float(fpemu.gemm(a, b, inputs="e4m3", accumulator=acc)[0, 0]) / exact - 1))
    return {"sizes": np.array(sizes), "relative_error": {k: np.array(v) for k, v in err.items()}}


# ---- drawing ----------------------------------------------------------------------------------
def _log2_hist(ax: Any, x: np.ndarray, colour: str, label: str) -> None:
    mags = np.abs(x[x != 0])
    ax.hist(np.log2(mags), bins=60, color=colour, alpha=0.7, label=label)


def share(part: float, n: int) -> str:
    """A share of n values as a legend writes it: "none", "all", or a percentage with as many
    decimals as it takes not to read as 0 % or 100 % (2 of 4096: 0.05 %, not 0.0 %).

    >>> share(0.0, 4096), share(1.0, 4096), share(2 / 4096, 4096), share(4094 / 4096, 4096), share(0.5, 4096)
    ('none', 'all', '0.05%', '99.95%', '50.0%')
    """
    k = round(part * n)
    if k in (0, n):
        return "none" if k == 0 else "all"
    for digits in range(1, 8):
        text = f"{100 * k / n:.{digits}f}"
        if float(text) not in (0.0, 100.0):
            return text + "%"
    return f"{100 * k / n}%"


def draw_fp8_scaling(axes: Any, data: dict[str, Any]) -> None:
    """One panel per tensor: the histogram of log2 |x| and, above its peaks, the windows
    each cast keeps (bars)."""
    for ax, (tensor, x) in zip(axes, data["tensors"].items()):
        counts, _, _ = ax.hist(np.log2(np.abs(x[x != 0])), bins=60, color="0.5", alpha=0.7, label=f"{tensor} (float32)")
        n = x.size
        rows = [r for r in data["rows"] if r["tensor"] == tensor]
        for i, r in enumerate(rows):
            lo, hi = np.log2(r["window"])
            ax.axvspan(lo, hi, ymin=0.9 - 0.1 * i, ymax=0.97 - 0.1 * i, color=FORMAT_COLOURS[i], alpha=0.8,
                       label=f"{r['format']} x scale {r['scale']:.4g}: {share(r['scaled_flushed'], n)} flushed "
                             f"(plain cast: {share(r['plain_flushed'], n)})")
        ax.set_ylim(0, counts.max() / 0.74)  # (the bars' room: above the tallest bin)
        ax.set_title(f"{tensor}: log2 |x| and what each scaled FP8 cast keeps (bars)", fontsize=10)
        ax.legend(fontsize=7, loc="center left")
    axes[-1].set_xlabel("log2 |x|")


def draw_loss_scaling(ax: Any, data: dict[str, Any]) -> None:
    """The gradients' log2 |g| before and after the scale, fp16's range as a bar."""
    g, s = data["gradients"], data["scale"]
    fp16 = fpemu.get_format("fp16")
    _log2_hist(ax, g, "0.5", f"gradients: {100 * data['lost_plain']:.1f}% become 0 in fp16")
    _log2_hist(ax, g * s, FORMAT_COLOURS[0],
               f"x 2^{int(np.log2(s))}: {100 * data['lost_scaled']:.1f}% become 0")
    ax.axvspan(np.log2(fp16.min_subnormal), np.log2(fp16.min_normal), ymax=0.04, color=SUBNORMAL_COLOUR,
               label="fp16 subnormals")
    ax.axvspan(np.log2(fp16.min_normal), np.log2(fp16.max), ymax=0.04, color=FORMAT_COLOURS[1], label="fp16 normals")
    ax.set_xlabel("log2 |g|")
    ax.set_title("Loss scaling: the gradients moved into fp16's range", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")


def draw_block_amax(ax: Any, data: dict[str, Any]) -> None:
    """Returned / true value of a block's largest element against it, per scale rule, with
    each rule's bounds dotted (6/5 and 3/4, 4/5; 18/17 and 16/17)."""
    for i, (label, ratio) in enumerate(data["ratio"].items()):
        ax.plot(data["amax"], ratio, color=FORMAT_COLOURS[i], label=label, lw=2.2 if i == 0 else 1.2,
                ls="--" if i == 1 else "-")  # rceil dashed: it runs on the floor rule's line in places
    ax.set_xscale("log", base=2)
    ax.axhline(1.0, color="0.5", lw=0.8)
    for level, words in ((6 / 5, "6/5"), (3 / 4, "3/4"), (4 / 5, "4/5"), (18 / 17, "18/17"), (16 / 17, "16/17")):
        ax.axhline(level, color="0.6", lw=0.6, ls=":")
        ax.annotate(words, (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, -3),
                    textcoords="offset points", fontsize=7, color="0.4")
    ax.set_xlabel("the block's largest magnitude (amax)")
    ax.set_ylabel("value given back / amax")
    ax.set_title("A block's largest element: the floor rule saturates it (to 3/4 of it at worst),\n"
                 "rceil rounds it on FP4's coarse grid, NVFP4's finer scale keeps it within 1/17", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")


def draw_spacing_zoom(axes: Any, data: dict[str, Any]) -> None:
    """Top: the gap to the next value, a staircase doubling at each power of 2; bottom: the
    largest relative error in each gap, one tooth per binade, under the dotted flat bound."""
    ax_gap, ax_rel = axes
    for i, (name, d) in enumerate(data["formats"].items()):
        colour = FORMAT_COLOURS[i]
        ax_gap.step(d["edges"], np.append(d["gap"], d["gap"][-1:]), where="post", color=colour, label=name)
        ax_rel.step(d["edges"], np.append(d["relative"], d["relative"][-1:]), where="post", color=colour,
                    label=f"{name}: at most 1/{round(1 / d['attained'])} (first gap of each binade)")
        ax_rel.axhline(d["bound"], color=colour, ls=":", lw=0.9,
                       label=f"{name}: the flat bound 2^-{round(-np.log2(d['bound']))}, never reached")
    for ax in (ax_gap, ax_rel):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.grid(alpha=0.3)
    ax_gap.set_ylabel("gap to the next value")
    ax_gap.set_title(f"From {data['low']:g} to {data['high']:g}: the gap is constant in each binade "
                     "and doubles at each power of 2", fontsize=10)
    ax_gap.legend(fontsize=8, loc="upper left")
    ax_rel.set_ylabel("largest relative error\n(round to nearest)")
    ax_rel.set_xlabel("magnitude")
    ax_rel.set_title("The relative error is a sawtooth: highest in the first gap above a power of 2, "
                     "falling across the binade", fontsize=10)
    ax_rel.set_ylim(top=ax_rel.get_ylim()[1] * 4)  # (room for the legend above the teeth)
    ax_rel.legend(fontsize=7, loc="upper left", ncol=2)


def draw_stochastic_rounding(ax: Any, data: dict[str, Any]) -> None:
    """The weight after each update: exact, RNE, and SR's mean and spread."""
    ax.plot(data["step"], data["exact"], color="k", lw=1, label="exact sum")
    ax.plot(data["step"], data["rne"], color=FORMAT_COLOURS[0], label="bf16, round to nearest even")
    ax.plot(data["step"], data["sr_mean"], color=FORMAT_COLOURS[1], ls="--", label="bf16, stochastic: mean")
    ax.fill_between(data["step"], data["sr_low"], data["sr_high"], color=FORMAT_COLOURS[1], alpha=0.25,
                    label="stochastic: lowest to highest copy")
    ax.set_xlabel("update")
    ax.set_ylabel("weight")
    ax.set_title("Adding 0.003 to a bf16 weight: RNE never moves, stochastic rounding is right on average",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left")


def draw_accumulation(ax: Any, data: dict[str, Any]) -> None:
    """Relative error of the dot product against K, per tensor core."""
    floor = 2.0**-30  # where an error of exactly 0 is drawn (hollow markers)
    for i, (acc, err) in enumerate(data["relative_error"].items()):
        ax.plot(data["sizes"], np.maximum(err, floor), color=FORMAT_COLOURS[i], label=f"{acc} (FP8 inputs)")
        ax.plot(data["sizes"][err > 0], err[err > 0], "o", color=FORMAT_COLOURS[i])
        if (err == 0).any():
            ax.plot(data["sizes"][err == 0], np.full(int((err == 0).sum()), floor), "o", mfc="w",
                    color=FORMAT_COLOURS[i], label=f"{acc}: the exact sum rounded once (drawn at 2^-30)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("K (products summed)")
    ax.set_ylabel("relative error against\nthe exact sum (rounded once)")
    ax.set_title("FP8 dot products: H100 cuts its sum to 13 fraction bits, B200 rounds a full FP32 sum",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
