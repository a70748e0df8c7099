"""No floating-point warning escapes a public function of fpemu.mx, whatever the input
(issue 9, item 7)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fpemu
from fpemu import mx

from mx_helpers import ALL_FORMATS


# ---- item 7: no floating-point warning escapes -----------------------------------------------------
EXTREMES = [np.inf, -np.inf, np.nan, 1e300, -1e300, 5e-324, -0.0, 0.0, 3.5e38, 1e-45, 1.0, -2.5]


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("rule", ["floor", "rceil", "ceil", "even"])
def test_extreme_inputs_do_not_warn(fmt, dtype, rule):
    with np.errstate(over="ignore", under="ignore"):
        x = np.array(EXTREMES, np.float64).astype(dtype)
    if fmt == "nvfp4":
        if dtype == np.float64:  # finite beyond float32 is refused (tested above)
            x = x[~(np.isfinite(x) & (np.abs(x) > 3.4e38))]
        if rule != "floor":
            return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for inf in ("nan", "saturate") if fmt != "nvfp4" else ("nan",):
            kw = {"scale_rounding": rule, "inf": inf} if fmt != "nvfp4" else {}
            for rounding in ("nearest_even", "nearest_away", "up", "down", "odd", "stochastic"):
                q = mx.quantize(x, fmt, block_size=4, rounding=rounding, rng=0 if rounding == "stochastic" else None, **kw)
                for out in (np.float16, np.float32, np.float64):
                    q.dequantize(out)
                fpemu.dot(q, q)
                mx.describe(q, x)
                rows = mx.quantize(np.tile(x, (2, 1)), fmt, axis=1, block_size=4, **kw)
                cols = mx.quantize(np.tile(x, (3, 1)).T, fmt, axis=0, block_size=4, **kw)
                fpemu.gemm(rows, cols)


def test_huge_float64_in_mx_saturates_exactly():
    """MX handles float64 exactly: 1e300 needs a scale of 2**988, E8M0 stops at 2**127, so the
    block takes 0xFE and the element saturates to the largest MX value, 448 * 2**127 (the
    OCP clamp, as for any magnitude above the element maximum). float32 output cannot hold
    it and reads Inf; float64 reads it exactly."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = mx.quantize(np.array([1e300, 1.0, -1e300]), "mxfp8_e4m3")
        assert q.scales.tolist() == [0xFE] and q.codes.tolist() == [0x7E, 0x00, 0xFE]
        assert q.dequantize(np.float64).tolist() == [448 * 2.0**127, 0.0, -448 * 2.0**127]
        assert q.dequantize(np.float32).tolist() == [np.inf, 0.0, -np.inf]
        assert q.dequantize(np.longdouble)[0] == 448 * 2.0**127
