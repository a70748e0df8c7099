"""The explorer's second view: one MX or NVFP4 block, its inputs, the shared scale and each
element's code, all from :func:`fpemu.mx.quantize`.

>>> b = describe_block("mxfp4", [7.0, 3.0, 0.4, -1.2])
>>> b["scale"]["code"], b["scale"]["value"], [e["code"] for e in b["elements"]]
('0x7F', '1.0', ['0x7', '0x5', '0x1', '0xA'])
>>> [e["value"] for e in b["elements"]]
['6.0', '3.0', '0.5', '-1.0']
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ..codec import decode
from ..formats import Format, get_format
from ..mx import BlockFormat, get_block_format, quantize
from .rules import number_text, parse_number

__all__ = ["BLOCK_NAMES", "SCALE_RULES", "describe_block"]

#: The block formats the explorer offers.
BLOCK_NAMES = ("mxfp4", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp8_e4m3", "mxfp8_e5m2", "mxint8", "nvfp4")
#: MX scale rules, and the sentence the page shows for each.
SCALE_RULES = {
    "floor": "OCP MX: scale = 2^(floor(log2 amax) - emax), emax the element's largest exponent; "
             "elements above the element max saturate",
    "rceil": "NVIDIA: scale = 2^ceil(log2(amax / element max)), so no element saturates",
    "ceil": "scale = 2^ceil(log2(amax / element max))",
    "even": "torchao: amax rounded to even in the element's precision before the floor rule",
}


def _element(block: BlockFormat) -> Format:
    """The element format (MXINT8's is the two's complement ``int8`` with an implicit 2**-6)."""
    return block.element if block.element is not None else get_format("int8")


def describe_block(fmt: str, values: Sequence[Any], scale_rounding: str = "floor",
                   rounding: str = "nearest_even") -> dict[str, Any]:
    """Quantize one block of ``values`` (1 .. block size numbers, as text or numbers) into the
    block format ``fmt``: the shared scale (code, bits, value), and for each element its input,
    code, bits, element value, represented value (scale x element) and error.

    >>> b = describe_block("nvfp4", ["1", "-6", "0.25"])
    >>> b["block_size"], b["scale"]["code"], b["global_scale"], [e["value"] for e in b["elements"]]
    (16, '0x7E', '0.0022321429569274187', ['1.0', '-6.0', '0.0'])
    >>> b["elements"][2]["error"]  # 0.25 is halfway between 0 and 0.5: ties to even, 0
    '-0.25'
    """
    block = get_block_format(fmt)
    if block.name not in BLOCK_NAMES:
        raise ValueError(f"the explorer shows {', '.join(BLOCK_NAMES)}, not {block.name}")
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError("values must be a list of numbers")
    if not 1 <= len(values) <= block.block_size:
        raise ValueError(f"one {block.name} block holds 1 to {block.block_size} values, got {len(values)}")
    x = np.array([parse_number(v) for v in values], dtype=np.float64)
    if block.is_nvfp4:
        if scale_rounding != "floor":
            raise ValueError("NVFP4 computes its scales its own way: scale_rounding is for MX formats")
        q = quantize(x, block, rounding=rounding)
    else:
        if scale_rounding not in SCALE_RULES:
            raise ValueError(f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_RULES)}")
        q = quantize(x, block, scale_rounding=scale_rounding, rounding=rounding)
    elem, scale_fmt = _element(block), block.scale
    codes = np.asarray(q.codes).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        elem_values = decode(codes.astype(np.uint8), elem)
        represented = np.asarray(q.dequantize(np.float64), dtype=np.float64)
    scale_code = int(q.scales[0])
    scale_value = float(decode(np.array([scale_code], dtype=np.uint8), scale_fmt)[0])
    width = (block.bits + 3) // 4
    elements = []
    for xi, c, ev, rv in zip(x.tolist(), codes.tolist(), elem_values.tolist(), represented.tolist()):
        err = number_text(float(Fraction(rv) - Fraction(xi))) if np.isfinite([xi, rv]).all() else None
        elements.append({"input": number_text(xi), "code": f"0x{c & 0xFF:0{width}X}",
                         "bits": format(c & ((1 << block.bits) - 1), f"0{block.bits}b"),
                         "element": number_text(ev), "value": number_text(rv), "error": err})
    amax = float(np.max(np.abs(x)))
    out = {
        "format": block.name, "element_format": elem.name, "scale_format": scale_fmt.name,
        "block_size": block.block_size, "element_max": number_text(elem.max), "amax": number_text(amax),
        "scale": {"code": f"0x{scale_code:02X}", "bits": format(scale_code, f"0{scale_fmt.bits}b"),
                  "value": number_text(scale_value)},
        "elements": elements, "global_scale": None,
    }
    if block.is_nvfp4:
        out["global_scale"] = number_text(float(q.global_scale))
        out["rule"] = ("NVFP4 (TransformerEngine): a per-tensor FP32 scale maps amax to 448 x 6, "
                       "each block of 16 a UE4M3 scale; value = element x block scale x tensor scale")
    else:
        out["scale_rounding"] = scale_rounding
        out["rule"] = SCALE_RULES[scale_rounding] + "; value = element x scale"
    return out
