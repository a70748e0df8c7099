"""`fpemu fit` on files made by `fpemu vectors`, on malformed dumps and on extreme values (issue 9)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from fpemu import cli
from fpemu.accumulator import BlockFMA, BlockModel, dot
from fpemu.fit import Dump, DumpError, fit, load_dump, report
from fpemu.vectors import dot_vectors, write_vectors

HWDATA = Path(__file__).resolve().parents[2].parent / "shared" / "hwdata"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _bits(v) -> np.ndarray:
    return np.asarray(v, dtype=np.float32).view(np.uint32)


def _save(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


def _good_arrays(n: int = 40, k: int = 16, inputs: str = "fp16") -> dict:
    v = dot_vectors(inputs, "h100", k=k, n=n)
    return {key: v[key] for key in ("a", "b", "c", "d_fp32")}


# ---- round trips: vectors -> fit ------------------------------------------------------------
def test_fp16_output_vectors_fit_back_to_their_model(tmp_path, capsys):
    out = tmp_path / "golden.npz"  # no format in the name: fit reads it from the file's metadata
    code, text, _ = _run(capsys, "vectors", "fp16", "--accumulator", "h100", "--out-format", "fp16", "--n", "600",
                         "--out", str(out))  # fmt: skip
    assert code == 0 and "600/600 identical" in text
    code, text, err = _run(capsys, "fit", str(out))
    assert (code, err) == (0, "")
    assert "golden: 600 rows, K = 32, inputs fp16, output fp16" in text
    assert "h100" in text.split("matching presets: ")[1].split(", ")


def test_fit_json_lists_the_models_and_presets(tmp_path, capsys):
    import json

    out = tmp_path / "golden.npz"
    write_vectors(dot_vectors("bf16", "a100", n=400, seed=2), out)
    code, text, err = _run(capsys, "fit", str(out), "--json", "--quiet")
    assert (code, err) == (0, "")
    (record,) = json.loads(text)
    assert (record["dump"], record["out"], record["rows"], record["fits"]) == ("golden", "fp32", 400, True)
    assert "a100" in record["presets"] and record["best"] is None
    assert all(m["kind"] for m in record["models"]) and record["searched"] > 0


def test_fp32_vectors_fit_back_to_one_model(tmp_path):
    path = tmp_path / "ada_e4m3.npz"
    write_vectors(dot_vectors("e4m3", "ada", n=1500, seed=3), path)
    dump = load_dump(path)
    assert set(dump.d) == {"fp32"} and dump.K == 32
    result = fit(dump)
    assert "ada" in result.presets
    assert {(m.block, m.frac_bits, m.out_frac_bits) for m in result.models if isinstance(m, BlockModel)} == {(16, 13, 13)}


def test_a_custom_model_is_recovered_from_its_fp16_column(tmp_path):
    model = BlockFMA("mine", block=8, frac_bits=20, out_rounding="rne")
    path = tmp_path / "mine.npz"
    write_vectors(dot_vectors("bf16", model, k=16, n=800, out="fp16"), path)
    result = fit(load_dump(path), "fp16")
    assert result.fits
    assert (8, 20) in {(m.block, m.frac_bits) for m in result.models}


# ---- values instead of bit patterns, and the wrong input format -------------------------------
def test_float_values_instead_of_bit_patterns_fail_fast_and_say_so(tmp_path, capsys):
    g = _good_arrays()
    floats = {k: v.view(np.float32) for k, v in g.items()}  # the values themselves, not their bits
    path = _save(tmp_path / "floats_fp16.npz", **floats)
    start = time.perf_counter()
    code, out, err = _run(capsys, "fit", str(path))
    seconds = time.perf_counter() - start
    assert code == 2 and out == "" and err.count("\n") == 1  # the file given is not a dump: usage
    assert err.startswith(f"fpemu: error: {path}: a holds float32 floating-point values, first ")
    assert "expected unsigned integer bit patterns: the fp32 bit patterns of fp16 values as uint32" in err
    assert seconds < 2  # was a RuntimeWarning and "NO model fits" after 7.5 s


def test_signed_or_wide_integers_are_checked_not_wrapped(tmp_path, capsys):
    g = _good_arrays()
    ok = _save(tmp_path / "wide_fp16.npz", **{k: v.astype(np.int64) for k, v in g.items()})
    assert load_dump(ok).rows == 40  # integers in 0..2^32-1 are bit patterns, whatever their dtype
    g["c"] = g["c"].astype(np.int64) - (1 << 33)
    bad = _save(tmp_path / "neg_fp16.npz", **g)
    with pytest.raises(DumpError, match=r"c holds int64 integers outside 0..2\^32-1"):
        load_dump(bad)


def test_a_dump_read_in_the_wrong_input_format_is_refused(tmp_path, capsys):
    path = _save(tmp_path / "x_fp16.npz", **_good_arrays())
    code, _, err = _run(capsys, "fit", str(path), "--inputs", "bf16")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"fpemu: error: {path}: a holds values that are not bf16 (")
    assert "the input format --inputs gives; the file name says fp16; pass the format" in err
    # Named by the file itself, the same mismatch is the file's fault: still the file given (usage).
    path = _save(tmp_path / "y_bf16.npz", **_good_arrays())
    code, _, err = _run(capsys, "fit", str(path))
    assert code == 2 and "a holds values that are not bf16" in err and "the file name gives" in err


@pytest.mark.skipif(not (HWDATA / "h100_fp16.npz").is_file(), reason="../shared/hwdata is absent")
def test_h100_fp16_dump_as_bf16_is_a_clear_error(capsys):
    code, out, err = _run(capsys, "fit", str(HWDATA / "h100_fp16.npz"), "--inputs", "bf16")
    assert (code, out) == (2, "")
    assert err == (f"fpemu: error: {HWDATA / 'h100_fp16.npz'}: a holds values that are not bf16 (69898 of 80000; "
                   "row 0, column 0: 0x3F7AA000 = 0.97900390625), the input format --inputs gives; the file name "
                   "says fp16; pass the format the dump was made with as --inputs\n")  # fmt: skip


# ---- malformed dumps --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "change,message",
    [
        (lambda g: g.update(c=g["c"][:-1]), r"a and b must be \(n, K\) and c, d_\* \(n,\) with n, K >= 1; got a \(40, 16\), b \(40, 16\), c \(39,\)"),
        (lambda g: g.update(d_fp32=g["d_fp32"][:, None]), r"d_fp32 \(40, 1\)"),
        (lambda g: g.update(a=g["a"][:, :0], b=g["b"][:, :0]), r"a \(40, 0\)"),
        (lambda g: g.update({k: v[:0] for k, v in g.items()}), r"a \(0, 16\)"),
        (lambda g: g.update(a=g["a"].ravel()), r"got a \(640,\)"),
        (lambda g: g.pop("d_fp32"), r"lacks d_fp32 or d_fp16 \(it has a, b, c;"),
        (lambda g: g["a"].__setitem__((3, 2), 0x7F800000), r"a holds Inf or NaN \(row 3\)"),
        (lambda g: g.update(b=g["b"].astype(bool)), r"b holds bool booleans"),
    ],
    ids=["short-c", "2d-d", "k0", "no-rows", "1d-a", "no-d", "inf", "bool"],
)  # fmt: skip
def test_malformed_dumps_are_named(tmp_path, change, message):
    g = _good_arrays()
    change(g)
    path = _save(tmp_path / "bad_fp16.npz", **g)
    with pytest.raises(DumpError, match=message):
        load_dump(path)


def test_a_dump_built_in_code_is_checked_too():
    a = np.array([[1.0 + 2.0**-12]])  # not an fp16 value
    dump = Dump("mine", "fp16", a, np.ones((1, 1)), np.zeros(1), {"fp32": _bits([1.0])})
    with pytest.raises(ValueError, match="a holds values that are not fp16"):
        fit(dump)


# ---- extreme values: no warning, both kernels agree -------------------------------------------
def _extreme_dump(inputs: str, out: str, model: str) -> Dump:
    big, tiny = {"tf32": (3.4011621e38, 2.0**-136), "fp16": (65504.0, 2.0**-24), "bf16": (3.3895314e38, 2.0**-133)}[inputs]
    rng = np.random.default_rng(0)
    pick = np.array([big, -big, tiny, -tiny, 0.0, -0.0, 1.0, -1.0, big / 3, tiny * 3])
    a = pick[rng.integers(0, pick.size, size=(300, 8))]
    b = pick[rng.integers(0, pick.size, size=(300, 8))]
    from fpemu.codec import quantize

    a, b = quantize(a, inputs, rounding="rz"), quantize(b, inputs, rounding="rz")
    c = np.array([3.4028235e38, -3.4028235e38, 2.0**-149, 0.0, -0.0, 1.0])[rng.integers(0, 6, size=300)]
    if out == "fp16":
        c = quantize(c, "fp16")
    d = dot(a, b, c, inputs=inputs, accumulator=model, out=out)
    return Dump(f"extreme_{inputs}", inputs, a, b, c, {out: _bits(d)})


@pytest.mark.parametrize("inputs,out,model", [("tf32", "fp32", "h100"), ("fp16", "fp16", "a100"), ("bf16", "fp32", "a100"), ("fp16", "fp32", "v100")])
def test_extreme_values_fit_without_warnings(inputs, out, model):
    # pytest turns fpemu's RuntimeWarnings into errors; the batched kernel is checked against
    # fpemu.accumulator.dot inside fit (a disagreement raises).
    try:
        dump = _extreme_dump(inputs, out, model)
    except ValueError as exc:  # a preset without these inputs
        pytest.skip(str(exc))
    result = fit(dump, out)
    assert result.rows == 300
    assert "NO model" in report(result) or result.fits


def test_fp16_overflow_between_blocks_is_carried_as_inf():
    # Sums beyond fp16's range after the first block stay +-Inf in the later blocks (the
    # batched kernel used to cast Inf to an integer there: a RuntimeWarning and a wrong fit).
    v = dot_vectors("fp16", "h100", n=400, out="fp16")
    d = v["d_fp16"].view(np.float32)
    assert np.isinf(d).any()
    dump = Dump("h100_fp16", "fp16", *(v[k].view(np.float32).astype(np.float64) for k in ("a", "b", "c")), {"fp16": v["d_fp16"]})
    result = fit(dump, "fp16")
    assert result.fits and "h100" in result.presets


# ---- resource bounds --------------------------------------------------------------------------
def test_batched_search_memory_does_not_grow_with_the_models(monkeypatch):
    from fpemu.fit import kernel as fitmod

    sizes = []
    real = fitmod._batch_model

    def spy(prods, *args, **kwargs):
        sizes.append(prods.R * prods.K)  # the products one batched call holds
        return real(prods, *args, **kwargs)

    monkeypatch.setattr(fitmod, "_batch_model", spy)
    monkeypatch.setattr(fitmod, "_BATCH_VALUES", 1 << 15)
    v = dot_vectors("fp16", "h100", k=32, n=200)
    dump = Dump("h", "fp16", *(v[k].view(np.float32).astype(np.float64) for k in ("a", "b", "c")), {"fp32": v["d_fp32"]})
    result = fit(dump, screen=(64, 128))
    assert "h100" in result.presets
    assert max(sizes) <= max(1 << 15, 200 * 32)  # one model's rows at most, whatever the search size
