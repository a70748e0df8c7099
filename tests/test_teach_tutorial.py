"""docs/tutorial.md shows exactly the figures scripts/gen_tutorial_figures.py draws, and the
script draws them (its examples run as doctests with the other pages)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from fpemu.teach.plots import check_plot_request

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"


def load_script():
    spec = importlib.util.spec_from_file_location("gen_tutorial_figures", ROOT / "scripts" / "gen_tutorial_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tutorial_shows_the_scripts_figures_and_no_others():
    shown = re.findall(r"\]\(figures/([^)]+\.png)\)", TUTORIAL.read_text())
    made = [name for name, *_ in load_script().FIGURES]
    assert sorted(shown) == sorted(made) and len(shown) == len(set(shown))
    for name in made:
        data = (ROOT / "docs" / "figures" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_every_figure_is_a_plot_fpemu_can_draw():
    for name, formats, kind, caption in load_script().FIGURES:
        assert check_plot_request(list(formats), kind) and caption and name.startswith("tutorial_")


def test_the_script_draws_them(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    script = load_script()
    assert script.main(["--check", "--out", str(tmp_path)]) == 0 and not list(tmp_path.iterdir())
    assert "fpemu plot fp16 bf16 --kind spacing" in capsys.readouterr().out
    assert script.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(name for name, *_ in script.FIGURES)
