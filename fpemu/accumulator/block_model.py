"""The block-scaled accumulation models: :class:`Blockwise` (the exact OCP model) and
:class:`BlockScaledFMA` (a tensor core's instruction), both :class:`BlockScaledAccumulator`\\ s,
each with only the fields its kernel reads. Pure description: nothing here computes a sum; the
presets (:mod:`fpemu.accumulator.units`) are rows of these fields and the kernels (``fused``, and
``dot_products`` for the exact model) read them.

``BlockScaledAccumulator(name, kind, **fields)``, the one-record spelling that vector files
hold, builds the class its ``kind`` names:

>>> type(BlockScaledAccumulator("mine", "fused", instruction_k=32, frac_bits=30)).__name__
'BlockScaledFMA'
>>> BlockScaledAccumulator("bad", "fused", instruction_k=64, sub_block=16, frac_bits=35)
Traceback (most recent call last):
...
ValueError: invalid block-scaled accumulator 'bad': term_exponent 'product' needs sub_block 1
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from ..arguments import is_whole as _is_int
from ..arguments import FieldsRecord, SpelledBy, record_fields, split_record

TermExponent = Literal["product", "scale"]


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class BlockScaledAccumulator(FieldsRecord, metaclass=SpelledBy):
    """How a matrix unit adds block-scaled products (MX, NVFP4): what every model has.

    Attributes:
        name: label used in messages and docs.
        alpha: NVFP4's per-tensor scales. ``"decode"``: the result times
            ``fp32(global_scale_a * global_scale_b)`` in float32, rounded once from the
            exact product where that alpha overflows or is subnormal (fpemu's exact model).
            ``"cublaslt"``: as a cuBLASLt GEMM applies its alpha, ``fp32(alpha * acc)``, with
            alpha computed as TransformerEngine does from the tensor amaxes (see
            ``docs/mx.md``).
        source: where the parameters come from.
        kind: the class's name for its algorithm (not an argument: the class says it).
    """

    name: str
    alpha: Literal["decode", "cublaslt"] = "cublaslt"
    source: str = ""
    kind: str = field(default="", init=False, repr=False)

    @staticmethod
    def spelling(*args, **fields) -> BlockScaledAccumulator:
        """``BlockScaledAccumulator(name, kind, **fields)``: the class its ``kind`` names."""
        return _from_record(*args, **fields)

    def __post_init__(self) -> None:
        problems = self._type_problems() or self._value_problems()
        if problems:
            raise ValueError(f"invalid block-scaled accumulator {self.name!r}: " + "; ".join(problems))

    def _type_problems(self) -> list[str]:
        problems = [] if isinstance(self.name, str) else [f"name must be a string, got {self.name!r}"]
        if not self.kind:
            problems.append("BlockScaledAccumulator is what the kinds share: build Blockwise or BlockScaledFMA")
        for f, allowed in _CHOICES.items():
            if hasattr(self, f) and getattr(self, f) not in allowed:
                problems.append(f"{f} must be one of {', '.join(allowed)}, got {getattr(self, f)!r}")
        return problems

    def _value_problems(self) -> list[str]:
        return []


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class Blockwise(BlockScaledAccumulator):
    """The OCP MX Dot/DotGeneral with exact parts: each scale block's products summed
    exactly, times both scales, rounded once to fp32 (RNE), added in fp32 (RNE) to the running
    sum, which starts at ``c``, block by block."""

    kind: str = field(default="blockwise", init=False, repr=False)


@dataclass(frozen=True, repr=False, eq=False)  # (FieldsRecord's)
class BlockScaledFMA(BlockScaledAccumulator):
    """A tensor core's block-scaled MMA, one instruction of ``instruction_k`` products at a
    time: its terms and ``c`` aligned to their largest exponent with ``frac_bits`` fraction
    bits, each term cut (``term_rounding``), the cut terms added exactly, the sum rounded once
    to fp32 (``out_rounding``); that result is the ``c`` of the next instruction.

    Attributes:
        instruction_k: products per instruction (Blackwell ``tcgen05.mma``: ``kind::mxf8f6f4``
            32, ``kind::mxf4nvf4`` 64). A K that is not a multiple is zero-padded (zero codes,
            zero scale codes), as a kernel pads its tiles.
        sub_block: products summed exactly into one term before the scales multiply it (1:
            every product is a term; MMA-Sim's ``mxf4nvf4``: 16).
        term_exponent: the exponent a term is aligned with. ``"product"``: the exact
            product's own, ``e_a + e_b`` plus both scales' exponents, its significand in
            [0, 4) (needs ``sub_block`` 1). ``"scale"``: the two scales' exponents only; the
            sub-block sum is not renormalised (MMA-Sim's ``mxf4nvf4``).
        frac_bits: ``F``, fraction bits kept below the largest exponent.
        term_rounding: ``"rz"`` truncates each aligned term's magnitude, ``"rd"`` floors it.
        out_rounding: the rounding of an instruction's sum to fp32: ``"rz"`` or ``"rne"``. A
            zero result is +0.
        zero_exponent: the exponent a zero element or a zero scale counts with: the term
            (value 0) then takes part in the alignment (MMA-Sim: -126, so a zero times a huge
            scale can set it; with ``term_exponent="scale"`` a sub-block whose sum is 0 takes
            part too). None: terms of value 0 are dropped (NVIDIA's dense dumps).
        zero_c_exponent: the exponent a zero ``c`` takes part in the alignment with.
        overflow: ``"ieee"``: a sum beyond fp32 rounds as IEEE says (RZ: the largest finite
            value); ``"inf"``: it is +-Inf whatever the rounding (MMA-Sim).

    >>> BlockScaledFMA("mine", instruction_k=32, frac_bits=30).out_rounding
    'rz'
    """

    instruction_k: int | None = None
    sub_block: int = 1
    term_exponent: TermExponent = "product"
    frac_bits: int | None = None
    term_rounding: Literal["rz", "rd"] = "rz"
    out_rounding: Literal["rz", "rne"] = "rz"
    zero_exponent: int | None = None
    zero_c_exponent: int = -126
    overflow: Literal["ieee", "inf"] = "ieee"
    kind: str = field(default="fused", init=False, repr=False)

    def _type_problems(self) -> list[str]:
        problems = super()._type_problems()
        for f in ("sub_block", "zero_c_exponent"):
            if not _is_int(getattr(self, f)):
                problems.append(f"{f} must be an integer, got {getattr(self, f)!r}")
        for f in ("instruction_k", "frac_bits", "zero_exponent"):
            value = getattr(self, f)
            if value is not None and not _is_int(value):
                problems.append(f"{f} must be an integer or None, got {value!r}")
        return problems

    def _value_problems(self) -> list[str]:
        if self.instruction_k is None or self.frac_bits is None:
            return ["a fused model needs instruction_k and frac_bits"]
        problems = []
        if not 1 <= self.instruction_k <= 1 << 16:
            problems.append(f"instruction_k must be in 1..65536, got {self.instruction_k}")
        if self.sub_block < 1 or self.instruction_k % self.sub_block:
            problems.append(f"sub_block must divide instruction_k ({self.instruction_k}), got {self.sub_block}")
        if self.term_exponent == "product" and self.sub_block != 1:
            problems.append("term_exponent 'product' needs sub_block 1")
        if not 0 <= self.frac_bits <= 60:
            problems.append(f"frac_bits must be in 0..60, got {self.frac_bits}")
        if self.zero_exponent is not None and not -500 <= self.zero_exponent <= 500:
            problems.append(f"zero_exponent must be in -500..500 or None, got {self.zero_exponent}")
        if not -500 <= self.zero_c_exponent <= 500:
            problems.append(f"zero_c_exponent must be in -500..500, got {self.zero_c_exponent}")
        return problems


_CHOICES = {"term_exponent": ("product", "scale"), "term_rounding": ("rz", "rd"), "out_rounding": ("rz", "rne"),
            "overflow": ("ieee", "inf"), "alpha": ("decode", "cublaslt")}  # fmt: skip

#: The one-record spelling: its fields in order (after ``name``) and their defaults.
RECORD_DEFAULTS = dict(
    kind="fused", instruction_k=None, sub_block=1, term_exponent="product", frac_bits=None, term_rounding="rz",
    out_rounding="rz", zero_exponent=None, zero_c_exponent=-126, overflow="ieee", alpha="cublaslt", source="",
)  # fmt: skip
KINDS = {"blockwise": Blockwise, "fused": BlockScaledFMA}


def _from_record(name, *args, **fields) -> BlockScaledAccumulator:
    """The class a record's ``kind`` names, built from the fields it has; another kind's
    field is refused unless it holds the record's default."""
    fields = record_fields("BlockScaledAccumulator", RECORD_DEFAULTS, args, fields)
    kind = fields.pop("kind", "fused")
    if kind not in KINDS:
        raise ValueError(f"invalid block-scaled accumulator {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    own, foreign = split_record({f.name for f in dataclasses.fields(KINDS[kind]) if f.init}, RECORD_DEFAULTS, fields)
    if foreign:
        why = "; ".join(f"{f} applies to fused models only" for f in foreign)
        raise ValueError(f"invalid block-scaled accumulator {name!r}: {why}")
    return KINDS[kind](name, **own)
