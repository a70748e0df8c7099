"""Search spaces of staged models (:class:`~research.fp8_fp16.staged.Staged`) as data: each
axis a list of values, every combination one candidate (choices that cannot matter for K
products folded away, the named hypotheses of :data:`~research.fp8_fp16.staged.NAMED` always
included).

``python -m research.fp8_fp16 fit --space fp8-fp16`` searches :data:`SPACES` ``["fp8-fp16"]``;
``--space FILE.json`` reads a space in the same shape (``{"axes": {"stage": [16, 32], ...}}``;
an axis left out keeps the default of :class:`~research.fp8_fp16.staged.Staged`).

>>> len(candidates("fp8-fp16", 32)) > 10000
True
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from .staged import NAMED, Staged

SPACES = {
    "fp8-fp16": {
        "about": "FP8 products with fp16 output (issue 18): stage sizes, lane orders, kept bits, "
                 "stage rounding (fp16, Hopper's 13-bit e8m13, fp32, exact), where c enters, c in "
                 "fp16 or fp32, the conversion to fp16 and the final rounding",  # fmt: skip
        "out": "fp16",
        "axes": {
            "order": ["natural", "bit0", "bit1", "bit2", "bit3"],
            "stage": [1, 2, 4, 8, 16, 32],
            "frac_bits": [13, 16, 25, None],
            "term_rounding": ["rz"],
            "mid": ["fp16", "e8m13", "fp32", "exact"],
            "mid_rounding": ["rne", "rz"],
            "c_at": ["first", "last", "after"],
            "c_format": ["fp16", "fp32"],
            "convert": [None, "rne", "rz"],
            "final": ["rne", "rz"],
        },
    },
}


def load_space(name: str) -> dict:
    """A space by name, or from a JSON file (ValueError naming what is wrong)."""
    if name in SPACES:
        return SPACES[name]
    if not name.endswith(".json"):
        raise ValueError(f"unknown search space {name!r}: {', '.join(SPACES)} or a .json file of axes "
                         "(the block models: fpemu fit)")  # fmt: skip
    try:
        space = json.loads(Path(name).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(space, dict) or not isinstance(space.get("axes"), dict):
        raise ValueError(f'{name}: a search space is a JSON object with "axes": {{field: [values, ...]}}')
    fields = set(Staged.__dataclass_fields__)
    unknown = sorted(set(space["axes"]) - fields)
    if unknown:
        raise ValueError(f"{name}: unknown axes {', '.join(unknown)} (axes: {', '.join(sorted(fields))})")
    bad = [k for k, v in space["axes"].items() if not isinstance(v, list) or not v]
    if bad:
        raise ValueError(f"{name}: every axis is a non-empty list of values; not {', '.join(bad)}")
    return {"about": space.get("about", name), "out": space.get("out", "fp16"), "axes": space["axes"]}


def candidates(space: str | dict, K: int) -> list[Staged]:
    """Every distinct model of a space for K products per row, the named hypotheses first."""
    spec = load_space(space) if isinstance(space, str) else space
    axes = spec["axes"]
    seen: dict = {}
    for m in NAMED.values():
        seen.setdefault(m.key(K), m)
    for values in itertools.product(*axes.values()):
        try:
            m = Staged(**dict(zip(axes, values)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"search space: {exc}") from None
        seen.setdefault(m.key(K), m)
    return list(seen.values())


def name_of(m: Staged, K: int) -> str | None:
    """The name of a model among :data:`~research.fp8_fp16.staged.NAMED` (same key), else None."""
    return next((n for n, x in NAMED.items() if x.key(K) == m.key(K)), None)
