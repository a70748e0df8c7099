"""The parameters of one accumulation model (:class:`Accumulator`) and their checks.

Pure description: nothing here computes a sum. The presets (:mod:`fpemu.isa`) are rows of these
fields, the kernels (``kernels``) read them. One description covers NVIDIA's block FMA, AMD
CDNA3's two-stage fused sum (per-stage kept bits, c joining late, even/odd lanes, c dropped
out of range), AMD CDNA1/2's rounded pairwise trees with their flushing, and the IEEE loops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..arguments import is_whole as _is_int
from ..formats import Format, get_format

Kind = Literal["block", "exact", "sequential", "pairwise"]
TermRounding = Literal["rz", "rd"]
OutRounding = Literal["rz", "rne"]


@dataclass(frozen=True)
class Accumulator:
    """Parameters of one accumulation model.

    Attributes:
        name: label used in messages and docs.
        kind: the algorithm.
            ``"block"``: the tensor-core block FMA (fields ``block`` to ``zero_c_exponent``).
            ``"exact"``: the exact sum of all products and ``c``, rounded once (RNE) to ``out``.
            ``"sequential"``: ``acc = round(acc + a[k]*b[k])`` for k = 0, 1, ... starting from
            ``acc = c``, exact products, one rounding per step in ``acc_format``/``acc_rounding``.
            ``"pairwise"``: products (exact) summed as a balanced binary tree, every addition
            rounded in ``acc_format``; ``block`` products per tree (None: all of K), each tree's
            sum then added to the running accumulator (recursive over K).
        block: products fused per block FMA (``n``); for ``"pairwise"`` the tree size.
        frac_bits: ``F``, fraction bits kept below the block's largest exponent ``E``.
        term_rounding: how each aligned term loses its low bits: ``"rz"`` truncates the
            magnitude (sign-magnitude hardware; what NVIDIA does), ``"rd"`` floors the two's
            complement value.
        out_rounding: rounding of the block sum to fp32 output: ``"rz"`` or ``"rne"``.
        out_frac_bits: fraction bits of that fp32 result (23; 13 for FP8 on Ada/Hopper, whose
            fp32 result keeps only 13). fp16 output is always rounded RNE to fp16.
        zero_c_exponent: the exponent a zero accumulator takes part in the alignment with.
        zero_exponent: the exponent a zero operand counts with: its product (value 0) then
            takes part in the alignment with this plus its partner's exponent (MMA-Sim gives
            every zero -126). None: zero products are dropped (NVIDIA, as the dumps show).
        late_c: the products of a block are aligned (to their largest exponent ``E_p``, ``F``
            bits, ``term_rounding``) and summed without ``c``; ``c`` joins in a second stage.
            With ``sum_frac_bits`` None (the first CDNA3 guess): that partial sum, at the
            exponent of its leading bit, and ``c`` are aligned (``F`` bits, ``term_rounding``)
            and added.
        even_odd: (with ``late_c``) even- and odd-indexed products of a block are aligned and
            summed separately (two lanes), then combined.
        lane_frac_bits: (with ``even_odd`` and ``sum_frac_bits``) the two lane sums are aligned
            to the larger lane exponent and cut (``late_rounding``) to this many fraction
            bits before c joins (CDNA3 FP8: 24).
        sum_frac_bits: (with ``late_c``) the second stage as MMA-Sim has it for CDNA3: the
            product sum keeps its first-stage exponent ``E_p`` (not renormalised), the
            alignment exponent is ``M = max(E_p, e_c)``, and the product sum is cut
            (``late_rounding``) to this many fraction bits below ``M`` (CDNA3: 31).
        c_frac_bits: fraction bits below ``M`` ``c`` is cut to in that second stage (CDNA3:
            24; None: ``sum_frac_bits``).
        c_window: ``c`` is dropped when its exponent lies more than this many binades below
            ``M`` (CDNA3 FP8: 25). None: never.
        late_rounding: the cut of the second-stage terms: ``"rd"`` floors (CDNA3), ``"rz"``
            truncates.
        product_overflow: a finite product of magnitude 2**128 or more is an Inf (both signs
            in one block: NaN) once Inf/NaN operands have had their say (CDNA3).
        signed_underflow: a non-zero block sum that rounds to zero keeps its sign (-0), as a
            float64 -> fp32 conversion does (CDNA3 in MMA-Sim). False: every zero result of a
            block is +0 (NVIDIA).
        round_products: (``"pairwise"``) each product is first rounded to ``acc_format``, as
            an FMA with a +0 addend does: an exact zero product is +0, an underflowing one
            keeps its sign, an overflowing one is Inf (CDNA1/2: bf16 products, fmaf(a, b, 0)).
            ``block`` then groups are padded with +0 products to ``block``.
        flush_subnormals: inputs below their format's smallest normal and a subnormal
            accumulator operand read as +0 (DAZ); every rounded result (product, pair sum,
            accumulation) below fp32's smallest normal is flushed to a zero of its sign (FTZ),
            as MMA-Sim has AMD CDNA2.
        instruction_k: products per instruction: a flushing model reads (flushes) its
            accumulator operand once per instruction, so a -0 running sum becomes +0 at an
            instruction boundary; ``lane_order`` and ``c_after`` act within an instruction.
            None: all of K is one instruction.
        lane_order: (block models) the order in which an instruction's products enter its
            blocks: ``"bit<j>"`` takes the products whose index k (within the instruction)
            has bit j clear first, then those with it set (Hopper/Blackwell FP8 with fp16
            output: ``"bit1"``, k mod 4 in {0, 1} first). None: k = 0, 1, 2, ...
        c_after: (block models) each instruction sums its products in its blocks starting
            from a zero accumulator, and ``c`` is added to that result afterwards, the exact
            sum rounded once to the output (Hopper/Blackwell FP8 with fp16 output). False:
            ``c`` enters the first block.
        fp16_output: the model the unit follows when it writes fp16 (``out="fp16"``), where
            that is not this one (Hopper/Blackwell FP8); its own ``fp16_output`` is None.
            ``dataclasses.asdict`` writes it as a dict, which is read back as a model.
        acc_format: the running sum's format for ``"sequential"``/``"pairwise"`` (fp32, fp16,
            bf16); block models keep their result in the output format.
        acc_rounding: rounding of every step of ``"sequential"``/``"pairwise"``.
        promote: DeepSeek-V3's fix: every ``promote`` products, the unit's partial result
            (computed from a zero accumulator) is added to an fp32 accumulator with RNE, as
            the CUDA cores do. None: no promotion.
        source: where the parameters come from.

    >>> Accumulator("mine", "block", block=8, frac_bits=24).out_rounding
    'rz'
    """

    name: str
    kind: Kind = "block"
    block: int | None = 1
    frac_bits: int = 24
    term_rounding: TermRounding = "rz"
    out_rounding: OutRounding = "rz"
    out_frac_bits: int = 23
    zero_c_exponent: int = -126
    zero_exponent: int | None = None
    late_c: bool = False
    even_odd: bool = False
    lane_frac_bits: int | None = None
    sum_frac_bits: int | None = None
    c_frac_bits: int | None = None
    c_window: int | None = None
    late_rounding: TermRounding = "rd"
    product_overflow: bool = False
    signed_underflow: bool = False
    round_products: bool = False
    flush_subnormals: bool = False
    instruction_k: int | None = None
    acc_format: str = "fp32"
    acc_rounding: OutRounding = "rne"
    promote: int | None = None
    lane_order: str | None = None
    c_after: bool = False
    fp16_output: Accumulator | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.fp16_output, dict):  # as dataclasses.asdict wrote it (vector files)
            object.__setattr__(self, "fp16_output", Accumulator(**self.fp16_output))
        # Types first: the value checks compare and shift the fields.
        problems = self._type_problems() or self._value_problems()
        if problems:
            raise ValueError(f"invalid accumulator {self.name!r}: " + "; ".join(problems))

    def _type_problems(self) -> list[str]:
        """Fields of the wrong type (a bool is not an integer here: True would read as 1)."""
        problems = []
        if not isinstance(self.name, str):
            problems.append(f"name must be a string, got {self.name!r}")
        for field in ("frac_bits", "out_frac_bits", "zero_c_exponent"):
            if not _is_int(getattr(self, field)):
                problems.append(f"{field} must be an integer, got {getattr(self, field)!r}")
        for field in ("block", "promote", "instruction_k", "zero_exponent") + _LATE_BITS:
            value = getattr(self, field)
            if value is not None and not _is_int(value):
                kind = {"zero_exponent": "an integer"}.get(field, "a non-negative integer")
                kind = "a positive integer" if field in ("block", "promote", "instruction_k") else kind
                problems.append(f"{field} must be {kind} or None, got {value!r}")
        for field in _FLAGS:
            if not isinstance(getattr(self, field), (bool, np.bool_)):
                problems.append(f"{field} must be True or False, got {getattr(self, field)!r}")
        if self.lane_order is not None and not isinstance(self.lane_order, str):
            problems.append(f"lane_order must be 'bit<j>' or None, got {self.lane_order!r}")
        if self.fp16_output is not None and not isinstance(self.fp16_output, Accumulator):
            problems.append(f"fp16_output must be an Accumulator or None, got {type(self.fp16_output).__name__}")
        if not isinstance(self.acc_format, (str, Format)):
            problems.append(f"acc_format must be a format name, got {self.acc_format!r}")
        return problems

    def _value_problems(self) -> list[str]:
        problems = []
        if self.kind not in ("block", "exact", "sequential", "pairwise"):
            problems.append(f"kind must be block, exact, sequential or pairwise, got {self.kind!r}")
        if self.block is not None and self.block < 1:
            problems.append(f"block must be a positive integer or None, got {self.block!r}")
        if self.kind == "block" and self.block is None:
            problems.append("a block model needs a block size")
        if not 0 <= self.frac_bits <= 48:
            problems.append(f"frac_bits must be in 0..48 (float64 keeps it exact), got {self.frac_bits}")
        elif self.block is not None and (self.block + 3) << (self.frac_bits + 2) >= 1 << 63:
            problems.append("block << (frac_bits + 2) must fit in int64: fewer products or fewer bits")
        if self.term_rounding not in ("rz", "rd"):
            problems.append(f"term_rounding must be 'rz' or 'rd', got {self.term_rounding!r}")
        if self.out_rounding not in ("rz", "rne") or self.acc_rounding not in ("rz", "rne"):
            problems.append("out_rounding and acc_rounding must be 'rz' or 'rne'")
        if not 1 <= self.out_frac_bits <= 23:
            problems.append(f"out_frac_bits must be in 1..23, got {self.out_frac_bits}")
        # The alignment exponent E is kept in int32 and 2**(F - E) must be a normal float64.
        if not -1022 <= self.zero_c_exponent <= 1023:
            problems.append(f"zero_c_exponent must be in -1022..1023, got {self.zero_c_exponent}")
        if self.even_odd and not self.late_c:
            problems.append("even_odd needs late_c")
        for field in ("promote", "instruction_k"):
            if getattr(self, field) is not None and getattr(self, field) < 1:
                problems.append(f"{field} must be a positive integer or None, got {getattr(self, field)!r}")
        if get_format(self.acc_format).name not in ("fp32", "fp16", "bf16"):
            problems.append(f"acc_format must be fp32, fp16 or bf16, got {self.acc_format!r}")
        return problems + self._stage_problems()

    def _stage_problems(self) -> list[str]:
        """The fields of the second stage, the zero and overflow rules, the rounded products:
        each needs the kind (and the fields) that read it, so that none is silently ignored."""
        problems = []
        if self.late_rounding not in ("rz", "rd"):
            problems.append(f"late_rounding must be 'rz' or 'rd', got {self.late_rounding!r}")
        if self.zero_exponent is not None and not -500 <= self.zero_exponent <= 500:
            problems.append(f"zero_exponent must be in -500..500, got {self.zero_exponent}")
        bits = [getattr(self, f) for f in _LATE_BITS if getattr(self, f) is not None]
        if any(not 0 <= b <= 48 for b in bits):
            problems.append("lane_frac_bits, sum_frac_bits, c_frac_bits and c_window must be in 0..48")
        elif bits and self.block is not None and self.block << (max(bits + [self.frac_bits]) + 2) >= 1 << 52:
            problems.append("block << (kept bits + 2) must stay below 2**52: fewer products or fewer bits")
        if self.sum_frac_bits is not None and not self.late_c:
            problems.append("sum_frac_bits needs late_c")
        for field in ("c_frac_bits", "c_window"):
            if getattr(self, field) is not None and self.sum_frac_bits is None:
                problems.append(f"{field} needs sum_frac_bits")
        if (self.lane_frac_bits is not None) != (self.even_odd and self.sum_frac_bits is not None):
            problems.append("lane_frac_bits goes with even_odd and sum_frac_bits: all three or not all")
        if self.instruction_k is not None and self.block is not None and self.instruction_k % self.block:
            problems.append(f"instruction_k must be a multiple of block ({self.block}), got {self.instruction_k}")
        block_only = ("zero_exponent", "product_overflow", "signed_underflow", "late_c")
        if self.kind != "block":
            problems += [f"{f} applies to block models only" for f in block_only if getattr(self, f) not in (None, False)]
        if self.round_products and self.kind != "pairwise":
            problems.append("round_products applies to pairwise models only")
        return problems + self._instruction_problems()

    def _instruction_problems(self) -> list[str]:
        """The lane order, c after the instruction, and the fp16-output model."""
        problems = []
        if self.lane_order is not None:
            bit = self.lane_order[3:]
            if not (self.lane_order.startswith("bit") and bit.isdigit()):
                problems.append(f"lane_order must be 'bit<j>' or None, got {self.lane_order!r}")
            elif self.kind != "block" or self.instruction_k is None or 1 << int(bit) >= self.instruction_k:
                problems.append("lane_order needs a block model with instruction_k above 2**j")
        if (self.lane_order is not None or self.c_after) and self.late_c:
            problems.append("lane_order and c_after do not go with late_c")
        if self.c_after and self.kind != "block":
            problems.append("c_after applies to block models only")
        if self.fp16_output is not None and self.fp16_output.fp16_output is not None:
            problems.append("fp16_output's own fp16_output must be None")
        return problems

    def for_output(self, out: str) -> Accumulator:
        """The model that writes ``out`` ("fp32", "fp16", "bf16"): ``fp16_output`` for fp16
        where there is one, else this one.

        >>> from fpemu.accumulator import get_accumulator
        >>> get_accumulator("h100", "e4m3").for_output("fp16").lane_order
        'bit1'
        """
        return self.fp16_output if out == "fp16" and self.fp16_output is not None else self


# Kept-bit fields of the second stage (None: not used), and the True/False fields.
_LATE_BITS = ("lane_frac_bits", "sum_frac_bits", "c_frac_bits", "c_window")
_FLAGS = ("late_c", "even_odd", "flush_subnormals", "product_overflow", "signed_underflow", "round_products",
          "c_after")

