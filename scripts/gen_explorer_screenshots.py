"""Screenshots of the explorer (``fpemu explore``) into docs/img/explorer/, desktop and phone.

    python scripts/gen_explorer_screenshots.py             # all of them
    python scripts/gen_explorer_screenshots.py --check     # only list what it would write
    python scripts/gen_explorer_screenshots.py --out DIR   # somewhere else

Each shot opens the page at a URL (the explorer keeps its whole state in the hash, so the URL
is the recipe), waits for the server's answer, and saves the full page. It needs playwright
and a Chromium (Debian's ``chromium``, or ``FPEMU_CHROMIUM``), as tests/test_teach_browser*.py.
docs/explorer.md shows these files; tests/test_teach_explorer_doc.py holds it to this list.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DESKTOP = {"width": 1100, "height": 900}
PHONE = {"width": 390, "height": 844}

# (file under docs/img/explorer, viewport, URL hash, what it shows)
SHOTS = [
    ("number_fp16_tie_overflow.png", DESKTOP, "#format=fp16&x=65520",
     "65520 in FP16: exactly halfway between 65504 and 65536, the tie goes to the even code, 65536, "
     "which is past the largest value: infinity"),
    ("number_fp32_exact.png", DESKTOP, "#format=fp32&x=0.1",
     "0.1 in FP32: the value and the error as exact decimals, every field (hex, integer, bits) in step"),
    ("number_stochastic.png", DESKTOP, "#format=e4m3&x=1.3&rounding=stochastic&seed=3",
     "stochastic rounding with a seed: the odds of each neighbour, exactly"),
    ("number_phone.png", PHONE, "#format=bf16&x=70000",
     "the number view at 390 px: no sideways scroll"),
    ("block_mxfp4_marks.png", DESKTOP, "#view=block",
     "one MXFP4 block: 15 of 32 elements flushed to zero and the 12.5 clipped to 12 by the floor rule, marked"),
    ("block_nvfp4_phone.png", PHONE, "#view=block&block=nvfp4",
     "an NVFP4 block at 390 px, with its per-tensor FP32 scale"),
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
