"""The explorer's views of many codes at once: one number rounded into several formats side by
side, and the printable table of every code of a small format; each value from fpemu's codec,
through :func:`~fpemu.teach.api.encode_number` and :func:`fpemu.decode`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codec import decode
from ..codec import fraction_float
from .api import code_bits, code_class, code_hex, encode_number, exact_text
from .options import COMPARED, TABLE_BITS, format_fields, format_from_spec, format_summary
from .plot_text import short_exact
from .rules import number_text, parse_exact

__all__ = ["compare_formats", "table_payload"]


def compare_formats(text: Any, formats: Any = COMPARED, rounding: str = "nearest_even", seed: Any = 0,
                    sr_bits: Any = None) -> dict[str, Any]:
    """One number rounded into several formats, side by side (each with its own overflow and
    NaN rules): a row per format with :func:`encode_number`'s code, value, error and rules, or
    ``error``, that format's refusal in one line (NaN into E2M1, ``ml_dtypes_e8m0`` outside
    E8M0, an unknown name).

    >>> c = compare_formats("0.1", ["fp32", "bf16", "e2m1", "nosuch"])
    >>> [(r["format"], r.get("code"), r.get("value_exact")) for r in c["rows"][:3]]
    [('fp32', '0x3DCCCCCD', '0.100000001490116119384765625'), ('bf16', '0x3DCD', '0.10009765625'), ('e2m1', '0x00', '0.0')]
    >>> c["rows"][3]["error"][:24]
    "unknown format 'nosuch';"
    """
    if isinstance(formats, str):
        formats = [f for f in formats.replace(" ", ",").split(",") if f]
    if not isinstance(formats, (list, tuple)) or not formats:
        raise ValueError("name one format or more to compare (fp32, bf16, e4m3 ...)")
    if len(formats) > 12:
        raise ValueError(f"the side-by-side view takes up to 12 formats, got {len(formats)}")
    x = parse_exact(text)  # (a number that cannot be read is one error, not one per row)
    rows = []
    for name in formats:
        try:
            e = encode_number(name, text, rounding, seed=seed, sr_bits=sr_bits)
        except (ValueError, TypeError) as exc:
            rows.append({"format": str(name), "error": str(exc).strip().splitlines()[0]})
            continue
        rows.append({"format": e["format"]["name"], "bits_count": e["format"]["bits"], "code": e["code"],
                     "integer": e["integer"], "bits": " ".join(f["bits"] for f in e["fields"]), "class": e["class"],
                     "value": e["value"], "value_exact": e["value_exact"], "error_exact": e["error_exact"],
                     "relative_error_exact": e["relative_error_exact"], "rules": [r["rule"] for r in e["rules"]],
                     "rule_texts": [r["text"] for r in e["rules"]]})
    return {"input": text.strip() if isinstance(text, str) else number_text(fraction_float(x)),
            "rounding": rounding, "rows": rows}


def table_payload(fmt: Any) -> dict[str, Any]:
    """Every code of a format of at most 8 bits, for the page's printable table: a grid of
    2^ceil(b/2) columns (the low bits) by 2^floor(b/2) rows (the high bits); each cell the
    code, its value in few characters, exactly (:func:`~fpemu.teach.plot_text.short_exact`),
    its whole decimal and its class.

    >>> t = table_payload("e2m1")
    >>> t["columns"], t["rows"][0]["cells"][1]["value"], t["rows"][3]["cells"][3]["value"]
    (4, '0.5', '-6')
    """
    fmt = format_from_spec(fmt)
    if fmt.bits > TABLE_BITS:
        raise ValueError(f"the printable table lists every code of a format of at most {TABLE_BITS} bits (256 codes "
                         f"on one page); {fmt.name} has {fmt.bits} bits ({fmt.num_codes:,} codes)")
    codes = np.arange(fmt.num_codes, dtype=np.uint64) << np.uint64(fmt.code_shift)
    values = decode(codes.astype(fmt.code_dtype), fmt).tolist()
    M, E = fmt.mantissa_bits, fmt.exponent_bits
    columns = 1 << ((fmt.bits + 1) // 2)
    rows = []
    for start in range(0, fmt.num_codes, columns):
        cells = []
        for raw in range(start, start + columns):
            v = values[raw]
            code = raw << fmt.code_shift
            cells.append({"code": code_hex(fmt, code), "bits": code_bits(fmt, code), "value": short_exact(v),
                          "exact": exact_text(v), "class": code_class(fmt, v, (raw >> M) & ((1 << E) - 1))})
        rows.append({"head": code_hex(fmt, start << fmt.code_shift), "cells": cells})
    return {"format": format_fields(fmt), "columns": columns, "column_heads": [f"+{c:X}" for c in range(columns)],
            "rows": rows, "summary": format_summary(fmt)}
