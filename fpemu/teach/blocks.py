"""The explorer's second view: one MX or NVFP4 block, its inputs, the shared scale and each
element's code, all from :func:`fpemu.mx.quantize`.

Every value is shown exactly (its whole decimal), every error is value - input as typed,
exactly; an element that became zero (flushed: below half the block's smallest step) or was
clipped to the largest element (saturated) is marked and counted, and a NaN scale says why.

>>> b = describe_block("mxfp4", [7.0, 3.0, 0.4, -1.2])
>>> b["scale"]["code"], b["scale"]["value"], [e["code"] for e in b["elements"]]
('0x7F', '1.0', ['0x7', '0x5', '0x1', '0xA'])
>>> [e["value"] for e in b["elements"]], [e["flag"] for e in b["elements"]], b["summary"]
(['6.0', '3.0', '0.5', '-1.0'], ['saturated', '', '', ''], '1 of 4 elements saturated')
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ..arguments import is_whole
from ..codec import decode
from ..codec import decimal_text, exact_decimal
from ..formats import Format, get_format
from ..mx import BlockFormat, get_block_format, quantize
from .rules import number_text, parse_exact
from .values import finite_values

__all__ = ["BLOCK_NAMES", "SCALE_RULES", "describe_block", "compare_blocks", "block_element"]

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


def block_element(block: BlockFormat) -> Format:
    """The element format (MXINT8's is the two's complement ``int8`` with an implicit 2**-6).

    >>> block_element(get_block_format("mxint8")).name, block_element(get_block_format("nvfp4")).name
    ('int8', 'e2m1')
    """
    return block.element if block.element is not None else get_format("int8")


def _boxes(values: Any, size: int, name: str) -> tuple[list[int], list[Any]]:
    """The filled boxes of the page's block form: their positions and their values (an empty
    box, '' or None, holds no element; its position stays the box's number)."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError("values must be a list of numbers")
    if len(values) > size:
        raise ValueError(f"one {name} block holds 1 to {size} values, got {len(values)}")
    filled = [(i, v) for i, v in enumerate(values) if not (v is None or (isinstance(v, str) and not v.strip()))]
    if not filled:
        raise ValueError(f"one {name} block holds 1 to {size} values, got none: type a number in a box")
    return [i for i, _ in filled], [v for _, v in filled]


def _seed(seed: Any) -> int:
    seed = int(seed.strip()) if isinstance(seed, str) and seed.strip().isdigit() else seed
    if not is_whole(seed) or not 0 <= int(seed) < 2**63:
        raise ValueError(f"the seed of stochastic rounding is a whole number 0 .. 2^63-1, got {seed!r}")
    return int(seed)


def _tensor_amax(block: BlockFormat, tensor_amax: Any) -> float | None:
    """NVFP4's tensor amax as typed (None: the block's own amax), read exactly, as the float64
    nearest it (quantize takes it to float32)."""
    if tensor_amax is None or (isinstance(tensor_amax, str) and not tensor_amax.strip()):
        return None
    if not block.is_nvfp4:
        raise ValueError(f"a tensor amax is NVFP4's (its per-tensor FP32 scale); {block.name} has only block scales")
    amax = parse_exact(tensor_amax.replace("−", "-") if isinstance(tensor_amax, str) else tensor_amax)
    if not isinstance(amax, Fraction) or amax <= 0 or _nearest(amax) > float(np.finfo(np.float32).max):
        raise ValueError(f"the tensor amax is a finite number > 0 within float32's range, got {tensor_amax!r}")
    return _nearest(amax)


