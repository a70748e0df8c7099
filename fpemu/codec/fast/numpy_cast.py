"""fp16, fp32 and fp64 under round-to-nearest-even through numpy's own cast, which is correctly
rounded (IEEE 754); only NaNs are re-encoded, by the generic kernel, per the ``nan`` option.
From an input no wider than the format the cast is exact, so it serves every deterministic
rounding (which leaves the format's own values as they are).

>>> from ...formats import get_format
>>> from ..options import Conversion
>>> fp16 = get_format("fp16")
>>> encode_numpy_cast(np.array([1 + 2.0**-11, 65520.0, np.nan]), fp16, Conversion().resolved(fp16)).tolist()
[15360, 31744, 32256]
"""

from __future__ import annotations

import numpy as np

from ...formats import Format
from ..generic_kernel import encode_generic
from ..options import Conversion

#: Formats numpy casts to natively, and their numpy dtypes.
NUMPY_NATIVE = {
    Format("fp16", 5, 10, 15): np.dtype(np.float16),
    Format("fp32", 8, 23, 127): np.dtype(np.float32),
    Format("fp64", 11, 52, 1023): np.dtype(np.float64),
}


def encode_numpy_cast(x: np.ndarray, fmt: Format, opts: Conversion) -> np.ndarray:
    """Codes of float input into fmt (one of :data:`NUMPY_NATIVE`) by numpy's cast."""
    native = NUMPY_NATIVE[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        codes = x.astype(native).view(fmt.code_dtype)  # a fresh array: astype copies
    isnan = np.isnan(x)
    # numpy keeps the payloads of float32 NaNs narrowed to float16 (or copied) bit for bit, but
    # widening and float64 NaNs pass through the FPU, which quiets them: the generic kernel
    # re-encodes NaNs unless numpy's rule is the one asked for.
    numpy_rule = opts.nan == "payload" and x.dtype == np.float32 and native.itemsize <= 4
    if isnan.any() and not numpy_rule:
        codes[isnan] = encode_generic(x[isnan], fmt, opts)
    return codes
