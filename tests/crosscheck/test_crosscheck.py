"""Cross-check of fpemu against ml_dtypes, numpy and torch: the identical counts themselves.

What a test asserts must hold on every machine: ml_dtypes is deterministic software, so its
rows are pinned down; how torch (and numpy's float16 cast) treats overflow, NaN payloads and
matrix sums depends on the build, the CPU and the thread count, so for those the tests assert
what every IEEE implementation shares (finite in-range casts round to nearest even) and that
the report gives counts, never which verdict this machine's build earns.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import fpemu
from fpemu import cli, encode
from fpemu.formats import get_format
from fpemu.backends import Backend, MlDtypesBackend, NumpyBackend, TorchBackend
from fpemu.crosscheck import Row, compare_cast, compare_decode, edge_cases, format_table, run_crosscheck

ml_dtypes = pytest.importorskip("ml_dtypes")

N = 2000  # random cases per cast in these tests (the CLI default is 20000)
ML_FORMATS = ["bf16", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2", "e2m3", "e2m1", "e8m0",
              "float8_e4m3", "float8_e3m4", "float8_e4m3b11fnuz"]  # fmt: skip


# ---- ml_dtypes -------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ML_FORMATS)
def test_ml_dtypes_decodes_every_code_like_fpemu(fmt):
    row = compare_decode(MlDtypesBackend(), fmt)
    assert row.identical == row.cases == (1 << {"e3m2": 6, "e2m3": 6, "e2m1": 4}.get(fmt, 8 if fmt != "bf16" else 16))


@pytest.mark.parametrize("fmt", ["bf16", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "float8_e4m3", "float8_e3m4", "float8_e4m3b11fnuz"])
def test_ml_dtypes_float32_casts_identical_with_default_options(fmt):
    row = compare_cast(MlDtypesBackend(), fmt, "f32", n_random=N)
    assert row.status == "identical"
    assert row.identical == row.cases > N


@pytest.mark.parametrize("fmt", ["e3m2", "e2m3", "e2m1"])
def test_ml_dtypes_fp6_fp4_nan_codes_reproduced_by_the_nan_option(fmt):
    row = compare_cast(MlDtypesBackend(), fmt, "f32", n_random=N)
    x, _ = edge_cases(fmt)
    # Every mismatch under the defaults is a NaN input (fpemu raises, ml_dtypes gives a code).
    assert set(row.mismatches_by_kind) <= {"nan", "random bits"}
    assert row.cases - row.identical >= int(np.isnan(x).sum())
    assert row.status == "reproduced"
    assert row.reproduced_by == "ml_dtypes turns NaN into ml_dtypes' codes: nan='ml_dtypes'"


def test_ml_dtypes_e8m0_quirks_are_reproduced_by_name():
    """ml_dtypes 0.6 rounds E8M0 ties away and sends (2^-127, 2^-126) up to 2^-126: the
    crosscheck finds rounding='ml_dtypes_e8m0', and plain ties-away leaves exactly that range."""
    row = compare_cast(MlDtypesBackend(), "e8m0", "f32", n_random=N)
    if int(np.float32([2.0**-127 * 1.01]).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)[0]) == 0:
        # An ml_dtypes without the range quirk: ties away is all that is left.
        assert row.reproduced_by == "ml_dtypes rounds ties away from zero: rounding='nearest_away'"
        return
    assert row.status == "reproduced" and "rounding='ml_dtypes_e8m0'" in row.reproduced_by
    x, _ = edge_cases("e8m0")
    x = np.concatenate([x, np.float32([2.0**-127 * 1.01, 2.0**-127 * 1.5])])
    with np.errstate(invalid="ignore"):  # ml_dtypes' own cast of NaN
        want = x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    got = encode(x, "e8m0", rounding="nearest_away")
    bad = x[want != got].astype(np.float64)
    assert bad.size > 0
    assert np.all((bad > 2.0**-127) & (bad < 2.0**-126))
    assert np.all(want[want != got] == 0x01) and np.all(got[want != got] == 0x00)


@pytest.mark.parametrize("fmt", ["bf16", "e4m3", "e5m2"])
def test_ml_dtypes_float64_casts_as_the_installed_release_does(fmt):
    """ml_dtypes before 0.7 casts float64 through float32 (rounded twice), 0.7 rounds once: the
    cross-check finds whichever the installed release does, and like() of it agrees."""
    row = compare_cast(MlDtypesBackend(), fmt, "f64", n_random=N)
    release = fpemu.resolve_convention("ml_dtypes")
    assert row.backend == f"ml_dtypes {ml_dtypes.__version__}"
    assert row.convention == f"like({release!r}) reproduces every case"
    # One input by hand: 1 + 2^-8 + 2^-40 is above the bf16 tie 1 + 2^-8, lost in float32.
    x = np.array([1 + 2.0**-8 + 2.0**-40])
    got = int(x.astype(ml_dtypes.bfloat16).view(np.uint16)[0])
    assert int(encode(x, "bf16")[0]) == 0x3F81  # correctly rounded
    if "via" in fpemu.like("ml_dtypes", "bf16"):
        assert row.status == "reproduced" and row.reproduced_by.endswith("via='fp32'")
        assert "near tie" in row.mismatches_by_kind
        assert got == 0x3F80  # rounded twice
    else:
        assert row.status == "identical"
        assert got == 0x3F81


# ---- numpy ----------------------------------------------------------------------------------
# numpy's float -> float16 cast keeps NaN payloads: its own software rule (nan='payload') or,
# in builds that convert with F16C instructions, the FPU's (nan='quiet_payload').
_NUMPY_NAN = ("numpy keeps NaN payload bits: nan='payload'",
              "numpy keeps NaN payload bits and sets the quiet bit: nan='quiet_payload'")  # fmt: skip


def test_numpy_fp16_every_code_and_every_cast():
    b = NumpyBackend()
    assert compare_decode(b, "fp16").identical == 65536
    row = compare_cast(b, "fp16", "f32", n_random=N)
    assert row.status == "reproduced" and row.reproduced_by in _NUMPY_NAN
    assert set(row.mismatches_by_kind) <= {"nan", "random bits"}
    x, _ = edge_cases("fp16")
    x = x[~np.isnan(x)]
    with np.errstate(over="ignore"):  # numpy's own cast of values beyond fp16
        assert np.array_equal(x.astype(np.float16).view(np.uint16), encode(x, "fp16"))  # every non-NaN case
    non_nan = compare_cast(b, "fp16", "f64", n_random=N)
    assert non_nan.status == "reproduced" and non_nan.reproduced_by in _NUMPY_NAN


def test_numpy_float64_to_float32_nan_quieting_is_quiet_payload():
    row = compare_cast(NumpyBackend(), "fp32", "f64", n_random=N)
    # numpy keeps the payload *and* sets the quiet bit, which is nan='quiet_payload'.
    assert row.status == "reproduced"
    assert row.identical < row.cases and "nan='quiet_payload'" in row.reproduced_by


# ---- option search on a fake backend ---------------------------------------------------------
class _SaturatingFake(Backend):
    """ml_dtypes' E4M3 with saturation and one deliberately wrong code."""

    name = "fake"

    def dtypes(self):
        return {"e4m3": None}

    def cast(self, x, fmt):
        with np.errstate(invalid="ignore"):  # ml_dtypes' own cast of NaN
            codes = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).copy()
        overflowed = ~np.isnan(x) & ((codes & 0x7F) == 0x7F)  # ml_dtypes: overflow -> NaN
        codes[overflowed] = (codes[overflowed] & 0x80) | 0x7E  # saturate to +-448 instead
        return codes

    def decode(self, codes, fmt):
        return codes.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def test_option_search_names_saturation():
    row = compare_cast(_SaturatingFake(), "e4m3", "f32", n_random=N)
    assert row.status == "reproduced"
    assert row.reproduced_by == "fake saturates: overflow='saturate'"
    assert set(row.mismatches_by_kind) <= {"overflow", "inf", "random bits", "random value"}
    assert row.first_mismatch.endswith("fake 0x7E, fpemu 0x7F")


