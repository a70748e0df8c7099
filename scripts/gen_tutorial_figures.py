"""Draw the figures of docs/tutorial.md into docs/figures/.

    python scripts/gen_tutorial_figures.py            # all of them
    python scripts/gen_tutorial_figures.py --check    # only list what it would write
    python scripts/gen_tutorial_figures.py --quick    # smaller lesson sizes (the tests)
    python scripts/gen_tutorial_figures.py --only tutorial_block_amax.png   # one of them

The format figures (``FIGURES``) are one call of ``fpemu plot`` each: the same PNG comes out
of ``fpemu plot FORMAT ... --kind KIND --out docs/figures/NAME``. The ML lessons' figures
(``LESSON_FIGURES``) draw what scripts/tutorial_lessons.py measures with fpemu.
tests/teach/test_tutorial.py holds the tutorial to these lists: it shows these figures and no
others.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

# (file under docs/figures, formats, kind, what it shows)
FIGURES = [
    ("tutorial_ranges.png", ("fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4"), "ranges",
     "the dynamic range of each format, smallest positive value to largest, subnormals orange; "
     "MXFP4 with its E8M0 scale, and in black the range of one block"),
    ("tutorial_fp8_fp4_line.png", ("e4m3", "e5m2", "e2m1"), "line",
     "every positive value of E4M3, E5M2 and E2M1 on one shared log2 axis, subnormals in orange, "
     "with the smallest normal, the largest value and where overflow begins"),
    ("tutorial_fp8_spacing.png", ("e4m3", "e5m2"), "spacing",
     "the gaps and the relative error bound of E4M3 and E5M2"),
    ("tutorial_fnuz_line.png", ("e4m3", "e4m3fnuz", "e5m2", "e5m2fnuz"), "line",
     "OCP FP8 against the FNUZ variants on one axis: each FNUZ format one binade lower"),
    ("tutorial_mx_nvfp4_ranges.png", ("e2m1", "mxfp4", "nvfp4"), "ranges",
     "FP4 alone, with MXFP4's E8M0 scale and with NVFP4's UE4M3 scale and FP32 tensor scale"),
]

# (file under docs/figures, data function and drawing function of tutorial_lessons, panels,
#  the data function's quick arguments, what it shows)
LESSON_FIGURES = [
    ("tutorial_fp16_bf16_spacing.png", "spacing_zoom_data", "draw_spacing_zoom", 2, {},
     "the gap between neighbouring values of FP16 and BF16 from 1/4 to 16, and the largest relative "
     "rounding error in each gap: one sawtooth per binade under the flat bound"),
    ("tutorial_fp8_scaling.png", "fp8_scaling_data", "draw_fp8_scaling", 2, {"n": 512},
     "activations and gradients against the magnitudes E4M3 and E5M2 keep with a per-tensor amax scale"),
    ("tutorial_loss_scaling.png", "loss_scaling_data", "draw_loss_scaling", 1, {"n": 512},
     "gradients around 2^-26 before and after x 2^16, against fp16's range"),
    ("tutorial_block_amax.png", "block_amax_data", "draw_block_amax", 1, {"points": 40},
     "what MXFP4 (floor, rceil) and NVFP4 give back for a block's largest element"),
    ("tutorial_stochastic_rounding.png", "stochastic_rounding_data", "draw_stochastic_rounding", 1,
     {"steps": 20, "copies": 20}, "a bf16 weight updated by 0.003 at a time under RNE and stochastic rounding"),
    ("tutorial_accumulation.png", "accumulation_data", "draw_accumulation", 1, {"sizes": (64, 256)},
     "the relative error of FP8 dot products on H100 and B200 tensor cores against K"),
]


def draw_lesson(out: Path, data_name: str, draw_name: str, panels: int, kwargs: dict) -> None:
    """Measure one lesson's data and draw it into ``out`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import tutorial_lessons

    data = getattr(tutorial_lessons, data_name)(**kwargs)
    fig, axes = plt.subplots(panels, 1, figsize=(10, 3.4 * panels + 0.4), layout="constrained", squeeze=False)
    try:
        getattr(tutorial_lessons, draw_name)(axes[:, 0] if panels > 1 else axes[0, 0], data)
        fig.savefig(out, dpi=110)
    finally:
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures"), help="folder of the PNGs")
    parser.add_argument("--check", action="store_true", help="list the figures, write nothing")
    parser.add_argument("--quick", action="store_true", help="small lesson sizes (for the tests)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="draw only these figures (file names)")
    args = parser.parse_args(argv)
    names = [name for name, *_ in FIGURES + LESSON_FIGURES]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        parser.error(f"no figure named {', '.join(unknown)}; the figures: {', '.join(names)}")
    from fpemu.teach import plot

    out = Path(args.out)
    wanted = set(args.only or names)
    for name, formats, kind, _ in FIGURES:
        if name not in wanted:
            continue
        if args.check:
            print(f"{out / name}: fpemu plot {' '.join(formats)} --kind {kind}")
            continue
        out.mkdir(parents=True, exist_ok=True)
        plot(list(formats), out / name, kind=kind)
        print(f"wrote {out / name}")
    for name, data_name, draw_name, panels, quick, _ in LESSON_FIGURES:
        if name not in wanted:
            continue
        if args.check:
            print(f"{out / name}: scripts/tutorial_lessons.py {data_name} -> {draw_name}")
            continue
        out.mkdir(parents=True, exist_ok=True)
        draw_lesson(out / name, data_name, draw_name, panels, quick if args.quick else {})
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
