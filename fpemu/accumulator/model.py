"""The accumulation models: one small frozen dataclass per kind, each with only its own fields.

Pure description: nothing here computes a sum. The presets (:mod:`fpemu.accumulator.units`) are rows of these
fields, the kernels (``kernels``) read them, one kernel per class.

- :class:`Exact`: the exact sum of all products and ``c``, rounded once (RNE).
- :class:`Sequential`, :class:`Pairwise` (both :class:`RoundedModel`): every addition rounded
  in ``acc_format``: the IEEE loop and FMA chains; balanced trees (AMD CDNA1/2).
- :class:`BlockFMA`, :class:`TwoStage` (both :class:`BlockModel`): a block of products aligned
  to its largest exponent with ``frac_bits`` fraction bits, summed exactly, rounded once:
  NVIDIA's tensor cores with ``c`` in the first block (or added after each instruction);
  AMD CDNA3's two stages with ``c`` joining late.

Every class is an :class:`Accumulator`, and ``Accumulator(name, kind, **fields)`` (0.1's
keyword spelling, and vector files) builds the class of that kind (:mod:`.record`):

>>> Accumulator("mine", "block", block=8, frac_bits=24)
BlockFMA(name='mine', instruction_k=None, promote=None, flush_subnormals=False, source='', block=8, frac_bits=24, term_rounding='rz', out_rounding='rz', out_frac_bits=23, zero_c_exponent=-126, zero_exponent=None, product_overflow=False, signed_underflow=False, lane_order=None, c_after=False, fp16_output=None)
>>> Sequential("loop", acc_format="bf16").kind, isinstance(Exact("e"), Accumulator)
('sequential', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from ..arguments import FieldsRecord, SpelledBy
from ..formats import Format
from .checks import problems_of
from .record import from_record

Kind = Literal["block", "two_stage", "exact", "sequential", "pairwise"]
TermRounding = Literal["rz", "rd"]
OutRounding = Literal["rz", "rne"]


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class Accumulator(FieldsRecord, metaclass=SpelledBy):
    """What every accumulation model has.

    Attributes:
        name: label used in messages and docs.
        instruction_k: products per instruction: a flushing model reads (flushes) its
            accumulator operand once per instruction, so a -0 running sum becomes +0 at an
            instruction boundary; :class:`BlockFMA`'s ``lane_order`` and ``c_after`` act
            within an instruction. None: all of K is one instruction.
        promote: DeepSeek-V3's fix: every ``promote`` products, the unit's partial result
            (computed from a zero accumulator) is added to an fp32 accumulator with RNE, as
            the CUDA cores do. None: no promotion.
        flush_subnormals: inputs below their format's smallest normal and a subnormal
            accumulator operand read as +0 (DAZ); in :class:`RoundedModel` every rounded
            result below fp32's smallest normal is flushed to a zero of its sign (FTZ), as
            MMA-Sim has AMD CDNA2.
        source: where the parameters come from.
        kind: the class's name for its algorithm (not an argument: the class says it).
    """

    name: str
    instruction_k: int | None = None
    promote: int | None = None
    flush_subnormals: bool = False
    source: str = ""
    kind: str = field(default="", init=False, repr=False)

    @staticmethod
    def spelling(*args, **fields) -> Accumulator:
        """``Accumulator(name, kind, **fields)``: the class its ``kind`` names (:mod:`.record`)."""
        return from_record(KINDS, *args, **fields)

    def __post_init__(self) -> None:
        problems = problems_of(self)
        if problems:
            raise ValueError(f"invalid accumulator {self.name!r}: " + "; ".join(problems))

    def for_output(self, out: str) -> Accumulator:
        """The model that writes ``out`` ("fp32", "fp16", "bf16"): this one, unless the unit
        has another for fp16 (:attr:`BlockFMA.fp16_output`).

        >>> from fpemu.accumulator import get_accumulator
        >>> get_accumulator("h100", "e4m3").for_output("fp16").lane_order
        'bit1'
        """
        return self


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class Exact(Accumulator):
    """The exact sum of all products and ``c``, rounded once (RNE) to the output."""

    kind: str = field(default="exact", init=False, repr=False)


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class RoundedModel(Accumulator):
    """A running sum in ``acc_format``, every addition rounded (``acc_rounding``: ``"rne"``
    or ``"rz"``); products exact."""

    acc_format: str | Format = "fp32"
    acc_rounding: OutRounding = "rne"


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class Sequential(RoundedModel):
    """``acc = round(acc + a[k]*b[k])`` for k = 0, 1, ... starting from ``acc = c``."""

    kind: str = field(default="sequential", init=False, repr=False)


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class Pairwise(RoundedModel):
    """Products summed as balanced binary trees of ``block`` products (None: all of K), every
    addition rounded, each tree's sum then added to the running accumulator.

    Attributes:
        round_products: each product is first rounded to ``acc_format``, as an FMA with a +0
            addend does: an exact zero product is +0, an underflowing one keeps its sign, an
            overflowing one is Inf (CDNA1/2: bf16 products, fmaf(a, b, 0)); groups are then
            padded with +0 products to ``block``.
    """

    block: int | None = 1
    round_products: bool = False
    kind: str = field(default="pairwise", init=False, repr=False)


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class BlockModel(Accumulator):
    """A block of ``block`` exact products (and ``c``) aligned to their largest exponent,
    summed exactly, the sum rounded once to fp32 (``out_rounding``, ``out_frac_bits``) or
    fp16 (RNE); each block's result is the next one's ``c``.

    Attributes:
        frac_bits: ``F``, fraction bits kept below the block's largest exponent ``E``.
        term_rounding: how each aligned term loses its low bits: ``"rz"`` truncates the
            magnitude (sign-magnitude hardware; what NVIDIA does), ``"rd"`` floors the two's
            complement value.
        out_frac_bits: fraction bits of the fp32 result (23; 13 for FP8 on Ada/Hopper).
        zero_c_exponent: the exponent a zero accumulator takes part in the alignment with.
        zero_exponent: the exponent a zero operand counts with: its product (value 0) then
            takes part in the alignment with this plus its partner's exponent (MMA-Sim gives
            every zero -126). None: zero products are dropped (NVIDIA, as the dumps show).
        product_overflow: a finite product of magnitude 2**128 or more is an Inf (both signs
            in one block: NaN) once Inf/NaN operands have had their say (CDNA3).
        signed_underflow: a non-zero block sum that rounds to zero keeps its sign (-0), as a
            float64 -> fp32 conversion does (CDNA3 in MMA-Sim). False: +0 (NVIDIA).
    """

    block: int = 1
    frac_bits: int = 24
    term_rounding: TermRounding = "rz"
    out_rounding: OutRounding = "rz"
    out_frac_bits: int = 23
    zero_c_exponent: int = -126
    zero_exponent: int | None = None
    product_overflow: bool = False
    signed_underflow: bool = False
    late_c: ClassVar[bool] = False


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class BlockFMA(BlockModel):
    """NVIDIA's tensor-core block FMA: ``c`` takes part in the first block.

    Attributes:
        lane_order: the order in which an instruction's products enter its blocks:
            ``"bit<j>"`` takes the products whose index k (within the instruction) has bit j
            clear first, then those with it set (Hopper/Blackwell FP8 with fp16 output:
            ``"bit1"``). None: k = 0, 1, 2, ...
        c_after: each instruction sums its products in its blocks from a zero accumulator,
            and ``c`` is added to that result afterwards, the exact sum rounded once.
        fp16_output: the model the unit follows when it writes fp16 (``out="fp16"``), where
            that is not this one (Hopper/Blackwell FP8); its own ``fp16_output`` is None.
            ``dataclasses.asdict`` writes it as a dict, which is read back as a model.

    >>> BlockFMA("mine", block=8, frac_bits=24).out_rounding
    'rz'
    """

    lane_order: str | None = None
    c_after: bool = False
    fp16_output: Accumulator | None = None
    kind: str = field(default="block", init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.fp16_output, dict):  # as dataclasses.asdict wrote it (vector files)
            object.__setattr__(self, "fp16_output", Accumulator(**self.fp16_output))
        if self.fp16_output is not None and not isinstance(self.fp16_output, Accumulator):
            kind = type(self.fp16_output).__name__
            raise ValueError(f"invalid accumulator {self.name!r}: fp16_output must be an Accumulator or None, got {kind}")
        super().__post_init__()

    def for_output(self, out: str) -> Accumulator:
        return self.fp16_output if out == "fp16" and self.fp16_output is not None else self


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class TwoStage(BlockModel):
    """The two-stage fused sum, as MMA-Sim models AMD CDNA3: a block's products (in one lane,
    or even and odd lanes apart) aligned to their largest exponent ``E_p`` and cut; ``c``
    joins in a second stage.

    Attributes:
        even_odd: even- and odd-indexed products of a block are aligned and summed
            separately (two lanes), then combined.
        lane_frac_bits: (with ``even_odd`` and ``sum_frac_bits``) the two lane sums are
            aligned to the larger lane exponent and cut (``late_rounding``) to this many
            fraction bits before c joins (CDNA3 FP8: 24).
        sum_frac_bits: the product sum keeps ``E_p`` (not renormalised), the alignment
            exponent is ``M = max(E_p, e_c)``, and the product sum is cut (``late_rounding``)
            to this many fraction bits below ``M`` (CDNA3: 31). None (the first CDNA3 guess,
            which ``fpemu.fit`` searches): the partial sum at its leading bit and ``c``
            aligned with ``frac_bits`` bits (``term_rounding``) and added.
        c_frac_bits: fraction bits below ``M`` ``c`` is cut to (CDNA3: 24; None:
            ``sum_frac_bits``).
        c_window: ``c`` is dropped when its exponent lies more than this many binades below
            ``M`` (CDNA3 FP8: 25). None: never.
        late_rounding: the cut of the second-stage terms: ``"rd"`` floors (CDNA3), ``"rz"``
            truncates.
    """

    even_odd: bool = False
    lane_frac_bits: int | None = None
    sum_frac_bits: int | None = None
    c_frac_bits: int | None = None
    c_window: int | None = None
    late_rounding: TermRounding = "rd"
    kind: str = field(default="two_stage", init=False, repr=False)
    late_c: ClassVar[bool] = True


#: The class of each kind name (``"block"`` with ``late_c=True`` is ``TwoStage``, see ``record``).
KINDS: dict[str, type[Accumulator]] = {
    "block": BlockFMA, "two_stage": TwoStage, "exact": Exact, "sequential": Sequential, "pairwise": Pairwise,
}  # fmt: skip