def describe_block(fmt: str, values: Sequence[Any], scale_rounding: str = "floor",
                   rounding: str = "nearest_even", seed: Any = 0, tensor_amax: Any = None) -> dict[str, Any]:
    """Quantize one block of ``values`` (1 .. block size numbers, as text or numbers; an empty
    box, '' or None, is skipped) into the block format ``fmt``: the shared scale (code, bits,
    value; ``why`` where it is NaN), NVFP4's tensor scale (from ``tensor_amax``, a number
    typed, or else the block's own amax, which makes the block scale 448 exactly), and for
    each element its box ``index``, input, code, bits, element value, represented value (scale
    x element, exact), error and ``flag`` (``flushed``, ``saturated``, ``nan`` or '', with
    ``why``); ``summary`` counts the flags. Inputs are read exactly, then rounded to the
    float64 (NVFP4: float32) that :func:`fpemu.mx.quantize` computes in; ``seed``: stochastic
    rounding's seed.

    >>> b = describe_block("nvfp4", ["1", "-6", "0.25"])
    >>> b["block_size"], b["scale"]["code"], b["global_scale"], [e["value"] for e in b["elements"]]
    (16, '0x7E', '0.00223214295692741870880126953125', ['1.0', '-6.0', '0.0'])
    >>> b["elements"][2]["error"], b["elements"][2]["flag"]  # 0.25: halfway between 0 and 0.5, to even 0
    ('-0.25', 'flushed')
    >>> b = describe_block("nvfp4", ["1", "-6", "0.25"], tensor_amax="100")  # this block is not the tensor's largest
    >>> b["scale"]["code"], b["scale"]["value"], b["elements"][1]["value"]
    ('0x5D', '26.0', '-5.8035717010498046875')
    >>> [e["index"] for e in describe_block("mxfp4", ["6", "", "", "0.1"])["elements"]]  # empty boxes keep their numbers
    [0, 3]
    """
    block = get_block_format(fmt)
    if block.name not in BLOCK_NAMES:
        raise ValueError(f"the explorer shows {', '.join(BLOCK_NAMES)}, not {block.name}")
    indexes, values = _boxes(values, block.block_size, block.name)
    seed = _seed(seed)
    given_amax = _tensor_amax(block, tensor_amax)
    exact = [parse_exact(v.replace("−", "-") if isinstance(v, str) else v) for v in values]
    x = np.array([float(v) if isinstance(v, float) else _nearest(v) for v in exact], dtype=np.float64)
    if block.is_nvfp4:
        x = x.astype(np.float32).astype(np.float64)  # (NVFP4 computes in float32, as its recipes do)
    options = {"rounding": rounding, "rng": int(seed)} if rounding.startswith("stochastic") else {"rounding": rounding}
    if block.is_nvfp4:
        if scale_rounding not in ("floor", None):
            raise ValueError("NVFP4 computes its scales its own way: scale_rounding is for MX formats")
        q = quantize(x, block, global_amax=given_amax, **options)
    else:
        if scale_rounding not in SCALE_RULES:
            raise ValueError(f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_RULES)}")
        q = quantize(x, block, scale_rounding=scale_rounding, **options)
    elem, scale_fmt = block_element(block), block.scale
    codes = np.asarray(q.codes).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        elem_values = decode(codes.astype(np.uint8), elem)
        represented = np.asarray(q.dequantize(np.float64), dtype=np.float64)
        # the block's smallest nonzero value: element code 1 with the same scales, as the block
        # computes it (NVFP4: TransformerEngine's float32 products, not a float64 product)
        smallest = float(dataclasses.replace(q, codes=np.ones_like(q.codes)).dequantize(np.float64)[0])
    scale_code = int(q.scales[0])
    scale_value = float(decode(np.array([scale_code], dtype=np.uint8), scale_fmt)[0])
    width = (block.bits + 3) // 4
    elements = []
    for index, typed, xi, xe, c, ev, rv in zip(indexes, values, x.tolist(), exact, codes.tolist(),
                                               elem_values.tolist(), represented.tolist()):
        finite = bool(np.isfinite(rv)) and (isinstance(xe, Fraction) or xe == 0)  # (xe: a Fraction, or a float 0, inf, nan)
        flag, why = _flag(xe, xi, ev, rv, elem, smallest)
        elements.append({"index": index, "input": typed.strip() if isinstance(typed, str) else number_text(typed),
                         "input_value": number_text(xi), "code": f"0x{c & 0xFF:0{width}X}",
                         "bits": format(c & ((1 << block.bits) - 1), f"0{block.bits}b"),
                         "element": _exact(ev), "value": _exact(rv), "flag": flag, "why": why,
                         "error": decimal_text(Fraction(rv) - Fraction(xe), 60) if finite else None})
    amax = float(np.max(np.abs(x)))
    out = {
        "format": block.name, "element_format": elem.name, "scale_format": scale_fmt.name,
        "block_size": block.block_size, "element_max": number_text(elem.max), "amax": _exact(amax),
        "scale": {"code": f"0x{scale_code:02X}", "bits": format(scale_code, f"0{scale_fmt.bits}b"),
                  "value": _exact(scale_value), "why": _nan_scale(block, x, indexes, scale_value)},
        "elements": elements, "global_scale": None, "tensor_amax": None, "summary": _summary(elements),
        "smallest": _exact(smallest),
    }
    if block.is_nvfp4:
        out["global_scale"] = _exact(float(q.global_scale))
        out["tensor_amax"] = _exact(float(q.global_amax))
        out["tensor_amax_given"] = given_amax is not None
        out["rule"] = ("NVFP4 (TransformerEngine): a per-tensor FP32 scale, tensor amax / (448 x 6), and for "
                       "each block of 16 a UE4M3 scale, block amax / 6 divided by it and rounded to UE4M3; value = "
                       "element x block scale x tensor scale, in float32 as TransformerEngine computes it (fpemu docs mx)")
    else:
        out["scale_rounding"] = scale_rounding
        out["rule"] = SCALE_RULES[scale_rounding] + "; value = element x scale"
    out["doc"] = "mx.md"
    return out


