"""Screenshots of the explorer (``fpemu explore``) into docs/img/explorer/, desktop and phone.

    python scripts/gen_explorer_screenshots.py             # all of them
    python scripts/gen_explorer_screenshots.py --check     # only list what it would write
    python scripts/gen_explorer_screenshots.py --out DIR   # somewhere else

Each shot opens the page at a URL (the explorer keeps its whole state in the hash, so the URL
is the recipe), waits for the server's answer, and saves the full page. It needs playwright
and a Chromium (Debian's ``chromium``, or ``FPEMU_CHROMIUM``), as tests/teach/test_browser*.py.
docs/explorer.md shows these files; tests/teach/test_explorer_doc.py holds it to this list.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

# (file under docs/img/explorer, viewport, URL hash, what it shows)
SHOTS = [
    ("number_fp16_tie_overflow.png", DESKTOP, "#format=fp16&x=65520",
     "65520 in FP16: exactly halfway between 65504 and 65536, the tie goes to the even code, 65536, "
     "which is past the largest value: infinity; the strip shows the tie on the overflow limit"),
    ("number_fp32_exact.png", DESKTOP, "#format=fp32&x=0.1",
     "0.1 in FP32: the value, its neighbours and the error as exact decimals, every field (hex, integer, "
     "bits) in step, and the number line: the gap around 0.1 to scale, and FP32's whole range"),
    ("number_stochastic.png", DESKTOP, "#format=e4m3&x=1.3&rounding=stochastic_a&seed=3&srbits=2",
     "stochastic_a with 2 random bits: the odds its bits give (1 of 4) beside the unbiased odds (0.4)"),
    ("number_e4m3_max.png", DESKTOP, "#format=e4m3&code=0x7E",
     "E4M3's largest value, 448: no neighbour above, and on the strip the step past it (480) that E4M3 spends on NaN"),
    ("number_phone.png", PHONE, "#format=bf16&x=70000",
     "the number view at 390 px: no sideways scroll, labels beside their menus"),
    ("compare_desktop.png", DESKTOP, "#view=compare&x=0.1",
     "0.1 in FP32, BF16, FP16, E4M3 and E2M1 side by side: code, exact value, exact error"),
    ("compare_phone.png", PHONE, "#view=compare&x=0.1&formats=fp32,bf16,e4m3,e2m1",
     "the side-by-side view at 390 px: one card per format"),
    ("table_e4m3.png", DESKTOP, "#view=table&format=e4m3",
     "every code of E4M3 on one page (the page prints it on one landscape A4 sheet)"),
    ("table_e2m1_phone.png", PHONE, "#view=table&format=e2m1",
     "the 16 codes of E2M1 at 390 px"),
    ("block_mxfp4_marks.png", DESKTOP, "#view=block",
     "one MXFP4 block: 15 of 32 elements flushed to zero and the 12.5 clipped to 12 by the floor rule, "
     "marked; below, the same values under rceil and in NVFP4"),
    ("block_nvfp4_phone.png", PHONE, "#view=block&block=nvfp4&tamax=100",
     "an NVFP4 block at 390 px with a tensor amax of 100: its UE4M3 block scale rounded (26, not 448), "
     "each element a card"),
    ("block_nan_scale.png", DESKTOP, "#view=block&values=1,nan,2",
     "a block holding NaN: why its scale is NaN"),
]


def chromium() -> str:
    path = os.environ.get("FPEMU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        raise SystemExit(f"no Chromium at {path}: apt-get install chromium, or set FPEMU_CHROMIUM")
    return path


def take(out: Path) -> list[Path]:
    """Every shot of SHOTS into ``out``; returns the files written."""
    from playwright.sync_api import sync_playwright

    from fpemu.teach import serve_in_thread

    out.mkdir(parents=True, exist_ok=True)
    server, url = serve_in_thread(0)
    written = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=["--headless", "--no-sandbox", "--disable-gpu"])
            for name, viewport, hash_, _ in SHOTS:
                context = browser.new_context(viewport=viewport, device_scale_factor=1)
                page = context.new_page()
                page.goto(url + hash_)
                page.wait_for_selector("body[data-ready]")
                page.wait_for_function("(document.body.dataset.asked || '0') === (document.body.dataset.answered || '0')")
                page.screenshot(path=str(out / name), full_page=True)
                written.append(out / name)
                context.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "explorer")
    parser.add_argument("--check", action="store_true", help="only list the files it would write")
    args = parser.parse_args(argv)
    if args.check:
        for name, viewport, hash_, _ in SHOTS:
            print(f"{args.out / name}  {viewport['width']} px  {hash_}")
        return 0
    for path in take(args.out):
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
