"""Other libraries' arrays in: torch tensors (every float8, float4 and bf16 dtype read by its
bit pattern, never through a float cast), ml_dtypes arrays, and anything with ``__array__``
or ``__dlpack__``; codes handed back as ml_dtypes arrays or torch tensors live in
:mod:`.exports`. Neither library is imported unless such an array arrives or is asked for."""

from __future__ import annotations

from typing import Any

import numpy as np

from .bit_views import is_torch, torch_codes
from .decoder import decode
from .exports import to_ml_dtypes, to_torch

__all__ = ["as_numpy", "to_ml_dtypes", "to_torch"]


def as_numpy(x: Any) -> Any:
    """x as something numpy reads exactly: a torch tensor as its values (low-precision dtypes
    decoded from their bits), an object with only ``__dlpack__`` through numpy's DLPack
    import; anything else as it is."""
    if is_torch(x):
        coded = torch_codes(x)
        if coded is not None:
            codes, fmt = coded
            return decode(codes, fmt, dtype=np.float32)  # every such value is a float32
        return x.detach().cpu().resolve_conj().numpy()
    if not isinstance(x, np.ndarray) and not hasattr(x, "__array__") and hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    return x
