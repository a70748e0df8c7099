"""The block formats: :class:`BlockFormat` and the registry of MX and NVFP4 formats (data).

Each block format pairs an element format and a scale format of :mod:`fpemu.formats` with a
default block size; :func:`get_block_format` looks one up by name or alias. The scale format
says which rule computes the scales: E8M0 (a power of two) the MX rule, any other (UE4M3,
UE5M3) NVFP4's ``amax / 6``; ``tensor_scale`` says whether an FP32 per-tensor scale sits on
top (NVFP4's second level).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arguments import option_name, unknown_name
from ..formats import Format, get_format


# ---- the formats ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockFormat:
    """One block format: its element type, scale type and default block size.

    Attributes:
        name: canonical name (``mxfp8_e4m3`` ...).
        element: the element :class:`~fpemu.formats.Format` (MXINT8: ``int8``, two's
            complement with an implicit 2**-6: OCP MX v1.0, SPEC.md section 3).
        scale: the scale format (``e8m0`` for MX, ``ue4m3`` for NVFP4, ``float8_e5m3fnu``
            for ``nvfp4_ue5m3``).
        block_size: default number of elements per block.
        emax: exponent of the element format's largest power of two (OCP ``emax_elem``).
        max_value: the largest element magnitude.
        mantissa_bits: element precision in fraction bits below the leading bit of the top
            binade (INT8: 6, as 127/64 = 1.111111b; its Format has 7 bits, sign excluded).
        bits: element width in bits (how densely :meth:`BlockArray.pack` stores it).
        tensor_scale: whether an FP32 per-tensor scale (from the tensor amax) sits on top of
            the block scales: NVFP4's two-level scaling; ``nvfp4_ue5m3`` has none.

    >>> get_block_format("MXFP4").element.name, get_block_format("mxfp4").emax
    ('e2m1', 2)
    >>> [(f.scale_label, f.tensor_scale) for f in map(get_block_format, ("mxfp4", "nvfp4", "nvfp4_ue5m3"))]
    [('E8M0', False), ('UE4M3', True), ('UE5M3', False)]
    """

    name: str
    element: Format
    scale: Format
    block_size: int
    emax: int
    max_value: float
    mantissa_bits: int
    bits: int
    tensor_scale: bool = False

    @property
    def is_nvfp4(self) -> bool:
        """NVFP4's scale rule: block scales ``amax / 6`` in a scale format with mantissa bits
        (UE4M3, UE5M3), not MX's powers of two."""
        return self.scale.mantissa_bits > 0

    @property
    def scale_label(self) -> str:
        """The scale format as the literature writes it: E8M0, UE4M3, UE5M3."""
        s = self.scale
        return f"{'UE' if s.mantissa_bits else 'E'}{s.exponent_bits}M{s.mantissa_bits}"

    @property
    def is_int(self) -> bool:
        """Integer (two's complement fixed-point) elements: MXINT8."""
        return self.element.twos_complement

    @property
    def int_shift(self) -> int:
        """k such that every element value is an integer multiple of 2**-k (INT8: 6)."""
        return self.element.mantissa_bits - self.element.emin


def _block_formats() -> dict[str, BlockFormat]:
    e8m0, ue4m3, ue5m3 = get_format("e8m0"), get_format("ue4m3"), get_format("ue5m3")
    table: dict[str, BlockFormat] = {}
    for name, elem in [
        ("mxfp8_e4m3", "e4m3"),
        ("mxfp8_e5m2", "e5m2"),
        ("mxfp6_e3m2", "e3m2"),
        ("mxfp6_e2m3", "e2m3"),
        ("mxfp4", "e2m1"),
    ]:
        f = get_format(elem)
        table[name] = BlockFormat(name, f, e8m0, 32, f.emax, f.max, f.mantissa_bits, f.bits)
    f = get_format("int8")  # its 7 bits below the sign hold at most 1.111111b: 6 fraction bits
    table["mxint8"] = BlockFormat("mxint8", f, e8m0, 32, f.emax, f.max, f.mantissa_bits - 1, f.bits)
    f = get_format("e2m1")
    table["nvfp4"] = BlockFormat("nvfp4", f, ue4m3, 16, f.emax, f.max, f.mantissa_bits, 4, tensor_scale=True)
    # NVFP4's blocks with UE5M3 scales (Rubin's FP4 block-scaled MMA; a TransformerEngine
    # prototype): UE5M3 spans 2**-17 .. 114688, so no per-tensor scale (docs/mx.md).
    table["nvfp4_ue5m3"] = BlockFormat("nvfp4_ue5m3", f, ue5m3, 16, f.emax, f.max, f.mantissa_bits, 4)
    return table


BLOCK_FORMATS: dict[str, BlockFormat] = _block_formats()
_BLOCK_ALIASES = {
    "mxfp8": "mxfp8_e4m3", "mxfp8e4m3": "mxfp8_e4m3", "mxfp8e5m2": "mxfp8_e5m2",
    "mxfp6e3m2": "mxfp6_e3m2", "mxfp6e2m3": "mxfp6_e2m3", "mxfp4_e2m1": "mxfp4",
    "mxfp4e2m1": "mxfp4", "nvfp4ue5m3": "nvfp4_ue5m3", "nvfp4_e5m3": "nvfp4_ue5m3",
}  # fmt: skip


def get_block_format(fmt: str | BlockFormat) -> BlockFormat:
    """Look a block format up by name (case-insensitive).

    >>> get_block_format("nvfp4").block_size
    16
    >>> get_block_format("mxfp5")
    Traceback (most recent call last):
    ...
    ValueError: unknown block format 'mxfp5'; did you mean mxfp8_e4m3, mxfp4 or mxfp8_e5m2? choose one of mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, mxint8, nvfp4, nvfp4_ue5m3
    """
    if isinstance(fmt, BlockFormat):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"a block format is a name such as 'mxfp4', got {type(fmt).__name__}")
    key = option_name(fmt).replace("-", "_")
    key = _BLOCK_ALIASES.get(key, key)
    if key not in BLOCK_FORMATS:
        raise ValueError(unknown_name("block format", fmt, BLOCK_FORMATS, aliases=_BLOCK_ALIASES))
    return BLOCK_FORMATS[key]
