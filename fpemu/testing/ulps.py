"""Bit and ulp assertions for kernel tests, in the style of ``numpy.testing``: compare a
kernel's output with fpemu's golden answer bit for bit, or within a number of units in the
last place, and on failure say which elements differ, how, and why (with :func:`fpemu.explain`).

Both arguments may be codes (integers), values (floats of the format), ml_dtypes arrays or
torch tensors (low-precision dtypes read by their bits).

>>> import numpy as np, fpemu
>>> golden = fpemu.encode([0.3, 1.0, 500.0], "e4m3", overflow="saturate")
>>> assert_bits_equal([0.3125, 1.0, 448.0], golden, "e4m3")
>>> assert_bits_equal([0.3125, 1.0, 384.0], golden, "e4m3")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: 1 of 3 elements differ in e4m3 (largest distance 2 ulps)
  [2]: actual 0x7C = 384.0, expected 0x7E = 448.0 (2 ulps below)
expected element [2]:
  448.0 in e4m3 (rounding nearest_even, overflow nan)
    code      0x7E = 0 1111 110
...
>>> assert_ulp_close([0.3125, 1.0, 384.0], golden, "e4m3", ulps=2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import is_whole
from ..codec import decode, encode, explain
from ..codec import foreign_codes, is_torch
from ..formats import Format, get_format

__all__ = ["assert_bits_equal", "assert_ulp_close", "as_codes", "ulp_distance"]

_SHOWN = 5  # mismatches listed in a failure message


def as_codes(x: Any, fmt: str | Format) -> np.ndarray:
    """Codes of ``fmt`` from codes, from values of the format (each must be one), from an
    ml_dtypes array or a torch tensor of that format (by its bits).

    >>> as_codes([1.0, -0.5], "e2m1").tolist()
    [2, 9]
    """
    fmt = get_format(fmt)
    coded = foreign_codes(x)
    if coded is not None:
        codes, held = coded
        if held != fmt:
            raise ValueError(f"an array of {held.name} codes compared as {fmt.name}")
        return codes.astype(fmt.code_dtype)
    arr = x.detach().cpu().numpy() if is_torch(x) else np.asarray(x)
    if arr.dtype.kind in "iu":
        decode(arr, fmt)  # range check
        return arr.astype(fmt.code_dtype)
    if arr.dtype.kind != "f":
        raise TypeError(f"expected codes or values of {fmt.name}, got {arr.dtype}")
    codes = encode(arr, fmt, rounding="nearest_even", nan=None if fmt.has_nan else "zero")
    with np.errstate(invalid="ignore"):
        back = decode(codes, fmt)
        inexact = ~((back == arr) | (np.isnan(back) & np.isnan(arr)))
    if inexact.any():
        i = int(np.flatnonzero(inexact.reshape(-1))[0])
        raise ValueError(f"{int(inexact.sum())} values are not values of {fmt.name}, e.g. element "
                         f"{i}: {arr.reshape(-1)[i]!r} (pass codes, or values fpemu.quantize gave)")
    return codes


def ulp_distance(a: Any, b: Any, fmt: str | Format) -> np.ndarray:
    """Steps between codes a and b along the format's ordered values (0 for +0 and -0, and for
    two NaNs; a NaN against a number is infinitely far: ``inf``).

    >>> ulp_distance([0x38, 0x80], [0x3A, 0x00], "e4m3").tolist()
    [2.0, 0.0]
    """
    fmt = get_format(fmt)
    ka, kb = _ordinal(as_codes(a, fmt), fmt), _ordinal(as_codes(b, fmt), fmt)
    va, vb = decode(as_codes(a, fmt), fmt), decode(as_codes(b, fmt), fmt)
    dist = np.abs(ka - kb).astype(np.float64)
    nan_a, nan_b = np.isnan(va), np.isnan(vb)
    return np.where(nan_a & nan_b, 0.0, np.where(nan_a | nan_b, np.inf, dist))


def _ordinal(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """A signed integer that orders the finite codes by value (-0 and +0 both 0)."""
    c = codes.astype(np.int64) >> fmt.code_shift
    if fmt.twos_complement:
        width = 1 << (fmt.mantissa_bits + 1)
        return np.where(c >= width // 2, c - width, c)
    mag = c & fmt.top_code
    if fmt.subnormals:
        return np.where((c & fmt.sign_mask) != 0, -mag, mag)
    # Zero-less (E8M0): codes 0.. are the values from the smallest up, a negative copy below.
    return np.where((c & fmt.sign_mask) != 0, -mag - 1, mag)


def assert_bits_equal(actual: Any, expected: Any, fmt: str | Format, *, err_msg: str = "") -> None:
    """Assert the same code everywhere (any NaN code matches a NaN code of the same sign rule:
    codes are compared exactly, NaN payloads included)."""
    _assert_close(actual, expected, fmt, 0, err_msg, exact=True)


def assert_ulp_close(actual: Any, expected: Any, fmt: str | Format, *, ulps: int = 1, err_msg: str = "") -> None:
    """Assert every element within ``ulps`` steps of the format's values (NaN only where NaN)."""
    if not is_whole(ulps) or ulps < 0:
        raise ValueError(f"ulps must be a whole number >= 0, got {ulps!r}")
    _assert_close(actual, expected, fmt, int(ulps), err_msg, exact=False)


def _assert_close(actual, expected, fmt, ulps: int, err_msg: str, exact: bool) -> None:
    fmt = get_format(fmt)
    a, e = as_codes(actual, fmt), as_codes(expected, fmt)
    if a.shape != e.shape:
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    dist = ulp_distance(a, e, fmt)
    bad = (a != e) if exact else (dist > ulps)
    if not bad.any():
        return
    raise AssertionError(_report(a, e, dist, bad, fmt, ulps, exact, err_msg))


def _report(a, e, dist, bad, fmt: Format, ulps: int, exact: bool, err_msg: str) -> str:
    idx = np.argwhere(bad)
    worst = dist[bad].max()
    worst_text = "a NaN mismatch" if np.isinf(worst) else f"{worst:g} ulps"
    head = f"{idx.shape[0]} of {a.size} elements differ in {fmt.name} (largest distance {worst_text})"
    if not exact:
        head += f"; allowed {ulps} ulps"
    lines = [f"{err_msg}: {head}" if err_msg else head]
    width = (fmt.storage_bits + 3) // 4
    va, ve = decode(a, fmt), decode(e, fmt)
    order = _ordinal(a, fmt) - _ordinal(e, fmt)
    for where in idx[:_SHOWN]:
        w = tuple(int(i) for i in where)
        d = dist[w]
        side = "" if np.isinf(d) or d == 0 else f" ({d:g} ulps {'above' if order[w] > 0 else 'below'})"
        lines.append(f"  {list(w)}: actual 0x{int(a[w]):0{width}X} = {float(va[w])!r}, "
                     f"expected 0x{int(e[w]):0{width}X} = {float(ve[w])!r}{side}")
    if idx.shape[0] > _SHOWN:
        lines.append(f"  ... and {idx.shape[0] - _SHOWN} more")
    first = tuple(int(i) for i in idx[0])
    if np.isfinite(ve[first]):
        lines.append(f"expected element {list(first)}:")
        lines += ["  " + line for line in explain(float(ve[first]), fmt).splitlines()]
    return "\n".join(lines)
