"""Human-readable tables of formats and codes (used by the CLI and docs/formats.md).

>>> print(code_table("e2m1").splitlines()[3])
0x1   0 00 1         0.5  subnormal
"""

from __future__ import annotations

import numpy as np

from .codec import decode
from .codec import exact_decimal
from .formats import FORMATS, Format, get_format

__all__ = ["format_table", "code_table"]


def _decimal(v: float) -> str:
    """A format's largest value, in 8 significant digits (the max column)."""
    return f"{v:.8g}"


def _power_of_two(v: float) -> str:
    """A power of two as ``2^k``: the smallest normal and subnormal values and the epsilon of
    every format are powers of two, so their columns hold one style throughout.

    >>> _power_of_two(0.015625), _power_of_two(1.0)
    ('2^-6', '2^0')
    """
    mant, exp = np.frexp(v)
    return f"2^{exp - 1}" if mant == 0.5 else _decimal(v)  # (every registered format's is one)


def _specials(fmt: Format) -> tuple[str, str]:
    shift = fmt.code_shift
    top = f"0x{fmt.top_code << shift:X}" + (f"/0x{(fmt.top_code | fmt.sign_mask) << shift:X}" if fmt.signed else "")
    below = f"0x{(fmt.top_code - 1) << shift:X}"
    inf = {"none": "none", "ieee": "exp all ones, man 0", "top": top, "below_nan": below}[fmt.inf]
    nan = {
        "none": "none",
        "ieee": "exp all ones, man != 0",
        "top": top,
        "neg_zero": f"0x{fmt.sign_mask << shift:X} (no -0)",
    }[fmt.nan]
    return inf, nan


def format_table(markdown: bool = False) -> str:
    """One row per registered format: bits, exponent/mantissa, bias, range, Inf/NaN."""
    head = ["name", "bits", "exp/man", "bias", "max", "min normal", "min subnormal", "eps", "Inf", "NaN"]
    rows = []
    for fmt in FORMATS.values():
        inf, nan = _specials(fmt)
        sub = _power_of_two(fmt.min_subnormal) if fmt.subnormals and fmt.mantissa_bits and fmt.max_code else "none"
        normal = _power_of_two(fmt.min_normal) if fmt.has_normals else "none"
        bits = f"{fmt.bits}" + (f" in {fmt.container_bits}" if fmt.container_bits else "")
        bits += "" if fmt.signed else " (unsigned)"
        bits += " (two's compl.)" if fmt.twos_complement else ""
        rows.append([fmt.name, bits, f"{fmt.exponent_bits}/{fmt.mantissa_bits}", str(fmt.bias),
                     _decimal(fmt.max), normal, sub, _power_of_two(fmt.eps), inf, nan])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt_row = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt_row.format(*r).rstrip() for r in [head] + rows)  # no trailing spaces


def _value_text(v: float) -> str:
    """A value of a code table: 0, -0, inf, nan, an integer, or its whole decimal where that
    is short, else repr (which reads back as it)."""
    if v == 0 or not np.isfinite(v) or (v.is_integer() and abs(v) < 1e16):
        return f"{v:g}" if not v.is_integer() or v == 0 else str(int(v))
    whole = exact_decimal(v)
    return whole if len(whole) <= 24 else repr(v)


def code_table(fmt: str | Format) -> str:
    """Every code of a format of at most 8 bits, with its bit fields, value and class. A value
    is its whole decimal where that takes at most 24 characters, else the shortest decimal
    that reads back as it (``repr``: E8M0's far powers of two), its column as wide as the
    widest.

    >>> for line in code_table("e5m2").splitlines()[1:4]: print(line)
    code   bits                      value  class
    0x00   0 00000 00                    0  zero
    0x01   0 00000 01   0.0000152587890625  subnormal
    """
    fmt = get_format(fmt)
    if fmt.bits > 8:
        raise ValueError(f"table lists formats of at most 8 bits; {fmt.name} has {fmt.bits}")
    codes = np.arange(1 << fmt.bits, dtype=np.uint8)
    values = decode(codes << np.uint8(fmt.code_shift), fmt)  # stored left-aligned in a container
    digits = (fmt.bits + 3) // 4
    E, M = fmt.exponent_bits, fmt.mantissa_bits
    texts = [_value_text(v) for v in values.tolist()]
    width = max(10, *map(len, texts))
    lines = [f"{fmt.name}: {1 << fmt.bits} codes", f"{'code':<{digits + 5}}{'bits':<{fmt.bits + 4}}{'value':>{width}}  class"]
    for code, value, text in zip(codes.tolist(), values.tolist(), texts):
        mag = code & fmt.top_code
        fields = ([str(code >> (E + M))] if fmt.signed else []) + ([format(mag >> M, f"0{E}b")] if E else [])
        fields += [format(mag & ((1 << M) - 1), f"0{M}b")] if M else []
        if np.isnan(value):
            cls = "nan"
        elif np.isinf(value):
            cls = "inf"
        elif value == 0:
            cls = "zero"
        elif not E:
            cls = "fixed"  # no exponent field: every code is a multiple of one step
        elif fmt.subnormals and mag >> M == 0:
            cls = "subnormal"
        else:
            cls = "normal"
        lines.append(f"0x{code:0{digits}X}{'':<3}{' '.join(fields):<{fmt.bits + 4}}{text:>{width}}  {cls}")
    return "\n".join(lines)
