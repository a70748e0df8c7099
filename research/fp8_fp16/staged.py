"""The search space of ``python -m research.fp8_fp16 fit``: one matrix instruction whose sum
runs in ordered *stages*, with more choices than :class:`fpemu.accumulator.Accumulator` has
(where c enters, intermediate formats, epilogues), so that hypotheses can be scored before one
becomes a preset (issue 18: FP8 inputs, fp16 output, now the Hopper/Blackwell presets' fp16
model).

The K products of an instruction are put in an order (``order``), cut into stages of
``stage`` products, and each stage is one fused sum: its products and the running
accumulator (and ``c`` where it enters there) aligned to their largest exponent, each cut to
``frac_bits`` fraction bits below it (``None``: exact), added exactly. The stage result is
rounded to ``mid`` (``"fp16"``, ``"e8m13"``: fp32's range with 13 fraction bits, Hopper's FP8
accumulator; ``"fp32"``; ``"exact"``) with ``mid_rounding``. ``c`` enters the ``"first"``
stage, the ``"last"`` stage, or ``"after"`` them all: then the accumulator is first converted
to fp16 with ``convert`` (``None``: not converted) and ``d = fp16(acc + c)`` is rounded once
with ``final`` (``c_add="fp32"``: acc + c is rounded to fp32 RNE first, as an fp32 epilogue
such as cuBLASLt's adds a bias). ``c_format`` says whether ``c`` is rounded to fp16 (RNE)
before anything.

The model found for H100 and B200 (:data:`NAMED` ``"hopper-fp8-fp16"``): the products with
``k mod 4`` in {0, 1} first (order ``"bit1"``), two stages of 16 rounded to fp16 RNE, then
``c``:

>>> m = NAMED["hopper-fp8-fp16"]
>>> describe(m)
'order bit1 (k with bit 1 clear first), stages of 16, F = 25 rz, each stage to fp16 rne, c (fp16) after the stages, d = fp16 rne(acc + c)'
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from fpemu.arguments import is_whole

#: Intermediate formats a stage result may be rounded to: (significand bits with the hidden
#: one, smallest normal exponent, largest finite value).
MIDS = {
    "fp16": (11, -14, 65504.0),
    "e8m13": (14, -126, float(np.ldexp(2.0 - 2.0**-13, 127))),
    "fp32": (24, -126, float(np.finfo(np.float32).max)),
    "exact": None,
}
ROUNDINGS = ("rne", "rz")
C_AT = ("first", "last", "after")


def order_of(order: str, K: int) -> np.ndarray:
    """The product indices in the order the stages take them.

    ``"natural"``: 0..K-1. ``"bit<j>"``: the k with bit j clear first, then those with it set
    (``bit1`` on K = 8: 0 1 4 5, then 2 3 6 7; ``bit0`` is even/odd); ``"bit<j>r"``: those with
    it set first.

    >>> order_of("bit1", 8).tolist(), order_of("bit1r", 8).tolist()
    ([0, 1, 4, 5, 2, 3, 6, 7], [2, 3, 6, 7, 0, 1, 4, 5])
    """
    ks = np.arange(K)
    if order == "natural":
        return ks
    j = order[3:].removesuffix("r")
    if order.startswith("bit") and j.isdigit():
        bit = (ks >> int(j)) & 1
        first, second = (1, 0) if order.endswith("r") else (0, 1)
        return np.concatenate([ks[bit == first], ks[bit == second]])
    raise ValueError(f"unknown order {order!r}: 'natural', 'bit<j>' or 'bit<j>r'")


@dataclass(frozen=True)
class Staged:
    """One candidate model: see the module's docstring for every field."""

    order: str = "natural"
    stage: int = 32
    frac_bits: int | None = None
    term_rounding: str = "rz"
    mid: str = "exact"
    mid_rounding: str = "rne"
    c_at: str = "after"
    c_format: str = "fp16"
    convert: str | None = "rne"
    final: str = "rne"
    c_add: str = "exact"

    def __post_init__(self):
        order_of(self.order, 1)
        if not is_whole(self.stage) or self.stage < 1:
            raise ValueError(f"stage must be a positive integer, got {self.stage!r}")
        if self.frac_bits is not None and (not is_whole(self.frac_bits) or not 1 <= self.frac_bits <= 40):
            raise ValueError(f"frac_bits must be None (exact) or an integer in 1..40, got {self.frac_bits!r}")
        object.__setattr__(self, "stage", int(self.stage))  # NumPy integers: hash and compare as int
        if self.frac_bits is not None:
            object.__setattr__(self, "frac_bits", int(self.frac_bits))
        checks = {"term_rounding": ("rz", "rd"), "mid": tuple(MIDS), "mid_rounding": ROUNDINGS, "c_at": C_AT,
                  "c_format": ("fp16", "fp32"), "convert": (None,) + ROUNDINGS, "final": ROUNDINGS,
                  "c_add": ("exact", "fp32")}  # fmt: skip
        for name, allowed in checks.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    def key(self, K: int) -> tuple:
        """The fields a K-product instruction can tell apart (choices that cannot matter folded)."""
        stage = min(self.stage, K)
        order = "natural" if stage >= K else self.order
        c_at = "first" if stage >= K and self.c_at == "last" else self.c_at
        term = self.term_rounding if self.frac_bits is not None else "rz"
        mid_rounding = "rne" if self.mid == "exact" else self.mid_rounding
        convert = self.convert if c_at == "after" and self.mid != "fp16" else None
        final = "rne" if c_at != "after" and self.mid == "fp16" else self.final
        c_add = self.c_add if c_at == "after" else "exact"
        return (order, stage, self.frac_bits, term, self.mid, mid_rounding, c_at, self.c_format, convert, final, c_add)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def describe(m: Staged, K: int = 32) -> str:
    """One line of parameters, in words."""
    stage = min(m.stage, K)
    parts = []
    if stage < K:
        j, state = m.order[3:].removesuffix("r"), "set" if m.order.endswith("r") else "clear"
        where = "natural order" if m.order == "natural" else f"order {m.order} (k with bit {j} {state} first)"
        parts.append(f"{where}, stages of {stage}")
    else:
        parts.append(f"one stage of {K}")
    parts.append("exact sums" if m.frac_bits is None else f"F = {m.frac_bits} {m.term_rounding}")
    if m.mid != "exact":
        parts.append(f"each stage to {m.mid} {m.mid_rounding}")
    c = f"c ({m.c_format})"
    if m.c_at == "after":
        conv = "" if m.convert is None or m.mid == "fp16" else f"acc to fp16 {m.convert}, "
        add = "fp32 rne(acc + c)" if m.c_add == "fp32" else "acc + c"
        parts.append(f"{c} after the stages, {conv}d = fp16 {m.final}({add})")
    else:
        last = "d = the last stage's result" if m.mid == "fp16" else f"d = fp16 {m.final}(last stage)"
        parts.append(f"{c} in the {m.c_at} stage, {last}")
    return ", ".join(parts)


