"""No floating-point warning escapes vectors, crosscheck or probe on extreme inputs (issue 9).

pytest's configuration turns RuntimeWarnings raised in fpemu modules into errors, so running
every public function over every format, option and preset is the test; the assertions check
that the results are usable as well.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpemu.accumulator import accumulator_names, get_accumulator
from fpemu.codec import OVERFLOW_MODES
from fpemu.crosscheck import compare_matmul, edge_cases, random_cases
from fpemu.fit import fake_device, probe
from fpemu.formats import format_names, get_format
from fpemu.vectors import block_vectors, cast_vectors, dot_vectors, verify_vectors, write_vectors

FORMATS = list(format_names())
NAN_POLICIES = (None, "zero", "ml_dtypes", "sign", "positive", "payload", "quiet_payload")


def _cast_grid(fmt: str, kinds, roundings, overflows, nans, sources):
    made = 0
    for kind in kinds:
        if kind == "exhaustive" and get_format(fmt).bits > 16:
            continue
        for rounding in roundings:
            if kind == "exhaustive" and rounding == "sr":
                continue
            for overflow in overflows:
                for nan in nans:
                    for source in sources:
                        try:
                            v = cast_vectors(fmt, kind, 300, rounding=rounding, overflow=overflow, nan=nan, source=source)
                        except ValueError:  # an option this format does not have
                            continue
                        assert v["code"].size == v["value"].size == v["meta"]["n"] > 0
                        made += 1
    return made


@pytest.mark.parametrize("fmt", FORMATS)
def test_cast_vectors_every_format(fmt):
    narrow = get_format(fmt).bits <= 8  # wider formats have many more edge cases: fewer options by default
    kinds = ("edge", "random") + (("exhaustive",) if narrow else ())
    roundings = ("rne", "rz", "ru", "sr") if narrow else ("rz", "sr")
    sources = ("f32", "f64") if narrow else ("f64",)
    assert _cast_grid(fmt, kinds, roundings, (None, "saturate"), (None, "zero", "payload"), sources) > 0


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_cast_vectors_every_option(fmt):
    grid = (("edge", "random", "exhaustive"), ("rne", "rna", "rz", "ru", "rd", "odd", "sr"), (None,) + OVERFLOW_MODES,
            NAN_POLICIES, ("f32", "f64"))  # fmt: skip
    assert _cast_grid(fmt, *grid) > 0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_and_random_cases_of_every_format(fmt, dtype):
    x, tags = edge_cases(fmt, dtype)
    assert x.dtype == dtype and x.size == tags.size and np.isinf(x).sum() == 2
    r, _ = random_cases(fmt, dtype, 1000, seed=1)
    assert r.size == 1000


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8", "nvfp4"])
def test_block_vectors_every_format_and_scale_rule(tmp_path, fmt):
    for rule in ("floor", "rceil", "ceil", "even"):
        for kind in ("edge", "random"):
            v = block_vectors(fmt, kind, 40, scale_rounding=rule)
            path = tmp_path / f"{kind}_{rule}.npz"
            write_vectors(v, path)
            n, same = verify_vectors(path)
            assert n == same == v["scale"].size


def test_dot_vectors_every_preset_input_and_output(tmp_path):
    made = 0
    for name in accumulator_names():
        for inputs in ("fp16", "bf16", "tf32", "e4m3", "e5m2", "fp32"):
            try:
                get_accumulator(name, inputs)
            except ValueError:
                continue
            for out in ("fp32", "fp16"):
                v = dot_vectors(inputs, name, n=16, out=out, seed=made)
                path = tmp_path / "d.npz"
                write_vectors(v, path)
                assert verify_vectors(path) == (16, 16), (name, inputs, out)
                made += 1
    assert made > 100


def test_probe_every_fake_preset():
    probed = 0
    for name in accumulator_names():
        for inputs in ("fp16", "bf16", "tf32", "e4m3", "e5m2"):
            try:
                acc = get_accumulator(name, inputs)
            except ValueError:
                continue
            found = probe(fake_device(acc), inputs)
            assert found.model.kind == "block" and found.calls >= 4
            probed += 1
    assert probed > 50


@pytest.mark.parametrize("value", [1e300, -1e300, np.inf, np.nan, 0.0])
def test_compare_matmul_with_a_device_answering_extremes(value):
    # float64 beyond fp32 (cast to Inf, as a device would), Inf, NaN: counted, no warning.
    row = compare_matmul(lambda A, B, inputs: np.full((8, 8), value), "h100", "fp16", k=16, m=8, n=8, backend="odd")
    assert row.cases == 64 and row.status == "differs" and row.identical == 0


def test_compare_matmul_refuses_a_wrong_shape():
    with pytest.raises(ValueError, match=r"odd returned a \(3,\) result for a \(8, 16\) @ \(16, 8\) product"):
        compare_matmul(lambda A, B, inputs: np.zeros(3), "h100", "fp16", k=16, m=8, n=8, backend="odd")
