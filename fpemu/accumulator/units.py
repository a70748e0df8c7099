"""The matrix units fpemu models, as data: ONE table from architecture to instruction family to
the operand formats it takes, its scales (block-scaled families), its instructions, and the
parameters of its accumulation model, with the source of the figures.

Dense families give the fields of an :class:`fpemu.Accumulator`; block-scaled ones (those
with ``"scales"``) the fields of a :class:`fpemu.accumulator.BlockScaledAccumulator`. The first
family that takes an input format is the default for it; ``instruction=`` (a family's name,
or one of its instructions' names) picks another. Adding a GPU is adding its name to
:data:`GPUS`; a new architecture is new rows in :data:`ARCHITECTURES`. Nothing here computes:
``fpemu.accumulator.lookup`` turns a name and the operands'
formats into a model. Blackwell's block-scaled families refer to the dense kind::f8f6f4
numbers rather than repeat them:

>>> blackwell = ARCHITECTURES["blackwell"]
>>> blackwell["mxf8f6f4"]["params"]["frac_bits"] == blackwell["f8f6f4"]["params"]["frac_bits"] == 48
True
>>> instruction_k("v_mfma_f32_16x16x8bf16"), family_of("cdna2", "f32_16x16x8bf16")
(8, 'bf16')
"""

from __future__ import annotations

import re

_FH = "Fasi, Higham, Mikaitis, Pranesh 2021 (PeerJ CS 7:e330)"
_KM = "Khattak and Mikaitis 2025 (tensor-core models, hwdata dumps)"
_MMA = "MMA-Sim 2025 (simulator/amd.py, arithmetic.py; no AMD dump checked here)"
_MMASIM_NV = ("MMA-Sim (arXiv 2511.10909; simulator/nv_ptx.py tcgen05mma_block_scale, arithmetic.py "
              "nv_fused_dot_add and nv_fused_dot_add_with_block_scale)")
_DUMPS = ("B200 dense FP8 dumps (hwdata b200_e4m3, b200_e5m2: round to nearest, >= 30/31 kept bits), "
          "the same datapath assumed with the scales' exponents added; sub-blocks of 16 as MMA-Sim")

_NV_FP8 = ("e4m3", "e5m2")
# Blackwell kind::f8f6f4 (dense) and kind::mxf8f6f4 (block-scaled): FP8, FP6 and FP4, mixed freely.
_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")


def _family(takes: tuple[str, ...], mixed: bool = False, instructions: tuple[str, ...] = (), **params) -> dict:
    """One dense instruction family: the input formats it takes, whether A and B may differ,
    its instructions (names carrying their shape MxNxK), and the Accumulator fields."""
    return {"takes": takes, "mixed": mixed, "instructions": instructions, "params": params}


def _block_scaled(takes: tuple[str, ...], scales: tuple[tuple[str, int], ...], k: int, mixed: bool = False,
                  **params) -> dict:  # fmt: skip
    """One block-scaled instruction kind: element formats, (scale format, block size) pairs,
    products per instruction (``k``) and the BlockScaledAccumulator fields."""
    return {"takes": takes, "mixed": mixed, "scales": scales, "k": k, "instructions": (), "params": dict(kind="fused", **params)}


def _nv(block: int, frac_bits: int, out_frac_bits: int = 23, source: str = _KM) -> dict:
    return dict(kind="block", block=block, frac_bits=frac_bits, out_frac_bits=out_frac_bits, source=source)


# Hopper and Blackwell FP8 writing fp16: not the fp32 path rounded, but (found on the dumps,
# issue 18, docs/fp8-fp16-output.md) two blocks of 16 products taken k mod 4 in {0, 1} first,
# each rounded to fp16 (RNE), from a zero accumulator; c added after them, rounded once (RNE).
# Assumed: an instruction's result is the next one's c (the dumps are single instructions).
_FP8_FP16 = dict(kind="block", block=16, frac_bits=25, instruction_k=32, lane_order="bit1", c_after=True,
                 source="research/fp8_fp16 (python -m research.fp8_fp16 fit) on the h100/b200 FP8 fp16 dumps (5000/5000 each); "
                        "chaining over instructions assumed")  # fmt: skip

