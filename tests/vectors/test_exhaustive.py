"""`fpemu vectors --kind exhaustive` holds every case, stochastic vectors re-check, and a failed
run leaves no file (issue 9).

"Exhaustive" is a claim in two halves, tested separately:

* completeness, by counting without the codec: a finite input's result can depend only on where
  it lies among the format's values and the midpoints between neighbours (on one of them, or
  strictly between two consecutive ones), and the set must hold an input of every such class,
  both zeros, and NaNs with every payload the format can keep;
* sufficiency, against the codec and against ml_dtypes/numpy: inputs of one class give the same
  code under every deterministic rounding mode and every overflow and NaN option.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpemu import cli, decode, encode
from fpemu.codec import OVERFLOW_MODES
from fpemu.formats import format_names, get_format
from fpemu.vectors import cast_vectors, exhaustive_inputs, read_vectors, verify_vectors, write_vectors

MODES = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "odd")
NAN_POLICIES = (None, "sign", "positive", "payload", "quiet_payload", "zero", "ml_dtypes")
SMALL = [f for f in format_names() if get_format(f).bits <= 16]
QUICK = ["e4m3", "e5m2", "e2m1", "e8m0", "binary8p1", "e4m3fnuz", "ue4m3", "fp16", "bf16"]


# ---- completeness, counted without the codec --------------------------------------------------
def _boundaries(fmt: str) -> np.ndarray:
    """Sorted, signed: every finite value, every midpoint between neighbours, and the value
    after the largest (an unbounded exponent range, as IEEE 754's overflow rule has it)."""
    f = get_format(fmt)
    codes = np.arange(1 << f.bits, dtype=np.int64) << f.code_shift
    v = decode(codes.astype(f.code_dtype), f)
    vals = np.unique(np.abs(v[np.isfinite(v)]))
    vals = np.union1d([0.0], vals)
    # (vals[-1]: the largest magnitude, int8's -2 included, which has no positive twin)
    after = 2.0 ** (f.emax + 1) if f.mantissa_bits == 0 else vals[-1] + 2.0 ** (f.emax - f.mantissa_bits)
    vals = np.append(vals, after)
    mids = (vals[:-1] + vals[1:]) / 2
    pos = np.union1d(vals, mids)
    return np.union1d(-pos, pos)


def _classes(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Class of each finite input: 2i + 1 on boundary i, 2i strictly below it (and above
    boundary i-1); -1 for -0, so that both zeros are classes of their own."""
    xd = x.astype(np.float64)
    i = np.searchsorted(bounds, xd)
    on = (i < bounds.size) & (bounds[np.minimum(i, bounds.size - 1)] == xd)
    key = 2 * i + on
    return np.where((xd == 0) & np.signbit(xd), -1, key)


def _reachable(bounds: np.ndarray, dtype: np.dtype) -> set:
    """Every class some finite ``dtype`` input falls in: a boundary the dtype holds, and an
    open interval with a dtype float strictly inside (bf16's value after the largest, 2^128,
    is beyond float32)."""
    big = float(np.finfo(dtype).max)
    on = 2 * np.flatnonzero(np.abs(bounds) <= big) + 1
    lows = np.concatenate([[-np.inf], bounds])
    highs = np.concatenate([bounds, [np.inf]])
    with np.errstate(over="ignore"):
        first = np.nextafter(lows.astype(dtype), dtype.type(np.inf)).astype(np.float64)  # smallest float above
    inside = 2 * np.flatnonzero(np.isfinite(first) & (first < highs))
    return {-1} | set(on.tolist()) | set(inside.tolist())


def _nan_classes(x: np.ndarray, fmt: str) -> set:
    """(sign, the payload bits the format keeps, whether lower bits are set) of NaN inputs."""
    f = get_format(fmt)
    nmant = np.finfo(x.dtype).nmant
    bits = x.view(f"u{x.itemsize}").astype(np.uint64)
    frac = bits & np.uint64((1 << nmant) - 1)
    drop = np.uint64(nmant - f.mantissa_bits)
    sign = (bits >> np.uint64(x.itemsize * 8 - 1)).tolist()
    return set(zip(sign, (frac >> drop).tolist(), ((frac & ((np.uint64(1) << drop) - np.uint64(1))) != 0).tolist()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", QUICK)
def test_every_class_of_input_is_present(fmt, dtype):
    ex = exhaustive_inputs(fmt, dtype)
    bounds = _boundaries(fmt)
    finite = ex[np.isfinite(ex)]
    assert set(_classes(finite, bounds).tolist()) == _reachable(bounds, np.dtype(dtype))
    assert {np.inf, -np.inf} <= set(ex[np.isinf(ex)].tolist())
    if get_format(fmt).nan == "ieee":  # payload-keeping NaN policies: every payload outcome
        m = get_format(fmt).mantissa_bits
        want = {(s, p, low) for s in (0, 1) for p in range(1 << m) for low in (False, True)} - {(0, 0, False), (1, 0, False)}
        assert _nan_classes(ex[np.isnan(ex)], fmt) == want
    assert len(set(ex.view(f"u{ex.itemsize}").tolist())) == ex.size  # no repeats


def test_exhaustive_counts():
    # The figures docs/golden.md quotes; fp16 was 393,216 before issue 9 and not exhaustive.
    counts = {f: cast_vectors(f, "exhaustive")["meta"]["n"] for f in ("fp16", "bf16", "e4m3", "e5m2", "e2m1")}
    assert counts == {"fp16": 387084, "bf16": 392448, "e4m3": 1548, "e5m2": 1524, "e2m1": 110}


# ---- sufficiency, against the codec and independent casts ------------------------------------
def _probes(fmt: str, dtype, rng: np.random.Generator, per_format: int) -> np.ndarray:
    """Inputs crowded around the boundaries (a few dtype floats away, and anywhere between
    two boundaries) plus random bit patterns."""
    dtype = np.dtype(dtype)
    bounds = _boundaries(fmt)
    pick = bounds[rng.integers(0, bounds.size, size=per_format)]
    with np.errstate(over="ignore"):
        b = pick.astype(dtype)
        steps = [np.nextafter(b, dtype.type(np.inf)), np.nextafter(b, dtype.type(-np.inf))]
        for _ in range(2):
            steps += [np.nextafter(steps[-2], dtype.type(np.inf)), np.nextafter(steps[-1], dtype.type(-np.inf))]
        nxt = bounds[np.minimum(np.searchsorted(bounds, pick) + 1, bounds.size - 1)]
        between = (pick + rng.uniform(0, 1, size=pick.size) * (nxt - pick)).astype(dtype)
        uint = np.dtype(f"u{dtype.itemsize}")
        bits = rng.integers(0, np.iinfo(uint).max, size=per_format, dtype=uint, endpoint=True).view(dtype)
    x = np.concatenate([b, *steps, between, bits])
    return x[np.isfinite(x)]


def _rep(x: np.ndarray, ex: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """For each input, a member of the exhaustive set in its class (every class has one)."""
    fin = ex[np.isfinite(ex)]
    keys, first = np.unique(_classes(fin, bounds), return_index=True)
    k = _classes(x, bounds)
    pos = np.searchsorted(keys, k)
    assert np.array_equal(keys[np.minimum(pos, keys.size - 1)], k)
    return fin[first[pos]]


def _options(fmt: str):
    for rounding in MODES:
        for overflow in (None,) + OVERFLOW_MODES:
            try:
                encode(np.float32([1.0]), fmt, rounding=rounding, overflow=overflow)
            except ValueError:
                continue
            yield dict(rounding=rounding, overflow=overflow)


def _check_class_decides(fmt: str, dtype, per_format: int) -> None:
    rng = np.random.default_rng(sum(map(ord, fmt)))
    ex = exhaustive_inputs(fmt, dtype)
    bounds = _boundaries(fmt)
    x = _probes(fmt, dtype, rng, per_format)
    r = _rep(x, ex, bounds)
    for opts in _options(fmt):
        assert np.array_equal(encode(x, fmt, **opts), encode(r, fmt, **opts)), opts
    # NaNs: every policy, inputs sharing sign, kept payload bits and "lower bits set" (the
    # payload counts only where payload policies exist: IEEE-style NaNs).
    nan = ex[np.isnan(ex)]
    if get_format(fmt).nan != "ieee":
        return _check_nan_signs(nan, fmt)
    for policy in NAN_POLICIES:
        try:
            got = encode(nan, fmt, nan=policy)
        except ValueError:
            continue
        uint = np.dtype(f"u{nan.itemsize}")
        noisy = (nan.view(uint) ^ uint.type(1)).view(nan.dtype)  # flip the lowest payload bit
        noisy = noisy[np.isnan(noisy)]
        keys = {c: code for c, code in zip(_nan_list(nan, fmt), got.tolist())}
        for c, code in zip(_nan_list(noisy, fmt), encode(noisy, fmt, nan=policy).tolist()):
            assert keys[c] == code, (policy, c)


def _check_nan_signs(nan: np.ndarray, fmt: str) -> None:
    """Without payload policies a NaN's code depends on its sign at most."""
    for policy in NAN_POLICIES:
        try:
            got = encode(nan, fmt, nan=policy)
        except ValueError:
            continue
        for sign in (False, True):
            assert len(set(got[np.signbit(nan) == sign].tolist())) == 1, policy


def _nan_list(x: np.ndarray, fmt: str) -> list:
    return [next(iter(_nan_classes(x[i : i + 1], fmt))) for i in range(x.size)]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m1", "e8m0", "binary8p1", "ue4m3", "fp16", "bf16"])
def test_inputs_of_one_class_round_alike(fmt):
    _check_class_decides(fmt, np.float32, 4000)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", SMALL)
def test_inputs_of_one_class_round_alike_every_format(fmt, dtype):
    _check_class_decides(fmt, dtype, 50000)


@pytest.mark.parametrize(
    "fmt,cast",
    [("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2"), ("bf16", "bfloat16"), ("e2m1", "float4_e2m1fn"),
     ("e4m3fnuz", "float8_e4m3fnuz"), ("fp16", None)],
)  # fmt: skip
def test_classes_decide_ml_dtypes_and_numpy_casts_too(fmt, cast):
    """The partition is not an artefact of fpemu's codec: an independent cast (ml_dtypes,
    numpy's float16) also gives one code per class."""
    if cast is None:
        dtype = np.float16
    else:
        dtype = getattr(pytest.importorskip("ml_dtypes"), cast)
    rng = np.random.default_rng(3)
    ex = exhaustive_inputs(fmt)
    x = _probes(fmt, np.float32, rng, 20000)
    r = _rep(x, ex, _boundaries(fmt))
    with np.errstate(all="ignore"):  # the other library's own overflow casts
        a, b = x.astype(dtype), r.astype(dtype)
    assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


# ---- what is refused --------------------------------------------------------------------------
def test_exhaustive_refuses_what_it_cannot_cover(capsys):
    with pytest.raises(ValueError, match="at most 16 bits.*fp32 has 32 bits"):
        cast_vectors("fp32", "exhaustive")
    with pytest.raises(ValueError, match="tf32 has 19 bits"):
        cast_vectors("tf32", "exhaustive")
    with pytest.raises(ValueError, match="no input set is exhaustive"):
        cast_vectors("e4m3", "exhaustive", rounding="sr")
    assert cli.main(["vectors", "fp32", "--kind", "exhaustive", "--out", "never.npz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fpemu: error: exhaustive vectors exist for formats of at most 16 bits")


def test_exhaustive_float64_inputs(tmp_path):
    v = cast_vectors("e5m2", "exhaustive", source="f64")
    assert v["input_bits"].dtype == np.uint64 and v["meta"]["n"] == 1524
    path = tmp_path / "e5m2_f64.npz"
    write_vectors(v, path)
    assert verify_vectors(path) == (1524, 1524)


# ---- --n ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", ["0", "-3"])
def test_n_below_one_is_refused(tmp_path, capsys, n):
    out = tmp_path / "v.npz"
    assert cli.main(["vectors", "e4m3", "--kind", "random", "--n", n, "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"fpemu: error: vectors: argument --n: must be a whole number >= 1, got '{n}'\n"
    assert not out.exists()


@pytest.mark.parametrize("argv", [
    ["vectors", "e4m3", "--kind", "random", "--n", str(10**12)],
    ["vectors", "mxfp8_e4m3", "--kind", "random", "--n", str(10**9)],
    ["vectors", "fp16", "--accumulator", "h100", "--n", str(10**9)],
    ["vectors", "fp16", "--accumulator", "h100", "--k", str(10**9)],
])  # fmt: skip
def test_absurd_sizes_are_refused_before_any_allocation(tmp_path, capsys, argv):
    import tracemalloc

    tracemalloc.start()
    try:
        assert cli.main(argv + ["--out", str(tmp_path / "v.npz")]) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20  # nothing in proportion to --n or --k
    err = capsys.readouterr().err
    assert err.startswith("fpemu: error: ") and err.count("\n") == 1
    assert "is too large" in err or "argument --k: must be a whole number in 1..65536" in err


def test_n_applies_only_to_random_vectors(tmp_path, capsys):
    assert cli.main(["vectors", "e4m3", "--n", "100", "--out", str(tmp_path / "v.npz")]) == 2
    assert "--n applies to --kind random; edge vectors have a fixed set of inputs" in capsys.readouterr().err
    assert cli.main(["vectors", "mxfp4", "--rounding", "rz", "--out", str(tmp_path / "v.npz")]) == 2
    assert "--rounding does not apply to block vectors (mxfp4)" in capsys.readouterr().err
    assert cli.main(["vectors", "fp16", "--accumulator", "h100", "--kind", "edge", "--out", str(tmp_path / "v.npz")]) == 2
    assert "dot vectors are random rows" in capsys.readouterr().err
    assert cli.main(["vectors", "fp16", "--k", "8", "--out", str(tmp_path / "v.npz")]) == 2
    assert "--k does not apply to vectors without --accumulator" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


# ---- stochastic rounding ---------------------------------------------------------------------
def test_stochastic_vectors_are_seeded_and_recheck(tmp_path, capsys):
    out = tmp_path / "sr.npz"
    argv = ["vectors", "e4m3", "--kind", "random", "--n", "4000", "--rounding", "sr", "--seed", "7", "--out", str(out)]
    assert cli.main(argv) == 0
    assert "read back and re-checked: 4000/4000 identical" in capsys.readouterr().out
    v = read_vectors(out)
    assert v["meta"]["seed"] == 7 and v["meta"]["rounding"] == "sr"
    # The same seed gives the same draws; another seed other draws.
    again = cast_vectors("e4m3", "random", 4000, rounding="sr", seed=7)
    assert np.array_equal(again["code"], v["code"])
    other = cast_vectors("e4m3", "random", 4000, rounding="sr", seed=8)
    assert np.array_equal(other["input_bits"], cast_vectors("e4m3", "random", 4000, seed=8)["input_bits"])
    # Every stochastic code is one of its two neighbours, and both occur.
    down, up, code = v["code_down"], v["code_up"], v["code"]
    assert np.all((code == down) | (code == up))
    inexact = down != up
    assert (code[inexact] == down[inexact]).any() and (code[inexact] == up[inexact]).any()
    assert np.array_equal(down, encode(v["input_bits"].view(np.float32), "e4m3", rounding="down"))


def test_stochastic_draws_match_their_probability():
    # 1 + 2^-5 lies a quarter of the way from 1 to 1.125 (E4M3's next value): up 1 time in 4.
    x = np.full(40000, 1 + 2.0**-5, dtype=np.float32)
    codes = encode(x, "e4m3", rounding="sr", rng=1)
    share = float(np.mean(codes == 0x39))
    assert abs(share - 0.25) < 0.01 and set(codes.tolist()) == {0x38, 0x39}


# ---- files: the exact path, nothing left behind -------------------------------------------------
@pytest.mark.parametrize("name", ["v.NPZ", "v.Csv", "v.JSON", "v.Bin", "v.H"])
def test_suffix_is_case_insensitive_and_the_path_exact(tmp_path, capsys, name):
    out = tmp_path / name
    assert cli.main(["vectors", "e4m3", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert verify_vectors(out) == (1550, 1550)
    if name.lower().endswith(".npz"):
        with np.load(out) as z:  # a real .npz at exactly that name
            assert set(z.files) == {"meta", "input_bits", "code", "value"}


def test_a_failed_check_leaves_no_file_and_keeps_the_old_one(tmp_path, capsys, monkeypatch):
    from fpemu.vectors import cli as vectors_cli

    out = tmp_path / "golden.npz"
    out.write_bytes(b"the old golden file")
    monkeypatch.setattr(vectors_cli, "verify", lambda v: (10, 9))
    assert cli.main(["vectors", "e4m3", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == f"fpemu: error: {out}: read back, 1 of 10 cases differ from fpemu (a writer bug); nothing written\n"
    assert out.read_bytes() == b"the old golden file"
    assert [p.name for p in tmp_path.iterdir()] == ["golden.npz"]  # no temporary file either


def test_an_error_while_writing_leaves_nothing(tmp_path, monkeypatch):
    from fpemu.vectors import files as vectors_files

    def half_then_fail(v, path, ext, target=None):
        path.write_bytes(b"half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(vectors_files, "write_vectors_file", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        write_vectors(cast_vectors("e2m1", "edge", nan="zero"), tmp_path / "v.csv")
    assert not any(tmp_path.iterdir())
    monkeypatch.undo()
    with pytest.raises(ValueError, match="too many for a C header"):  # refused, nothing left behind
        write_vectors(cast_vectors("bf16", "edge"), tmp_path / "bf16.h")
    assert not any(tmp_path.iterdir())
