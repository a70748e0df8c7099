"""No floating-point warning escapes vectors on extreme inputs (issue 9; the same checks of the
cases, of crosscheck's matrix products and of probe are in tests/test_cases.py,
tests/crosscheck/test_matmul.py and tests/probe/test_probe.py).

pytest's configuration turns RuntimeWarnings raised in fpemu modules into errors, so running
every public function over every format, option and preset is the test; the assertions check
that the results are usable as well.
"""

from __future__ import annotations

import pytest

from fpemu.accumulator import accumulator_names, get_accumulator
from fpemu.codec import OVERFLOW_MODES
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


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8", "nvfp4"])
def test_block_vectors_every_format_and_scale_rule(tmp_path, fmt):
    for rule in ("floor", "rceil", "ceil", "even"):
        for kind in ("edge", "random"):
            if fmt == "nvfp4" and rule != "floor":  # UE4M3 scales have no MX rule: refused, not ignored
                with pytest.raises(ValueError, match="scale_rounding applies to MX formats"):
                    block_vectors(fmt, kind, 40, scale_rounding=rule)
                continue
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
