"""Cross-check of matrix products (fpemu.crosscheck.matmul): a device's result compared element
for element with fpemu's accumulator, with fake devices and torch's CPU matmuls."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fpemu.accumulator import gemm
from fpemu.crosscheck.matmul import compare_matmul


# ---- GPU matmul plumbing, with fake devices --------------------------------------------------
def test_matmul_comparison_counts_identical_elements():
    same = compare_matmul(lambda A, B, i: gemm(A, B, inputs=i, accumulator="h100"), "h100", "fp16", k=64, backend="fake")
    assert same.cases == same.identical == 64 * 64
    # A V100-like device (4 products per block, F = 23) differs from the H100 preset.
    other = compare_matmul(lambda A, B, i: gemm(A, B, inputs=i, accumulator="v100"), "h100", "fp16", k=64, backend="fake")
    assert other.status == "differs" and 0 < other.identical < other.cases


def test_torch_cpu_matmul_rows_report_counts_not_verdicts():
    """How torch's CPU kernels add (FMA loop, blocked, split K) depends on the build, the CPU's
    vector unit and the thread count: crosscheck reports the counts and the build, and the test
    asserts only that (an AVX-512 machine matches the fp32 FMA loop on 4093 of 4096 fp16
    outputs at K = 16 where this one matches all)."""
    pytest.importorskip("torch")
    from fpemu.crosscheck.matmul import cpu_matmul_rows

    rows = cpu_matmul_rows(ks=(16,))
    assert [(r.format, r.operation) for r in rows] == [
        ("fp32", "matmul K=16 fp32"), ("bf16", "matmul K=16 bf16"), ("fp16", "matmul K=16 fp16"),
        ("e4m3", "matmul K=16 fp32"), ("e5m2", "matmul K=16 fp32")]  # fmt: skip
    for r in rows:
        assert re.search(r"torch \S+ CPU, \S+, \d+ threads", r.note), r
        if r.status == "unsupported":  # e.g. a build without _scaled_mm on CPU
            continue
        assert r.cases == 64 * 64 and 0 <= r.identical <= r.cases, r
        assert (r.status == "identical") == (r.identical == r.cases), r
        assert r.status in ("identical", "differs"), r


# ---- a device answering extremes: counted, no floating-point warning (issue 9) ---------------
@pytest.mark.parametrize("value", [1e300, -1e300, np.inf, np.nan, 0.0])
def test_compare_matmul_with_a_device_answering_extremes(value):
    # float64 beyond fp32 (cast to Inf, as a device would), Inf, NaN: counted, no warning.
    row = compare_matmul(lambda A, B, inputs: np.full((8, 8), value), "h100", "fp16", k=16, m=8, n=8, backend="odd")
    assert row.cases == 64 and row.status == "differs" and row.identical == 0


def test_compare_matmul_refuses_a_wrong_shape():
    with pytest.raises(ValueError, match=r"odd returned a \(3,\) result for a \(8, 16\) @ \(16, 8\) product"):
        compare_matmul(lambda A, B, inputs: np.zeros(3), "h100", "fp16", k=16, m=8, n=8, backend="odd")
