"""IEEE P3109 (interim report v4.0): every format of the family, against the working group's
own published value tables and the report's rules.

The tables (tests/data/README.md) give the value of every code of the 120 formats with
K = 3..8 bits; fpemu builds each one with ``p3109(K, P, signed=..., domain=...)`` and must
decode every code to exactly that value, encode every value back to its code, and mark the
same codes subnormal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fpemu import Format, decode, encode, get_format, quantize
from fpemu.formats import p3109

TABLES = np.load(Path(__file__).parents[1] / "data" / "p3109_value_tables_k3_k8.npz")
NAMES = sorted(n for n in TABLES.files if not n.endswith("_subnormal"))


def parse(name: str) -> tuple[int, int, bool, str]:
    k, rest = name.removeprefix("binary").split("p")
    return int(k), int(rest[:-2]), rest[-2] == "s", "extended" if rest[-1] == "e" else "finite"


def test_the_tables_cover_every_k3_to_k8_format():
    # P3109 section 3.1: signed 1 <= P < K, unsigned 1 <= P <= K, two domains each.
    expected = {f"binary{k}p{p}{s}{d}" for k in range(3, 9) for s, top in (("s", k - 1), ("u", k))
                for p in range(1, top + 1) for d in "ef"}  # fmt: skip
    assert set(NAMES) == expected and len(NAMES) == 120


@pytest.mark.parametrize("name", NAMES)
def test_every_code_decodes_to_the_published_value(name):
    k, p, signed, domain = parse(name)
    fmt = p3109(k, p, signed=signed, domain=domain)
    assert fmt.name == name and get_format(name) == fmt and fmt.bits == k
    want = TABLES[name]
    got = decode(np.arange(1 << k), fmt)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{name}: codes {np.flatnonzero(~same)[:5]} decode to {got[~same][:5]}, tables say {want[~same][:5]}"
    # Exactly one NaN and one zero, no -0 (section 3.1).
    assert np.isnan(want).sum() == 1 and (want == 0).sum() == 1 and not np.signbit(want[want == 0]).any()


@pytest.mark.parametrize("name", NAMES)
def test_every_value_encodes_back_to_its_code(name):
    fmt = get_format(name)
    want = TABLES[name]
    codes = np.arange(1 << fmt.bits)
    finite = ~np.isnan(want)
    got = encode(want[finite], fmt)
    assert got.tolist() == codes[finite].tolist()
    assert int(encode([np.nan], fmt)[0]) == int(codes[np.isnan(want)][0])


@pytest.mark.parametrize("name", NAMES)
def test_subnormal_codes_are_the_published_ones(name):
    fmt = get_format(name)
    values = np.abs(TABLES[name])
    subnormal = (values > 0) & (values < fmt.min_normal)
    assert subnormal.tolist() == TABLES[name + "_subnormal"].tolist()


def test_the_old_names_still_work():
    assert get_format("binary8p3") == get_format("p3109_p3") == p3109(3) == p3109(8, 3)
    assert get_format("binary8p3").name == "binary8p3se"


@pytest.mark.parametrize(
    "args, error",
    [
        ((8, 8), "signed formats: 1 <= P < K"),
        ((8, 9), "unsigned formats|signed formats"),
        ((1, 1), "K >= 2"),
        ((8, 0), "1 <= P"),
        ((8.0, 3), "K must be an integer"),
    ],
)
def test_undefined_parameters_are_refused(args, error):
    with pytest.raises((ValueError, TypeError), match=error):
        p3109(*args)
    with pytest.raises(ValueError, match="domain"):
        p3109(8, 3, domain="closed")


def test_annex_c_two_bit_formats():
    # Annex C, table 8: Binary2p1se = {0, Inf, NaN, -Inf}; Binary2p1sf = {0, 1, NaN, -1};
    # Binary2p2uf = {0, 0.5, 1, NaN}.
    assert decode(range(4), "binary2p1se").tolist()[0:2] == [0.0, np.inf]
    assert np.isnan(decode([2], "binary2p1se")[0]) and decode([3], "binary2p1se")[0] == -np.inf
    assert decode([0, 1, 3], "binary2p1sf").tolist() == [0.0, 1.0, -1.0]
    assert decode([0, 1, 2], "binary2p2uf").tolist() == [0.0, 0.5, 1.0]
    assert get_format("binary2p1se").max == 0.0


# Saturation (section 4.7.5), on Binary8p4se (max 224 = 0x7E, +Inf 0x7F, -Inf 0xFF, NaN 0x80)
# and Binary8p4ue (max 53248 = 0xFD, +Inf 0xFE, NaN 0xFF); each row is the spec's rule list read
# for one input, rounding mode and saturation mode.
@pytest.mark.parametrize(
    "name, x, rounding, overflow, code",
    [
        ("binary8p4se", 1e6, "rne", "sat_finite", 0x7E),
        ("binary8p4se", np.inf, "rne", "sat_finite", 0x7E),
        ("binary8p4se", -np.inf, "rne", "sat_propagate", 0xFF),
        ("binary8p4se", 1e6, "rne", "sat_propagate", 0x7E),
        ("binary8p4se", 1e6, "rne", "sat_none", 0x7F),
        ("binary8p4se", 1e6, "rz", "sat_none", 0x7E),
        ("binary8p4se", -1e6, "ru", "sat_none", 0xFE),
        ("binary8p4se", -1e6, "rd", "sat_none", 0xFF),
        # ToOdd: 224 is the even code 0x7E, so 224.1 rounds to the next code up, +Inf (1.6).
        ("binary8p4se", 224.1, "odd", "sat_none", 0x7F),
        ("binary8p4se", 224.1, "odd", "inf", 0x7E),  # IEEE 754 7.4: odd truncates, gives max
        # Unsigned extended: ToOdd overflow gives M_hi (the v4.0 rule of section 4.7.5).
        ("binary8p4ue", 1e6, "odd", "sat_none", 0xFD),
        ("binary8p4ue", 1e6, "rne", "sat_none", 0xFE),
        # Negatives into unsigned formats: SatFinite -> 0; SatNone -> NaN, or 0 in RZ/RU.
        ("binary8p4ue", -5.0, "rne", "sat_finite", 0x00),
        ("binary8p4ue", -5.0, "rne", "sat_none", 0xFF),
        ("binary8p4ue", -5.0, "rz", "sat_none", 0x00),
        ("binary8p4ue", -5.0, "ru", "sat_none", 0x00),
        ("binary8p4ue", -np.inf, "rz", "sat_none", 0xFF),
        ("binary8p4ue", -1e-30, "rne", "sat_none", 0x00),  # rounds to zero first
        # Finite domain: SatNone saturates (v4.0), Inf included.
        ("binary8p4sf", 1e6, "rne", "sat_none", 0x7F),
        ("binary8p4sf", -np.inf, "rne", "sat_none", 0xFF),
    ],
)
def test_saturation_rules(name, x, rounding, overflow, code):
    assert int(encode([x], name, rounding=rounding, overflow=overflow)[0]) == code


def test_stochastic_rounding_rules_of_section_4_7_4():
    # Binary8p4se, x = 232 (nu = 1/2 between 224 and the next grid value 240): with N = 2,
    # StochasticA rounds away for R >= 2 (floor(0.5 * 4) + R >= 4); SatNone sends that to +Inf.
    r = np.arange(4)
    got = encode(np.full(4, 232.0), "binary8p4se", rounding="stochastic_a", sr_bits=2, random_bits=r,
                 overflow="sat_none")
    assert got.tolist() == [0x7E, 0x7E, 0x7F, 0x7F]
    got = encode(np.full(4, 232.0), "binary8p4se", rounding="stochastic_a", sr_bits=2, random_bits=r,
                 overflow="sat_finite")
    assert got.tolist() == [0x7E] * 4
    # Subnormal grid: x = 1.25 * 2**-10 (nu = 1/4 above the smallest subnormal, code 1).
    got = encode(np.full(4, 1.25 * 2.0**-10), "binary8p4se", rounding="stochastic_a", sr_bits=2, random_bits=r)
    assert got.tolist() == [1, 1, 1, 2]
    assert quantize(np.full(4, -1.25 * 2.0**-10), "binary8p4se", rounding="stochastic_a", sr_bits=2,
                    random_bits=r).tolist() == [-2.0**-10] * 3 + [-2.0**-9]


def test_p3109_is_a_plain_format():
    fmt = p3109(6, 3)
    assert fmt == Format("binary6p3se", 3, 2, 4, inf="top", nan="neg_zero")
    assert (fmt.max, fmt.min_subnormal, fmt.nan_code, fmt.inf_code) == (12.0, 2.0**-5, 0x20, 0x1F)


# Regressions (each failed on the code before its fix): NumPy integers wherever an int is taken.
def test_p3109_takes_numpy_integers():
    assert p3109(np.int64(8), 3) == p3109(8, 3)
    assert p3109(np.int32(4), np.uint8(2), domain="finite") == p3109(4, 2, domain="finite")
    assert p3109(np.int64(3)) == p3109(3)
    assert type(p3109(np.int64(8), np.int64(3)).bias) is int
    for bad in (True, np.bool_(True), 8.0):
        with pytest.raises(TypeError, match="P3109 K must be an integer"):
            p3109(bad, 3)