#: The schemes the block view compares: (label, block format, MX scale rule).
COMPARED_SCHEMES = (("MXFP4, floor (OCP)", "mxfp4", "floor"), ("MXFP4, rceil (NVIDIA)", "mxfp4", "rceil"),
                    ("NVFP4", "nvfp4", None))


def compare_blocks(values: Sequence[Any], tensor_amax: Any = None) -> dict[str, Any]:
    """The same values (up to 32, empty boxes skipped) in MXFP4 under the floor and the rceil
    rule (one block of 32) and in NVFP4 (blocks of 16: one or two, sharing one tensor scale
    from ``tensor_amax``, or else from the largest of all the values): each scheme's scales,
    and per value what each gives back and its error, exactly.

    >>> c = compare_blocks(["12.5", "0.82", "", "-1.37"])
    >>> [s["scales"] for s in c["schemes"]]
    [['2.0'], ['4.0'], ['448.0']]
    >>> [(r["index"], r["values"]) for r in c["rows"]][:2]
    [(0, ['12.0', '12.0', '12.5']), (1, ['1.0', '0.0', '1.04166662693023681640625'])]
    """
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError("values must be a list of numbers")
    if len(values) > 32:
        raise ValueError(f"the comparison takes up to 32 values (one MXFP4 block), got {len(values)}")
    indexes, filled = _boxes(values, 32, "compared")
    if tensor_amax is None or (isinstance(tensor_amax, str) and not tensor_amax.strip()):
        exact = [parse_exact(v.replace("−", "-") if isinstance(v, str) else v) for v in filled]
        finite = [abs(v) for v in exact if isinstance(v, Fraction)]
        tensor_amax = str(max(finite)) if finite else None
    schemes, columns = [], []
    for label, name, rule in COMPARED_SCHEMES:
        size = get_block_format(name).block_size
        parts = [list(values[i:i + size]) for i in range(0, len(values), size)]
        described = []
        for part in parts:
            if any(not (v is None or (isinstance(v, str) and not v.strip())) for v in part):
                extra = {"tensor_amax": tensor_amax} if rule is None else {"scale_rounding": rule}
                described.append((part, describe_block(name, part, **extra)))
        elements = {}
        for offset, (_, d) in zip(range(0, len(values), size), described):
            for e in d["elements"]:
                elements[offset + e["index"]] = e
        schemes.append({"label": label, "format": name, "scales": [d["scale"]["value"] for _, d in described],
                        "scale_codes": [d["scale"]["code"] for _, d in described],
                        "tensor_scale": described[0][1]["global_scale"] if described else None,
                        "tensor_amax": described[0][1]["tensor_amax"] if described else None})
        columns.append(elements)
    rows = [{"index": i, "input": columns[0][i]["input"], "values": [c[i]["value"] for c in columns],
             "errors": [c[i]["error"] for c in columns], "flags": [c[i]["flag"] for c in columns]} for i in indexes]
    return {"schemes": schemes, "rows": rows}


