"""Other libraries' arrays: torch tensors of every low-precision dtype read by their bits,
ml_dtypes arrays, DLPack objects, and codes handed back to both libraries bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.codec.foreign import to_ml_dtypes, to_torch

ALL_CODES = {"e4m3": np.arange(256), "e5m2": np.arange(256), "e4m3fnuz": np.arange(256),
             "e5m2fnuz": np.arange(256), "e8m0": np.arange(256), "bf16": np.arange(1 << 16),
             "e2m1": np.arange(16)}  # fmt: skip


@pytest.mark.parametrize("name", list(ALL_CODES))
def test_torch_tensors_are_read_by_their_bits(name):
    torch = pytest.importorskip("torch")
    fmt = fpemu.get_format(name)
    codes = ALL_CODES[name].astype(fmt.code_dtype)
    if name == "e2m1":
        codes = np.concatenate([codes, codes[::-1]])  # pairs: every code in both nibbles
    t = to_torch(codes, name)
    assert "float" in str(t.dtype)
    # decode takes the tensor as codes of its own format, by its bits (NaN payloads included)
    want = fpemu.decode(codes, name)
    assert np.array_equal(fpemu.decode(t, name), want, equal_nan=True)
    # encode/quantize read it as the values it holds
    finite = np.isfinite(want)
    same = fpemu.encode(t, name)[finite] == codes[finite]
    zero = want[finite] == 0
    assert np.all(same | zero)  # -0 of the FNUZ-free formats may come back as +0's code
    # torch agrees on the values where it can widen to float32 itself
    if name != "e2m1":
        with np.errstate(invalid="ignore"):
            theirs = t.to(torch.float32).numpy().astype(np.float64)
        assert np.array_equal(theirs[finite], want[finite])


def test_a_tensor_is_not_read_as_another_format():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0]).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="these are e4m3 codes"):
        fpemu.decode(t, "e5m2")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16"])
def test_torch_float_tensors_encode_like_numpy(dtype):
    torch = pytest.importorskip("torch")
    x = np.linspace(-3, 3, 101)
    t = torch.tensor(x).to(getattr(torch, dtype))
    values = t.to(torch.float64).numpy()
    assert fpemu.encode(t, "e4m3").tolist() == fpemu.encode(values, "e4m3").tolist()
    assert fpemu.quantize(t, "e2m1").tolist() == fpemu.quantize(values.astype(np.float32), "e2m1").tolist()


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "bf16", "e8m0", "e2m1", "e3m2", "fp16"])
def test_ml_dtypes_arrays_in_and_out(name):
    pytest.importorskip("ml_dtypes")
    fmt = fpemu.get_format(name)
    codes = np.arange(min(fmt.num_codes, 1 << 16)).astype(fmt.code_dtype)
    arr = to_ml_dtypes(codes, name)
    assert arr.view(fmt.code_dtype).tolist() == codes.tolist()
    if name != "fp16":  # numpy's own float16 arrays are values, not codes
        assert np.array_equal(fpemu.decode(arr, name), fpemu.decode(codes, name), equal_nan=True)
    with np.errstate(invalid="ignore"):
        theirs = arr.astype(np.float64)
    assert np.array_equal(theirs, fpemu.decode(codes, name), equal_nan=True)


def test_dlpack_objects():
    class OnlyDlpack:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x = np.array([0.3, -1.5, 448.0])
    assert fpemu.encode(OnlyDlpack(x), "e4m3").tolist() == fpemu.encode(x, "e4m3").tolist()


def test_helpers_refuse_what_has_no_equivalent():
    with pytest.raises(ValueError, match="ml_dtypes has no ue4m3"):
        to_ml_dtypes([1], "ue4m3")
    with pytest.raises(TypeError, match="integer codes"):
        to_ml_dtypes([1.0], "e4m3")
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="last dimension must be even"):
        to_torch([1, 2, 3], "e2m1")
    with pytest.raises(ValueError, match="torch has no dtype for e3m2"):
        to_torch([1], "e3m2")


def _message(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


# ---- codes out of range handed to to_ml_dtypes / to_torch ----
BAD_CODES = [
    (np.array([56, 300, -1]), "e4m3"),  # 300 wrapped to 0x2C, -1 to 0xFF
    (np.array([-1, 56]), "e4m3"),
    ([16], "e2m1"),  # read as -0
    ([0x1FFFF], "bf16"),  # read as NaN
    (np.array([1 << 16], np.int64), "fp16"),
]


# (a regression of argument handling: it failed on the code before its fix, deac082)
@pytest.mark.parametrize("codes, fmt", BAD_CODES)
def test_to_ml_dtypes_refuses_codes_out_of_range_as_decode_does(codes, fmt):
    pytest.importorskip("ml_dtypes")
    expected = _message(lambda: fpemu.decode(codes, fmt))
    assert _message(lambda: fpemu.to_ml_dtypes(codes, fmt)) == expected
    assert "out of range" in expected


# (a regression of argument handling: it failed on the code before its fix, deac082)
@pytest.mark.parametrize("codes, fmt", BAD_CODES)
def test_to_torch_refuses_codes_out_of_range_as_decode_does(codes, fmt):
    pytest.importorskip("torch")
    expected = _message(lambda: fpemu.decode(codes, fmt))
    assert _message(lambda: fpemu.to_torch(codes if fmt != "e2m1" else [16, 0], fmt)) == expected


# (a regression of argument handling: it failed on the code before its fix, deac082)
def test_exports_still_take_every_code_and_leave_the_input_alone():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    codes = np.arange(16, dtype=np.int64)
    before = codes.copy()
    out = fpemu.to_ml_dtypes(codes, "e2m1")
    assert out.dtype == ml_dtypes.float4_e2m1fn
    np.testing.assert_array_equal(out.astype(np.float64), fpemu.decode(codes, "e2m1"))
    np.testing.assert_array_equal(codes, before)
    full = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(fpemu.to_ml_dtypes(full, "e4m3").view(np.uint8), full)
