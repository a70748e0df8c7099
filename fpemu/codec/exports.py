"""Codes handed back as another library's array of the same format, bit for bit: ml_dtypes
arrays and torch tensors (each library imported only when asked for).

>>> import ml_dtypes  # doctest: +SKIP
>>> to_ml_dtypes(np.array([0x38, 0x7E], np.uint8), "e4m3")  # doctest: +SKIP
array([1, 448], dtype=float8_e4m3fn)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import optional_module
from ..formats import Format, get_format
from .bit_views import ML_DTYPES_NAMES, TORCH_FORMATS
from .inputs import as_codes


def to_ml_dtypes(codes: Any, fmt: str | Format) -> np.ndarray:
    """Codes of ``fmt`` as an ml_dtypes (or numpy) array of the same format, bit for bit; a
    code out of the format's range is refused as :func:`fpemu.decode` refuses it.

    >>> to_ml_dtypes(np.array([0x3C00], np.uint16), "fp16")
    array([1.], dtype=float16)
    >>> to_ml_dtypes([0x1FFFF], "bf16")
    Traceback (most recent call last):
    ...
    ValueError: code 131071 is out of range for bf16 (codes are 0..65535)
    """
    fmt = get_format(fmt)
    if fmt.name not in ML_DTYPES_NAMES:
        raise ValueError(f"ml_dtypes has no {fmt.name}; it has {', '.join(ML_DTYPES_NAMES)}")
    arr = _integer_codes(codes, fmt, "to_ml_dtypes")  # bad codes are refused with or without ml_dtypes
    dtype = ml_dtypes_dtype(fmt)
    if dtype is None:
        import ml_dtypes

        raise ValueError(f"ml_dtypes {ml_dtypes.__version__} has no {ML_DTYPES_NAMES[fmt.name]} "
                         "(a later release added it)")
    return arr.astype(f"u{dtype.itemsize}").view(dtype)


def ml_dtypes_dtype(fmt: Format) -> np.dtype | None:
    """The numpy or ml_dtypes dtype of fmt; None where the installed ml_dtypes lacks it (its
    float8_e5m3fnu came in 0.7) or fmt is none of theirs. ml_dtypes is imported only here."""
    name = ML_DTYPES_NAMES.get(fmt.name)
    if name is None:
        return None
    if name.startswith("float") and hasattr(np, name) and name[5:].isdigit():
        return np.dtype(getattr(np, name))
    ml_dtypes = optional_module("ml_dtypes", f"{fmt.name} as an ml_dtypes dtype")

    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else None


def to_torch(codes: Any, fmt: str | Format) -> Any:
    """Codes of ``fmt`` as a torch tensor of the same format, bit for bit (FP4 packed two a
    byte into ``float4_e2m1fn_x2``, the last dimension halved: it must be even); a code out
    of the format's range is refused as :func:`fpemu.decode` refuses it."""
    torch = optional_module("torch", "to_torch")

    fmt = get_format(fmt)
    arr = _integer_codes(codes, fmt, "to_torch")
    names = {v: k for k, v in TORCH_FORMATS.items()} | {"fp16": "float16", "fp32": "float32", "fp64": "float64"}
    if fmt.name not in names or not hasattr(torch, names[fmt.name]):
        raise ValueError(f"torch has no dtype for {fmt.name}")
    dtype = getattr(torch, names[fmt.name])
    if fmt.name == "e2m1":
        if arr.shape[-1] % 2:
            raise ValueError("float4_e2m1fn_x2 holds pairs: the last dimension must be even")
        arr = (arr[..., 0::2] | (arr[..., 1::2] << 4)).astype(np.uint8)
    size = dtype.itemsize
    bits = arr.astype(f"u{size}")
    return torch.from_numpy(bits if size == 1 else bits.view(f"i{size}")).view(dtype)


def _integer_codes(codes: Any, fmt: Format, who: str) -> np.ndarray:
    """codes as a contiguous integer array of codes of fmt (never wrapped into range by a cast)."""
    arr = np.ascontiguousarray(codes)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{who} takes integer codes, got {arr.dtype}")
    return as_codes(arr, fmt)
