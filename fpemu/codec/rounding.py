"""The rounding decision: whether a truncated magnitude code goes up by one unit, per mode.

Every mode sees the same facts about a value: the truncated code's parity, the dropped bits
``rem`` as an integer (the exact fraction of a unit is ``rem / 2**shift``) and the sign. The
stochastic modes add randomness: ``stochastic`` compares 64 random bits with the dropped
fraction; P3109's ``stochastic_a/b/c`` use N given (or drawn) random bits R exactly as the
interim report v4.0, section 4.7.4, defines them, with nu the dropped fraction:

* A: floor(nu * 2**N) + R >= 2**N (add R below the last place and keep the carry: PTX
  ``cvt.rs``, gfloat's StochasticFastest);
* B: floor(nu * 2**(N+1)) + 2R + 1 >= 2**(N+1) (gfloat's StochasticFast);
* C: round_ties_even(nu * 2**N) + R >= 2**N (gfloat's Stochastic);

and gfloat's ``RoundMode.StochasticOdd`` (not a P3109 mode), C with ties to odd:
round_ties_odd(nu * 2**N) + R >= 2**N (gfloat 0.5 ``round_float``: ``_rnito(delta * 2**N)``).

>>> u = np.uint64
>>> sr_increment("stochastic_a", np.array([u(3)]), np.array([2]), 1, np.array([u(0)])).tolist()
[False]
>>> sr_increment("stochastic_a", np.array([u(3)]), np.array([2]), 1, np.array([u(1)])).tolist()
[True]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import is_whole
from .chunks import scratch

_U64 = np.uint64


def round_increment(odd, rem, shift, negative, mode: str) -> np.ndarray:
    """Whether to add one unit in the last kept place, per deterministic rounding mode.

    odd: whether the truncated code is odd (ties-to-even and to-odd look at the *code's* last
    bit, which for formats without mantissa bits is the exponent's); rem: the dropped bits as
    an integer; shift: how many bits were dropped (0 <= shift <= 60, rem < 2**shift; beyond 54
    every dropped bit is sticky, since the significand has 53); negative: the sign.
    """
    if mode in ("nearest_even", "nearest_away") and np.ndim(shift) == 0 and 1 <= shift <= 8 * rem.itemsize - 2:
        # One shift for one shift count (the fast paths'): rem + half - 1 (+ 1 where the code
        # is odd, for ties to even; rem + half, ties away) carries into bit ``shift`` exactly
        # where the value rounds up. Gives 0/1 integers of rem's dtype.
        carry = np.add(rem, rem.dtype.type((1 << (int(shift) - 1)) - (mode == "nearest_even")))
        if mode == "nearest_even":
            carry += odd
        carry >>= rem.dtype.type(shift)
        return carry
    if mode in ("nearest_even", "nearest_away", "ml_dtypes_e8m0"):
        half = (_U64(1) << shift) >> _U64(1)  # 0 where nothing is dropped (binary64)
        inexact = rem != 0
        if mode == "nearest_even":
            return inexact & ((rem > half) | ((rem == half) & odd))
        return inexact & (rem >= half)
    if mode == "toward_zero":
        return np.zeros(rem.shape, dtype=bool)
    if mode == "up":
        return (rem != 0) & ~negative
    if mode == "down":
        return (rem != 0) & negative
    if mode == "odd":
        return (rem != 0) & ~odd
    raise AssertionError(mode)


def stochastic_increment(rem, shift_full, u: np.ndarray) -> np.ndarray:
    """Round up with probability rem / 2**shift_full, given 64 random bits u per element.

    u < rem * 2**(64 - shift) for u uniform on [0, 2**64): exactly unbiased whenever at most 64
    bits are dropped; below that (values far under the smallest subnormal) the threshold is
    floored, a bias under 2**-64 of a unit in the last place.
    """
    left = np.clip(64 - shift_full, 0, 63).astype(np.uint64)
    right = np.clip(shift_full - 64, 0, 63).astype(np.uint64)
    return u < ((rem << left) >> right)


def _top_bits(rem, shift_full, n: int) -> np.ndarray:
    """floor(nu * 2**n) for nu = rem / 2**shift_full, exactly (rem < 2**53: a right shift of
    60 or more leaves nothing)."""
    d = np.asarray(shift_full, dtype=np.int64) - n
    if d.ndim == 0:  # one shift count (the fast paths'): one branch
        d = int(d)
        return rem >> _U64(d) if 0 <= d < 61 else rem << _U64(-d) if d < 0 else np.zeros_like(rem)
    right = (rem >> np.clip(d, 0, 60).astype(np.uint64)) * (d < 61)
    left = rem << np.clip(-d, 0, 63).astype(np.uint64)
    return np.where(d >= 0, right, left)


def _nearest_bits(rem, shift_full, n: int, ties_odd: bool = False) -> np.ndarray:
    """nu * 2**n rounded to the nearest integer, ties to even (or to odd), for nu = rem /
    2**shift_full, exactly.

    >>> u = np.array([1, 3], dtype=np.uint64)  # 0.5 and 1.5 (nu = rem / 4, n = 1)
    >>> _nearest_bits(u, np.array([2, 2]), 1).tolist(), _nearest_bits(u, np.array([2, 2]), 1, True).tolist()
    ([0, 2], [1, 1])
    """
    d = np.asarray(shift_full, dtype=np.int64) - n
    if d.ndim == 0 and d < 1:  # one shift count, nothing below the N bits: no rounding
        return _top_bits(rem, shift_full, n)
    dd = np.clip(d, 1, 60).astype(np.uint64)
    q = rem >> dd
    r = rem & ((_U64(1) << dd) - _U64(1))
    half = _U64(1) << (dd - _U64(1))
    # a tie goes up where that makes the result even (q odd) or, for ties to odd, odd (q even)
    tie_up = ((q & _U64(1)) == 1) != ties_odd
    rounded = q + ((r > half) | ((r == half) & tie_up))
    return rounded if d.ndim == 0 else np.where(d >= 1, rounded, _top_bits(rem, shift_full, n))


def sr_increment(mode: str, rem, shift_full, n: int, r) -> np.ndarray:
    """P3109's stochastic rounding (and gfloat's StochasticOdd) with N = n random bits r
    (uint64, 0 <= r < 2**n)."""
    one = _U64(1)
    if mode == "stochastic_a":
        return _top_bits(rem, shift_full, n) + r >= (one << _U64(n))
    if mode == "stochastic_b":
        return _top_bits(rem, shift_full, n + 1) + (r << one) + one >= (one << _U64(n + 1))
    if mode in ("stochastic_c", "stochastic_odd"):
        return _nearest_bits(rem, shift_full, n, mode == "stochastic_odd") + r >= (one << _U64(n))
    raise AssertionError(mode)


# ---- the random bits: a function of the seed and the element's position ---------------------
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def sr_key(rng: Any) -> np.uint64:
    """A 64-bit key from rng: None (fresh entropy), an int seed, a SeedSequence, or a Generator
    (one draw, so successive calls with one Generator get different keys)."""
    if isinstance(rng, np.random.Generator):
        return rng.integers(0, 2**64, dtype=np.uint64, endpoint=False)
    if rng is None or is_whole(rng) or isinstance(rng, np.random.SeedSequence):
        seq = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(
            None if rng is None else int(rng))
        return seq.generate_state(1, np.uint64)[0]
    raise TypeError(f"rng must be None, an int seed or a numpy.random.Generator, got {type(rng).__name__}")


def random_u64(key: np.uint64, index: np.ndarray) -> np.ndarray:
    """64 random bits for each element position: SplitMix64's output number index + 1 for the
    seed key (Steele, Lea and Flood, OOPSLA 2014). A function of (key, position) alone, so
    every split of the work into pieces, threads or Dask blocks draws the same bits.

    >>> random_u64(np.uint64(0), np.array([0], dtype=np.uint64)).tolist()  # SplitMix64(0)'s first
    [16294208416658607535]
    """
    with np.errstate(over="ignore"):  # (in place, on two arrays: the same bits, half the passes' memory)
        z = np.add(np.asarray(index, dtype=np.uint64), np.uint64(1))
        z *= _GAMMA
        z += np.uint64(key)
    return _mix(z, np.empty_like(z))


def _mix(z: np.ndarray, t: np.ndarray, last: bool = True) -> np.ndarray:
    """SplitMix64's output function on the Weyl sequence's values z, in place (t: a scratch
    array of z's size); ``last`` False skips the final ``z ^= z >> 31``, which changes bits
    0-32 only."""
    with np.errstate(over="ignore"):
        for right, times in ((30, _MIX1), (27, _MIX2)):
            np.right_shift(z, _U64(right), out=t)
            z ^= t
            z *= times
    if last:
        np.right_shift(z, _U64(31), out=t)
        z ^= t
    return z


# GAMMA * i for i = 0, 1, ...: the Weyl sequence's steps from a run's first position, built
# once (grown when a longer run asks; read-only, so threads share it).
_STEPS = np.zeros(0, dtype=np.uint64)


def _steps(count: int) -> np.ndarray:
    global _STEPS
    steps = _STEPS
    if steps.size < count:
        with np.errstate(over="ignore"):
            steps = np.arange(max(count, 1 << 16), dtype=np.uint64) * _GAMMA
        steps.flags.writeable = False
        _STEPS = steps
    return steps[:count]


def random_top_bits(key: np.uint64, first: int, count: int, n: int, dtype=np.uint64) -> np.ndarray:
    """The top n bits (0 <= n <= 64) of :func:`random_u64` of the positions ``first`` ..
    ``first + count - 1``, as ``dtype`` (an unsigned type wide enough), bit for bit: u >> (64 - n).

    The same numbers at half the passes over memory or less: the Weyl sequence of a run of
    positions is one addition to a table of its steps, every mixing step runs in place in this
    thread's scratch arrays (no fresh pages), and for n <= 31 the last xor-shift is skipped
    (``z ^= z >> 31`` changes bits 0-32 only). The result is a scratch array: use it before
    the next call (see :func:`..chunks.scratch`).

    >>> key, i = np.uint64(7), np.arange(40, 45, dtype=np.uint64)
    >>> bool((random_top_bits(key, 40, 5, 20, np.uint32) == random_u64(key, i) >> np.uint64(44)).all())
    True
    """
    z, t = scratch("random.z", count, np.uint64), scratch("random.t", count, np.uint64)
    np.add(_steps(count), _U64(((first + 1) * int(_GAMMA) + int(key)) % (1 << 64)), out=z)
    _mix(z, t, last=n > 31)
    if n == 0:
        z.fill(0)
    elif n < 64:
        z >>= _U64(64 - n)
    if np.dtype(dtype) == np.uint64:
        return z
    top = scratch("random.top", count, dtype)
    np.copyto(top, z, casting="unsafe")
    return top


def carry_serves(mode: str, shift: int, n: int | None, width: int) -> bool:
    """Whether :func:`stochastic_carry` decides ``mode`` at one shift count on unsigned
    integers of ``width`` bits (its sums then never wrap around)."""
    if mode == "stochastic":
        return 1 <= shift <= width - 1
    return mode in ("stochastic_a", "stochastic_b", "stochastic_c", "stochastic_odd") \
        and n is not None and shift <= width - 2 and n + 2 <= width


def stochastic_carry(mode: str, rem: np.ndarray, shift: int, n: int | None, r: np.ndarray,
                     out: np.ndarray) -> np.ndarray:
    """The stochastic modes' increment (0 or 1, rem's dtype, into out) for one shift count
    (the fast paths', where :func:`carry_serves`; out is not rem), deciding exactly as
    :func:`stochastic_increment` and :func:`sr_increment`: r is the part of the random
    number the mode reads, of rem's dtype: for ``stochastic`` the top ``shift`` bits of u
    (u < rem * 2**(64 - shift) exactly where (u >> (64 - shift)) < rem), for P3109's modes
    the N bits. Each decision is a carry out of an integer sum, one pass at a time:

    * stochastic: r - rem wraps around past 2**(width - 1) exactly where r < rem;
    * A: floor(nu * 2**N) + R carries into bit N; B: floor(nu * 2**(N+1)) + 2R + 1 into
      bit N + 1; C and odd: nu * 2**N rounded to nearest (ties to even: rem + half - 1 +
      the quotient's last bit; to odd: rem + half - that bit, carrying into bit d) + R into
      bit N.

    >>> rem, r = np.uint32([1, 2, 3]), np.uint32([2, 2, 2])
    >>> stochastic_carry("stochastic", rem, 2, None, r, np.empty(3, np.uint32)).tolist()
    [0, 0, 1]
    >>> stochastic_carry("stochastic_a", rem, 2, 1, np.uint32([1, 1, 0]), np.empty(3, np.uint32)).tolist()
    [0, 1, 0]
    """
    one = rem.dtype.type(1)
    if mode == "stochastic":
        np.subtract(r, rem, out=out)
        out >>= rem.dtype.type(8 * rem.itemsize - 1)
        return out
    top = n + 1 if mode == "stochastic_b" else n
    d = shift - top  # bits of rem below floor(nu * 2**top)
    if d <= 0:
        np.left_shift(rem, rem.dtype.type(-d), out=out)
    elif mode in ("stochastic_a", "stochastic_b"):
        np.right_shift(rem, rem.dtype.type(d), out=out)
    else:  # nu * 2**N rounded to the nearest integer, ties to even (C) or to odd
        np.right_shift(rem, rem.dtype.type(d), out=out)
        out &= one
        if mode == "stochastic_c":
            out += rem
            out += rem.dtype.type((1 << (d - 1)) - 1)
        else:
            np.subtract(rem, out, out=out)
            out += rem.dtype.type(1 << (d - 1))
        out >>= rem.dtype.type(d)
    out += r
    if mode == "stochastic_b":
        out += r
        out += one
    out >>= rem.dtype.type(top)
    return out


def addend_serves(mode: str, shift: int, n: int | None) -> bool:
    """Whether :func:`stochastic_addend` decides ``mode`` at ``shift`` dropped bits: stochastic
    (its top ``shift`` random bits), P3109's A (N <= shift) and B (N + 1 <= shift)."""
    if mode == "stochastic":
        return 1 <= shift <= 32
    return n is not None and ((mode == "stochastic_a" and n <= shift) or (mode == "stochastic_b" and n + 1 <= shift))


def stochastic_addend(mode: str, shift: int, n: int | None, r: np.ndarray, out: np.ndarray) -> np.ndarray:
    """What to add to an integer whose low ``shift`` bits are the fraction dropped (rem) so that
    dropping them afterwards rounds as :func:`stochastic_carry` decides (where
    :func:`addend_serves`), into out (r's dtype): the sum carries out of the low bits exactly
    where the mode rounds up.

    * stochastic (r: the top ``shift`` random bits): up where r < rem, i.e. rem + (2**shift
      - 1 - r) >= 2**shift;
    * A (r: the N bits R): up where floor(rem / 2**(shift - N)) + R >= 2**N, i.e. rem + R *
      2**(shift - N) >= 2**shift (R * 2**(shift - N) is a multiple of what the floor drops);
    * B: up where floor(rem / 2**(shift - N - 1)) + 2R + 1 >= 2**(N + 1), i.e. rem + (2R + 1)
      * 2**(shift - N - 1) >= 2**shift.

    >>> rem, r = np.uint32([1, 2, 3]), np.uint32([2, 2, 2])
    >>> ((rem + stochastic_addend("stochastic", 2, None, r, np.empty(3, np.uint32))) >> np.uint32(2)).tolist()
    [0, 0, 1]
    """
    kind = r.dtype.type
    if mode == "stochastic":
        return np.subtract(kind((1 << shift) - 1), r, out=out)
    if mode == "stochastic_a":
        return np.left_shift(r, kind(shift - n), out=out)
    np.left_shift(r, kind(1), out=out)  # B: 2R + 1, moved up
    out += kind(1)
    out <<= kind(shift - n - 1)
    return out


def broadcast_random_bits(random_bits: Any, shape: tuple, n: int) -> np.ndarray | None:
    """The caller's N-bit random integers of P3109 stochastic rounding, broadcast to the
    input's shape and checked to lie in [0, 2**n), as a flat unsigned array of their width
    (None: drawn)."""
    if random_bits is None:
        return None
    bits = np.asarray(random_bits)
    if bits.dtype.kind not in "iu":
        raise TypeError(f"random_bits must be integers, got {bits.dtype}")
    try:
        bits = np.broadcast_to(bits, shape)
    except ValueError:
        raise ValueError(f"random_bits of shape {bits.shape} do not match the input's shape {shape}") from None
    if bits.size and ((bits.dtype.kind == "i" and int(bits.min()) < 0) or int(bits.max()) >= 1 << n):
        raise ValueError(f"random_bits must lie in [0, 2**{n}) for sr_bits={n}")
    # (kept as narrow as the caller gave them: an unsigned integer of their width, the
    # caller's own array where it is one, read only; widened to uint64 they cost a
    # whole-array pass and 8 bytes an element)
    flat = bits.astype(np.dtype(f"u{bits.dtype.itemsize}"), copy=False).reshape(-1).view()
    flat.flags.writeable = False
    return flat