#: Named candidates: the model found, and the hypotheses it was chosen over (the probe set of
#: ``python -m research.fp8_fp16 probe`` is built to tell every pair of them apart).
NAMED = {
    # Found (issue 18): 5000/5000 on h100/b200 e4m3/e5m2 fp16 columns.
    "hopper-fp8-fp16": Staged(order="bit1", stage=16, frac_bits=25, mid="fp16", c_at="after"),
    # fpemu's block presets before issue 18: one fused block of 32 with c, F = 13, RNE to fp16.
    "wgmma-block32-f13": Staged(stage=32, frac_bits=13, c_at="first"),
    # Ada's FP8 fp16-output model: two blocks of 16 with c first, each rounded to fp16.
    "ada-two-blocks": Staged(stage=16, frac_bits=13, mid="fp16", c_at="first"),
    # The best guess before: fp16(fp16(exact sum of the products) + c).
    "fp16-sum-then-c": Staged(stage=32, c_at="after", convert="rne"),
    # One correct rounding of the exact sum with c.
    "exact-rne": Staged(stage=32, c_at="first"),
    # Hopper's FP8 path (13-bit RZ accumulator, c in the block), then an RNE cast to fp16.
    "e8m13-then-fp16": Staged(stage=32, frac_bits=13, mid="e8m13", mid_rounding="rz", c_at="first"),
    # An fp32 (RZ) accumulator of the two halves with c, cast to fp16 at the end (split-k).
    "fp32-halves-then-fp16": Staged(stage=16, frac_bits=25, mid="fp32", mid_rounding="rz", c_at="first"),
    # Contiguous halves (a plain split-k) in fp16, c after: the found model without the interleave.
    "split-k-fp16-then-c": Staged(stage=16, frac_bits=25, mid="fp16", c_at="after"),
    # What cuBLASLt's FP8 GEMM (torch._scaled_mm, fp16 output, c as the bias) should do: an fp32
    # accumulator (Hopper: the 13-bit wgmma sum; Blackwell: an almost exact sum rounded RNE), then
    # the epilogue adds the bias in fp32 and rounds to fp16.
    "cublaslt-hopper": Staged(stage=32, frac_bits=13, mid="e8m13", mid_rounding="rz", c_at="after", convert=None,
                              c_add="fp32"),
    "cublaslt-blackwell": Staged(stage=32, mid="fp32", c_at="after", convert=None, c_add="fp32"),
}
