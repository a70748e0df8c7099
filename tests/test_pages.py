"""``fpemu docs`` (fpemu.pages): the documentation pages an installed fpemu carries, and the
command line's help pointing at them instead of at paths of a checkout (issue 42, item 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fpemu import pages
from fpemu.cli import _register_feature_commands, build_parser, main

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_page_of_docs_is_listed_with_its_title(capsys):
    assert pages.page_names() == sorted(p.stem for p in DOCS.glob("*.md"))
    assert main(["docs"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[0] for r in rows] == pages.page_names()
    assert "mx  " in " ".join(rows) and any(r.endswith("Block formats: OCP MX and NVIDIA NVFP4 (`fpemu.mx`)") for r in rows)


def test_a_page_is_printed_whole(capsys):
    assert main(["docs", "MX"]) == 0  # any case, as every name
    assert capsys.readouterr().out == (DOCS / "mx.md").read_text(encoding="utf-8")
    assert main(["docs", "golden", "--path"]) == 0
    assert Path(capsys.readouterr().out.strip()).read_text(encoding="utf-8") == (DOCS / "golden.md").read_text(encoding="utf-8")


def test_an_unknown_page_is_a_usage_error(capsys):
    assert main(["docs", "trainig"]) == 2
    assert capsys.readouterr().err == "fpemu: error: unknown page 'trainig'; did you mean training? `fpemu docs` lists the rest\n"


def help_texts() -> dict[str, str]:
    _register_feature_commands()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    return {"": parser.format_help()} | {name: sub.format_help() for name, sub in commands.items()}


@pytest.mark.parametrize("command", sorted(help_texts()))
def test_help_names_pages_not_paths_of_a_checkout(command):
    """An installed fpemu has no docs/ directory: its help says ``fpemu docs NAME``, and every
    page it names exists."""
    text = " ".join(help_texts()[command].split())
    assert not re.search(r"docs/[\w.-]+\.md", text), text
    for name in re.findall(r"fpemu docs ([a-z][\w-]*)", text):
        assert name in pages.page_names(), name
