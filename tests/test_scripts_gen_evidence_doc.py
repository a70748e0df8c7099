"""scripts/gen_evidence_doc.py: the evidence table measures what it says, and docs/evidence.md
holds what it measured (the hardware-dump part is re-measured here; MMA-Sim's is left to the
script's run, minutes long)."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_helpers import load_script
from tolerance_helpers import dump_columns

ROOT = Path(__file__).resolve().parents[1]


def script():
    return load_script("scripts/gen_evidence_doc.py")


@pytest.mark.skipif(not dump_columns(), reason="../shared/hwdata not available")
def test_the_dump_column_is_measured_and_in_the_page():
    gen = script()
    table: dict = {}
    gen.measure_dumps(table)
    rows = gen.rows(table)
    by_key = {tuple(cell.strip() for cell in r.split("|")[1:5]): r for r in rows[2:]}
    assert "v100_fp16: 5000/5000" in by_key[("volta", "f16", "fp16", "fp32")]
    assert "b200_e5m2: 4999/5000" in by_key[("blackwell", "f8f6f4", "e5m2", "fp32")]
    assert "**assumed**" in by_key[("blackwell", "f8f6f4", "e2m1", "fp32")]
    assert "FP6/FP4 assumed" not in by_key[("blackwell", "f8f6f4", "e4m3", "fp32")]
    page = (ROOT / "docs" / "evidence.md").read_text()
    for key, row in by_key.items():
        dumps = row.split("|")[5].strip()
        assert any(line.startswith(f"| {' | '.join(key)} | {dumps} |") for line in page.splitlines()), (key, dumps)


def test_rtx_blackwell_rows_say_model_no_dump():
    """RTX Blackwell rests on MMA-Sim's model alone: every one of its rows says so, in the
    script's table and in the page."""
    rows = [r for r in script().rows({}) if r.startswith("| rtx-blackwell |")]
    page = [line for line in (ROOT / "docs" / "evidence.md").read_text().splitlines() if line.startswith("| rtx-blackwell |")]
    assert len(rows) == len(page) == 30
    assert all("model, no dump" in r for r in rows + page)
    assert all(r.split("|")[5].strip() == "-" for r in rows + page)  # the dump column is empty
