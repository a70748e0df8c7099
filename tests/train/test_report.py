"""The comparison table (fpemu.train.report): its title and measured lesson, the verdicts
against FP32, and that the sentence of each row counts what the *flushed* column counts."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import train as T
from fpemu.train import report as R


def _history(precision="fp16", loss_scale="none", final=1.0, first=10.0, variant=None,
             kinds=None, steps=4) -> T.History:
    """A History with the given final loss, first-step loss and per-kind [nonzero, underflow, overflow]."""
    kinds = kinds if kinds is not None else ({} if precision == "fp32" else {"loss": [100, 50, 0], "act": [300, 3, 0]})
    kind_counts = {k: np.array(v, np.int64) for k, v in kinds.items()}
    total = sum(kind_counts.values(), np.zeros(3, np.int64))
    loss = np.linspace(first, final, steps)
    return T.History(
        precision, loss_scale, None, 0, steps, None if precision == "fp32" else precision, loss,
        np.ones(steps), np.zeros(steps, bool), np.zeros(steps), np.zeros(steps), np.zeros(1),
        final_loss=final, final_accuracy=0.9, nonzero_count=int(total[0]), underflow_count=int(total[1]),
        overflow_count=int(total[2]), kind_counts=kind_counts, variant=variant,
    )


@pytest.mark.parametrize("final,first,expected", [
    (1.02, 10.0, "matches fp32 (1.02x its loss)"),
    (1.30, 10.0, "trails fp32 (1.30x its loss)"),
    (3.14, 10.0, "stalled at 3.1x fp32's loss"),
    (9.5, 10.0, "did not train"),  # above 90% of the first step's loss
    (float("nan"), 10.0, "diverged"),
])
def test_verdict_against_fp32(final, first, expected):
    base = _history("fp32", final=1.0)
    assert R.verdict(_history(final=final, first=first), base) == expected


def test_the_sentence_counts_what_the_flushed_column_counts():
    base, h = _history("fp32"), _history(final=2.0)  # 53 of 400 non-zero values flushed: 13.25%
    table = T.summary_table([base, h]).splitlines()
    assert table[0].startswith("Lesson: fp16 without loss scaling stalled") and table[1] == ""
    head = table[2].split()
    row = table[4]
    assert head[:6] == ["run", "final", "loss", "vs", "fp32", "accuracy"] and "flushed" in head
    assert " 2.00x " in row and " 13.25% " in row
    assert row.endswith("stalled at 2.0x fp32's loss; flushed 13% of its gradient values to zero "
                        "(loss gradients: 50% of theirs)")


def test_title_lesson_and_legend():
    runs = [_history("fp32"), _history(final=3.0), _history(loss_scale="dynamic", final=1.01),
            _history("fp8", variant="unscaled", final=9.9)]
    lines = T.summary_table(runs, "fpemu train: a task; 4 steps, seed 0.").splitlines()
    assert lines[0] == "fpemu train: a task; 4 steps, seed 0."
    assert lines[1] == ("Lesson: fp16 without loss scaling stalled at 3.0x fp32's loss; fp16 with dynamic loss "
                        "scaling matches fp32 (1.01x its loss); fp8 without per-tensor scaling did not train.")
    assert lines[2] == "" and lines[3].startswith("run ")
    legend = "\n".join(lines[lines.index("", 4) + 1:])
    assert legend == R.LEGEND and "the % that became 0" in legend
    # Without an fp32 run there is no lesson, and without a title no title line.
    assert T.summary_table(runs[1:]).splitlines()[0].startswith("run ")


def test_describe_run_names_the_fp8_scaling():
    assert R.describe_run(_history("fp8")) == "fp8 with delayed per-tensor scaling"
    assert R.describe_run(_history("fp8", variant="current")) == "fp8 with current per-tensor scaling"
    assert R.describe_run(_history("fp8", variant="unscaled")) == "fp8 without per-tensor scaling"
    assert R.describe_run(_history("bf16")) == "bf16 without loss scaling"


def test_the_lesson_tells_every_run_apart():
    """The transformer's two NVFP4 runs (with and without the recipe) and an FP8 run through an
    accumulator each read differently (issue 42, item 11: "nvfp4 matches fp32 (1.02x); nvfp4
    matches fp32 (1.03x)")."""
    runs = [_history("fp32"), _history("nvfp4", variant="2d+sr+rht+last1", final=1.02),
            _history("nvfp4", variant="plain", final=1.03), _history("fp8", variant="delayed,h100", final=1.0),
            _history("fp16", "dynamic", variant="h100+promote128", final=1.0)]
    lesson = R.lesson(runs)
    clauses = lesson.removeprefix("Lesson: ").removesuffix(".").split("; ")
    assert clauses == ["nvfp4 with 2d+sr+rht+last1 matches fp32 (1.02x its loss)",
                       "nvfp4 without the recipe's elements matches fp32 (1.03x its loss)",
                       "fp8 with delayed per-tensor scaling through h100 matches fp32 (1.00x its loss)",
                       "fp16 with dynamic loss scaling through h100+promote128 matches fp32 (1.00x its loss)"]


def test_one_recipe_has_one_name_in_both_networks():
    """The MLP's delayed-scaling FP8 run is fp8[delayed]+none, as the transformer's."""
    from fpemu.train.gpt import make_gpt_precision
    from fpemu.train.policies import make_policy

    assert make_policy("fp8").variant == make_gpt_precision("fp8", 1).variant == "delayed"
    assert T.History("fp8", "none", None, 0, 1, "e4m3", np.ones(1), *[np.zeros(1)] * 4, np.zeros(1),
                     variant="delayed").label == "fp8[delayed]+none"
