"""The top-half arithmetic (fpemu/codec/top_half.py): where it serves, that its self-check
refuses a wrong plan, and that every piece mix (few or many table lookups) gives the codes
of the ml_dtypes casts and of the 2**17-entry table it stands in for."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fpemu
from fpemu.codec.options import Conversion
from fpemu.codec.chunks import TOP_HALF_CHUNK as _PIECE
from fpemu.codec.fast.fp32_table import encode_table as _encode_table
from fpemu.codec.fast.fp32_table import table_lookup as _table_lookup
from fpemu.codec.fast.top_half import _SAMPLE, encode_top_half, top_half_plan
from fpemu.codec.fast.top_half import arithmetic_plan as _arithmetic_plan
from fpemu.formats import get_format

ROUNDINGS = ("nearest_even", "nearest_away", "toward_zero")
NARROW = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e2m1", "e3m2", "e2m3", "binary8p3se", "binary8p5se")


@pytest.mark.parametrize("name", NARROW)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("overflow", ("saturate", "inf", "nan"))
def test_serves_the_narrow_formats(name, rounding, overflow):
    assert _arithmetic_plan(get_format(name), Conversion(rounding, overflow, "sign")) is not None


@pytest.mark.parametrize("name", ("bf16", "e8m0", "ue4m3", "fp16", "int8"))
def test_leaves_other_formats_to_other_paths(name):
    assert _arithmetic_plan(get_format(name), Conversion("nearest_even", "saturate", "sign")) is None


@pytest.mark.parametrize("name", ("e4m3", "e4m3fnuz"))
@pytest.mark.parametrize("field, change", [
    ("offset", 1), ("even", "flip"), ("largest", 1), ("first_normal", 1), ("sign_shift", 1), ("drop", 1),
    ("min_normal", 4.0), ("magic", 2.0), ("neg_zero", "flip"),
])
def test_a_wrong_plan_fails_the_check(name, field, change, monkeypatch):
    fmt, opts = get_format(name), Conversion("nearest_even", "saturate", "sign")
    good = top_half_plan(fmt, opts, _encode_table(fmt, opts))
    old = getattr(good, field)
    new = (not old) if change == "flip" else old * change if isinstance(change, float) else old + change
    bad = dataclasses.replace(good, **{field: new})
    monkeypatch.setattr("fpemu.codec.fast.top_half._candidate", lambda f, o: bad)
    assert top_half_plan(fmt, opts, _encode_table(fmt, opts)) is None


def _mixed(n: int, tiny: float, seed: int) -> np.ndarray:
    """Normal samples with a share ``tiny`` of values in or below FP8's subnormal range, and
    some ties, signed zeros, Inf, NaN and huge values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32) * np.float32(8)
    small = rng.random(n) < tiny
    x[small] = (rng.standard_normal(np.count_nonzero(small)) * 2.0**-9).astype(np.float32)
    pick = rng.integers(0, n, n // 50)
    x[pick] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, 1.0 + 2**-4, -(2**-10)],
                       np.float32)[rng.integers(0, 8, pick.size)]
    return x


@pytest.mark.parametrize("tiny", (0.0, 0.1, 0.6, 1.0))
@pytest.mark.parametrize("name", ("e4m3", "e5m2fnuz", "e2m1"))
def test_every_piece_mix_matches_the_table(tiny, name):
    fmt, opts = get_format(name), Conversion("nearest_even", "saturate", "sign")
    table = _encode_table(fmt, opts)
    u = _mixed(3 * _PIECE + 123, tiny, seed=int(tiny * 10)).view(np.uint32)
    plan = _arithmetic_plan(fmt, opts)
    assert np.array_equal(encode_top_half(u, plan, table), _table_lookup(u, table))
    for mode in ("sparse", "subnormal"):
        assert np.array_equal(encode_top_half(u, plan, table, mode), _table_lookup(u, table))


@pytest.mark.parametrize("tiny_first", (False, True))
@pytest.mark.parametrize("name", ("e4m3", "e2m1"))
def test_a_misleading_sample_still_gives_the_table_codes(tiny_first, name):
    """A piece is judged by its first _SAMPLE elements (few specials: list them; many: the
    bulk paths). Where the rest of the piece says otherwise, the codes are the same."""
    fmt, opts = get_format(name), Conversion("nearest_even", "saturate", "sign")
    table = _encode_table(fmt, opts)
    rng = np.random.default_rng(7)
    tiny = (rng.standard_normal(_PIECE) * 2.0**-9).astype(np.float32)
    large = (rng.standard_normal(_PIECE) * 64 + 128).astype(np.float32)  # normal in both formats
    x = np.concatenate([tiny[:_SAMPLE], large[_SAMPLE:]] if tiny_first else [large[:_SAMPLE], tiny[_SAMPLE:]])
    u = np.concatenate([x, x[::-1]]).view(np.uint32)
    assert np.array_equal(encode_top_half(u, _arithmetic_plan(fmt, opts), table), _table_lookup(u, table))


@pytest.mark.parametrize("tiny", (0.0, 0.5))
@pytest.mark.parametrize("name, kind", [("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2"),
                                        ("e4m3fnuz", "float8_e4m3fnuz"), ("e2m1", "float4_e2m1fn")])
def test_default_encode_matches_ml_dtypes(tiny, name, kind):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = _mixed(2 * _PIECE + 5, tiny, seed=3)
    if name == "e2m1":
        x = x[np.isfinite(x)]  # ml_dtypes' float4 has no NaN or Inf to cast them to
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(getattr(ml_dtypes, kind)).view(np.uint8)
    assert np.array_equal(fpemu.encode(x, name, **fpemu.like("ml_dtypes", name)), want)
