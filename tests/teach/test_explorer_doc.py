"""docs/explorer.md shows the screenshots scripts/gen_explorer_screenshots.py takes, all of
them and no others, and each one is committed under docs/img/explorer/."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_explorer_screenshots as script

DOC = ROOT / "docs" / "explorer.md"


def test_the_doc_shows_every_screenshot_the_script_takes():
    shown = re.findall(r"\]\(img/explorer/([^)]+\.png)\)", DOC.read_text())
    assert sorted(shown) == sorted(name for name, *_ in script.SHOTS)
    for name in shown:
        png = ROOT / "docs" / "img" / "explorer" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_the_script_lists_its_shots(capsys):
    assert script.main(["--check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(script.SHOTS) and any("390 px" in ln for ln in lines)
    assert all(hash_.startswith("#") for _, _, hash_, _ in script.SHOTS)


def test_the_readme_links_the_doc():
    assert "(docs/explorer.md)" in (ROOT / "README.md").read_text()


def test_the_shots_are_taken_at_1280_and_390_px():
    import struct

    widths = {viewport["width"] for _, viewport, _, _ in script.SHOTS}
    assert widths == {1280, 390}
    for name, viewport, _, _ in script.SHOTS:  # a full-page shot is as wide as its viewport
        head = (ROOT / "docs" / "img" / "explorer" / name).read_bytes()[:24]
        assert struct.unpack(">I", head[16:20])[0] == viewport["width"], name
    views = {hash_.split("view=")[1].split("&")[0] if "view=" in hash_ else "number" for _, _, hash_, _ in script.SHOTS}
    assert views == {"number", "compare", "table", "block"}  # every view, new ones included
