r"""The accumulation models: how a matrix unit adds products, one plain frozen dataclass per
kind, each with only the fields its kernel reads. Pure description: nothing here computes a
sum; the presets (:mod:`.units`) are rows of these fields, the kernels read them.

The hierarchy (the fields each class adds)::

    Accumulator                   name, source: what every model has
    |-- FusedModel                frac_bits, term_rounding, out_rounding, zero_exponent,
    |                             zero_c_exponent: terms aligned to their largest exponent,
    |                             cut, added exactly, rounded once (the one block FMA kernel)
    |-- DenseModel                instruction_k, promote, flush_subnormals: plain operands
    |   |-- Exact                 the exact sum, rounded once (RNE)
    |   |-- RoundedModel          acc_format, acc_rounding: every addition rounded
    |   |   |-- Sequential        the IEEE loop, FMA chains
    |   |   `-- Pairwise          block, round_products: trees of roundings (AMD CDNA1/2)
    |   `-- BlockModel            (and FusedModel) block, out_frac_bits, product_overflow,
    |       |                     signed_underflow
    |       |-- BlockFMA          lane_order, c_after, fp16_output: NVIDIA's tensor cores
    |       `-- TwoStage          even_odd, lane_frac_bits, sum_frac_bits, c_frac_bits,
    |                             c_window, late_rounding: AMD CDNA3, c joining late
    `-- BlockScaledAccumulator    alpha: block-scaled operands (MX, NVFP4)
        |-- Blockwise             the OCP MX model: each K-block exact, rounded once
        `-- BlockScaledFMA        (and FusedModel) instruction_k, sub_block, term_exponent,
                                  overflow: a tensor core's block-scaled MMA

A model is built by its class, its fields checked on the way (:mod:`.checks`, one table for
every field of every class):

>>> BlockFMA("mine", block=8, frac_bits=24)
BlockFMA(name='mine', source='', frac_bits=24, term_rounding='rz', out_rounding='rz', zero_exponent=None, zero_c_exponent=-126, instruction_k=None, promote=None, flush_subnormals=False, block=8, out_frac_bits=23, product_overflow=False, signed_underflow=False, lane_order=None, c_after=False, fp16_output=None)
>>> Sequential("loop", acc_format="bf16").kind, isinstance(BlockScaledFMA("m", instruction_k=32), FusedModel)
('sequential', True)

A vector file holds a model as ``dataclasses.asdict`` writes it, its ``kind`` included;
:func:`model_from_dict` reads it back:

>>> import dataclasses
>>> m = BlockFMA("h", block=16, frac_bits=25, fp16_output=BlockFMA("h16", block=16, c_after=True))
>>> model_from_dict(dataclasses.asdict(m)) == m
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..formats import Format
from .checks import problems_of

Kind = Literal["block", "two_stage", "exact", "sequential", "pairwise", "blockwise", "fused"]
TermRounding = Literal["rz", "rd"]
OutRounding = Literal["rz", "rne"]
TermExponent = Literal["product", "scale"]


@dataclass(frozen=True)
class Accumulator:
    """How a matrix unit adds products: what every model has.

    Attributes:
        name: label used in messages and docs.
        source: where the parameters come from.
        kind: the class's name for its algorithm (not an argument: the class says it; vector
            files write it).
    """

    name: str
    source: str = ""
    kind: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        problems = problems_of(self)
        if problems:
            raise ValueError(f"invalid accumulator {self.name!r}: " + "; ".join(problems))


@dataclass(frozen=True)
class FusedModel(Accumulator):
    """A fused sum, the block FMA of every tensor core: its terms (and ``c``) aligned to their
    largest exponent ``E``, each cut to ``frac_bits`` fraction bits below it, the cut terms
    added exactly, the sum rounded once.

    Attributes:
        frac_bits: ``F``, fraction bits kept below the largest exponent ``E``.
        term_rounding: how each aligned term loses its low bits: ``"rz"`` truncates the
            magnitude (sign-magnitude hardware; what NVIDIA does), ``"rd"`` floors the two's
            complement value.
        out_rounding: the rounding of the sum: ``"rz"`` or ``"rne"``.
        zero_exponent: the exponent a zero operand (element, or block scale) counts with: its
            term (value 0) then takes part in the alignment (MMA-Sim gives every zero -126).
            None: zero terms are dropped (NVIDIA, as the dumps show).
        zero_c_exponent: the exponent a zero accumulator takes part in the alignment with.
    """

    frac_bits: int = 24
    term_rounding: TermRounding = "rz"
    out_rounding: OutRounding = "rz"
    zero_exponent: int | None = None
    zero_c_exponent: int = -126


@dataclass(frozen=True)
class DenseModel(Accumulator):
    """A model of products of plain operands (elements of one format each).

    Attributes:
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
    """

    instruction_k: int | None = None
    promote: int | None = None
    flush_subnormals: bool = False

    def for_output(self, out: str) -> DenseModel:
        """The model that writes ``out`` ("fp32", "fp16", "bf16"): this one, unless the unit
        has another for fp16 (:attr:`BlockFMA.fp16_output`).

        >>> from fpemu.accumulator import get_accumulator
        >>> get_accumulator("h100", "e4m3").for_output("fp16").lane_order
        'bit1'
        """
        return self


@dataclass(frozen=True)
class Exact(DenseModel):
    """The exact sum of all products and ``c``, rounded once (RNE) to the output."""

    kind: str = field(default="exact", init=False, repr=False)


@dataclass(frozen=True)
class RoundedModel(DenseModel):
    """A running sum in ``acc_format``, every addition rounded (``acc_rounding``: ``"rne"``
    or ``"rz"``); products exact."""

    acc_format: str | Format = "fp32"
    acc_rounding: OutRounding = "rne"


@dataclass(frozen=True)
class Sequential(RoundedModel):
    """``acc = round(acc + a[k]*b[k])`` for k = 0, 1, ... starting from ``acc = c``."""

    kind: str = field(default="sequential", init=False, repr=False)


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class BlockModel(DenseModel, FusedModel):
    """A block of ``block`` exact products (and ``c``) in one fused sum, rounded once to fp32
    (``out_rounding``, ``out_frac_bits``) or fp16 (RNE); each block's result is the next
    one's ``c``.

    Attributes:
        out_frac_bits: fraction bits of the fp32 result (23; 13 for FP8 on Ada/Hopper).
        product_overflow: a finite product of magnitude 2**128 or more is an Inf (both signs
            in one block: NaN) once Inf/NaN operands have had their say (CDNA3).
        signed_underflow: a non-zero block sum that rounds to zero keeps its sign (-0), as a
            float64 -> fp32 conversion does (CDNA3 in MMA-Sim). False: +0 (NVIDIA).
    """

    block: int = 1
    out_frac_bits: int = 23
    product_overflow: bool = False
    signed_underflow: bool = False
    late_c: ClassVar[bool] = False


@dataclass(frozen=True)
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

    >>> BlockFMA("mine", block=8, frac_bits=24).out_rounding
    'rz'
    """

    lane_order: str | None = None
    c_after: bool = False
    fp16_output: BlockFMA | None = None
    kind: str = field(default="block", init=False, repr=False)

    def for_output(self, out: str) -> DenseModel:
        return self.fp16_output if out == "fp16" and self.fp16_output is not None else self


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class BlockScaledAccumulator(Accumulator):
    """A model of products of block-scaled operands (MX, NVFP4).

    Attributes:
        alpha: NVFP4's per-tensor scales. ``"decode"``: the result times
            ``fp32(global_scale_a * global_scale_b)`` in float32, rounded once from the
            exact product where that alpha overflows or is subnormal (fpemu's exact model).
            ``"cublaslt"``: as a cuBLASLt GEMM applies its alpha, ``fp32(alpha * acc)``, with
            alpha computed as TransformerEngine does from the tensor amaxes (see
            ``docs/mx.md``).
    """

    alpha: Literal["decode", "cublaslt"] = "cublaslt"


