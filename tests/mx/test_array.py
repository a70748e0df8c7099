"""Tests of the container (fpemu.mx.array): a BlockArray built from parts is checked, every
part in range or refused with a clear error (issue 9, item 4)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fpemu import mx

from mx_helpers import block_array, f32


def test_blockarray_from_parts_is_checked():
    q = mx.quantize(np.arange(40.0), "mxfp4")
    again = mx.MXArray(mx.unpack(q.pack(), "mxfp4", 40), q.scales, q.format, 0, 32)
    assert np.array_equal(again.dequantize(), q.dequantize())
    with pytest.raises(ValueError, match="do not match"):
        mx.MXArray(q.codes, q.scales[:1], q.format, 0, 32)
    with pytest.raises(TypeError):
        mx.MXArray(q.codes.astype(float), q.scales, q.format, 0, 32)



@pytest.mark.parametrize("fmt", sorted(mx.BLOCK_FORMATS))
def test_each_family_has_its_own_fields(fmt):
    """An array is built by its family's class; each holds only its own fields (issue 24)."""
    x = np.linspace(-5.0, 7.0, 64).reshape(2, 32)
    q = mx.quantize(x, fmt)
    family = mx.NVFP4Array if fmt.startswith("nvfp4") else mx.MXArray
    fields = {f.name for f in dataclasses.fields(q)}
    assert type(q) is family and isinstance(q, mx.BlockArray)
    assert fields == {"codes", "scales", "format", "axis", "block_size"} | (
        {"global_scale", "global_amax", "variant", "e4m3_max"} if family is mx.NVFP4Array else {"scale_rounding"})
    own = {f: getattr(q, f) for f in fields - {"codes", "scales", "format", "axis", "block_size"}}
    again = family(q.codes, q.scales, fmt, q.axis, q.block_size, **own)
    assert type(again) is family and np.array_equal(again.dequantize(), q.dequantize(), equal_nan=True)
    row = q.with_layout(q.codes[:1], q.scales[:1])  # a slice keeps the per-tensor fields
    assert (row.global_scale, row.global_amax, row.variant, row.scale_rounding, getattr(row, "e4m3_max", None)) == (
        q.global_scale, q.global_amax, q.variant, q.scale_rounding, getattr(q, "e4m3_max", None))
    assert np.array_equal(row.dequantize(), q.dequantize()[:1], equal_nan=True)
    other = mx.NVFP4Array if family is mx.MXArray else mx.MXArray
    with pytest.raises(ValueError, match=f"^{other.__name__} does not hold {fmt}: build {family.__name__}$"):
        other(q.codes, q.scales, fmt, q.axis, q.block_size)


def test_blockarray_is_a_base_not_a_class_to_build():
    """No one-call spelling that picks the family (0.1's metaclass): BlockArray refuses to be
    built and names the classes that are."""
    with pytest.raises(TypeError, match="build MXArray .MX formats. or NVFP4Array"):
        mx.BlockArray(np.zeros(32, np.uint8), np.full(1, 127, np.uint8), "mxfp4", 0, 32)
    assert type(mx.BlockArray).__name__ == "type"  # a plain class


def test_a_family_refuses_the_other_familys_fields_by_name():
    codes, scales = np.zeros(16, np.uint8), np.full(1, 56, np.uint8)
    with pytest.raises(TypeError, match="global_amax"):
        mx.MXArray(codes, scales, "mxfp4", 0, 16, global_amax=1.0)
    with pytest.raises(TypeError, match="scale_rounding"):
        mx.NVFP4Array(codes, scales, "nvfp4", 0, 16, global_amax=1.0, scale_rounding="floor")
    with pytest.raises(ValueError, match="a nvfp4_ue5m3 BlockArray has none"):
        mx.NVFP4Array(codes, scales, "nvfp4_ue5m3", 0, 16, variant="te")


# ---- item 4: BlockArray parts -----------------------------------------------------------------------
def test_blockarray_scale_out_of_range():
    with pytest.raises(ValueError, match="code 256 is out of range for E8M0"):
        mx.MXArray(np.zeros(4, np.uint8), np.full(1, 256), mx.get_block_format("mxfp4"), 0, 32)
    with pytest.raises(ValueError, match="code -1 is out of range"):
        mx.MXArray(np.zeros(4, np.uint8), np.full(1, -1), "mxfp4", 0, 32)
    with pytest.raises(ValueError, match="code 128 is out of range for UE4M3"):
        mx.NVFP4Array(np.zeros(4, np.uint8), np.full(1, 128), "nvfp4", 0, 16, global_amax=1.0)


@pytest.mark.parametrize("fmt, bad", [("mxfp4", 16), ("nvfp4", 16), ("mxfp6_e3m2", 64),
                                      ("mxfp6_e2m3", 255), ("mxfp8_e4m3", 256), ("mxfp8_e5m2", -1),
                                      ("mxint8", 256), ("mxint8", -129)])
def test_blockarray_element_code_out_of_range(fmt, bad):
    codes = np.zeros(4, np.int64)
    codes[2] = bad
    kw = {"global_amax": 1.0} if fmt == "nvfp4" else {}
    with pytest.raises(ValueError, match=f"code {bad} is out of range for {fmt} elements"):
        block_array(codes, np.zeros(1, np.uint8), fmt, 0, 16, **kw)


