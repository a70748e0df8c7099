"""Infer a matrix unit's accumulator: probe a live device with feature tests.

:func:`probe` runs feature tests (built from SPEC section 5's published experiments) through
a ``run_dot(a, b, inputs)`` callable and reads the answers as parameters: products per block,
``F`` (alignment bits), output fraction bits and rounding, and subnormal input support. A fake
device built from fpemu's own presets must be inferred exactly:

>>> found = probe(fake_device("v100"), "fp16")
>>> (found.model.block, found.model.frac_bits, found.model.out_rounding), found.nearest
((4, 23, 'rz'), ['v100', 'volta'])

It lives in :mod:`fpemu.fit` (the package that infers accumulators) and is re-exported by
:mod:`fpemu.probe`, whose command runs it on a GPU: probe imports fit, never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..accumulator import Accumulator, BlockFMA, BlockModel
from ..arguments import is_whole
from ..backends import RunDot, _presets, fake_device
from ..formats import get_format

__all__ = ["PROBE_INPUTS", "ProbeResult", "probe", "probe_report", "fake_device"]

#: Input formats `fpemu probe` can run through torch.
PROBE_INPUTS = ("fp16", "bf16", "tf32", "e4m3", "e5m2")


def _pow2_pair(e: int, fmt) -> tuple[float, float] | None:
    """Two values of fmt whose product is 2**e (as balanced as possible), or None."""
    lo, hi = fmt.emin - fmt.mantissa_bits, fmt.emax
    first, last = max(lo, e - hi), min(hi, e - lo)
    if first > last:
        return None
    ea = min(max((e + 1) // 2, first), last)
    return float(2.0**ea), float(2.0 ** (e - ea))


class _Experiments:
    """Builds rows of power-of-two products and runs them in one batch per question.

    Every experiment is written relative to a shift ``s``: the device sees every product
    multiplied by 2**s, which changes nothing in an fp32 result that stays normal, and lets
    formats with a narrow range (FP8 products lie in 2**-18..2**16 for E4M3) ask about
    bits far below the leading one.
    """

    def __init__(self, run: RunDot, inputs: str):
        self.run, self.inputs, self.fmt = run, inputs, get_format(inputs)
        f = self.fmt
        self.lo = 2 * (f.emin - f.mantissa_bits)  # smallest power-of-two product
        self.hi = 2 * f.emax  # largest
        self.calls = 0

    def shift_for(self, low: int, high: int) -> int | None:
        """A shift s with every exponent in [low + s, high + s] a product, or None."""
        if high - low > self.hi - self.lo:
            return None
        return min(max(0, self.lo - low), self.hi - high)

    def term(self, pos: int, e: int, sign: float = 1.0) -> tuple[int, float, float]:
        pa, pb = _pow2_pair(e, self.fmt)
        return pos, sign * pa, pb

    def ask(self, rows: list[list[tuple[int, float, float]]], K: int) -> np.ndarray:
        """rows: lists of (position, a, b); returns the device's results (float64)."""
        a = np.zeros((len(rows), K))
        b = np.zeros((len(rows), K))
        for i, row in enumerate(rows):
            for pos, x, y in row:
                a[i, pos], b[i, pos] = x, y
        self.calls += 1
        got = np.asarray(self.run(a, b, self.inputs), dtype=np.float64).reshape(-1)
        if got.size != len(rows):
            raise RuntimeError(f"the device returned {got.size} results for {len(rows)} experiments")
        return got


def _kept_bits(ex: _Experiments, top: int = 24) -> int:
    """min(F, p): 2^s and 2^(s-k) add up exactly while k <= both the alignment bits F and
    the output fraction bits p."""
    rows, ks = [], []
    for k in range(1, top + 1):
        s = ex.shift_for(-k, 0)
        if s is not None:
            rows.append([ex.term(0, s), ex.term(1, s - k)])
            ks.append((k, s))
    got = ex.ask(rows, 2)
    kept = [k for (k, s), v in zip(ks, got) if v == 2.0**s * (1 + 2.0**-k)]
    return max(kept) if kept else 0


