"""Draw the figures of docs/tutorial.md into docs/figures/ with fpemu.teach.plot.

    python scripts/gen_tutorial_figures.py            # all of them
    python scripts/gen_tutorial_figures.py --check    # only list what it would write

Each figure is one call of ``fpemu plot``: the same PNG comes out of
``fpemu plot FORMAT ... --kind KIND --out docs/figures/NAME``. tests/test_teach_tutorial.py
holds the tutorial to this list: it shows these figures and no others.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (file under docs/figures, formats, kind, what it shows)
FIGURES = [
    ("tutorial_ranges.png", ("fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", "mxfp4"), "ranges",
     "the dynamic range of each format, smallest positive value to largest, subnormals lighter; "
     "MXFP4 with its E8M0 scale, and in black the range of one block"),
    ("tutorial_fp16_bf16_spacing.png", ("fp16", "bf16"), "spacing",
     "the gap between neighbouring values of FP16 and BF16 against magnitude, and the largest "
     "relative rounding error in each gap"),
    ("tutorial_fp8_fp4_line.png", ("e4m3", "e5m2", "e2m1"), "line",
     "every positive value of E4M3, E5M2 and E2M1 on a log2 axis, subnormals in orange, with the "
     "smallest normal, the largest value and where overflow begins"),
    ("tutorial_fp8_spacing.png", ("e4m3", "e5m2"), "spacing",
     "the gaps and the relative error bound of E4M3 and E5M2"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures"), help="folder of the PNGs")
    parser.add_argument("--check", action="store_true", help="list the figures, write nothing")
    args = parser.parse_args(argv)
    from fpemu.teach import plot

    out = Path(args.out)
    for name, formats, kind, _ in FIGURES:
        if args.check:
            print(f"{out / name}: fpemu plot {' '.join(formats)} --kind {kind}")
            continue
        out.mkdir(parents=True, exist_ok=True)
        plot(list(formats), out / name, kind=kind)
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
