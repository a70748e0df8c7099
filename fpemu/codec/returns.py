"""Results in the caller's array type: the ``returns=`` option of encode, decode, quantize,
gemm and dot.

``"numpy"`` (the default) returns NumPy arrays. ``"input"`` returns the type of the first
array argument: a torch tensor in gives a torch tensor on the same device, an ml_dtypes array
gives an ml_dtypes array (codes) or NumPy floats (values), a Dask array a Dask array.
``"torch"`` and ``"ml_dtypes"`` ask for that type whatever came in. Codes come back in the
format's own dtype where the library has one (``torch.float8_e4m3fn``, ``ml_dtypes.bfloat16``,
...), bit for bit, else as unsigned integer codes; FP4 codes stay one a byte (torch's only FP4
dtype packs two: :func:`fpemu.to_torch` does that). Values come back as float tensors of the
same float32/float64 values.

>>> check_returns("input")
'input'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import option_name
from ..errors import optional_module
from ..formats import Format
from .bit_views import TORCH_FORMATS, is_torch
from .dask_arrays import is_dask

RETURNS = ("numpy", "input", "torch", "ml_dtypes")


def check_returns(returns: Any, x: Any = None) -> str:
    """The ``returns`` option (any case), checked before any work."""
    returns = option_name(returns)
    if returns not in RETURNS:
        raise ValueError(f"unknown returns {returns!r}; choose one of {', '.join(RETURNS)}")
    if returns in ("torch", "ml_dtypes") and is_dask(x):
        raise ValueError(f"returns={returns!r} does not apply to a Dask array (its result is a Dask array)")
    if returns in ("torch", "ml_dtypes"):
        optional_module(returns, f"returns={returns!r}")  # said before any work, naming what to install
    return returns


def _target(returns: str, x: Any) -> str:
    if returns != "input":
        return returns
    if is_torch(x):
        return "torch"
    dtype = getattr(x, "dtype", None)
    if isinstance(x, np.ndarray) and dtype.type.__module__.split(".")[0] == "ml_dtypes":
        return "ml_dtypes"
    return "numpy"


def _device(x: Any) -> Any:
    return x.device if is_torch(x) else None


def deliver_codes(codes: Any, fmt: Format, returns: str, x: Any) -> Any:
    """Codes of fmt in the type ``returns`` asks for (x: the caller's input)."""
    target = _target(returns, x)
    if target == "numpy" or is_dask(codes):
        return codes
    if target == "ml_dtypes":
        from .exports import ml_dtypes_dtype, to_ml_dtypes

        return to_ml_dtypes(codes, fmt) if ml_dtypes_dtype(fmt) is not None else codes
    import torch

    from .exports import to_torch

    own = {v: k for k, v in TORCH_FORMATS.items()} | {"fp16": "float16", "fp32": "float32", "fp64": "float64"}
    if fmt.name != "e2m1" and fmt.name in own and hasattr(torch, own[fmt.name]):
        tensor = to_torch(codes, fmt)
    else:
        tensor = torch.from_numpy(np.ascontiguousarray(codes))
    device = _device(x)
    return tensor if device is None else tensor.to(device)


def deliver_values(values: Any, returns: str, x: Any) -> Any:
    """Float values in the type ``returns`` asks for (x: the caller's input)."""
    if _target(returns, x) != "torch" or is_dask(values):
        return values
    import torch

    values = np.asarray(values)
    # ascontiguousarray makes a 0-d array 1-d: reshape keeps a dot product's result 0-d.
    tensor = torch.from_numpy(np.ascontiguousarray(values).reshape(values.shape))
    device = _device(x)
    return tensor if device is None else tensor.to(device)