@dataclass(frozen=True)
class Blockwise(BlockScaledAccumulator):
    """The OCP MX Dot/DotGeneral with exact parts: each scale block's products summed
    exactly, times both scales, rounded once to fp32 (RNE), added in fp32 (RNE) to the running
    sum, which starts at ``c``, block by block."""

    kind: str = field(default="blockwise", init=False, repr=False)


@dataclass(frozen=True)
class BlockScaledFMA(BlockScaledAccumulator, FusedModel):
    """A tensor core's block-scaled MMA, one instruction of ``instruction_k`` products at a
    time: its terms and ``c`` in one fused sum (:class:`FusedModel`), rounded to fp32; that
    result is the ``c`` of the next instruction. A zero result is +0.

    Attributes:
        instruction_k: products per instruction (Blackwell ``tcgen05.mma``: ``kind::mxf8f6f4``
            32, ``kind::mxf4nvf4`` 64). A K that is not a multiple is zero-padded (zero codes,
            zero scale codes), as a kernel pads its tiles.
        sub_block: products summed exactly into one term before the scales multiply it (1:
            every product is a term; MMA-Sim's ``mxf4nvf4``: 16).
        term_exponent: the exponent a term is aligned with. ``"product"``: the exact
            product's own, ``e_a + e_b`` plus both scales' exponents, its significand in
            [0, 4) (needs ``sub_block`` 1). ``"scale"``: the two scales' exponents only; the
            sub-block sum is not renormalised (MMA-Sim's ``mxf4nvf4``). With
            ``zero_exponent``, a sub-block whose sum is 0 takes part too.
        overflow: ``"ieee"``: a sum beyond fp32 rounds as IEEE says (RZ: the largest finite
            value); ``"inf"``: it is +-Inf whatever the rounding (MMA-Sim).

    >>> BlockScaledFMA("mine", instruction_k=32, frac_bits=30).out_rounding
    'rz'
    """

    instruction_k: int | None = None
    sub_block: int = 1
    term_exponent: TermExponent = "product"
    overflow: Literal["ieee", "inf"] = "ieee"
    kind: str = field(default="fused", init=False, repr=False)


