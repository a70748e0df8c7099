"""An exact, scalar oracle of the block-scaled accumulator models (tests/accumulator/).

Written from the model's description in docs/mx.md, with ``fractions.Fraction`` and the
reference codec of tests/reference.py only: no fpemu arithmetic. One dot product at a time:

* ``exact``: every K-block's products summed exactly, times both scales, rounded once to fp32
  (RNE), added in fp32 to a running sum that starts at c, block by block;
* ``fused`` (b200, mmasim-blackwell): per instruction of ``ik`` products (K zero-padded), the
  terms (each product, or each sub-block sum times its scales) and c aligned to the largest of
  their exponents E, each cut to ``F`` fraction bits below E, added exactly, rounded to fp32;
  the result is the next instruction's c. An instruction where a NaN or Inf takes part gives
  the IEEE value of its products and c.

Elements and scales come in as codes, so the oracle sees exactly what a kernel sees;
:func:`oracle` runs it over a whole (M, K) x (K, N) product of BlockArrays (the model's
parameters read from fpemu's table by name).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from reference import ref_decode

from fpemu.accumulator import get_accumulator
from fpemu.formats import get_format

ELEMENT = {"mxfp8_e4m3": "e4m3", "mxfp8_e5m2": "e5m2", "mxfp6_e3m2": "e3m2", "mxfp6_e2m3": "e2m3",
           "mxfp4": "e2m1", "nvfp4": "e2m1"}  # fmt: skip
MAX32 = (2**24 - 1) * Fraction(2) ** 104


def value(code: int, fmt: str):
    """The code's value: a Fraction, or a float for Inf and NaN."""
    v = ref_decode(int(code), get_format(fmt))
    if v.kind != "finite":
        return v.to_float()
    return -v.magnitude if v.negative else v.magnitude


def floor_log2(x: Fraction) -> int:
    """floor(log2|x|) of a non-zero Fraction, exactly."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


def exponent(x: Fraction, fmt: str) -> int:
    """floor(log2|x|), a subnormal counting at its format's smallest normal binade."""
    f = get_format(fmt)
    return max(floor_log2(x), 1 - f.bias) if f.subnormals and f.exponent_bits else floor_log2(x)


def to_f32(x: Fraction, rounding: str = "rne", overflow: str = "ieee") -> float:
    """x rounded to fp32 (RNE or RZ, gradual underflow); a zero is +0."""
    if x == 0:
        return 0.0
    sign, a = (-1 if x < 0 else 1), abs(x)
    unit = Fraction(2) ** (max(floor_log2(a), -126) - 23)
    q, r = divmod(a, unit)
    if rounding == "rne" and (2 * r > unit or (2 * r == unit and q % 2)):
        q += 1
    m = q * unit
    if m > MAX32:
        return sign * math.inf if rounding == "rne" or overflow == "inf" else sign * float(MAX32)
    if rounding == "rz" and overflow == "inf" and a >= Fraction(2) ** 128:
        return sign * math.inf
    return sign * float(m)


def _cut(x: Fraction, rounding: str) -> int:
    return math.floor(x) if rounding == "rd" or x >= 0 else -math.floor(-x)


def _terms(a, b, sa, sb, fa, fb, sfmt, model):
    """(value, exponent) of each term of one instruction (exponent None: the term is dropped)."""
    out = []
    if model.term_exponent == "product":
        for x, y, u, v in zip(a, b, sa, sb):
            val = value(x, fa) * value(y, fb) * value(u, sfmt) * value(v, sfmt)
            parts = []
            for code, fmt in ((x, fa), (y, fb), (u, sfmt), (v, sfmt)):
                w = value(code, fmt)
                parts.append(model.zero_exponent if w == 0 else exponent(w, fmt))
            if val == 0 and (model.zero_exponent is None or None in parts):
                out.append((val, None))
            else:
                out.append((val, sum(parts)))
        return out
    g = model.sub_block
    for s in range(0, len(a), g):
        total = sum(value(x, fa) * value(y, fb) for x, y in zip(a[s : s + g], b[s : s + g]))
        u, v = value(sa[s], sfmt), value(sb[s], sfmt)
        zero = u == 0 or v == 0
        e = None if zero and model.zero_exponent is None else \
            sum(model.zero_exponent if w == 0 else exponent(w, sfmt) for w in (u, v))
        val = total * u * v
        out.append((val, None if val == 0 and model.zero_exponent is None else e))
    return out


