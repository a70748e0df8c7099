"""The experiment set of ``python -m research.fp8_fp16 probe``: rows of one K = 32 instruction
(FP8 products, an fp16 ``c``, fp16 output) chosen so that the named hypotheses of
:data:`~research.fp8_fp16.staged.NAMED` (and the stage structure, kept bits and rounding of
any staged model) give different answers.

Families (each row says which, and what it asks):

* ``single``: one non-zero product (exact values, fp16 subnormals, underflow, overflow): the
  plumbing and the conversion to fp16, which every hypothesis shares.
* ``lanes``: a product 1 at position z and two products 2^-11 (half an fp16 ulp of 1) at k and
  m: they survive (1 + 2^-10) when they meet before a rounding to fp16, and are lost to two
  ties-to-even when a rounding separates them. Every pair (k, m) for z = 0 and z = 2: the
  stages, their order and whether c-free stages are rounded at all.
* ``alignment``: 2^s and -2^s cancel beside a small 2^-t in the same stage, in the other one,
  or as c: kept when s + t <= F (the kept bits of a fused sum), lost beyond; also whether c is
  inside the fused sum.
* ``ties``: sums on, just above and just below an fp16 rounding boundary, both signs, the
  small parts in one stage or split: RNE against RZ/RNA, and sticky bits.
* ``random``: rows like the hardware dumps (``../shared/hwdata``), for the final tally.

>>> ex = fp8_fp16_experiments("e4m3")
>>> sorted(set(ex.family)) == sorted(FAMILIES) and ex.a.shape[1] == 32
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fpemu.codec import quantize
from fpemu.formats import get_format

K = 32
FAMILIES = ("single", "lanes", "alignment", "ties", "random")


@dataclass(frozen=True)
class Experiments:
    """Rows a (R, K), b (R, K), c (R,) (fp16 values), each with its family and question."""

    inputs: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    family: np.ndarray  # (R,) str
    what: np.ndarray  # (R,) str

    @property
    def rows(self) -> int:
        return self.a.shape[0]

    def subset(self, keep: np.ndarray) -> "Experiments":
        """The rows where ``keep`` is true (a path that cannot express some rows runs the rest)."""
        return Experiments(self.inputs, self.a[keep], self.b[keep], self.c[keep], self.family[keep], self.what[keep])


@lru_cache(maxsize=4096)
def split_product(p: float, inputs: str) -> tuple[float, float] | None:
    """Two values of the input format whose product is exactly p (None when there are none
    of the kind used here: a carries p's significand, b a power of two).

    >>> split_product(3 * 2.0**-12, "e4m3")
    (0.0234375, 0.03125)
    """
    if p == 0:
        return 0.0, 0.0
    fmt = get_format(inputs)
    m, e = math.frexp(abs(p))
    sig, E = 2 * m, e - 1
    lo = fmt.emin - fmt.mantissa_bits  # the smallest subnormal's exponent
    exact = lambda ea: (sig * 2.0 ** (max(fmt.emin, ea) - ea + fmt.mantissa_bits)) % 1 == 0  # noqa: E731
    options = [ea for ea in range(lo, fmt.emax + 1) if lo <= E - ea <= fmt.emax and sig * 2.0**ea <= fmt.max and exact(ea)]
    if not options:
        return None
    ea = min(options, key=lambda x: abs(x - (E - x)))
    return math.copysign(sig * 2.0**ea, p), 2.0 ** (E - ea)


class _Rows:
    """Collects rows of products given by value (positions -> product), skipping the ones the
    format cannot build."""

    def __init__(self, inputs: str):
        self.inputs = inputs
        self.a, self.b, self.c, self.family, self.what = [], [], [], [], []

    def add(self, family: str, what: str, products: dict, c: float = 0.0) -> None:
        a, b = np.zeros(K), np.zeros(K)
        for k, p in products.items():
            pair = split_product(p, self.inputs)
            if pair is None:
                return
            a[k], b[k] = pair
        if not np.isfinite(np.float16(c)) or float(np.float16(c)) != c:
            return
        self.a.append(a)
        self.b.append(b)
        self.c.append(c)
        self.family.append(family)
        self.what.append(what)

    def done(self) -> Experiments:
        return Experiments(self.inputs, np.array(self.a), np.array(self.b), np.array(self.c, dtype=np.float64),
                           np.array(self.family), np.array(self.what))  # fmt: skip


def _singles(r: _Rows) -> None:
    for k in (0, 2, 5, 31):
        for p in (1.0, 1.5, -3.5, 2.0**-14, 2.0**-20, 3 * 2.0**-25, 2.0**-25, 2.0**-26, 2.0**-30, 1.5 * 2.0**15,
                  2.0**16, 2.0**17):  # fmt: skip
            r.add("single", f"p[{k}] = {p!r}", {k: p})
    r.add("single", "c alone = 1 + 2^-10", {}, 1 + 2.0**-10)
    r.add("single", "p[0] = 1, c = -1", {0: 1.0}, -1.0)


def _lanes(r: _Rows) -> None:
    h = 2.0**-11
    for z in (0, 2):
        for k in range(K):
            for m in range(k + 1, K):
                if z not in (k, m):
                    r.add("lanes", f"1 at {z}, 2^-11 at {k} and {m}", {z: 1.0, k: h, m: h})


def _alignment(r: _Rows) -> None:
    for s in (0, 4, 8):
        for t in range(1, 35):
            if not 8 <= s + t <= 34:
                continue
            small = 2.0**-t
            for k, where in ((4, "its stage"), (1, "its stage"), (2, "the other stage"), (16, "the other half")):
                r.add("alignment", f"2^{s} - 2^{s} at 0, 3; 2^-{t} at {k} ({where})", {0: 2.0**s, 3: -(2.0**s), k: small})
            r.add("alignment", f"2^{s} - 2^{s} at 0, 3; c = 2^-{t}", {0: 2.0**s, 3: -(2.0**s)}, small)
            r.add("alignment", f"2^{s} - 2^{s} at 0, 3; c = -(1 + 2^-10) 2^-{t}", {0: 2.0**s, 3: -(2.0**s)},
                  -(1 + 2.0**-10) * small)  # fmt: skip
            r.add("alignment", f"c = 2^{s}, 2^-{t} at 0", {0: small}, 2.0**s)


def _ties(r: _Rows) -> None:
    for sign in (1.0, -1.0):
        for s in (0, 8, 15):  # at 2^15 the tail 2^-11 lies below fp32's last bit too
            one, u = sign * 2.0**s, sign * 2.0 ** (s - 10)  # u: an fp16 ulp of 2^s
            for c in (0.0, u / 2, -u / 2):
                r.add("ties", f"{one!r} + ulp/2, c = {c!r}", {0: one, 1: u / 2}, c)
                r.add("ties", f"{one!r} + 3ulp/4, c = {c!r}", {0: one, 1: 3 * u / 4}, c)
                r.add("ties", f"{one!r} + 3ulp/2, c = {c!r}", {0: one, 1: 3 * u / 2}, c)
                for k2, where in ((4, "same stage"), (2, "other stage"), (16, "other half")):
                    for tail in (2.0**-6, -(2.0**-6), 2.0**-16):
                        r.add("ties", f"{one!r} + ulp/2 + {tail!r} ulp at {k2} ({where}), c = {c!r}",
                              {0: one, 1: u / 2, k2: tail * u}, c)  # fmt: skip


def _random(r: _Rows, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    fmt = get_format(r.inputs)
    a = quantize(rng.uniform(-2, 2, (n, K)), fmt)
    b = quantize(rng.uniform(-2, 2, (n, K)), fmt)
    c = rng.uniform(0, 1, n).astype(np.float16).astype(np.float64)
    for i in range(n):
        r.a.append(a[i])
        r.b.append(b[i])
        r.c.append(float(c[i]))
        r.family.append("random")
        r.what.append(f"random row {i} (seed {seed})")


def fp8_fp16_experiments(inputs: str = "e4m3", random_rows: int = 256, seed: int = 0) -> Experiments:
    """The experiment set for FP8 inputs (``e4m3`` or ``e5m2``) with fp16 output."""
    fmt = get_format(inputs)
    if fmt.name not in ("e4m3", "e5m2"):
        raise ValueError(f"the fp8-fp16 experiment takes e4m3 or e5m2 inputs, not {fmt.name}")
    r = _Rows(fmt.name)
    _singles(r)
    _lanes(r)
    _alignment(r)
    _ties(r)
    _random(r, random_rows, seed)
    return r.done()
