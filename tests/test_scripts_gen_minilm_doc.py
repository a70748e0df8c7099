"""scripts/gen_minilm_doc.py and docs/training.md: the MiniLM table is the script's rendering of
a run's rows (docs/figures/minilm.json, the run it last made), between its markers, and the
script replaces only what lies between them."""

from __future__ import annotations

import json

from script_helpers import ROOT, load_script


def _script():
    return load_script("scripts/gen_minilm_doc.py")


def test_the_page_holds_the_rendering_of_the_kept_run():
    gen, page = _script(), (ROOT / "docs" / "training.md").read_text()
    assert page.count(gen.BEGIN) == 1 and page.count(gen.END) == 1
    block = page.split(gen.BEGIN, 1)[1].split(gen.END, 1)[0].strip()
    data = json.loads(gen.CACHE.read_text())
    assert block == gen.render(data), "run scripts/gen_minilm_doc.py --from docs/figures/minilm.json"
    labels = [(r["precision"], r["unit"]) for r in (data["results"] if "results" in data else data["rows"])]
    assert labels[0] == ("fp32", None) and ("nvfp4", "b200") in labels and ("e4m3", "h100") in labels


def test_write_page_keeps_the_prose_around(tmp_path):
    gen = _script()
    page = tmp_path / "p.md"
    page.write_text(f"before\n{gen.BEGIN}\nold\n{gen.END}\nafter\n")
    gen.write_page("new", page)
    assert page.read_text() == f"before\n{gen.BEGIN}\nnew\n{gen.END}\nafter\n"