def test_one_wrong_code_is_counted_and_shown():
    class OneOff(_SaturatingFake):
        def cast(self, x, fmt):
            with np.errstate(invalid="ignore"):
                codes = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).copy()
            codes[(x == np.float32(1.0625))] = 0x39  # the SPEC tie: RNE gives 0x38
            return codes

    row = compare_cast(OneOff(), "e4m3", "f32", n_random=N)
    assert row.cases - row.identical == 1
    assert row.first_mismatch == "0x3F880000 (tie): fake 0x39, fpemu 0x38"
    assert row.status == "differs" and row.reproduced_by == "no option reproduces all"


# ---- torch (CPU) -----------------------------------------------------------------------------
def _torch_has(fmt: str):
    torch = pytest.importorskip("torch")
    if fmt not in TorchBackend("cpu").dtypes():
        pytest.skip(f"this torch build has no dtype for {fmt}")
    return torch


def _in_range(fmt: str) -> np.ndarray:
    """Edge cases every IEEE-style cast rounds alike: finite, at most the largest value."""
    x, _ = edge_cases(fmt)
    return x[np.isfinite(x) & (np.abs(x) <= get_format(fmt).max)]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"])
def test_torch_cpu_float8_casts_round_like_fpemu_and_the_rest_is_reported(fmt):
    torch = _torch_has(fmt)
    backend = TorchBackend("cpu")
    x = _in_range(fmt)
    assert np.array_equal(backend.cast(x, fmt), encode(x, fmt))  # RNE for every finite in-range value
    row = compare_cast(backend, fmt, "f32", n_random=N)
    assert row.cases > N and row.identical > 0
    # Overflow and NaN codes are the build's choice (torch 2.13's float8_e4m3fn saturates); they
    # are the only cases that may differ, and when a build saturates the report names it.
    assert set(row.mismatches_by_kind) <= {"overflow", "inf", "nan", "random bits", "random value"}
    big = torch.tensor([480.0, 1e6, float("inf")]).to(backend.dtypes()[fmt]).view(torch.uint8).numpy()
    if fmt == "e4m3" and (big == 0x7E).all():
        assert row.reproduced_by == "torch saturates: overflow='saturate'"
        assert row.first_mismatch.startswith("0x43F00000 (overflow): torch 0x7E, fpemu 0x7F")  # 480


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e8m0"])
def test_torch_cpu_decodes_every_code_like_fpemu(fmt):
    _torch_has(fmt)
    row = compare_decode(TorchBackend("cpu"), fmt)
    assert row.identical == row.cases == (1 << get_format(fmt).bits)


