"""explain: how one number is encoded, in plain words (for people learning formats)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..formats import Format, get_format
from .decoder import decode
from .encoder import encode
from .options import _options


def _classify(code: int, fmt: Format) -> str:
    value = float(decode(np.array([code]), fmt)[0])
    mag = (code >> fmt.code_shift) & fmt.top_code
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf"
    if value == 0:
        return "zero"
    if fmt.subnormals and (mag >> fmt.mantissa_bits) == 0:
        return "subnormal"
    return "normal"


def explain(
    x: float,
    fmt: str | Format,
    *,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    nan: str | None = None,
    color: bool = False,
) -> str:
    """Describe in plain words how one number is encoded: fields, class, value and error.

    >>> print(explain(0.3, "e4m3"))
    0.3 in e4m3 (rounding nearest_even, overflow nan)
      code      0x2A = 0 0101 010
      sign      0 -> +
      exponent  0101 = 5, minus bias 7 -> 2^-2
      mantissa  010 -> 1 + 2/8 = 1.25 (normal)
      value     0.3125
      error     +0.0125 (relative +4.17%)
    """
    fmt = get_format(fmt)
    opts = _options(fmt, rounding, overflow, nan)
    arr = np.asarray(x)
    if arr.ndim != 0:
        raise ValueError("explain takes a single number")
    code = int(encode(arr, fmt, rounding=rounding, overflow=overflow, nan=nan))
    value = float(decode(np.array([code], dtype=fmt.code_dtype), fmt)[0])
    cls = _classify(code, fmt)
    raw = code >> fmt.code_shift
    M, E = fmt.mantissa_bits, fmt.exponent_bits
    sign_bit = (raw >> (E + M)) & 1 if fmt.signed else None
    efield = (raw >> M) & ((1 << E) - 1)
    frac = raw & ((1 << M) - 1)
    ebits = format(efield, f"0{E}b")
    mbits = format(frac, f"0{M}b") if M else ""

    def paint(text: str, ansi: str) -> str:
        return f"\033[{ansi}m{text}\033[0m" if color and text else text

    fields = [paint(str(sign_bit), "31")] if fmt.signed else []
    fields += [paint(ebits, "32")] + ([paint(mbits, "34")] if M else [])
    width = (fmt.storage_bits + 3) // 4
    lines = [f"{float(arr)!r} in {fmt.name} (rounding {opts.rounding}, overflow {opts.overflow})"]
    lines.append(f"  code      0x{code:0{width}X} = {' '.join(fields)}")
    if fmt.signed:
        lines.append(f"  sign      {sign_bit} -> {'-' if sign_bit else '+'}")
    if cls in ("normal", "subnormal"):
        if cls == "subnormal":
            lines.append(f"  exponent  {ebits} = 0 (subnormal) -> 2^{fmt.emin}")
            lead = 0
        else:
            lines.append(f"  exponent  {ebits} = {efield}, minus bias {fmt.bias} -> 2^{efield - fmt.bias}")
            lead = 1
        if M:
            lines.append(f"  mantissa  {mbits} -> {lead} + {frac}/{1 << M} = {lead + frac / (1 << M):g} ({cls})")
        else:
            lines.append(f"  mantissa  (none) -> {lead} ({cls})")
    else:
        lines.append(f"  class     {cls}")
    lines.append(f"  value     {value!r}")
    xf = float(arr)
    if np.isfinite(xf) and np.isfinite(value):
        err = Fraction(value) - Fraction(xf)
        rel = f" (relative {float(err / Fraction(xf)) * 100:+.3g}%)" if xf != 0 else ""
        lines.append(f"  error     {float(err):+.6g}{rel}")
    elif not np.isnan(xf) and not np.isfinite(value):
        lines.append(f"  error     {_why_not_finite(xf, fmt)}")
    return "\n".join(lines)


def _why_not_finite(x: float, fmt: Format) -> str:
    """Why a number that is not NaN got a NaN or Inf code (for explain)."""
    if x == 0 and not fmt.subnormals:
        return "no code: the format has no zero"
    if not fmt.signed and x < 0:
        return "no code: the format is unsigned, it has no negative values"
    if np.isinf(x):
        return "Inf input" + ("" if fmt.has_inf else ": the format has no Inf")
    return "overflow: the value is beyond the format's largest finite value"
