"""The prefix_directed path (bf16/tf32 under toward-zero, up, down, odd and nearest-away, any
overflow rule and NaN policy) gives the generic kernel's codes bit for bit: every float32
pattern whose low half decides a bf16 rounding (every top half with the low halves 0, 1, just
below, at and just above the tie, all ones: float32 subnormals, the largest values, Inf and
NaN payloads among them), the same near tf32's ties, and float64 values just off them."""

from __future__ import annotations

import numpy as np
import pytest

from fpemu.codec.dispatch import encode_flat, encode_path
from fpemu.codec.fast.prefix_rne import PREFIX_DIRECTED
from fpemu.codec.generic_kernel import encode_generic
from fpemu.codec.options import Conversion
from fpemu.formats import get_format

LOW_HALVES = (0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF)


def bf16_neighbourhood() -> np.ndarray:
    """Every float32 top half with each low half of LOW_HALVES."""
    top = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    return (top[:, None] | np.uint32(LOW_HALVES)).reshape(-1).view(np.float32)


def tf32_neighbourhood() -> np.ndarray:
    """float32 patterns around tf32's ties (13 dropped bits) in a spread of binades, both signs."""
    rng = np.random.default_rng(5)
    top = rng.integers(0, 1 << 19, 30_000, dtype=np.uint32) << np.uint32(13)
    top = np.concatenate([top, np.arange(0x7F7F0000 >> 13, (0x7F800000 >> 13) + 2, dtype=np.uint32) << np.uint32(13)])
    low = np.uint32([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF])
    u = (top[:, None] | low).reshape(-1)
    return np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)


def check(x, fmt, opts):
    assert encode_path(fmt, opts, x.dtype) == "prefix_directed", (fmt.name, opts, x.dtype)
    got = encode_flat(x, fmt, opts, "prefix_directed")
    want = encode_generic(x, fmt, opts).astype(fmt.code_dtype)
    want = want << fmt.code_dtype.type(fmt.code_shift) if fmt.code_shift else want
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (fmt.name, opts, x.dtype, x[bad[:3]], got[bad[:3]], want[bad[:3]])


@pytest.mark.parametrize("name", ["bf16", "tf32"])
@pytest.mark.parametrize("rounding", PREFIX_DIRECTED)
def test_prefix_directed_is_the_generic_kernel_near_every_decision(name, rounding):
    fmt = get_format(name)
    x32 = bf16_neighbourhood() if name == "bf16" else tf32_neighbourhood()
    with np.errstate(invalid="ignore"):  # (signalling NaN patterns widen quietly)
        wide = x32.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # (Inf, NaN: on purpose)
        x64 = np.concatenate([wide, wide * (1 + 2.0**-40), wide * (1 - 2.0**-40)])
    for overflow, nan in ((None, None), ("saturate", "all_ones"), ("sat_none", "payload"), ("nan", "quiet_payload")):
        opts = Conversion(rounding, overflow, nan).resolved(fmt)
        check(x32, fmt, opts)
        check(x64, fmt, opts)
    check(np.arange(1 << 16, dtype=np.uint16).view(np.float16), fmt, Conversion(rounding).resolved(fmt))