def _nearest(q: Fraction) -> float:
    """The float64 nearest an exact input, +-inf beyond float64's range."""
    try:
        return float(q)
    except OverflowError:
        return float("inf") if q > 0 else float("-inf")


def _exact(value: float) -> str:
    return exact_decimal(value) if np.isfinite(value) else number_text(value)


def _flag(exact: Fraction | float, x: float, element: float, value: float, elem: Format,
          smallest: float) -> tuple[str, str]:
    """What happened to one element: flushed to zero, saturated at the largest element (its
    input beyond the value it got), a NaN (from the scale or the input), or '' (rounded as
    usual). ``smallest``: the block's smallest nonzero value, as the block computes it."""
    if np.isnan(value):
        return "nan", "the block's scale is NaN, so every element reads as NaN" if not np.isnan(x) else "NaN in"
    if exact and value == 0 and np.isfinite(x):
        element_one = float(finite_values(elem)[finite_values(elem) > 0][0])
        return "flushed", (f"|x| lies below the block's smallest nonzero value {_exact(smallest)} "
                           f"(scale x smallest element {_exact(element_one)}) and the rounding took it to 0")
    if abs(element) == elem.max and np.isfinite(value) and abs(Fraction(x)) > abs(Fraction(value)):
        return "saturated", (f"|x| is above the block's largest value {_exact(abs(value))} "
                             f"(scale x element max {_exact(elem.max)}): clipped to it")
    return "", ""


def _nan_scale(block: BlockFormat, x: np.ndarray, indexes: list[int], scale_value: float) -> str | None:
    """Why the shared scale is NaN (None where it is not); x: the values of boxes ``indexes``."""
    if not np.isnan(scale_value):
        return None
    what = "NaN" if np.isnan(x).any() else "an infinity"
    where = [str(indexes[i]) for i in np.flatnonzero(~np.isfinite(x))]
    if block.is_nvfp4:
        return (f"x{', x'.join(where)} is {what}: the block's amax is not finite, and its UE4M3 scale "
                f"becomes NaN (0x7F); every element reads as NaN")
    return (f"x{', x'.join(where)} is {what}: the OCP MX spec gives a block holding NaN or Inf the NaN "
            f"scale (E8M0 0xFF), and every element of the block reads as NaN")


def _summary(elements: list[dict[str, Any]]) -> str:
    """'15 of 32 elements flushed to zero, 1 saturated', or 'every element rounded as usual'."""
    counts = {f: sum(e["flag"] == f for e in elements) for f in ("flushed", "saturated", "nan")}
    words = {"flushed": "flushed to zero", "saturated": "saturated", "nan": "NaN"}
    parts = [f"{n} {words[f]}" for f, n in counts.items() if n]
    if not parts:
        return f"all {len(elements)} elements rounded within range (none flushed to zero or saturated)"
    return f"{parts[0].split()[0]} of {len(elements)} elements " + " ".join(parts[0].split()[1:]) + \
        "".join(", " + p for p in parts[1:])