# Blackwell kind::f8f6f4. The B200 FP8 dumps: an (almost) exact sum of the 32 products, then RNE
# (F = 48 keeps every FP8 product of a block exactly). MMA-Sim keeps 25 bits and truncates; the
# dumps side with this model (docs/accumulator.md). FP6/FP4 operands go through the same
# instruction: the same model is our assumption (no dump has them).
_B200_F8F6F4 = dict(_nv(32, 48), out_rounding="rne", source=_KM + "; FP6/FP4 assumed")
# The block-scaled kinds: the same datapath with the scales' exponents added to the terms'
# (assumed: no dump of a block-scaled instruction exists).
_B200_FUSED = dict(frac_bits=_B200_F8F6F4["frac_bits"], out_rounding=_B200_F8F6F4["out_rounding"], source=_DUMPS)
# kind::mxf4nvf4: MXFP4 in blocks of 32 or 16, NVFP4 (UE4M3 scales, blocks of 16), 64 products.
_MXF4NVF4 = dict(takes=("e2m1",), scales=(("e8m0", 32), ("e8m0", 16), ("ue4m3", 16)), k=64)
_MXF8F6F4 = dict(takes=_F8F6F4, scales=(("e8m0", 32),), k=32, mixed=True)
# MMA-Sim's block-scaled rules (tcgen05 on Blackwell, mma.block_scale on RTX Blackwell alike):
# truncation, a zero counts as 2**-126, an overflow is Inf even under RZ; 35 kept bits with
# sub-blocks of 16 (mxf4nvf4), 25 (mxf8f6f4).
_MMASIM_BLOCK = dict(out_rounding="rz", zero_exponent=-126, overflow="inf")
_MMASIM_MXF4NVF4 = dict(sub_block=16, term_exponent="scale", frac_bits=35, **_MMASIM_BLOCK)
_MMASIM_MXF8F6F4 = dict(frac_bits=25, **_MMASIM_BLOCK)

# RTX Blackwell (sm_120: RTX 5090, RTX PRO 6000), as MMA-Sim models it (no dump here). Its mma
# instructions (isa/nv_ptx/nv_mma.py lines 60-82 and 111-114: sm_120a's f8f6f4 plus Ada's FP8,
# Ampere's and Turing's; f64 is out of fpemu's scope) all run nv_fused_dot_add with 25 kept
# bits (simulator/nv_ptx.py line 24) over the whole instruction: no split-k (lines 36-49 split
# only on Ampere and Ada), so a family is one instruction's K. The result: fp32 RZ or fp16 RNE
# (arithmetic.py nv_fused_dot_add); a zero operand counts as exponent -126 plus its partner's
# (arithmetic.py extract_significand_exponent). mma.block_scale (nv_mma.py lines 83-100, 116-118;
# nv_ptx.py lines 100-144): 25 (k = 32) or 35 (k = 64) kept bits, as MMA-Sim's tcgen05.
_MMASIM_RTX = ("MMA-Sim (arXiv 2511.10909): isa/nv_ptx/nv_mma.py RTX Blackwell qualifiers, simulator/nv_ptx.py mma "
               "(F = 25, no split-k), arithmetic.py nv_fused_dot_add; model, no dump")  # fmt: skip
_MMASIM_RTX_BLOCK = ("MMA-Sim (arXiv 2511.10909): isa/nv_ptx/nv_mma.py RTX Blackwell block-scale qualifiers, "
                     "simulator/nv_ptx.py mma_block_scale, arithmetic.py; model, no dump")  # fmt: skip


def _rtx(block: int, instructions: tuple[str, ...], source: str = _MMASIM_RTX) -> dict:
    return dict(instructions=instructions, **_nv(block, 25, source=source), zero_exponent=-126)


