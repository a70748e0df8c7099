"""fpemu.scaled_cast: per-tensor, per-row, per-column and per-tile FP8 scaling with
TransformerEngine's float32 rule, checked against torch's own float32 arithmetic and cast."""

from __future__ import annotations

import numpy as np
import pytest

import fpemu
from fpemu.scaling import scaled_cast


def data(shape=(256, 384), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-10, 10, shape))).astype(np.float32)


def test_per_tensor_matches_torch_float32_arithmetic_and_cast():
    torch = pytest.importorskip("torch")
    x = data()
    t = scaled_cast(x, "e4m3")
    tx = torch.from_numpy(x)
    amax = tx.abs().max()
    scale = torch.tensor(448.0) / amax  # float32, as TransformerEngine computes it
    assert float(t.scale) == float(scale)
    codes = (tx * scale).to(torch.float8_e4m3fn).view(torch.uint8).numpy()  # torch CPU saturates E4M3
    assert np.array_equal(t.codes, codes)
    assert float(t.scale_inv) == float(torch.tensor(1.0) / scale)


@pytest.mark.parametrize("granularity, groups", [("row", (1, 384)), ("column", (256, 1)), ((1, 128), (1, 128)),
                                                 ((128, 128), (128, 128)), ((100, 100), (100, 100))])
def test_group_scales_are_per_group(granularity, groups):
    x = data()
    t = scaled_cast(x, "e5m2", granularity=granularity)
    gr, gc = groups
    rows, cols = -(-x.shape[0] // gr), -(-x.shape[1] // gc)
    assert t.scale.shape == (rows, cols)
    for i in range(rows):
        for j in range(cols):
            block = x[i * gr:(i + 1) * gr, j * gc:(j + 1) * gc]
            want = np.float32(np.float32(57344.0) / np.max(np.abs(block)))
            assert t.scale[i, j] == want
    # The codes are the scaled values' codes; the normal ones read back within half a step.
    back = t.dequantize()
    scaled = x * np.repeat(np.repeat(t.scale, gr, 0), gc, 1)[: x.shape[0], : x.shape[1]]
    q = fpemu.quantize(scaled, "e5m2", overflow="saturate")
    assert np.array_equal(fpemu.encode(q, "e5m2"), t.codes)
    normal = np.abs(scaled) >= fpemu.get_format("e5m2").min_normal  # E5M2 keeps 3 bits there
    assert np.all(np.abs(back[normal] - x[normal]) <= np.abs(x[normal]) * 2.0**-3)


def test_rules_of_the_recipe():
    x = np.array([[0.0, 0.0], [0.0, 0.0]])
    assert float(scaled_cast(x, "e4m3").scale) == 1.0  # amax 0: scale 1
    assert float(scaled_cast([[1.0, np.nan]], "e4m3").scale) == 448.0  # NaN ignored in amax
    assert float(scaled_cast([[2.0]], "e4m3", margin=1).scale) == 112.0
    assert float(scaled_cast([[3.0]], "e4m3", power_of_two=True).scale) == 128.0  # 149.3 down
    assert float(scaled_cast([[1e-45]], "e4m3").scale) == np.finfo(np.float32).max  # Inf -> FLT_MAX
    given = scaled_cast([[1.0, 500.0]], "e4m3", scale=1.0)  # delayed scaling: a given scale
    assert given.codes.tolist() == [[0x38, 0x7E]]  # saturates
    assert float(scaled_cast([[1.0]], "e4m3", amax=4.0).scale) == 112.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="granularity"):
        scaled_cast(np.ones((4, 4)), "e4m3", granularity="diagonal")
    with pytest.raises(ValueError, match="scales must be finite"):
        scaled_cast(np.ones(4), "e4m3", scale=0.0)


# Regressions (each failed on the code before its fix): empty and NaN inputs.
# ---- scaled_cast: empty arrays -----------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,granularity,scale_shape",
    [((0,), "tensor", ()), ((2, 0), "tensor", ()), ((3, 0), "row", (3, 1)), ((0, 3), "column", (1, 3)),
     ((0, 3), "row", (0, 1)), ((3, 0), "column", (1, 0)), ((0, 4), (1, 2), (0, 2)), ((2, 0), (2, 2), (1, 0))],
)
def test_scaled_cast_of_an_empty_array(shape, granularity, scale_shape):
    t = fpemu.scaled_cast(np.zeros(shape), "e4m3", granularity=granularity)
    assert t.codes.shape == shape and t.codes.dtype == np.uint8
    assert t.scale.shape == scale_shape and t.scale.dtype == np.float32
    assert t.scale_inv.shape == (() if granularity == "tensor" else shape)  # as for a non-empty array
    assert np.all(t.scale == 1.0)
    assert t.dequantize().shape == shape


def test_scaled_cast_empty_matches_a_non_empty_call_in_shape():
    for granularity, empty, full in [("row", (3, 0), (3, 5)), ("column", (0, 3), (5, 3))]:
        a = fpemu.scaled_cast(np.zeros(empty), "e5m2", granularity=granularity)
        b = fpemu.scaled_cast(np.ones(full), "e5m2", granularity=granularity)
        assert a.scale.shape == b.scale.shape
        assert (a.scale_inv.shape, b.scale_inv.shape) == (empty, full)  # per element, as codes


# ---- scaled_cast: NaN ------------------------------------------------------------------------------
def test_scaled_cast_nan_in_a_format_without_nan_raises_as_encode_does():
    with pytest.raises(ValueError) as encoded:
        fpemu.encode([np.nan, 1.0], "e2m1")
    with pytest.raises(ValueError) as cast:
        fpemu.scaled_cast([np.nan, 1.0], "e2m1")
    assert type(cast.value) is type(encoded.value) and str(cast.value) == str(encoded.value)
    with pytest.raises(ValueError, match="no NaN"):
        fpemu.scaled_cast([[1.0, 2.0], [np.nan, 3.0]], "e3m2", granularity="row")
    with pytest.raises(ValueError, match="no NaN"):
        fpemu.scaled_cast([np.nan, 1.0], "e2m1", scale=1.0)


def test_scaled_cast_nan_policy_passes_through():
    t = fpemu.scaled_cast([np.nan, 1.0], "e2m1", nan="zero")
    assert t.codes.tolist() == [0, 7] and float(t.scale) == 6.0  # amax 1 (NaN not in it)
    assert fpemu.scaled_cast([np.nan, -1.0], "e2m1", nan="ml_dtypes").codes.tolist() == [8, 15]
    e4m3 = fpemu.scaled_cast([np.nan, 1.0], "e4m3")  # a format with NaN keeps it
    assert e4m3.codes[0] & 0x7F == 0x7F and np.isnan(e4m3.dequantize()[0])
    with pytest.raises(ValueError, match="nan="):
        fpemu.scaled_cast([1.0], "e2m1", nan="payload")


# (a regression: NumPy integers wherever an int is taken)
def test_tile_granularity_takes_numpy_integers():
    x = np.arange(8.0).reshape(2, 4) + 1
    want = fpemu.scaled_cast(x, "e4m3", granularity=(1, 2))
    got = fpemu.scaled_cast(x, "e4m3", granularity=(np.int64(1), np.int64(2)))
    np.testing.assert_array_equal(got.codes, want.codes)
    np.testing.assert_array_equal(got.scale, want.scale)
    with pytest.raises(ValueError, match="granularity"):
        fpemu.scaled_cast(x, "e4m3", granularity=(True, 2))