#: The class of each kind name, as vector files write it.
KINDS: dict[str, type[Accumulator]] = {
    "block": BlockFMA, "two_stage": TwoStage, "exact": Exact, "sequential": Sequential, "pairwise": Pairwise,
    "blockwise": Blockwise, "fused": BlockScaledFMA,
}  # fmt: skip


def model_from_dict(fields: dict[str, Any]) -> Accumulator:
    """The model a dict describes (``dataclasses.asdict`` of one, as vector files hold it): its
    ``kind`` names the class, the other entries are its fields; a nested model
    (``fp16_output``) is read the same way.

    >>> model_from_dict({"kind": "sequential", "name": "loop", "acc_format": "bf16"})
    Sequential(name='loop', source='', instruction_k=None, promote=None, flush_subnormals=False, acc_format='bf16', acc_rounding='rne')
    >>> model_from_dict({"kind": "magic", "name": "m"})
    Traceback (most recent call last):
    ...
    ValueError: a model's kind is one of block, two_stage, exact, sequential, pairwise, blockwise, fused, got 'magic'
    """
    if not isinstance(fields, dict):
        raise TypeError(f"a model is read from a dict of its fields, got {type(fields).__name__}")
    fields = dict(fields)
    kind = fields.pop("kind", None)
    if kind not in KINDS:
        raise ValueError(f"a model's kind is one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(fields.get("fp16_output"), dict):
        fields["fp16_output"] = model_from_dict(fields["fp16_output"])
    return KINDS[kind](**fields)