def test_torch_cpu_bf16_nan_is_reported_as_unreproducible():
    torch = pytest.importorskip("torch")
    row = compare_cast(TorchBackend("cpu"), "bf16", "f32", n_random=N)
    # Every non-NaN input is identical; the NaN codes depend on the torch build (0x7FC0 or
    # 0xFFFF), which no fpemu option names.
    assert set(row.mismatches_by_kind) <= {"nan", "random bits"}
    x, _ = edge_cases("bf16")
    x = x[~np.isnan(x)]
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(want, encode(x, "bf16"))


# ---- whole runs, skipped backends, the table, the CLI ---------------------------------------
def test_missing_backend_is_listed_as_skipped():
    class Missing(Backend):
        name = "nothing"

        def missing(self):
            return "not installed"

    from fpemu import crosscheck

    crosscheck.BACKENDS["nothing"] = Missing
    try:
        rows = run_crosscheck(["nothing", "numpy"], n_random=100)
    finally:
        del crosscheck.BACKENDS["nothing"]
    assert rows[0].status == "skipped" and rows[0].note == "not installed"
    assert [r.status for r in rows[1:]] == ["identical", "reproduced", "reproduced", "reproduced"]


def test_torch_cuda_skipped_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    rows = run_crosscheck(["torch-cuda"])
    assert len(rows) == 1 and rows[0].status == "skipped"


def test_table_and_json_from_the_cli(tmp_path, capsys):
    out = tmp_path / "cc.json"
    assert cli.main(["crosscheck", "--backend", "numpy", "--n", "500", "--json-file", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"| decode | fp16 | numpy {np.__version__} | 65536 | 65536 |" in text
    assert any(rule in text for rule in _NUMPY_NAN)
    rows = json.loads(out.read_text())
    assert [(r["operation"], r["status"]) for r in rows] == [
        ("decode", "identical"), ("cast f32", "reproduced"), ("cast f64", "reproduced"), ("cast f64", "reproduced")]


def test_format_table_marks_unsupported_rows():
    text = format_table([Row("decode", "e2m1", "torch", status="unsupported", note="packed pairs")])
    assert text.splitlines()[-1] == "| decode | e2m1 | torch | - | - |  | unsupported: packed pairs |"


def test_a_backend_that_raises_gives_an_unsupported_row():
    """A build without some conversion (torch raises RuntimeError) is a row, not a crash."""

    class Broken(NumpyBackend):
        name = "broken"

        def cast(self, x, fmt):
            raise RuntimeError("\"to_fp16\" not implemented for 'Float'\nmore detail")

    from fpemu.crosscheck.run import backend_rows

    rows = backend_rows(Broken(), ["fp16"], n_random=10)
    assert [(r.operation, r.status) for r in rows] == [("decode", "identical"), ("cast f32", "unsupported"),
                                                       ("cast f64", "unsupported")]  # fmt: skip
    assert rows[1].note == "broken raised: \"to_fp16\" not implemented for 'Float'"
