"""The comparison as a text table (:func:`summary_table`): a title naming the task and the
measured lesson, one row per run ending in one sentence that says what happened in it
(:func:`what_happened`), and a legend saying what each column counts."""

from __future__ import annotations

import math
from typing import Sequence

from .history import History, check_histories
from .loop import run  # noqa: F401  (summary_table's doctest trains a run)
from .stats import KIND_NAMES

# A run "matches" FP32 within this factor of its final loss, and "stalled" beyond the second;
# it "did not train" when its final loss is still this fraction of its first step's loss.
MATCH_FACTOR, STALL_FACTOR, UNTRAINED_FRACTION = 1.1, 1.5, 0.9

LEGEND = (
    "vs fp32: final training loss over fp32's. accuracy: test labels predicted right. flushed: of the\n"
    "non-zero gradient values the run cast to its low format (loss, activation, weight and bias\n"
    "gradients, every step), the % that became 0. overflowed: the % that became Inf (fp8: saturated).\n"
    f"A run matches fp32 within {MATCH_FACTOR}x of its loss, stalls beyond {STALL_FACTOR}x, and did not "
    f"train if its\nfinal loss is above {UNTRAINED_FRACTION:.0%} of its first step's."
)


def title_line(description: str, steps: int, seed: int) -> str:
    """The table's first line: the task the runs trained on, their steps and seed.

    >>> title_line("an MLP 32-64-10 learns ...", 300, 0)
    'fpemu train: an MLP 32-64-10 learns ...; 300 steps, seed 0.'
    """
    return f"fpemu train: {description}; {steps} steps, seed {seed}."


def baseline_of(h: History, histories: Sequence[History]) -> History | None:
    """The FP32 run among ``histories`` that ``h`` is compared with (same task, seed, steps)."""
    for b in histories:
        if b.precision == "fp32" and (b.task_name, b.seed, b.steps) == (h.task_name, h.seed, h.steps):
            return b
    return None


def excess_loss(h: History, base: History | None) -> float:
    """``h``'s final loss over the baseline's, in percent (NaN without a baseline).

    >>> excess_loss(run("fp32", steps=1), None)
    nan
    """
    if base is None or not base.final_loss:
        return math.nan
    return 100.0 * (h.final_loss / base.final_loss - 1.0)


def _pct(f: float) -> str:
    """A fraction as a short percentage: 62%, 7.1%, 0.55%, 0.002%.

    >>> _pct(0.6213), _pct(0.071), _pct(0.0000213), _pct(0.0)
    ('62%', '7.1%', '0.002%', '0%')
    """
    p = 100.0 * f
    return f"{p:.0f}%" if p >= 10 or p == 0 else f"{p:.2g}%" if p >= 0.01 else f"{p:.1g}%"


def _column_pct(f: float) -> str:
    """A fraction for a column: two decimals, or one significant digit below 0.01%.

    >>> _column_pct(0.3783), _column_pct(0.0), _column_pct(0.0000021)
    ('37.83%', '0.00%', '0.0002%')
    """
    p = 100.0 * f
    return f"{p:.2f}%" if p >= 0.01 or p == 0 else f"{p:.1g}%"


def _ratio(r: float) -> str:
    """A loss ratio for the *vs fp32* column: 1.87x, 12.3x, 4.5e+05x; ``-`` where undefined.

    >>> _ratio(1.8712), _ratio(12.34), _ratio(447768.5), _ratio(float("nan"))
    ('1.87x', '12.3x', '4.5e+05x', '-')
    """
    if not math.isfinite(r):
        return "-"
    return f"{r:.2f}x" if r < 10 else f"{r:.1f}x" if r < 100 else f"{r:.2g}x"


def verdict(h: History, base: History | None) -> str:
    """How the run ended against FP32: ``"diverged"``, ``"did not train"``, ``"stalled at 3.1x
    fp32's loss"``, ``"trails fp32 (1.3x its loss)"`` or ``"matches fp32 (1.02x its loss)"``
    (the factors :data:`MATCH_FACTOR`, :data:`STALL_FACTOR`, :data:`UNTRAINED_FRACTION`);
    ``""`` for the baseline itself or without one.

    >>> h = run("fp32", steps=1)
    >>> verdict(h, h), verdict(h, None)
    ('', '')
    """
    if not math.isfinite(h.final_loss):
        return "diverged"
    if len(h.loss) > 1 and math.isfinite(h.loss[0]) and h.final_loss > UNTRAINED_FRACTION * h.loss[0]:
        return "did not train"
    if base is None or h is base or not base.final_loss:
        return ""
    r = h.final_loss / base.final_loss
    if r > STALL_FACTOR:
        return f"stalled at {r:.1f}x fp32's loss"
    if r > MATCH_FACTOR:
        return f"trails fp32 ({r:.2f}x its loss)"
    return f"matches fp32 ({r:.2f}x its loss)"


