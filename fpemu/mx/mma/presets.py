"""The named block-scaled accumulation models, as data.

Blackwell's block-scaled MMA comes in instruction kinds (PTX ISA, ``tcgen05.mma``), each
taking some element formats, (scale format, block size) pairs and a number of products per
instruction. A preset gives, per kind, the fields of a
:class:`~fpemu.mx.mma.model.BlockScaledAccumulator`, with their source. Nothing here
computes: ``lookup`` turns a name and the operands' formats into a model.
"""

from __future__ import annotations

_MMASIM = ("MMA-Sim (arXiv 2511.10909; simulator/nv_ptx.py tcgen05mma_block_scale, arithmetic.py "
           "nv_fused_dot_add and nv_fused_dot_add_with_block_scale)")
_DUMPS = ("B200 dense FP8 dumps (hwdata b200_e4m3, b200_e5m2: round to nearest, >= 30/31 kept bits), "
          "the same datapath assumed with the scales' exponents added; sub-blocks of 16 as MMA-Sim")

#: Element formats of kind::mxf8f6f4 (FP8, FP6, FP4, mixed freely).
_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")

#: Blackwell's block-scaled MMA kinds: element formats, (scale format, block size) pairs,
#: whether A and B may differ, products per instruction (PTX ISA tcgen05.mma; MMA-Sim's
#: isa/nv_ptx/nv_tcgen05mma.py encodes the same). The first kind that takes the operands is
#: the default: MXFP4 x MXFP4 runs as mxf4nvf4 unless ``instruction="mxf8f6f4"``.
INSTRUCTIONS: dict[str, dict] = {
    "mxf4nvf4": {"takes": ("e2m1",), "scales": (("e8m0", 32), ("e8m0", 16), ("ue4m3", 16)), "mixed": False, "k": 64},
    "mxf8f6f4": {"takes": _F8F6F4, "scales": (("e8m0", 32),), "mixed": True, "k": 32},
}

#: Preset -> kind -> the model's fields (instruction_k comes from the kind).
PRESETS: dict[str, dict[str, dict]] = {
    # MMA-Sim as published: 35 (mxf4nvf4) or 25 (mxf8f6f4) kept bits, truncation, a zero counts
    # as 2**-126, an overflow is Inf even under RZ. FP6/FP4 in mxf8f6f4 (MMA-Sim crashes or
    # refuses them) are its rules applied to those formats: fpemu's extension.
    "mmasim-blackwell": {
        "mxf4nvf4": dict(sub_block=16, term_exponent="scale", frac_bits=35, out_rounding="rz", zero_exponent=-126,
                         overflow="inf", source=_MMASIM),
        "mxf8f6f4": dict(frac_bits=25, out_rounding="rz", zero_exponent=-126, overflow="inf",
                         source=_MMASIM + "; FP6/FP4 operands: its rules, fpemu's extension"),
    },
    # What the hardware evidence supports: the dense b200 model (48 kept bits, RNE; any F >= 31
    # reproduces the dumps) with the scales' exponents added to the terms'. Assumed: no dump of
    # a block-scaled instruction exists; mxf4nvf4 keeps MMA-Sim's sub-blocks of 16.
    "blackwell": {
        "mxf4nvf4": dict(sub_block=16, term_exponent="scale", frac_bits=48, out_rounding="rne", source=_DUMPS),
        "mxf8f6f4": dict(frac_bits=48, out_rounding="rne", source=_DUMPS),
    },
}

#: Names -> preset (GPU names and architecture names).
NAMES = {"b200": "blackwell", "blackwell": "blackwell", "mmasim-blackwell": "mmasim-blackwell"}

#: The exact model: today's (issue 8) fpemu.mx.matmul, the default.
EXACT = dict(kind="blockwise", alpha="decode",
             source="OCP MX v1.0 Dot/DotGeneral: each block exact, rounded once to fp32, fp32 sums in block order")