def _mma(shape: str, pairs: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """PTX mma qualifiers ``shape.d.a.b.c`` of these operand pairs, fp32 and fp16 output (FP8,
    FP6, FP4) as MMA-Sim spells them."""
    return tuple(f"{shape}.{d}.{a}.{b}.{d}" for d in ("f32", "f16") for a, b in pairs)


_RTX_FP8 = tuple((a, b) for a in ("e5m2", "e4m3") for b in ("e5m2", "e4m3"))
_RTX_F8F6F4 = tuple((a, b) for a in ("e5m2", "e4m3", "e2m1") for b in ("e5m2", "e4m3", "e2m1"))


# AMD, as MMA-Sim models it. fp32 instructions: an FMA chain (no flushing, even on CDNA2).
_AMD_FMA = dict(kind="sequential", acc_format="fp32", source=_MMA)


def _amd_tree(group: int, flush: bool) -> dict:
    """CDNA1/2 fp16/bf16: products rounded to fp32 (fmaf(a, b, +0)), a pairwise fp32 tree per
    group, its value added to the accumulator; CDNA2 flushes subnormals."""
    return dict(kind="pairwise", block=group, round_products=True, flush_subnormals=flush, source=_MMA)


def _amd_fused(group: int, fp8: bool = False) -> dict:
    """CDNA3: each product truncated to 24 fraction bits below the largest product exponent
    (a zero operand counts as 2**-126); FP8: even and odd lanes apart, each floored to 24 bits
    below the larger lane exponent. Then M = max(that exponent, c's): the product sum floored
    to 31 fraction bits below M, c to 24 (FP8: dropped more than 25 binades below M), added,
    rounded RNE to fp32 (an underflow keeps its sign). A product >= 2**128 is Inf."""
    lanes = dict(even_odd=True, lane_frac_bits=24, c_window=25) if fp8 else {}
    return dict(
        kind="two_stage", block=group, frac_bits=24, term_rounding="rz", sum_frac_bits=31,
        c_frac_bits=24, late_rounding="rd", out_rounding="rne", zero_exponent=-126, product_overflow=True,
        signed_underflow=True, source=_MMA, **lanes,
    )  # fmt: skip


# The MFMA instructions of each AMD family (AMD's CDNA1/2/3 ISA guides; MMA-Sim's isa/amd.py
# lists the same): the name without its "v_mfma_" prefix, whose MxNxK says k.
_CDNA_F32 = ("f32_32x32x2f32", "f32_32x32x1f32", "f32_16x16x4f32", "f32_16x16x1f32", "f32_4x4x1f32")
_CDNA_F16 = ("f32_32x32x8f16", "f32_32x32x4f16", "f32_16x16x16f16", "f32_16x16x4f16", "f32_4x4x4f16")
_CDNA_BF16 = ("f32_32x32x4bf16", "f32_32x32x2bf16", "f32_16x16x8bf16", "f32_16x16x2bf16", "f32_4x4x2bf16")
_CDNA2_BF16_1K = ("f32_32x32x8bf16_1k", "f32_32x32x4bf16_1k", "f32_16x16x16bf16_1k", "f32_16x16x4bf16_1k",
                  "f32_4x4x4bf16_1k")  # fmt: skip
_CDNA3_FP8 = tuple(f"f32_{s}_{a}_{b}" for s in ("16x16x32", "32x32x16") for a in ("fp8", "bf8") for b in ("fp8", "bf8"))

#: Architecture -> instruction family -> what it takes and its model (SPEC section 5 for
#: NVIDIA; MMA-Sim for AMD). Nothing here is fitted to a dump: the dumps are the test.
ARCHITECTURES: dict[str, dict[str, dict]] = {
    "volta": {"f16": _family(("fp16",), **_nv(4, 23, source=_FH))},
    "turing": {"f16": _family(("fp16",), **_nv(8, 24, source=_FH))},
    "ampere": {
        "f16": _family(("fp16", "bf16"), **_nv(8, 24, source=_FH)),
        "tf32": _family(("tf32",), **_nv(4, 24, source=_FH)),
    },
    "ada": {
        "f16": _family(("fp16", "bf16"), **_nv(8, 24)),
        "tf32": _family(("tf32",), **_nv(4, 24)),
        "fp8": _family(_NV_FP8, mixed=True, **_nv(16, 13, 13)),
    },
    "hopper": {
        "f16": _family(("fp16", "bf16"), **_nv(16, 25)),
        "tf32": _family(("tf32",), **_nv(8, 25)),
        "fp8": _family(_NV_FP8, mixed=True, **_nv(32, 13, 13), fp16_output=_FP8_FP16),
    },
    "blackwell": {
        "f16": _family(("fp16", "bf16"), **_nv(16, 25)),
        "tf32": _family(("tf32",), **_nv(8, 25)),
        "f8f6f4": _family(_F8F6F4, mixed=True, **_B200_F8F6F4,
                          fp16_output=dict(_FP8_FP16, source=_FP8_FP16["source"] + "; FP6/FP4 assumed")),
        # Block-scaled MMA (PTX ISA tcgen05.mma; MMA-Sim's isa/nv_ptx/nv_tcgen05mma.py encodes
        # the same). The first kind that takes the operands is the default: MXFP4 x MXFP4 runs
        # as mxf4nvf4 unless instruction="mxf8f6f4". mxf4nvf4 keeps MMA-Sim's sub-blocks of 16.
        "mxf4nvf4": _block_scaled(**_MXF4NVF4, sub_block=16, term_exponent="scale", **_B200_FUSED),
        "mxf8f6f4": _block_scaled(**_MXF8F6F4, **_B200_FUSED),
    },
    # RTX Blackwell (sm_120), MMA-Sim's model (above). The k = 16 and k = 8 (tf32: 4)
    # instructions fuse fewer products: families of their own. FP6 (MMA-Sim: TODO) and FP4
    # (it crashes on e2m1) are its rules applied to those formats.
    "rtx-blackwell": {
        "f16": _family(("fp16", "bf16"), **_rtx(16, ("m16n8k16.f32.f16.f16.f32", "m16n8k16.f16.f16.f16.f16",
                                                     "m16n8k16.f32.bf16.bf16.f32"))),
        "f16_k8": _family(("fp16", "bf16"), **_rtx(8, ("m16n8k8.f32.f16.f16.f32", "m16n8k8.f16.f16.f16.f16",
                                                       "m16n8k8.f32.bf16.bf16.f32"))),
        "tf32": _family(("tf32",), **_rtx(8, ("m16n8k8.f32.tf32.tf32.f32",))),
        "tf32_k4": _family(("tf32",), **_rtx(4, ("m16n8k4.f32.tf32.tf32.f32",))),
        "f8f6f4": _family(_F8F6F4, mixed=True, **_rtx(32, _mma("m16n8k32", _RTX_F8F6F4),
                                                      source=_MMASIM_RTX + "; FP6/FP4 operands: its rules, fpemu's extension")),
        "fp8_k16": _family(_NV_FP8, mixed=True, **_rtx(16, _mma("m16n8k16", _RTX_FP8))),
        # mma.block_scale: MMA-Sim's sm_120a list adds UE4M3 scales in blocks of 32 (nv_mma.py line 98).
        "mxf4nvf4": _block_scaled(**dict(_MXF4NVF4, scales=_MXF4NVF4["scales"] + (("ue4m3", 32),)), **_MMASIM_MXF4NVF4,
                                  source=_MMASIM_RTX_BLOCK),
        "mxf8f6f4": _block_scaled(**_MXF8F6F4, **_MMASIM_MXF8F6F4,
                                  source=_MMASIM_RTX_BLOCK + "; FP6/FP4 operands: its rules, fpemu's extension"),
    },
    # MMA-Sim's published Blackwell block-scaled model: 35 (mxf4nvf4) or 25 (mxf8f6f4) kept
    # bits, truncation, a zero counts as 2**-126, an overflow is Inf even under RZ. FP6/FP4 in
    # mxf8f6f4 (MMA-Sim crashes or refuses them) are its rules applied to those formats.
    "mmasim-blackwell": {
        "mxf4nvf4": _block_scaled(**_MXF4NVF4, **_MMASIM_MXF4NVF4, source=_MMASIM_NV),
        "mxf8f6f4": _block_scaled(**_MXF8F6F4, **_MMASIM_MXF8F6F4,
                                  source=_MMASIM_NV + "; FP6/FP4 operands: its rules, fpemu's extension"),
    },
    "cdna1": {
        "f32": _family(("fp32",), instructions=_CDNA_F32, **_AMD_FMA),
        "f16": _family(("fp16",), instructions=_CDNA_F16, **_amd_tree(4, flush=False)),
        "bf16": _family(("bf16",), instructions=_CDNA_BF16, **_amd_tree(2, flush=False)),
    },
    "cdna2": {
        "f32": _family(("fp32",), instructions=_CDNA_F32, **_AMD_FMA),
        "f16": _family(("fp16",), instructions=_CDNA_F16, **_amd_tree(4, flush=True)),
        "bf16_1k": _family(("bf16",), instructions=_CDNA2_BF16_1K, **_amd_tree(4, flush=True)),  # default for bf16
        "bf16": _family(("bf16",), instructions=_CDNA_BF16, **_amd_tree(2, flush=True)),  # CDNA1's instructions
    },
    "cdna3": {
        "f32": _family(("fp32",), instructions=("f32_32x32x1_2b_f32", "f32_16x16x1_4b_f32", "f32_4x4x1_16b_f32",
                                                "f32_32x32x2_f32", "f32_16x16x4_f32"), **_AMD_FMA),
        "xf32": _family(("tf32",), instructions=("f32_16x16x8_xf32", "f32_32x32x4_xf32"), **_amd_fused(4)),
        "f16": _family(("fp16",), instructions=("f32_32x32x8_f16", "f32_16x16x16_f16"), **_amd_fused(8)),
        "bf16": _family(("bf16",), instructions=("f32_32x32x8_bf16", "f32_16x16x16_bf16"), **_amd_fused(8)),
        "f16_k4": _family(("fp16",), instructions=("f32_32x32x4_2b_f16", "f32_16x16x4_4b_f16", "f32_4x4x4_16b_f16"),
                          **_amd_fused(4)),
        "bf16_k4": _family(("bf16",), instructions=("f32_32x32x4_2b_bf16", "f32_16x16x4_4b_bf16",
                                                    "f32_4x4x4_16b_bf16"), **_amd_fused(4)),
        "fp8": _family(("e4m3fnuz", "e5m2fnuz"), mixed=True, instructions=_CDNA3_FP8, **_amd_fused(16, fp8=True)),
    },
}  # fmt: skip

#: GPU names -> architecture.
GPUS = {
    "v100": "volta", "t4": "turing", "a100": "ampere", "a30": "ampere", "a2": "ampere",
    "l40s": "ada", "rtx4090": "ada", "h100": "hopper", "h200": "hopper", "h800": "hopper",
    "b200": "blackwell", "rtx5090": "rtx-blackwell", "rtx5080": "rtx-blackwell", "rtxpro6000": "rtx-blackwell",
    "mi100": "cdna1", "mi210": "cdna2", "mi250": "cdna2", "mi250x": "cdna2",
    "mi300": "cdna3", "mi300a": "cdna3", "mi300x": "cdna3", "mi325x": "cdna3",
}  # fmt: skip

#: The IEEE loops and the exact sum: dense models of no GPU.
IEEE = {
    "exact": dict(kind="exact", source="exact rational sum, one RNE rounding"),
    "fp32": dict(kind="sequential", acc_format="fp32", source="IEEE 754 loop, exact products (FMA)"),
    "fp16": dict(kind="sequential", acc_format="fp16", source="IEEE 754 loop, exact products (FMA)"),
    "bf16": dict(kind="sequential", acc_format="bf16", source="IEEE 754 loop, exact products (FMA)"),
    "pairwise_fp32": dict(kind="pairwise", block=None, acc_format="fp32", source="pairwise summation"),
}

#: The exact block-scaled model, the default of fpemu.gemm for block arrays.
BLOCK_EXACT = dict(kind="blockwise", alpha="decode",
                   source="OCP MX v1.0 Dot/DotGeneral: each block exact, rounded once to fp32, fp32 sums in block order")


def is_block_scaled(family: dict) -> bool:
    """Whether a family is a block-scaled MMA kind (it lists scales).

    >>> is_block_scaled(ARCHITECTURES["blackwell"]["mxf8f6f4"]), is_block_scaled(ARCHITECTURES["blackwell"]["f8f6f4"])
    (True, False)
    """
    return "scales" in family


def families(arch: str, block_scaled: bool) -> dict[str, dict]:
    """An architecture's dense (or block-scaled) families, in table order."""
    return {name: fam for name, fam in ARCHITECTURES[arch].items() if is_block_scaled(fam) == block_scaled}


def _bare(name: str) -> str:
    return name.strip().lower().removeprefix("v_mfma_")


def instruction_k(name: str) -> int:
    """The products per instruction that an instruction's name says (its MxNxK's K).

    >>> instruction_k("f32_32x32x4_2b_bf16"), instruction_k("v_mfma_f32_16x16x32_fp8_bf8")
    (4, 32)
    >>> instruction_k("m16n8k16.f32.bf16.bf16.f32")  # a PTX mma qualifier
    16
    """
    shape = re.search(r"(\d+)x(\d+)x(\d+)", name) or re.search(r"m(\d+)n(\d+)k(\d+)", name)
    if shape is None:
        raise ValueError(f"instruction {name!r} has no MxNxK shape in its name")
    return int(shape.group(3))


def family_of(arch: str, instruction: str) -> str | None:
    """The family of ``arch`` that ``instruction`` names: a family's own name, or the name of
    one of its instructions (with or without ``v_mfma_``); None if neither."""
    key = _bare(instruction)
    if key in ARCHITECTURES[arch]:
        return key
    return next((f for f, fam in ARCHITECTURES[arch].items() if key in fam["instructions"]), None)


def is_instruction(arch: str, instruction: str) -> bool:
    """Whether ``instruction`` names one instruction (not a whole family) of ``arch``."""
    key = _bare(instruction)
    return key not in ARCHITECTURES[arch] and family_of(arch, key) is not None
