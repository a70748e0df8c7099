"""``returns=``: results in the caller's array type (fpemu/codec/returns.py), bit for bit the
NumPy results, for torch tensors and ml_dtypes arrays; bad values refused."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import fpemu
import fpemu.testing

X = np.array([[0.1, -2.5, 300.0, 1e-6], [7.0, -0.0, 0.33, 1000.0]], dtype=np.float32)


def test_numpy_stays_numpy():
    for returns in ("numpy", "input"):
        codes = fpemu.encode(X, "e4m3", returns=returns)
        assert type(codes) is np.ndarray and codes.dtype == np.uint8
        assert np.array_equal(codes, fpemu.encode(X, "e4m3"))


def test_bad_returns_are_refused():
    with pytest.raises(ValueError, match="unknown returns 'tensor'; choose one of numpy, input, torch, ml_dtypes"):
        fpemu.encode(X, "e4m3", returns="tensor")
    for fn in (lambda: fpemu.decode([1], "e4m3", returns=1), lambda: fpemu.quantize(X, "bf16", returns=None),
               lambda: fpemu.gemm(X, X.T, inputs="fp16", accumulator="a100", returns="jax")):
        with pytest.raises(ValueError, match="unknown returns"):
            fn()
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="Dask"):
        fpemu.encode(da.from_array(X), "e4m3", returns="torch")


@pytest.mark.parametrize("fmt, dtype", [("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2"), ("bf16", "bfloat16"),
                                        ("e4m3fnuz", "float8_e4m3fnuz"), ("fp16", "float16")])
def test_torch_in_torch_out(fmt, dtype):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(X)
    codes = fpemu.encode(t, fmt, returns="input", overflow="saturate")
    assert isinstance(codes, torch.Tensor) and codes.dtype == getattr(torch, dtype) and codes.device == t.device
    want = fpemu.encode(X, fmt, overflow="saturate")
    assert np.array_equal(fpemu.testing.as_codes(codes, fmt), want)  # read back by its bits
    values = fpemu.decode(torch.from_numpy(want), fmt, returns="input")
    assert isinstance(values, torch.Tensor) and values.dtype == torch.float64
    assert np.array_equal(values.numpy(), fpemu.decode(want, fmt), equal_nan=True)
    q = fpemu.quantize(t, fmt, returns="input", overflow="saturate")
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float32
    assert np.array_equal(q.numpy(), fpemu.quantize(X, fmt, overflow="saturate"), equal_nan=True)


def test_torch_codes_without_a_torch_dtype_are_integers():
    torch = pytest.importorskip("torch")
    for fmt in ("e2m1", "e3m2", "binary8p3se"):
        codes = fpemu.encode(np.abs(X) % 6, fmt, returns="torch")
        assert codes.dtype == torch.uint8
        assert np.array_equal(codes.numpy(), fpemu.encode(np.abs(X) % 6, fmt))


def test_gemm_and_dot_give_back_tensors():
    torch = pytest.importorskip("torch")
    a, b = torch.from_numpy(X), torch.from_numpy(X.T.copy())
    g = fpemu.gemm(a, b, inputs="bf16", accumulator="a100", returns="input")
    assert isinstance(g, torch.Tensor) and g.dtype == torch.float32
    assert np.array_equal(g.numpy(), fpemu.gemm(X, X.T, inputs="bf16", accumulator="a100"))
    d = fpemu.dot(a, a, inputs="fp16", accumulator="h100", returns="torch")
    assert np.array_equal(d.numpy(), fpemu.dot(X, X, inputs="fp16", accumulator="h100"))
    assert type(fpemu.gemm(X, X.T, inputs="bf16", accumulator="a100", returns="input")) is np.ndarray


def test_ml_dtypes_in_ml_dtypes_out():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = X.astype(ml_dtypes.bfloat16)
    codes = fpemu.encode(x, "e5m2", returns="input")
    assert codes.dtype == np.dtype(ml_dtypes.float8_e5m2)
    assert np.array_equal(codes.view(np.uint8), fpemu.encode(x, "e5m2"))
    assert fpemu.encode(X, "e2m3", returns="ml_dtypes", overflow="saturate").dtype == np.dtype(ml_dtypes.float6_e2m3fn)
    p3109 = fpemu.encode(X, "binary8p3se", returns="ml_dtypes")  # ml_dtypes has no such type: codes
    assert p3109.dtype == np.uint8
    values = fpemu.quantize(x, "e4m3", returns="input", overflow="saturate")  # values: NumPy floats
    assert values.dtype == np.float32


def test_a_dot_product_of_1d_tensors_is_a_0d_tensor():
    torch = pytest.importorskip("torch")
    d = fpemu.dot(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 0.5]), inputs="fp32", returns="input")
    assert isinstance(d, torch.Tensor) and d.shape == () and float(d) == 4.0  # was shape (1,)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3fn"])
def test_gemm_reads_low_precision_tensors_by_their_bits(dtype):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, dtype):
        pytest.skip(f"torch {torch.__version__} has no {dtype}")
    fmt = {"bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "e4m3"}[dtype]
    rng = np.random.default_rng(5)
    a = torch.from_numpy(rng.normal(size=(3, 32)).astype(np.float32)).to(getattr(torch, dtype))
    b = torch.from_numpy(rng.normal(size=(32, 2)).astype(np.float32)).to(getattr(torch, dtype))
    got = fpemu.gemm(a, b, inputs=fmt, accumulator="h100", returns="input")  # was refused: not an array
    want = fpemu.gemm(a.float().numpy(), b.float().numpy(), inputs=fmt, accumulator="h100")
    assert isinstance(got, torch.Tensor) and np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("call, says", [
    (lambda: fpemu.encode([1.0], "e4m3", returns="torch"), "returns='torch' needs torch, which is not installed: pip install torch"),
    (lambda: fpemu.to_torch([1], "e4m3"), "to_torch needs torch, which is not installed: pip install torch"),
    (lambda: fpemu.to_ml_dtypes([1], "e4m3"), "e4m3 as an ml_dtypes dtype needs ml_dtypes, which is not installed: pip install ml_dtypes"),
    (lambda: fpemu.decode([1], "e4m3", returns="ml_dtypes"), "returns='ml_dtypes' needs ml_dtypes, which is not installed"),
])  # fmt: skip
def test_a_missing_library_is_named_with_what_to_install(monkeypatch, call, says):
    """Without torch or ml_dtypes (as on a machine that has neither: an import of either
    fails), one clear error names the package, not a bare ModuleNotFoundError (issue 42, item 9)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.raises(ModuleNotFoundError) as err:
        call()
    assert str(err.value).startswith(says) and err.value.name in ("torch", "ml_dtypes")
