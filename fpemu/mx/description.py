"""One block array explained, block by block: :func:`describe` (the text ``fpemu mx`` prints)
and :func:`describe_json` (the same report as data). An error is value - input, as
everywhere in fpemu (``fpemu show``, :func:`fpemu.explain`, the explorer): negative where the
value lies below the input."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codec import decode
from ..outputs import json_number, json_numbers
from .array import BlockArray
from .inputs import as_float_array
from .quantization import quantize  # noqa: F401  (used by the doctests)


def describe(q: BlockArray, x: Any) -> str:
    """Text report: each block's scale, codes and quantization error, value - input (1-D arrays).

    >>> print(describe(quantize([7.0, 3.0, 0.4], "mxfp4"), np.array([7.0, 3.0, 0.4])))
    mxfp4: 3 values, 1 block of 32, E8M0 scales (floor)
    block 0: scale 0x7F = 2^0
      codes:  7 5 1
      values: 6 3 0.5
      errors: -1 0 0.1
      max |error| 1, rms error 0.5802
    """
    if not isinstance(q, BlockArray):
        raise TypeError(f"describe takes a BlockArray, got {type(q).__name__}")
    if q.codes.ndim != 1:
        raise ValueError(f"describe explains 1-D block arrays, got shape {q.shape}")
    x = as_float_array(x).astype(np.float64)
    if x.shape != q.shape:
        raise ValueError(f"describe needs the {q.shape[0]} quantized values, got shape {x.shape}")
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN inputs give NaN errors
        deq = q.dequantize(np.float64)
        lines = [_describe_head(q)]
        for j in range(q.scales.size):
            lines += _describe_block(q, x, deq, j)
    return "\n".join(lines)


def _describe_head(q: BlockArray) -> str:
    bf, nblocks = q.format, q.scales.size
    head = f"{bf.name}: {q.codes.size} values, {nblocks} block{'s' if nblocks != 1 else ''} of {q.block_size}, "
    if not bf.is_nvfp4:
        return head + f"E8M0 scales ({q.scale_rounding or 'unknown rule'})"
    if not bf.tensor_scale:  # nvfp4_ue5m3
        return head + f"{bf.scale_label} scales, no per-tensor scale"
    amax = "unknown" if q.global_amax is None else f"{float(q.global_amax):.6g}"
    return head + (f"UE4M3 scales, {q.variant} arithmetic, global amax {amax}, "
                   f"global decode scale {float(q.global_scale):.6g}")


def _describe_block(q: BlockArray, x: np.ndarray, deq: np.ndarray, j: int) -> list[str]:
    bs, bf = q.block_shape[0], q.format
    sl = slice(j * bs, min((j + 1) * bs, x.size))
    code = int(q.scales[j])
    if bf.is_nvfp4:
        sval = f"{float(decode(code, bf.scale)):.6g}"
    else:
        sval = "NaN" if code == 255 else f"2^{code - 127}"
    width = 1 if bf.bits == 4 else 2
    err = deq[sl] - x[sl]
    lines = [
        f"block {j}: scale 0x{code:02X} = {sval}",
        "  codes:  " + " ".join(f"{int(c):0{width}X}" for c in q.codes[sl]),
        "  values: " + " ".join(f"{v:.6g}" for v in deq[sl]),
        "  errors: " + " ".join(f"{v:.4g}" for v in err),
    ]
    e = np.abs(err[np.isfinite(err)])
    if e.size:
        top = float(e.max())
        # rms scaled by the largest error: squaring errors near 1e300 must not overflow
        rms = top * float(np.sqrt(np.mean((e / top) ** 2))) if top > 0 else 0.0
        lines.append(f"  max |error| {top:.4g}, rms error {rms:.4g}")
    return lines


def describe_json(q: BlockArray, x: Any) -> dict:
    """The report of :func:`describe` as JSON-ready data: the layout, then each block's scale
    code, element codes, values, inputs and errors, value - input (Inf and NaN as text).

    >>> r = describe_json(quantize([7.0, 3.0, 0.4], "mxfp4"), [7.0, 3.0, 0.4])
    >>> r["blocks"][0]["scale"], r["blocks"][0]["codes"], r["blocks"][0]["values"]
    (127, [7, 5, 1], [6.0, 3.0, 0.5])
    """
    x = as_float_array(x).astype(np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        deq = q.dequantize(np.float64).reshape(-1)
    bs, bf = q.block_shape[0], q.format
    head = {"format": bf.name, "n": int(q.codes.size), "block_size": bs, "scale_rounding": q.scale_rounding,
            "variant": q.variant, "global_amax": None if q.global_amax is None else json_number(q.global_amax),
            "global_scale": None if q.global_scale is None else json_number(q.global_scale)}
    blocks = []
    for j in range(q.scales.size):
        sl = slice(j * bs, min((j + 1) * bs, x.size))
        with np.errstate(invalid="ignore"):
            err = deq[sl] - x[sl]
        blocks.append({"scale": int(q.scales[j]), "codes": [int(c) for c in q.codes[sl]],
                       "values": json_numbers(deq[sl]), "inputs": json_numbers(x[sl]), "errors": json_numbers(err)})
    return head | {"blocks": blocks}
