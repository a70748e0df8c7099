"""Helpers and constants shared by the MX test files (tests/test_mx_*.py).

Tests import them as ``from mx_helpers import ...``, as they import ``reference``.

ml_dtypes is imported only when a helper that needs it is used (``ML_ELEMENT[fmt]``,
``element_value``, ``e2m1``, ``e4m3``), never when this module is imported: test files that
do not need ml_dtypes must not start skipping (or failing) where it is missing, and the files
that do need it keep their own ``pytest.importorskip("ml_dtypes")``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction
from functools import cache

import numpy as np

MX_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8"]
ALL_FORMATS = MX_FORMATS + ["nvfp4"]
f32 = np.float32

EMAX = {"mxfp8_e4m3": 8, "mxfp8_e5m2": 15, "mxfp6_e3m2": 4, "mxfp6_e2m3": 2, "mxfp4": 2, "mxint8": 0}
MAXV = {"mxfp8_e4m3": 448.0, "mxfp8_e5m2": 57344.0, "mxfp6_e3m2": 28.0, "mxfp6_e2m3": 7.5,
        "mxfp4": 6.0, "mxint8": 127 / 64}  # fmt: skip
MBITS = {"mxfp8_e4m3": 3, "mxfp8_e5m2": 2, "mxfp6_e3m2": 2, "mxfp6_e2m3": 3, "mxfp4": 1, "mxint8": 6}

# SPEC section 4's NVFP4 example block.
NV_X = np.array([100, -37, 5] + [0] * 13 + [0.001, -0.0004] + [0] * 14, np.float32)


def block_array(codes, scales, fmt, axis, block_size, **fields):
    """The block array of ``fmt``'s family (mx.MXArray or mx.NVFP4Array) from its parts, for the
    tests that run one body over both families."""
    from fpemu import mx

    family = mx.NVFP4Array if mx.get_block_format(fmt).is_nvfp4 else mx.MXArray
    return family(codes, scales, fmt, axis, block_size, **fields)


@cache
def _ml_element() -> dict[str, type]:
    import ml_dtypes

    return {
        "mxfp8_e4m3": ml_dtypes.float8_e4m3fn,
        "mxfp8_e5m2": ml_dtypes.float8_e5m2,
        "mxfp6_e3m2": ml_dtypes.float6_e3m2fn,
        "mxfp6_e2m3": ml_dtypes.float6_e2m3fn,
        "mxfp4": ml_dtypes.float4_e2m1fn,
    }


class _MLElement(Mapping):
    """The ml_dtypes type of each MX float element format, read on first use."""

    def __getitem__(self, fmt: str) -> type:
        return _ml_element()[fmt]

    def __iter__(self) -> Iterator[str]:
        return iter(_ml_element())

    def __len__(self) -> int:
        return len(_ml_element())


ML_ELEMENT = _MLElement()


def block_of(values, n=32, dtype=np.float32):
    x = np.zeros(n, dtype=dtype)
    x[: len(values)] = values
    return x


def element_value(code: int, fmt: str) -> float:
    fmt = "mxfp4" if fmt == "nvfp4" else fmt
    if fmt == "mxint8":
        return (code - 256 if code > 127 else code) / 64
    return float(np.array([code], np.uint8).view(ML_ELEMENT[fmt])[0])


def e2m1(codes) -> np.ndarray:
    import ml_dtypes

    return np.asarray(codes, np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def e4m3(codes) -> np.ndarray:
    import ml_dtypes

    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def round24(fr: Fraction) -> Fraction:
    """fr rounded to 24 significant bits, ties to even, with no exponent limits: float32
    arithmetic as it would be without overflow or subnormals."""
    if fr == 0:
        return fr
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    e -= Fraction(2) ** e > abs(fr)
    q = Fraction(2) ** (e - 23)
    n, r = divmod(fr / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    return n * q