def fused_step(a, b, sa, sb, c: float, fa, fb, sfmt, model) -> float:
    """One instruction: codes a, b (ik each), their per-product scale codes, fp32 c."""
    raw = [value(x, fa) for x in a], [value(y, fb) for y in b], [value(u, sfmt) for u in sa], \
          [value(v, sfmt) for v in sb]  # fmt: skip
    if not math.isfinite(c) or any(isinstance(w, float) for part in raw for w in part):
        s = c + sum(float(x) * float(y) * float(u) * float(v) for x, y, u, v in zip(*raw))
        return s  # NaN or +-Inf: IEEE arithmetic on the values
    cf = Fraction(c)
    terms = _terms(a, b, sa, sb, fa, fb, sfmt, model)
    exps = [e for _, e in terms if e is not None]
    exps.append(model.zero_c_exponent if cf == 0 else exponent(cf, "fp32"))
    E = max(exps)
    unit = Fraction(2) ** (E - model.frac_bits)
    total = _cut(cf / unit, model.term_rounding)
    total += sum(_cut(v / unit, model.term_rounding) for v, e in terms if e is not None)
    return to_f32(total * unit, model.out_rounding, model.overflow)


def fused_dot(a, b, sa, sb, c: float, fa, fb, sfmt, block: int, model) -> float:
    """A whole dot product in a fused model: a, b element codes along K, sa, sb one scale code
    per K-block; K zero-padded to whole instructions (zero codes, zero scale codes)."""
    ik = model.instruction_k
    k = len(a)
    kp = -(-k // ik) * ik if k else ik
    a = list(a) + [0] * (kp - k)
    b = list(b) + [0] * (kp - k)
    nb = -(-kp // block)
    sa = [int(s) for s in sa] + [0] * (nb - len(sa))
    sb = [int(s) for s in sb] + [0] * (nb - len(sb))
    per_a = [sa[i // block] for i in range(kp)]
    per_b = [sb[i // block] for i in range(kp)]
    for t in range(0, kp, ik):
        c = fused_step(a[t : t + ik], b[t : t + ik], per_a[t : t + ik], per_b[t : t + ik], c, fa, fb, sfmt, model)
    return c


def exact_dot(a, b, sa, sb, c: float, fa, fb, sfmt, block: int) -> float:
    """A whole dot product in the exact model (before NVFP4's per-tensor scales)."""
    acc = to_f32(Fraction(c)) if math.isfinite(c) else c
    if acc == 0:
        acc = math.copysign(0.0, c)
    for j in range(-(-len(a) // block)):
        ks = range(j * block, min(len(a), (j + 1) * block))
        u, v = value(sa[j], sfmt), value(sb[j], sfmt)
        vals = [(value(a[t], fa), value(b[t], fb)) for t in ks]
        if any(isinstance(w, float) for pair in vals for w in pair) or isinstance(u, float) or isinstance(v, float):
            blk = sum(float(x) * float(y) for x, y in vals) * float(u) * float(v)
        else:
            blk = to_f32(sum(x * y for x, y in vals) * u * v)
        acc = _f32_add(acc, blk)
    return acc


def _f32_add(x: float, y: float) -> float:
    """fp32(x + y) for fp32 x, y: IEEE, with the sign of an exact zero sum as IEEE RNE gives it."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return x + y
    s = Fraction(x) + Fraction(y)
    if s == 0:
        return -0.0 if math.copysign(1, x) < 0 and math.copysign(1, y) < 0 else 0.0
    return to_f32(s)


def f32_mul(x: float, y: float) -> float:
    """fp32(x * y) for fp32 x, y, rounded once from the exact product."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return x * y
    p = Fraction(x) * Fraction(y)
    return math.copysign(0.0, x) * math.copysign(1, y) if p == 0 else to_f32(p)


# ---- whole products -------------------------------------------------------------------------
def oracle(qa, qb, c, accumulator, instruction=None):
    """The oracle's (M, N) result, one dot at a time (alpha 1 for NVFP4: amax 2688)."""
    fa, fb = qa.format.name, qb.format.name
    sfmt = qa.format.scale.name
    model = get_accumulator(accumulator, (fa, fb), block_size=qa.block_size, instruction=instruction)
    M, N = qa.shape[0], qb.shape[1]
    c = np.broadcast_to(np.float32(0.0 if c is None else c), (M, N))
    out = np.empty((M, N), np.float32)
    for i in range(M):
        for j in range(N):
            args = (qa.codes[i], qb.codes[:, j], qa.scales[i], qb.scales[:, j], float(c[i, j]),
                    ELEMENT[fa], ELEMENT[fb], sfmt, qa.block_size)  # fmt: skip
            out[i, j] = exact_dot(*args) if model.kind == "blockwise" else fused_dot(*args, model)
    return out


def same(got, want) -> bool:
    """Same fp32 bits, any NaN equal to any NaN."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return bool(np.all((got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))))