def _frac_bits(ex: _Experiments, m1: int) -> int:
    """F: products 2^j, -2^j, 1 and 2^-k (all times 2^s) keep the 2^-k exactly when j + k <= F
    (the two 2^j set the alignment and cancel); k <= min(F, p) so the result can hold it."""
    rows, fs = [], []
    for f in range(48, 0, -1):
        k = min(f, max(m1, 1))
        j = f - k
        s = ex.shift_for(-k, j)
        if s is None:
            continue
        rows.append([ex.term(0, j + s), ex.term(1, j + s, -1.0), ex.term(2, s), ex.term(3, s - k)])
        fs.append((f, k, s))
    got = ex.ask(rows, 4)
    kept = [f for (f, k, s), v in zip(fs, got) if v == 2.0**s * (1 + 2.0**-k)]
    return max(kept) if kept else 0


def _out_bits(ex: _Experiments, F: int, m1: int) -> tuple[int, str]:
    """Output fraction bits p. When F > min(F, p) it is p. Otherwise p >= F, and a result
    carries at most F + 1 significant bits: 1 + 1 + 2^-F tells p = F from p > F (then the
    usual 23 is assumed: more bits than F + 1 can never show)."""
    if F > m1:
        return m1, ""
    s = ex.shift_for(-F, 0)
    if s is None:
        return F, "output bits beyond F not testable with these inputs"
    v = ex.ask([[ex.term(0, s), ex.term(1, s), ex.term(2, s - F)]], 3)[0]
    if v == 2.0**s * (2 + 2.0**-F):
        return 23, f"output keeps more than F = {F} bits; 23 assumed (the rest cannot show)"
    return F, ""


def _block_size(ex: _Experiments, F: int, p: int, max_k: int = 64) -> tuple[int, str]:
    """Products per block: m ones, a small t right after them and another t at position j.

    With t = 2^(q-p-1) (half an output ulp at the sum 2^q), both t's add up to a whole ulp
    when they share the ones' block; in a later block each is lost to rounding.
    """
    q = max(0, p + 1 - F)  # the ones' sum 2^q lets t survive the alignment to the ones
    m = 1 << q
    t = q - p - 1
    s = ex.shift_for(t, 0)
    if s is None:
        return 0, f"2^{t} is not a product of {ex.inputs} values"
    base = [ex.term(i, s) for i in range(m)] + [ex.term(m, s + t)]
    js = list(range(m + 1, max_k))
    got = ex.ask([base + [ex.term(j, s + t)] for j in js], max_k)
    whole = 2.0**s * (2.0**q + 2.0 ** (q - p))
    split = [j for j, v in zip(js, got) if v != whole]
    if not split:
        return max_k, f"no block boundary below {max_k} products"
    if split[0] == m + 1:
        return m + 1, f"at most {m + 1} (the test needs {m + 1} products in the first block)"
    return split[0], ""


def _out_rounding(ex: _Experiments, F: int, p: int, n: int) -> tuple[str, str]:
    """RZ or RNE for fp32 output: a sum with three quarters of an output ulp below it."""
    if F >= p + 2 and (s := ex.shift_for(-(p + 2), 0)) is not None:
        row = [ex.term(0, s), ex.term(1, s - p - 1), ex.term(2, s - p - 2)]
        high = 2.0**s * (1 + 2.0**-p)
    elif n >= 7 and (s := ex.shift_for(-F, 0)) is not None:  # 4 ones, three 2^-F: 0.75 ulp if F == p
        row = [ex.term(i, s) for i in range(4)] + [ex.term(4 + i, s - F) for i in range(3)]
        high = 2.0**s * (4 + 2.0 ** (2 - p))
    else:
        return "rz", "not observable with these parameters (rz assumed)"
    v = ex.ask([row], 8)[0]
    return ("rne" if v == high else "rz"), ""


