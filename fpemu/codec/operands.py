"""The operands of a matrix product as every matrix-unit model reads them (dense
:func:`fpemu.gemm`/:func:`fpemu.dot` and block-scaled :func:`fpemu.mx.matmul` alike): real
arrays checked by name, and the accumulator operand ``c`` broadcast to the result and rounded
to the accumulator's format.

>>> accumulator_operand([[1 + 2.0**-30]], (1, 2), "fp32").tolist()
[[1.0, 1.0]]
>>> accumulator_operand(None, (2,), "fp16").tolist()
[0.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .foreign import as_numpy
from .quantizer import quantize

_KINDS = {"O": "Python objects (dtype object; convert to float64 or int64 first)", "b": "booleans",
          "c": "complex numbers", "U": "strings", "S": "bytes"}  # fmt: skip


def real_array(x: Any, what: str) -> np.ndarray:
    """x as an ndarray of real numbers (float, integer or ml_dtypes' narrow floats), unchanged;
    a torch tensor as its values (bf16 and float8 read by their bits, exactly).

    >>> real_array([True], "a")
    Traceback (most recent call last):
    ...
    TypeError: a must be an array of real numbers, got booleans
    """
    try:
        arr = np.asarray(as_numpy(x))
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ValueError(f"{what} is not a rectangular array of numbers ({exc})") from None
    kind = arr.dtype.kind
    narrow_float = kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None
    if kind in "fiu" or narrow_float:
        return arr
    raise TypeError(f"{what} must be an array of real numbers, got {_KINDS.get(kind, f'dtype {arr.dtype}')}")


def accumulator_operand(c: Any, shape: tuple[int, ...], fmt: str) -> np.ndarray:
    """c broadcast to the result's ``shape`` and rounded (RNE) to the accumulator's format
    ``fmt`` (a unit's C operand has its accumulator's type), as float64; zeros for None. The
    input is never changed."""
    if c is None:
        return np.zeros(shape)
    arr = real_array(c, "c")
    try:
        arr = np.broadcast_to(arr, shape)
    except ValueError:
        raise ValueError(f"c of shape {arr.shape} does not broadcast to the result shape {shape}") from None
    return np.asarray(quantize(arr, fmt), dtype=np.float64)
