"""scripts/gen_fp8_attention_doc.py: the page and the JSON hold what the script measures (the
shortest length re-measured here), and the promotion does what the page says it measures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def test_the_shortest_length_is_remeasured_and_in_the_page():
    gen = load_script("scripts/gen_fp8_attention_doc.py")
    data = json.loads((ROOT / "docs" / "figures" / "fp8_attention.json").read_text())
    rows = gen.measure([512], data["queries"], data["head_dim"], data["promote"], data["seed"])
    # (approx: the float64 reference product may sum in another order under another BLAS)
    assert [r for r in data["rows"] if r["length"] == 512] == [pytest.approx(r, rel=1e-9) for r in rows]
    page = (ROOT / "docs" / "accumulator.md").read_text()
    table = page.split(gen.BEGIN, 1)[1].split(gen.END, 1)[0]
    assert all(line in table for line in gen.table([r for r in data["rows"]], data["promote"])[2:])
    assert (ROOT / "docs" / "figures" / "fp8_attention.png").exists()


def test_promotion_flattens_the_error():
    gen = load_script("scripts/gen_fp8_attention_doc.py")
    short, long = (gen.pv_errors(n, 2, 16, "uniform", 128, 0) for n in (256, 4096))
    assert long["h100"] > 4 * short["h100"]  # the truncating unit loses more as L grows
    assert long["h100+promote128"] < long["h100"] / 20
