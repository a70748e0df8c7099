"""Other libraries' low-precision arrays read as codes, by their bits: torch tensors of every
float8, float4 and bf16 dtype, and ml_dtypes arrays. Neither library is imported unless such
an array arrives.

>>> foreign_codes(np.zeros(2)) is None
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import Format, get_format

#: torch dtype names read by their bit patterns, and the fpemu format each one is.
TORCH_FORMATS = {
    "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "float8_e4m3fnuz": "e4m3fnuz",
    "float8_e5m2fnuz": "e5m2fnuz", "float8_e8m0fnu": "e8m0", "bfloat16": "bf16",
    "float4_e2m1fn_x2": "e2m1",
}  # fmt: skip

#: ml_dtypes' type name of each fpemu format it has.
ML_DTYPES_NAMES = {
    "bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2fnuz": "float8_e5m2fnuz", "e3m2": "float6_e3m2fn", "e2m3": "float6_e2m3fn", "e2m1": "float4_e2m1fn",
    "e8m0": "float8_e8m0fnu", "float8_e4m3": "float8_e4m3", "float8_e3m4": "float8_e3m4",
    "float8_e4m3b11fnuz": "float8_e4m3b11fnuz", "float8_e5m3fnu": "float8_e5m3fnu",  # (ml_dtypes 0.7+)
    "fp16": "float16", "fp32": "float32", "fp64": "float64",
}  # fmt: skip


def is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "dtype") and hasattr(x, "detach")


def foreign_codes(x: Any) -> tuple[np.ndarray, Format] | None:
    """(codes, format) of a torch tensor or ml_dtypes array of a low-precision float dtype,
    read by its bits; None for anything else."""
    if is_torch(x):
        return torch_codes(x)
    dtype = getattr(x, "dtype", None)
    if isinstance(x, np.ndarray) and dtype.type.__module__.split(".")[0] == "ml_dtypes":
        for fmt_name, name in ML_DTYPES_NAMES.items():
            if dtype.name == name:
                fmt = get_format(fmt_name)
                return np.ascontiguousarray(x).view(f"u{dtype.itemsize}"), fmt
    return None


def torch_codes(t: Any) -> tuple[np.ndarray, Format] | None:
    """(codes, format) of a torch tensor of a low-precision float dtype, by its bits; None for
    other dtypes. A float4_e2m1fn_x2 tensor holds two codes a byte (element 2i in the low
    nibble): its last dimension doubles."""
    import torch

    name = str(t.dtype).removeprefix("torch.")
    if name not in TORCH_FORMATS:
        return None
    fmt = get_format(TORCH_FORMATS[name])
    t = t.detach().cpu().contiguous()
    if name == "bfloat16":
        return t.view(torch.int16).numpy().view(np.uint16), fmt
    raw = t.view(torch.uint8).numpy()
    if name == "float4_e2m1fn_x2":
        raw = np.stack([raw & 0x0F, raw >> 4], axis=-1).reshape(raw.shape[:-1] + (-1,))
    return raw, fmt


