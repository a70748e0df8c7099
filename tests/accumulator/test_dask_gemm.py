"""gemm and dot of Dask arrays (fpemu/accumulator/dask_gemm.py): a Dask array of the same bits,
block by block with all of K in each task. (Regression tests: each failed on the code before
its fix.)"""

from __future__ import annotations

import numpy as np
import pytest

import fpemu


@pytest.mark.parametrize("acc,inputs", [("exact", "fp32"), ("h100", "fp16"), ("fp32", "bf16"), ("mi300", "e4m3fnuz")])
def test_dot_of_dask_arrays_is_a_dask_array_of_the_same_bits(acc, inputs):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 5, 33)), rng.standard_normal((2, 5, 33))
    c = rng.standard_normal((2, 5))
    for cc in (None, c, da.from_array(c, chunks=(1, 2))):
        want = fpemu.dot(a, b, None if cc is None else c, inputs=inputs, accumulator=acc)
        for returns in ("input", "numpy"):
            got = fpemu.dot(da.from_array(a, chunks=(1, 2, 8)), da.from_array(b, chunks=(2, 3, 5)), cc,
                            inputs=inputs, accumulator=acc, returns=returns)
            assert isinstance(got, da.Array) and got.shape == want.shape and got.dtype == np.float32
            assert np.array_equal(got.compute().view(np.uint32), want.view(np.uint32))


def test_dot_of_dask_arrays_edge_shapes():
    da = pytest.importorskip("dask.array")
    got = fpemu.dot(da.ones(4, chunks=2), np.ones(4), 1.0, inputs="fp16", accumulator="exact")
    assert isinstance(got, da.Array) and got.shape == () and float(got.compute()) == 5.0
    got = fpemu.dot(da.zeros((3, 0)), da.zeros((3, 0)), [-0.0, 0.0, 1.0], inputs="fp16", accumulator="fp32")
    assert got.compute().view(np.uint32).tolist() == [0x80000000, 0, 0x3F800000]
    with pytest.raises(ValueError, match="same shape"):
        fpemu.dot(da.ones((2, 3)), da.ones((2, 4)), inputs="fp16", accumulator="exact")
