"""The parameters of one accumulation model (:class:`Accumulator`) and their checks.

Pure description: nothing here computes a sum. The presets (``presets``) are rows of these
fields, the kernels (``kernels``) read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

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
        late_c: CDNA3 style: the products of a block are aligned and summed without ``c``;
            that partial sum and ``c`` are then aligned (``F`` bits, ``term_rounding``), added
            and rounded.
        even_odd: CDNA3 FP8 style (with ``late_c``): even- and odd-indexed products of a block
            are aligned and summed separately, then combined with ``c``.
        flush_subnormals: inputs below their format's smallest normal are read as zero (DAZ)
            and subnormal results are flushed to zero (FTZ), as AMD CDNA2 does.
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
    late_c: bool = False
    even_odd: bool = False
    flush_subnormals: bool = False
    acc_format: str = "fp32"
    acc_rounding: OutRounding = "rne"
    promote: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
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
        for field in ("block", "promote"):
            value = getattr(self, field)
            if value is not None and not _is_int(value):
                problems.append(f"{field} must be a positive integer or None, got {value!r}")
        for field in ("late_c", "even_odd", "flush_subnormals"):
            if not isinstance(getattr(self, field), (bool, np.bool_)):
                problems.append(f"{field} must be True or False, got {getattr(self, field)!r}")
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
        if self.promote is not None and self.promote < 1:
            problems.append(f"promote must be a positive integer or None, got {self.promote!r}")
        if get_format(self.acc_format).name not in ("fp32", "fp16", "bf16"):
            problems.append(f"acc_format must be fp32, fp16 or bf16, got {self.acc_format!r}")
        return problems


def _is_int(value: object) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