def test_blockarray_mxint8_accepts_int8_values():
    q = mx.MXArray(np.array([-128, -5, 3, 251], np.int64), np.full(1, 127), "mxint8", 0, 32)
    assert q.codes.tolist() == [0x80, 0xFB, 0x03, 0xFB]
    assert q.dequantize().tolist() == [-2.0, -5 / 64, 3 / 64, -5 / 64]


def test_blockarray_accepts_a_format_name_and_negative_axis():
    q = mx.MXArray(np.array([[1, 2], [3, 4]]), np.full((2, 1), 127), "MXFP4", -1, 32)
    assert q.format is mx.get_block_format("mxfp4") and q.axis == 1
    assert q.dequantize().tolist() == [[0.5, 1.0], [1.5, 2.0]]
    with pytest.raises(ValueError, match="unknown block format"):
        mx.MXArray(np.ones(2, np.uint8), np.ones(1, np.uint8), "mxfp5", 0, 32)
    with pytest.raises(TypeError, match="block format"):
        mx.MXArray(np.ones(2, np.uint8), np.ones(1, np.uint8), 4, 0, 32)


@pytest.mark.parametrize("bs", [0, -3, 2.5, "32", True, 2**31 + 1, (16, 0), (16, 16, 16), None])
def test_blockarray_bad_block_size(bs):
    with pytest.raises(ValueError, match="block"):
        mx.MXArray(np.ones((2, 2), np.uint8), np.ones((1, 1), np.uint8), "mxfp4", (0, 1), bs)


@pytest.mark.parametrize("axis", [2, -3, 1.0, (0, 0), (0, 1)])
def test_blockarray_bad_axis(axis):
    with pytest.raises(ValueError, match="axis|axes"):
        mx.MXArray(np.ones((2, 2), np.uint8), np.ones((2, 1), np.uint8), "mxfp4", axis, 32)


def test_blockarray_tensor_fields():
    codes, s = np.ones(4, np.uint8), np.full(1, 0x38, np.uint8)
    with pytest.raises(ValueError, match="needs global_amax"):
        mx.NVFP4Array(codes, s, "nvfp4", 0, 16)
    with pytest.raises(TypeError, match="global_scale"):
        mx.MXArray(codes, np.ones(1, np.uint8), "mxfp4", 0, 32, global_scale=1.0)
    with pytest.raises(ValueError, match="variant"):
        mx.NVFP4Array(codes, s, "nvfp4", 0, 16, global_amax=1.0, variant="cudnn")
    with pytest.raises(ValueError, match="global_scale must be"):
        mx.NVFP4Array(codes, s, "nvfp4", 0, 16, global_scale=float("inf"), variant="torchao")
    with pytest.raises(ValueError, match="global_amax must be"):
        mx.NVFP4Array(codes, s, "nvfp4", 0, 16, global_amax=-1.0)
    q = mx.NVFP4Array(codes, s, "nvfp4", 0, 16, global_amax=2688.0)
    assert q.variant == "te" and q.global_scale == f32(1) / (f32(2688) / f32(2688))
    assert q.dequantize().tolist() == [0.5 * 1.0] * 4  # code 1 = 0.5, scale 0x38 = 1.0
    t = mx.NVFP4Array(codes, s, "nvfp4", 0, 16, global_scale=0.25, variant="torchao")
    assert t.dequantize().tolist() == [0.125] * 4


# ---- issue 42, item 8: codes and scales cannot be written ------------------------------------------
@pytest.mark.parametrize("fmt", sorted(mx.BLOCK_FORMATS))
def test_codes_and_scales_are_read_only(fmt):
    """Writing a code out of range (then dequantize raised IndexError) cannot happen: the
    arrays of every block array, quantized, sliced or built from parts, are read-only."""
    q = mx.quantize(np.linspace(-5.0, 7.0, 64).reshape(2, 32), fmt)
    row = q.with_layout(q.codes[:1], q.scales[:1])
    own = {f.name: getattr(q, f.name) for f in dataclasses.fields(q)}
    again = type(q)(**{**own, "codes": q.codes.copy(), "scales": q.scales.copy()})
    for a in (q, row, again):
        for part in (a.codes, a.scales):
            with pytest.raises(ValueError, match="read-only"):
                part[(0,) * part.ndim] = 99


def test_the_callers_arrays_stay_writable_and_unchanged():
    codes, scales = np.arange(32, dtype=np.uint8) % 16, np.full(1, 127, np.uint8)
    q = mx.MXArray(codes, scales, "mxfp4", 0, 32)
    assert codes.flags.writeable and scales.flags.writeable
    codes[0] = 15  # the caller's array is theirs: the block array holds a copy
    assert q.codes[0] == 0 and q.dequantize()[0] == 0.0
    fixed = codes.copy()
    fixed.flags.writeable = False
    assert mx.MXArray(fixed, scales, "mxfp4", 0, 32).codes is fixed  # read-only: taken as it is


def test_out_of_range_codes_are_refused_by_name_on_the_way_in():
    with pytest.raises(ValueError, match="BlockArray.codes: code 99 is out of range for mxfp4 elements"):
        mx.MXArray(np.array([99] + [0] * 31), np.full(1, 127, np.uint8), "mxfp4", 0, 32)
