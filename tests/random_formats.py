"""A hypothesis strategy of random user-defined formats, and the options each admits, shared
by the codec's tests (tests/codec/test_generic_kernel.py and the files that test another path
over the same formats). Tests import them as ``from random_formats import ...``, as they import
``reference``.

:func:`formats` draws any :class:`fpemu.Format` the dataclass accepts: 0 to 11 exponent bits
(0: a fixed-point format, sign-magnitude or two's complement), 0 to 52 mantissa bits (at most
64 bits in all), any bias that keeps the values inside float64, signed or unsigned, every
Inf/NaN placement (P3109's Inf below the NaN too), subnormals on or off, a wider container now
and then.
"""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from fpemu import Format
from fpemu.codec import OVERFLOW_MODES

# (inf, nan) placements that Format accepts (IEEE Inf and NaN come together).
SPECIALS = [("none", "none"), ("ieee", "ieee"), ("none", "top"), ("top", "none"),
            ("top", "neg_zero"), ("none", "neg_zero"), ("below_nan", "top")]  # fmt: skip


@st.composite
def formats(draw) -> Format:
    """Any Format the dataclass accepts (refused combinations are drawn again)."""
    exponent_bits = draw(st.integers(1, 8) | st.integers(9, 11) | st.just(0))
    mantissa_bits = draw(st.integers(0, 23) | st.integers(24, 52))
    signed = draw(st.booleans())
    subnormals = draw(st.booleans())
    inf, nan = draw(st.sampled_from(SPECIALS))
    twos_complement = draw(st.booleans()) if exponent_bits == 0 else False
    standard = (1 << max(exponent_bits - 1, 0)) - 1
    bias = draw(st.integers(-4, 4).map(lambda d: standard + d)
                | st.integers(-(1 << exponent_bits), (1 << exponent_bits) + 64))
    bits = int(signed) + exponent_bits + mantissa_bits
    container = draw(st.sampled_from([None, None, None] + [b for b in (8, 16, 32, 64) if b > bits]))
    try:
        return Format("random", exponent_bits, mantissa_bits, bias, signed=signed, inf=inf,
                      nan=nan, subnormals=subnormals, container_bits=container,
                      twos_complement=twos_complement)
    except ValueError:
        assume(False)


def overflow_options(fmt: Format) -> list[dict]:
    """Every overflow rule the format admits, as encode's keyword arguments (the reference
    takes ``directed`` for ``directed_overflow``)."""
    allowed: list[dict] = [{"overflow": o} for o in (None, "saturate", "saturate_propagate", "sat_none",
                                                     "ml_dtypes_saturate")]
    for target, present in (("inf", fmt.inf != "none"), ("nan", fmt.nan != "none")):
        if present:
            allowed += [{"overflow": target, "directed_overflow": d} for d in (None, "p3109", "none")]
    assert {a["overflow"] for a in allowed} - {None} <= set(OVERFLOW_MODES)
    return allowed


def ref_options(options: dict) -> dict:
    """encode's options as the reference's keyword arguments."""
    out = {k: v for k, v in options.items() if k != "directed_overflow"}
    if options.get("directed_overflow"):
        out["directed"] = options["directed_overflow"]
    return out
