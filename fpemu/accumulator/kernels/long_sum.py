"""The one exact long sum: a Kulisch-style fixed-point accumulator in int64 limbs of
:data:`LIMB` bits, for R results at once, read out rounded to odd at 53 bits so that one
later rounding (to fp32, fp16, ...) is the correct rounding of the exact sum (Boldo and
Melquiond, IEEE TC 2008). The exact dense model adds float64 terms to it
(:meth:`LongSum.add_floats`: products of any exponents); the exact block model adds integer
matrix products (:meth:`LongSum.add_integers`), where a K-block's integers are too large for
a float64 sum.

>>> s = LongSum(1, lowest=-60, highest=1, terms=3)
>>> s.add_floats(np.array([1.0])); s.add_floats(np.array([2.0**-60])); s.add_floats(np.array([-1.0]))
>>> s.read().tolist() == [2.0**-60]
True
>>> s = LongSum(2, lowest=0, highest=70, terms=2)
>>> s.add_integers(np.array([2**62 - 1, -5]), 8); s.add_integers(np.array([1, 5]), 0)
>>> s.read().tolist() == [2.0**70 - 2.0**17, -1275.0]  # 2**70 - 255 rounded to odd at 53 bits; exact
True
"""

from __future__ import annotations

import numpy as np

from ...arith import pow2

#: Bits per limb: a limb adds 2**33 terms of up to 2**30 before it could leave int64.
LIMB = 30
_MASK = (1 << LIMB) - 1


class LongSum:
    """An exact sum for R results: ``limbs[r, j]`` weighs ``2**(base + LIMB * j)``; a term adds
    its bits to the limbs it spans (the lowest ones non-negative, the top one with the sign),
    and the carries are propagated once, when the sum is read.

    ``lowest`` is the weight of the lowest bit any term has, ``highest`` the exponent of the
    largest term, ``terms`` how many are added to each result: the limbs span them all, with
    two empty limbs below the lowest bit (the read-out reads three limbs from the top one).
    The terms the models add lie far inside float64's normal range (products of formats up
    to fp32), and so does the last bit of the sum read out.
    """

    def __init__(self, R: int, lowest: int, highest: int, terms: int) -> None:
        self.base = lowest - 2 * LIMB
        self.n = (highest + (terms + 2).bit_length() + 2 - self.base) // LIMB + 4
        self.limbs = np.zeros((R, self.n), dtype=np.int64)
        self._rows = np.arange(R) * self.n

    def add_floats(self, v: np.ndarray) -> None:
        """Add one finite float64 term to each result: its 53-bit integer significand at its
        own weight."""
        mant, e = np.frexp(np.abs(v))
        m = np.ldexp(mant, 53).astype(np.int64)
        offset = np.maximum(e.astype(np.int64) - 53 - self.base, 0)
        i, sh = offset // LIMB, offset % LIMB
        sign = np.where(v < 0, -1, 1)
        low = (m & ((np.int64(1) << (LIMB - sh)) - 1)) << sh
        rest = m >> (LIMB - sh)
        flat = self.limbs.reshape(-1)
        for j, part in enumerate((low, rest & _MASK, rest >> LIMB)):
            flat[self._rows + np.minimum(i + j, self.n - 1)] += sign * part

    def add_integers(self, x: np.ndarray, weight: int) -> None:
        """Add ``x * 2**weight`` to each result, x int64 (|x| < 2**63), one weight for all."""
        offset = weight - self.base
        i, sh = offset // LIMB, offset % LIMB
        self.limbs[:, i] += (x & ((1 << (LIMB - sh)) - 1)) << sh
        rest = x >> (LIMB - sh)  # floor: the low parts are non-negative, the top part signed
        self.limbs[:, i + 1] += rest & _MASK
        self.limbs[:, i + 2] += (rest >> LIMB) & _MASK
        self.limbs[:, i + 3] += rest >> (2 * LIMB)

    def read(self) -> np.ndarray:
        """The sums as float64, rounded to odd at 53 bits."""
        return _read_limbs(self.limbs, self.base)


def _read_limbs(limbs: np.ndarray, base: int) -> np.ndarray:
    """Value of signed limb rows as float64, rounded to odd at 53 bits."""
    R, L = limbs.shape

    def normalise(x: np.ndarray) -> np.ndarray:
        x = x.copy()
        for j in range(L - 1):
            carry = x[:, j] >> LIMB  # floor division: lower limbs end in [0, 2**30)
            x[:, j] &= _MASK
            x[:, j + 1] += carry
        return x

    x = normalise(limbs)
    negative = x[:, -1] < 0
    x = np.where(negative[:, None], normalise(-x), x)
    nonzero = x != 0
    top = L - 1 - np.argmax(nonzero[:, ::-1], axis=1)  # highest non-zero limb (>= 2 if any)
    top = np.maximum(top, 2)
    pick = lambda j: np.take_along_axis(x, j[:, None], axis=1)[:, 0]  # noqa: E731
    hi = pick(top) * (1 << LIMB) + pick(top - 1)  # between 2**30 and 2**60
    _, e = np.frexp(hi.astype(np.float64))
    nbits = e - ((hi >> np.maximum(e - 1, 0)) == 0)  # frexp may round up to the next power
    nbits = np.where(hi == 0, 0, nbits)
    # Bring the top to exactly 53 bits: drop low bits (sticky) or pull in bits of limb top-2.
    drop = np.maximum(nbits - 53, 0)
    pull = np.maximum(53 - nbits, 0)
    third = pick(top - 2)
    sticky = (hi & ((np.int64(1) << drop) - 1)) != 0
    sticky |= (third & ((np.int64(1) << np.maximum(LIMB - pull, 0)) - 1)) != 0
    below = np.cumsum(nonzero, axis=1)
    sticky |= np.take_along_axis(below, np.maximum(top - 3, 0)[:, None], axis=1)[:, 0].astype(bool) & (top >= 3)
    m = np.where(pull > 0, (hi << pull) | (third >> (LIMB - pull)), hi >> drop)
    m |= sticky.astype(np.int64)  # round to odd
    q = base + LIMB * (top - 1) + drop - pull
    value = m.astype(np.float64) * pow2(q)
    value = np.where(hi == 0, 0.0, value)
    return np.where(negative, -value, value)
