"""scripts/gen_performance_doc.py and docs/performance.md: the page holds each generated
section between its markers, filled by the script's own commands (so that no figure on the
page was typed), and the script replaces a section without touching the prose around it."""

from __future__ import annotations

from script_helpers import ROOT, load_script


def _script():
    return load_script("scripts/gen_performance_doc.py")


def test_every_section_is_generated_output():
    gen, page = _script(), (ROOT / "docs" / "performance.md").read_text()
    for name, command in (("table", "benchmarks/bench_table.py"), ("floor", "benchmarks/profile_codec.py")):
        begin, end = gen._markers(name)
        assert page.count(begin) == 1 and page.count(end) == 1, name
        block = page.split(begin, 1)[1].split(end, 1)[0]
        assert f"`python {command}" in block and "```text" in block, f"run scripts/gen_performance_doc.py ({name})"


def test_replace_keeps_the_prose_around_a_section():
    gen = _script()
    begin, end = gen._markers("table")
    page = f"before\n{begin}\nold\n{end}\nafter\n"
    assert gen._replace(page, "table", "new") == f"before\n{begin}\nnew\n{end}\nafter\n"
