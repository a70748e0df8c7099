"""The example of docs/golden.md: a kernel's test suite with fpemu as the reference.

The "kernels under test" here are torch's CPU casts and a NumPy GEMM written the way a tensor
core computes; in a real project they would be your CUDA/Triton kernels. The file is run by
the project's own test suite so the documented example cannot rot.
"""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.accumulator import gemm
from fpemu.vectors import cast_vectors, read_vectors, write_vectors

torch = pytest.importorskip("torch")


# ---- 1. a cast kernel against a golden file ----------------------------------------------------
def my_cast_to_e4m3(x: np.ndarray) -> np.ndarray:
    """The kernel under test: float32 -> E4M3 codes, saturating: a clamp to +-448, then
    torch's CPU cast (whose own overflow rule is the torch build's choice)."""
    t = torch.from_numpy(np.ascontiguousarray(x)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return t.view(torch.uint8).numpy()


@pytest.fixture(scope="module")
def golden_e4m3(tmp_path_factory):
    # In a kernel repository this file is generated once and committed:
    #   fpemu vectors e4m3 --kind edge --overflow saturate --out tests/golden/e4m3_sat.npz
    path = tmp_path_factory.mktemp("golden") / "e4m3_sat.npz"
    write_vectors(cast_vectors("e4m3", "edge", overflow="saturate"), path)
    return read_vectors(path)


def test_cast_kernel_matches_golden_vectors(golden_e4m3):
    x = golden_e4m3["input_bits"].view(np.float32)
    got = my_cast_to_e4m3(x)
    bad = np.flatnonzero(got != golden_e4m3["code"])
    assert bad.size == 0, (
        f"{bad.size} of {x.size} codes differ; first: input 0x{int(golden_e4m3['input_bits'][bad[0]]):08X} "
        f"-> kernel 0x{int(got[bad[0]]):02X}, fpemu 0x{int(golden_e4m3['code'][bad[0]]):02X}"
    )


# ---- 2. fpemu as a live oracle on random data ------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_cast_kernel_matches_fpemu_on_random_bits(seed):
    x = np.random.default_rng(seed).integers(0, 2**32, size=100_000, dtype=np.uint32).view(np.float32)
    np.testing.assert_array_equal(my_cast_to_e4m3(x), fpemu.encode(x, "e4m3", overflow="saturate"))


# ---- 3. a GEMM kernel against an accumulator model -------------------------------------------
def my_fp16_gemm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The kernel under test: an fp16 GEMM with fp32 output that adds 16 products at a time,
    aligned to the largest exponent with 25 fraction bits and truncated, like an H100.
    A product's exponent is e_a + e_b (its significand in [1, 4) is not renormalised)."""

    def exponent(v):  # floor(log2|v|), fp16 subnormals at emin = -14, zeros very low
        _, e = np.frexp(v)
        return np.where(v == 0, -1000, np.maximum(e - 1, -14))

    M, K = A.shape
    out = np.zeros((M, B.shape[1]))
    for k0 in range(0, K, 16):
        a, b = A[:, None, k0 : k0 + 16], B.T[None, :, k0 : k0 + 16]
        prods = a * b  # exact in float64
        _, ec = np.frexp(out)
        e_c = np.where(out == 0, -126, np.maximum(ec - 1, -126))  # a zero c aligns at 2^-126
        E = np.maximum(np.max(exponent(a) + exponent(b), axis=-1), e_c)
        q = np.ldexp(1.0, E - 25)[..., None]
        s = np.sum(np.trunc(prods / q), axis=-1) + np.trunc(out / q[..., 0])
        out = fpemu.quantize(s * q[..., 0], "fp32", rounding="toward_zero") + 0.0
    return out.astype(np.float32)


def test_gemm_kernel_matches_the_h100_model():
    rng = np.random.default_rng(0)
    A = fpemu.quantize(rng.standard_normal((32, 64)) * np.exp2(rng.integers(-8, 8, (32, 64))), "fp16")
    B = fpemu.quantize(rng.standard_normal((64, 24)) * np.exp2(rng.integers(-8, 8, (64, 24))), "fp16")
    want = gemm(A, B, inputs="fp16", accumulator="h100")
    np.testing.assert_array_equal(my_fp16_gemm(A, B).view(np.uint32), want.view(np.uint32))
    # ... and the test has teeth: the A100 model (8 products, F = 24) gives other bits.
    assert (gemm(A, B, inputs="fp16", accumulator="a100") != want).any()