def _subnormals(ex: _Experiments) -> bool:
    """The smallest subnormal input times 2^emax: zero when the unit flushes subnormal inputs."""
    fmt = ex.fmt
    a = fmt.min_subnormal
    b = float(2.0**fmt.emax)
    return bool(ex.ask([[(0, a, b)]], 1)[0] != 0)


@dataclass
class ProbeResult:
    """What :func:`probe` inferred for one input format."""

    inputs: str
    model: Accumulator
    extra_alignment_bits: int
    subnormal_inputs: bool
    nearest: list
    distance: int
    notes: list = field(default_factory=list)
    calls: int = 0


def _distance(a: Accumulator, b: Accumulator) -> int:
    """Parameters in which two block models differ (both NVIDIA-style, or one two-stage)."""
    fields = ("block", "frac_bits", "out_rounding", "out_frac_bits", "term_rounding", "late_c")
    return sum(getattr(a, f) != getattr(b, f) for f in fields)


def probe(run: RunDot, inputs: str, max_k: int = 64) -> ProbeResult:
    """Infer an NVIDIA-style block model from a device's answers to feature tests.

    ``run(a, b, inputs)`` must return the device's fp32 results of ``sum(a * b, axis=1)`` (a
    zero accumulator; rows of up to ``max_k`` products, in order). Order of the questions: F
    (alignment, independent of the output precision), output fraction bits, products per
    block, output rounding, subnormal inputs.
    """
    fmt = get_format(inputs)
    if not is_whole(max_k) or not 8 <= max_k <= 1024:
        raise ValueError(f"max_k must be an integer in 8..1024 (the block question asks max_k rows of max_k), got {max_k!r}")
    ex = _Experiments(run, fmt.name)
    notes = []
    m1 = _kept_bits(ex)
    F = _frac_bits(ex, m1)
    widest = max(f for f in range(1, 49) if ex.shift_for(-min(f, max(m1, 1)), f - min(f, max(m1, 1))) is not None)
    if F >= widest:
        notes.append(f"alignment: F >= {F}, the widest these inputs can test (the products span 2^{ex.lo}..2^{ex.hi})")
    p, note = _out_bits(ex, F, m1)
    if note:
        notes.append(f"output: {note}")
    n, note = _block_size(ex, F, p, max_k)
    if note:
        notes.append(f"block: {note}")
    if n < 4:  # the F question puts 4 products in one block
        notes.append("fewer than 4 products per block: F and the rounding read here are unreliable")
    rounding, note = _out_rounding(ex, F, p, n)
    if note:
        notes.append(f"rounding: {note}")
    sub = _subnormals(ex)
    model = BlockFMA("probed", block=max(n, 1), frac_bits=max(F, 0), out_rounding=rounding,
                     out_frac_bits=max(min(p, 23), 1), flush_subnormals=not sub)  # fmt: skip
    presets = {k: v for k, v in _presets(fmt.name).items() if isinstance(v, BlockModel)}
    dist = {k: _distance(model, v) for k, v in presets.items()}
    best = min(dist.values()) if dist else 0
    nearest = [k for k, d in dist.items() if d == best]
    return ProbeResult(fmt.name, model, F - p, sub, nearest, best, notes, ex.calls)


def probe_report(r: ProbeResult) -> str:
    m = r.model
    lines = [
        f"{r.inputs}: products per block {m.block}, F = {m.frac_bits} "
        f"({r.extra_alignment_bits:+d} alignment bits beyond the output's {m.out_frac_bits}), "
        f"fp32 output {m.out_rounding}, subnormal inputs {'kept' if r.subnormal_inputs else 'flushed'}",
        f"  BlockFMA(block={m.block}, frac_bits={m.frac_bits}, out_rounding={m.out_rounding!r}, "
        f"out_frac_bits={m.out_frac_bits}, flush_subnormals={m.flush_subnormals})",
        f"  nearest preset: {', '.join(r.nearest) or 'none'}"
        + (" (identical parameters)" if r.distance == 0 else f" ({r.distance} parameter(s) differ)"),
    ]
    lines += [f"  note: {n}" for n in r.notes]
    return "\n".join(lines)
