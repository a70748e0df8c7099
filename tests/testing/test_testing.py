"""fpemu.testing: the assertions pass where the bits agree, fail with a message that names the
mismatches where they do not, and take codes, values, ml_dtypes arrays and torch tensors."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.testing import as_codes, assert_bits_equal, assert_ulp_close, ulp_distance


def kernel_e4m3(x: np.ndarray) -> np.ndarray:
    """A stand-in 'kernel' under test: scale by 2 and cast to E4M3 with saturation."""
    return fpemu.encode(np.clip(2 * x, -448, 448), "e4m3")


def test_a_passing_kernel():
    x = np.linspace(-300, 300, 1001)
    golden = fpemu.encode(2 * x, "e4m3", overflow="saturate")
    assert_bits_equal(kernel_e4m3(x), golden, "e4m3")
    assert_ulp_close(kernel_e4m3(x), golden, "e4m3", ulps=0)


def test_a_failing_kernel_is_described():
    x = np.linspace(-3, 3, 64).reshape(8, 8)
    golden = fpemu.encode(x, "e4m3")
    broken = fpemu.encode(x, "e4m3", rounding="toward_zero")  # a kernel that truncates
    with pytest.raises(AssertionError) as err:
        assert_bits_equal(broken, golden, "e4m3", err_msg="matmul tile 0")
    text = str(err.value)
    n = int(np.count_nonzero(broken != golden))
    assert text.startswith(f"matmul tile 0: {n} of 64 elements differ in e4m3 (largest distance 1 ulps)")
    first = tuple(int(i) for i in np.argwhere(broken != golden)[0])
    assert f"  {list(first)}: actual 0x{int(broken[first]):02X}" in text and "1 ulps above" in text  # toward zero
    assert f"... and {n - 5} more" in text and "mantissa" in text  # explain() of the first one
    assert_ulp_close(broken, golden, "e4m3", ulps=1)  # truncation is within one step
    with pytest.raises(AssertionError, match="allowed 0 ulps"):
        assert_ulp_close(broken, golden, "e4m3", ulps=0)


def test_ulp_distance_counts_steps_of_the_format():
    e4m3 = fpemu.get_format("e4m3")
    codes = np.arange(256)
    values = fpemu.decode(codes, e4m3)
    finite = codes[np.isfinite(values)]
    order = finite[np.argsort(fpemu.decode(finite, e4m3), kind="stable")]
    # neighbours in value order are one step apart; +0 and -0 zero steps
    d = ulp_distance(order[1:], order[:-1], e4m3)
    assert set(d.tolist()) <= {0.0, 1.0} and d.sum() == 252
    assert ulp_distance([0x7F], [0x7E], e4m3).tolist() == [np.inf]  # NaN vs a number
    assert ulp_distance([0x7F], [0xFF], e4m3).tolist() == [0.0]
    assert ulp_distance([0x80], [0x7F], "int8").tolist() == [255.0]  # -2 to 127/64 in INT8
    assert ulp_distance([0x00, 0x7F], [0x01, 0x7E], "e8m0").tolist() == [1.0, 1.0]


def test_values_and_foreign_arrays_are_read_as_codes():
    assert as_codes([0.3125, -448.0], "e4m3").tolist() == [0x2A, 0xFE]
    with pytest.raises(ValueError, match="not values of e4m3"):
        as_codes([0.3], "e4m3")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    m = np.array([0.3125, -448.0], ml_dtypes.float8_e4m3fn)
    assert_bits_equal(m, [0x2A, 0xFE], "e4m3")
    with pytest.raises(ValueError, match="e5m2 codes compared as e4m3"):
        as_codes(np.array([1.0], ml_dtypes.float8_e5m2), "e4m3")
    torch = pytest.importorskip("torch")
    t = torch.tensor([0.3125, -448.0]).to(torch.float8_e4m3fn)
    assert_bits_equal(t, m, "e4m3")


def test_shapes_and_bad_arguments():
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_bits_equal([1, 2], [1, 2, 3], "e4m3")
    with pytest.raises(ValueError, match="ulps must be"):
        assert_ulp_close([1], [1], "e4m3", ulps=-1)
    with pytest.raises(ValueError, match="out of range"):
        assert_bits_equal([300], [1], "e4m3")
