"""The named accumulation models, as data: GPU architectures, GPU names, IEEE loops.

Each architecture maps an input family (``_FAMILY``) to the fields of an
:class:`~fpemu.accumulator.model.Accumulator`, with the source of the figures. Adding a GPU
is adding rows here: its name in ``_GPUS``; for a new architecture, its parameters per input
family in ``_ARCH`` and the input formats its matrix unit takes in ``_SUPPORTS``. Nothing here
computes: ``lookup`` turns a name and the input formats into an Accumulator.
"""

from __future__ import annotations

_FAMILY = {  # input format -> the parameter family a GPU table is keyed by
    "fp16": "fp16",
    "bf16": "fp16",
    "tf32": "tf32",
    "fp32": "fp32",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "e4m3fnuz": "fp8fnuz",
    "e5m2fnuz": "fp8fnuz",
}


_FH = "Fasi, Higham, Mikaitis, Pranesh 2021 (PeerJ CS 7:e330)"
_KM = "Khattak and Mikaitis 2025 (tensor-core models, hwdata dumps)"
_MMA = "MMA-Sim 2025"


def _nv(block: int, frac_bits: int, out_frac_bits: int = 23, source: str = _KM) -> dict:
    return dict(kind="block", block=block, frac_bits=frac_bits, out_frac_bits=out_frac_bits, source=source)


# Architecture -> input family -> parameters (SPEC section 5 table). Nothing here is fitted to
# a dump: the dumps are the test.
_ARCH: dict[str, dict[str, dict]] = {
    "volta": {"fp16": _nv(4, 23, source=_FH)},
    "turing": {"fp16": _nv(8, 24, source=_FH)},
    "ampere": {"fp16": _nv(8, 24, source=_FH), "tf32": _nv(4, 24, source=_FH)},
    "ada": {"fp16": _nv(8, 24), "tf32": _nv(4, 24), "fp8": _nv(16, 13, 13)},
    "hopper": {"fp16": _nv(16, 25), "tf32": _nv(8, 25), "fp8": _nv(32, 13, 13)},
    "blackwell": {
        "fp16": _nv(16, 25),
        "tf32": _nv(8, 25),
        # Open (SPEC): B200 FP8 "behaves like an (almost) exact sum then RNE". We take the
        # description literally: 32 products, F = 48 (exact for FP8 products of any practical
        # spread), RNE.
        "fp8": dict(_nv(32, 48), out_rounding="rne", source=_KM + "; open, approximate"),
    },
    "cdna2": {
        # Pairs summed in fp32 with RNE, subnormals flushed. Tree of 4 products per MFMA step
        # (4 fp16/bf16 values per lane) is our assumption; fp32 inputs one product per step.
        "fp16": dict(kind="pairwise", block=4, flush_subnormals=True, source=_MMA + "; Khattak"),
        "fp32": dict(kind="pairwise", block=1, flush_subnormals=True, source=_MMA + "; Khattak"),
    },
    "cdna3": {
        # Products aligned without c (F = 24), the product sum and c floored separately, added,
        # rounded RNE. Block sizes (4 for 16-bit, 2 for xf32, 8 for FP8) are our assumption.
        "fp16": dict(kind="block", block=4, frac_bits=24, term_rounding="rd", out_rounding="rne", late_c=True, source=_MMA),
        "tf32": dict(kind="block", block=2, frac_bits=24, term_rounding="rd", out_rounding="rne", late_c=True, source=_MMA),
        "fp8fnuz": dict(
            kind="block", block=8, frac_bits=24, term_rounding="rd", out_rounding="rne",
            late_c=True, even_odd=True, source=_MMA,
        ),
    },
}


# Input formats each architecture's matrix unit takes (the ones we have parameters for).
_SUPPORTS = {
    "volta": ("fp16",),
    "turing": ("fp16",),
    "ampere": ("fp16", "bf16", "tf32"),
    "ada": ("fp16", "bf16", "tf32", "e4m3", "e5m2"),
    "hopper": ("fp16", "bf16", "tf32", "e4m3", "e5m2"),
    "blackwell": ("fp16", "bf16", "tf32", "e4m3", "e5m2"),
    "cdna2": ("fp16", "bf16", "fp32"),
    "cdna3": ("fp16", "bf16", "tf32", "e4m3fnuz", "e5m2fnuz"),
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
    "mi210": "cdna2",
    "mi250": "cdna2",
    "mi250x": "cdna2",
    "mi300": "cdna3",
    "mi300x": "cdna3",
}


_IEEE = {
    "exact": dict(kind="exact", source="exact rational sum, one RNE rounding"),
    "fp32": dict(kind="sequential", acc_format="fp32", source="IEEE 754 loop, exact products (FMA)"),
    "fp16": dict(kind="sequential", acc_format="fp16", source="IEEE 754 loop, exact products (FMA)"),
    "bf16": dict(kind="sequential", acc_format="bf16", source="IEEE 754 loop, exact products (FMA)"),
    "pairwise_fp32": dict(kind="pairwise", block=None, acc_format="fp32", source="pairwise summation"),
}
