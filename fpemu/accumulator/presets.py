"""The named accumulation models, as data: GPU architectures, their instruction families, GPU
names, IEEE loops.

Each architecture lists its matrix unit's instruction families: the input formats a family
takes, whether A and B may differ, and the fields of an
:class:`~fpemu.accumulator.model.Accumulator`, with the source of the figures. The first
family that takes an input format is the default for it; another is picked by name
(``get_accumulator("mi250", "bf16", instruction="bf16")`` or ``"mi250/bf16"``). Adding a GPU
is adding rows here: its name in ``_GPUS``; for a new architecture, its families in ``_ARCH``.
Nothing here computes: ``lookup`` turns a name and the input formats into an Accumulator.
"""

from __future__ import annotations

_FH = "Fasi, Higham, Mikaitis, Pranesh 2021 (PeerJ CS 7:e330)"
_KM = "Khattak and Mikaitis 2025 (tensor-core models, hwdata dumps)"
_MMA = "MMA-Sim 2025 (simulator/amd.py, arithmetic.py; no AMD dump checked here)"

_NV_FP8 = ("e4m3", "e5m2")
# Blackwell kind::f8f6f4: FP8, FP6 and FP4 operands, mixed freely.
_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")


def _family(takes: tuple[str, ...], mixed: bool = False, **params) -> dict:
    """One instruction family: the input formats it takes, whether A and B may differ, and
    the Accumulator fields of its model."""
    return {"takes": takes, "mixed": mixed, "params": params}


def _nv(block: int, frac_bits: int, out_frac_bits: int = 23, source: str = _KM) -> dict:
    return dict(kind="block", block=block, frac_bits=frac_bits, out_frac_bits=out_frac_bits, source=source)


# Hopper and Blackwell FP8 writing fp16: not the fp32 path rounded, but (found on the dumps,
# issue 18, docs/fp8-fp16-output.md) two blocks of 16 products taken k mod 4 in {0, 1} first,
# each rounded to fp16 (RNE), from a zero accumulator; c added after them, rounded once (RNE).
# Assumed: an instruction's result is the next one's c (the dumps are single instructions).
_FP8_FP16 = dict(kind="block", block=16, frac_bits=25, instruction_k=32, lane_order="bit1", c_after=True,
                 source="fpemu fit --space fp8-fp16 on the h100/b200 FP8 fp16 dumps (5000/5000 each); "
                        "chaining over instructions assumed")  # fmt: skip


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
        kind="block", block=group, frac_bits=24, term_rounding="rz", late_c=True, sum_frac_bits=31,
        c_frac_bits=24, late_rounding="rd", out_rounding="rne", zero_exponent=-126, product_overflow=True,
        signed_underflow=True, source=_MMA, **lanes,
    )  # fmt: skip


# Architecture -> instruction family -> model (SPEC section 5 for NVIDIA; MMA-Sim for AMD).
# Nothing here is fitted to a dump: the dumps are the test.
_ARCH: dict[str, dict[str, dict]] = {
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
        # kind::f8f6f4. The B200 FP8 dumps: an (almost) exact sum of the 32 products, then RNE
        # (F = 48 keeps every FP8 product of a block exactly). MMA-Sim keeps 25 bits and
        # truncates; the dumps side with this model (docs/accumulator.md). FP6/FP4 operands go
        # through the same instruction: the same model is our assumption (no dump has them).
        "f8f6f4": _family(_F8F6F4, mixed=True, **dict(_nv(32, 48), out_rounding="rne", source=_KM + "; FP6/FP4 assumed"),
                          fp16_output=dict(_FP8_FP16, source=_FP8_FP16["source"] + "; FP6/FP4 assumed")),
    },
    "cdna1": {
        "f32": _family(("fp32",), **_AMD_FMA),
        "f16": _family(("fp16",), **_amd_tree(4, flush=False)),
        "bf16": _family(("bf16",), **_amd_tree(2, flush=False)),
    },
    "cdna2": {
        "f32": _family(("fp32",), **_AMD_FMA),
        "f16": _family(("fp16",), **_amd_tree(4, flush=True)),
        "bf16_1k": _family(("bf16",), **_amd_tree(4, flush=True)),  # the default for bf16
        "bf16": _family(("bf16",), **_amd_tree(2, flush=True)),  # the CDNA1 instructions
    },
    "cdna3": {
        "f32": _family(("fp32",), **_AMD_FMA),
        "xf32": _family(("tf32",), **_amd_fused(4)),
        "f16": _family(("fp16",), **_amd_fused(8)),  # k = 8 and 16 instructions
        "bf16": _family(("bf16",), **_amd_fused(8)),
        "f16_k4": _family(("fp16",), **_amd_fused(4)),  # 32x32x4_2b, 16x16x4_4b, 4x4x4_16b
        "bf16_k4": _family(("bf16",), **_amd_fused(4)),
        "fp8": _family(("e4m3fnuz", "e5m2fnuz"), mixed=True, **_amd_fused(16, fp8=True)),
    },
}


_GPUS = {
    "v100": "volta",
    "t4": "turing",
    "a100": "ampere",
    "a30": "ampere",
    "a2": "ampere",
    "l40s": "ada",
    "rtx4090": "ada",
    "h100": "hopper",
    "h200": "hopper",
    "h800": "hopper",
    "b200": "blackwell",
    "mi100": "cdna1",
    "mi210": "cdna2",
    "mi250": "cdna2",
    "mi250x": "cdna2",
    "mi300": "cdna3",
    "mi300a": "cdna3",
    "mi300x": "cdna3",
    "mi325x": "cdna3",
}


_IEEE = {
    "exact": dict(kind="exact", source="exact rational sum, one RNE rounding"),
    "fp32": dict(kind="sequential", acc_format="fp32", source="IEEE 754 loop, exact products (FMA)"),
    "fp16": dict(kind="sequential", acc_format="fp16", source="IEEE 754 loop, exact products (FMA)"),
    "bf16": dict(kind="sequential", acc_format="bf16", source="IEEE 754 loop, exact products (FMA)"),
    "pairwise_fp32": dict(kind="pairwise", block=None, acc_format="fp32", source="pairwise summation"),
}