def what_happened(h: History, base: History | None = None) -> str:
    """One sentence, in the table's terms: how the run ended against FP32, the share of its
    gradient values flushed to zero (the *flushed* column) and the kind of gradient most of
    them were, what overflowed, and what the loss scaler did.

    >>> h = run("fp32", steps=1)
    >>> what_happened(h, h)
    'the baseline'
    """
    if h is base or (h.precision == "fp32" and h.low_format is None):
        return "the baseline"
    parts = [v] if (v := verdict(h, base)) else []
    s = h.summary()
    if h.low_format is not None:
        if s["underflow_fraction"] > 0:
            kind, frac = max(h.underflow_by_kind().items(), key=lambda kv: kv[1])
            parts.append(f"flushed {_pct(s['underflow_fraction'])} of its gradient values to zero "
                         f"({KIND_NAMES.get(kind, kind)}: {_pct(frac)} of theirs)")
        else:
            parts.append("no gradient value flushed to zero")
    if s["overflow_fraction"] > 0:
        parts.append(f"{_pct(s['overflow_fraction'])} overflowed" + (" (saturated)" if h.precision == "fp8" else ""))
    skipped = s["skipped_steps"]
    if h.loss_scale == "dynamic":
        lo, hi = math.log2(min(h.scale)), math.log2(max(h.scale))
        span = f"2^{lo:.0f}" if lo == hi else f"2^{lo:.0f}..2^{hi:.0f}"
        parts.append(f"loss scale {span}" + (f", {skipped} steps skipped" if skipped else ""))
    elif skipped:
        parts.append(f"{skipped} steps skipped")
    return "; ".join(parts)


def describe_run(h: History) -> str:
    """A run in words, telling apart every run a comparison holds: its precision, its loss
    scaling (FP16, BF16), its recipe (FP8's per-tensor scaling, the elements of NVFP4's) and the
    accumulator model of its GEMMs, if any. (The transformer's ``variant`` is the recipe, then
    ``,ACCUMULATOR``; FP16's and BF16's is the accumulator alone.)

    >>> describe_run(run("fp32", steps=1))
    'fp32'
    """
    if h.precision == "fp32":
        return "fp32"
    recipe, accumulator = "", h.accumulator or ""
    if h.precision in ("fp8", "nvfp4"):
        recipe, _, in_variant = (h.variant or "").partition(",")
        accumulator = accumulator or in_variant
    elif h.precision in ("fp16", "bf16"):
        accumulator = accumulator or h.variant or ""
    words = [h.precision]
    if h.precision == "fp8":
        recipe = recipe or "delayed"
        words.append("without per-tensor scaling" if recipe == "unscaled" else f"with {recipe} per-tensor scaling")
    elif h.precision == "nvfp4":
        words.append("without the recipe's elements" if recipe in ("", "plain") else f"with {recipe}")
    elif h.precision in ("fp16", "bf16"):
        words.append({"none": "without loss scaling", "static": "with a static loss scale",
                      "dynamic": "with dynamic loss scaling"}[h.loss_scale])
    if accumulator:
        words.append(f"through {accumulator}")
    return " ".join(words)


def lesson(histories: Sequence[History]) -> str | None:
    """The comparison's lesson in one sentence, from the runs' verdicts against FP32 (None
    without an FP32 run and another to compare with it)."""
    clauses = []
    for h in histories:
        base = baseline_of(h, histories)
        if base is None or h is base:
            continue
        clauses.append(f"{describe_run(h)} {verdict(h, base) or 'ran'}")
    if not clauses:
        return None
    return "Lesson: " + "; ".join(clauses) + "."


def summary_table(histories: Sequence[History], title: str | None = None) -> str:
    """The comparison as a fixed-width text table: ``title`` (a line naming the task) and the
    lesson first where given and measurable, one sentence per row saying what happened, and
    the legend of the columns last.

    >>> print(summary_table([run("fp32", steps=1)]).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
    run  final loss  vs fp32  accuracy  flushed  overflowed  skipped  final scale  time (s)  what happened
    """
    histories = check_histories(histories)
    head = ("run", "final loss", "vs fp32", "accuracy", "flushed", "overflowed", "skipped", "final scale",
            "time (s)", "what happened")
    rows = [_row(h, baseline_of(h, histories)) for h in histories]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    last = len(head) - 1
    lines = ["  ".join(c.ljust(w) if i in (0, last) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [head, *rows]]
    top = [line for line in (title, lesson(histories)) if line]
    return "\n".join([*top, *([""] if top else []), *(line.rstrip() for line in lines), "", LEGEND])


def _row(h: History, base: History | None) -> tuple[str, ...]:
    s = h.summary()
    ratio = h.final_loss / base.final_loss if base is not None and base.final_loss else math.nan
    low = h.low_format is not None
    return (
        s["run"],
        f"{s['final_loss']:.3e}",
        _ratio(ratio),
        f"{100 * s['final_accuracy']:.1f}%",
        _column_pct(s["underflow_fraction"]) if low else "-",
        _column_pct(s["overflow_fraction"]) if low else "-",
        str(s["skipped_steps"]),
        f"{s['final_scale']:g}",
        f"{s['time_s']:.1f}",
        what_happened(h, base),
    )
