"""The stochastic sentence of a rounding with N random bits (issue 41, item 2): the odds it
states are the ones the codec draws with, counted over every value of the N bits
(``fpemu.encode(..., random_bits=R)`` for each R), and the ones IEEE P3109's definitions give
with exact Fractions (interim report v4.0, 4.7.4; gfloat's StochasticOdd). The page and
``fpemu show`` print the same sentence.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

import fpemu
from fpemu.cli import main
from fpemu.teach import encode_number

SENTENCE = re.compile(r"with (\d+) random bits? takes (\S+) with probability (\S+) \((\w+) of the (\d+) values")


def p3109_odds(nu: Fraction, mode: str, n: int) -> Fraction:
    """The chance of rounding away from zero for the fraction nu of the gap, by the definitions."""
    scaled = nu * 2**n
    if mode == "stochastic_a":  # floor(nu 2^N) + R >= 2^N
        k = math.floor(scaled)
    elif mode == "stochastic_b":  # floor(nu 2^(N+1)) + 2R + 1 >= 2^(N+1)
        t = math.floor(nu * 2 ** (n + 1))
        k = sum(1 for r in range(2**n) if t + 2 * r + 1 >= 2 ** (n + 1))
    else:  # C: round_ties_even(nu 2^N) + R >= 2^N; odd: ties to odd
        low = math.floor(scaled)
        k = low + (scaled - low > Fraction(1, 2))
        if scaled - low == Fraction(1, 2):
            k = low + ((low % 2 == 1) if mode == "stochastic_c" else (low % 2 == 0))
    return Fraction(k, 2**n)


def codec_odds(x: Fraction, fmt: str, mode: str, n: int, far: Fraction) -> Fraction:
    """Over every value of the N random bits, how often the codec gives ``far``."""
    codes = fpemu.encode(np.array([x] * 2**n, dtype=object), fmt, rounding=mode, sr_bits=n,
                         random_bits=np.arange(2**n), overflow="saturate")
    values = fpemu.decode(codes, fmt)
    return Fraction(int(np.sum(np.abs(values) == float(abs(far)))), 2**n)


CASES = [("e4m3", "1.3", 1.25, 1.375), ("e4m3", "-1.3", -1.25, -1.375), ("e4m3", "1.3125", 1.25, 1.375),
         ("e2m1", "2.6", 2.0, 3.0), ("e2m1", "0.3", 0.0, 0.5), ("fp16", "1e-7", 5.960464477539063e-08, 1.1920928955078125e-07),
         ("bf16", "1.001", 1.0, 1.0078125), ("e4m3", "0.0029", 0.001953125, 0.00390625),
         ("e4m3", "1/3", 0.3125, 0.34375)]  # (odds 2/3: no decimal ends)


@pytest.mark.parametrize("fmt, typed, near, far", CASES)
@pytest.mark.parametrize("mode", ["stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd"])
def test_the_stated_odds_are_the_codecs_and_p3109s(fmt, typed, near, far, mode):
    x = Fraction(typed)
    nu = (abs(x) - abs(Fraction(near))) / (abs(Fraction(far)) - abs(Fraction(near)))
    for n in (1, 2, 3, 5, 8):
        text = encode_number(fmt, typed, mode, sr_bits=n)["rules"][0]["text"]
        bits, towards, p, count, values = SENTENCE.search(text).groups()
        stated = Fraction(p)
        assert int(bits) == n and int(values) == 2**n and Fraction(towards) == Fraction(far), text
        assert stated == codec_odds(x, fmt, mode, n, Fraction(far)) == p3109_odds(nu, mode, n), (n, text)
        assert count == {0: "none", 2**n: "all"}.get(int(stated * 2**n), str(int(stated * 2**n)))
        assert text.endswith("(unbiased)") == (stated == nu), text
        if stated != nu:
            said = text.split(f"unbiased rounding would take {towards} with probability ")[1]
            assert said.startswith("≈") or Fraction(said) == nu, text


def test_the_issues_example_e4m3_1_3():
    """#format=e4m3&x=1.3&rounding=stochastic_a&srbits=1 said 'a probability near 0.4'."""
    said = {(mode, n): Fraction(SENTENCE.search(encode_number("e4m3", "1.3", mode, sr_bits=n)["rules"][0]["text"]).group(3))
            for mode, n in [("stochastic_a", 1), ("stochastic_a", 2), ("stochastic_b", 1), ("stochastic_c", 1),
                            ("stochastic_odd", 1)]}
    assert said == {("stochastic_a", 1): 0, ("stochastic_a", 2): Fraction(1, 4), ("stochastic_b", 1): Fraction(1, 2),
                    ("stochastic_c", 1): Fraction(1, 2), ("stochastic_odd", 1): Fraction(1, 2)}
    text = encode_number("e4m3", "1.3", "stochastic_a", sr_bits=1)["rules"][0]["text"]
    assert "near" not in text and "unbiased rounding would take 1.375 with probability 0.4" in text


def test_32_random_bits_are_counted_too():
    text = encode_number("e4m3", "1.3", "stochastic_a", sr_bits=32)["rules"][0]["text"]
    stated = Fraction(SENTENCE.search(text).group(3))
    assert stated == p3109_odds(Fraction(4, 10), "stochastic_a", 32) == Fraction(1717986918, 2**32)


def test_past_max_the_odds_are_those_of_the_grid_continued():
    # 460 in E4M3: between 448 and the 480 the format does not have; the draw that goes up is NaN
    text = encode_number("e4m3", "460", "stochastic_a", sr_bits=4)["rules"][0]["text"]
    assert Fraction(SENTENCE.search(text).group(3)) == p3109_odds(Fraction(12, 32), "stochastic_a", 4)
    codes = fpemu.encode(np.array([460.0] * 16), "e4m3", rounding="stochastic_a", sr_bits=4, random_bits=np.arange(16))
    assert int(np.sum(codes == 0x7F)) == 16 * Fraction(SENTENCE.search(text).group(3))


def test_show_prints_the_same_sentence(capsys):
    assert main(["show", "1.3", "-f", "e4m3", "-r", "stochastic_a", "--sr-bits", "2", "--no-color"]) == 0
    out = capsys.readouterr().out
    page = encode_number("e4m3", "1.3", "stochastic_a", sr_bits=2)["rules"][0]["text"]
    assert f"stochastic {page}" in out and "with probability 0.25 (1 of the 4 values of its bits)" in out
