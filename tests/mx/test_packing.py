"""Tests of FP4/FP6 packing (fpemu.mx.packing): bit orders, round trips, parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fpemu import mx


def test_fp4_nibble_order_matches_torch_float4_e2m1fn_x2():
    # PyTorch's float4_e2m1fn_x2 (and torchao pack_uint4, cuBLAS): element 2i in the low nibble.
    assert mx.pack_codes([0x1, 0x7, 0xA, 0x3], 4).tolist() == [0x71, 0x3A]


def test_fp6_bit_order():
    # little-endian bit stream: c0 in bits 0-5, c1 in bits 6-11, ... (rocRoller getFp6)
    codes = [0b101010, 0b110011, 0b000111, 0b111000]
    stream = sum(c << (6 * i) for i, c in enumerate(codes))
    assert mx.pack_codes(codes, 6).tolist() == list(stream.to_bytes(3, "little"))


@pytest.mark.parametrize("bits", [4, 6, 8])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_pack_round_trip(bits, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=9))
    codes = data.draw(hnp.arrays(np.uint8, shape, elements=st.integers(0, (1 << bits) - 1)))
    packed = mx.pack_codes(codes, bits)
    group = {4: 2, 6: 4, 8: 1}[bits]
    assert packed.shape[-1] == -(-shape[-1] // group) * {4: 1, 6: 3, 8: 1}[bits]
    assert np.array_equal(mx.unpack_codes(packed, bits, shape[-1]), codes)


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp6_e3m2", "mxfp8_e5m2", "nvfp4"])
def test_blockarray_pack_and_unpack(fmt):
    x = np.random.default_rng(5).standard_normal((3, 37)).astype(np.float32)
    q = mx.quantize(x, fmt)
    assert np.array_equal(mx.unpack(q.pack(), fmt, 37), q.codes)
    with pytest.raises(ValueError):
        mx.pack_codes([16], 4)


def test_pack_and_unpack_parameters():
    with pytest.raises(ValueError, match="bits must be"):
        mx.pack_codes([1, 2], 4.0)
    with pytest.raises(ValueError, match="bits must be"):
        mx.unpack_codes([1, 2], 5)
    for bad in (2.5, -1, 5, True):
        with pytest.raises(ValueError, match="length"):
            mx.unpack_codes([1, 2], 4, bad)
    assert mx.unpack_codes([0x21, 0x0F], 4, 3).tolist() == [1, 2, 15]
