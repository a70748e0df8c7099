"""The fused block-scaled MMA (``kind="fused"``), one instruction at a time, for a piece of A's
rows against all of B.

Per instruction: the terms (each scaled product, or each sub-block sum times its scales) and
``c`` are aligned to the largest of their exponents ``E`` with ``F`` fraction bits, each term
cut on its own, the cut terms added exactly (:func:`fpemu.arith.aligned_sum`), the sum rounded
once to fp32; Inf and NaN follow IEEE arithmetic on the instruction's values. The result is
the next instruction's c.

Exact and fast: every term is an exact float64 (a scaled element has at most 8 significant
bits, an FP4 sub-block sum is an integer from a float64 matrix product that cannot round),
scaling by ``2**(F - E)`` and the cut are exact, and so is the sum, in float64 while it stays
below 2**53 and in int64 past that (``check_fits`` checks the bounds). With
``term_exponent="product"`` an element whose instruction provably loses no bit (every term's
lowest set bit at or above ``E - F``, bounded from each row's largest exponent and lowest set
bit; ``c`` likewise) takes the exact sum of the instruction's products from one float64
matrix product (exact while the sum spans at most 53 bits, also checked from the bounds) and
skips the term loop; the others run it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...arith import NO_EXPONENT, aligned_sum, exponent, pow2, round_to_odd_sum
from ...mx.formats import BlockFormat
from ..model import BlockScaledAccumulator, BlockScaledFMA
from .side import Side


def check_fits(model: BlockScaledFMA, fa: BlockFormat, fb: BlockFormat, block: int) -> None:
    """Refuse operands whose terms the fused model could not keep exact in float64 and int64."""
    for f in (fa, fb):
        if f.is_int:
            raise ValueError(f"fused block-scaled models take floating-point elements; {f.name} has the exact "
                             "model only (accumulator='exact')")
    sig = [2.0 if f.scale.mantissa_bits else 1.0 for f in (fa, fb)]
    if model.term_exponent == "scale":
        if block % model.sub_block:
            raise ValueError(f"{model.name}: sub-blocks of {model.sub_block} products must lie in one scale block, "
                             f"but the K blocks hold {block}")
        largest = model.sub_block * fa.max_value * fb.max_value
        bits = np.log2(largest) + fa.int_shift + fb.int_shift + fa.scale.mantissa_bits + fb.scale.mantissa_bits
        if bits > 52:
            raise ValueError(f"{model.name}: a sub-block sum of {model.sub_block} {fa.element.name} x "
                             f"{fb.element.name} products times its scales needs {bits:.0f} bits, more than float64 "
                             "keeps exactly: use fewer products per sub-block")
        terms = model.instruction_k // model.sub_block * largest * sig[0] * sig[1]
    else:
        terms = model.instruction_k * 4 * sig[0] * sig[1]
    if (terms + 2) * 2.0**model.frac_bits >= 2.0**63:
        raise ValueError(f"{model.name}: frac_bits={model.frac_bits} lets the aligned terms of one instruction pass "
                         "2**63 (int64): fewer kept bits or fewer products per instruction")


def _exact_products(x: np.ndarray, y: np.ndarray, paired: bool = False) -> np.ndarray:
    """x @ y.T for sums that are exact in float64 in any order, without BLAS: NumPy's own
    loop (``paired``: row i of x with row i of y only, (rows,)). OpenBLAS's threads, spinning after each of these many small products, took the
    cores from the element-wise work between them (a 512x512x4096 GEMM 7x slower on 2 cores).

    >>> _exact_products(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [1.0, 0.0]])).tolist()
    [[11.0, 1.0]]
    >>> _exact_products(np.array([[1.0, 2.0], [1.0, 1.0]]), np.array([[3.0, 4.0], [1.0, 0.0]]), True).tolist()
    [11.0, 1.0]
    """
    return np.einsum("ik,ik->i" if paired else "ik,jk->ij", x, y)


def _round_out(v: np.ndarray, model: BlockScaledAccumulator) -> np.ndarray:
    """An instruction's sum rounded to fp32 (as float64 values); a zero result is +0."""
    with np.errstate(over="ignore"):
        f = v.astype(np.float32)  # RNE, gradual underflow, Inf beyond the range
    if model.out_rounding == "rz":
        away = np.abs(f.astype(np.float64)) > np.abs(v)
        f = np.where(away, np.nextafter(f, np.float32(0)), f)
        if model.overflow == "inf":
            f = np.where(np.abs(v) >= 2.0**128, np.copysign(np.float32(np.inf), f), f)
    return f.astype(np.float64) + 0.0


def _c_terms(c: np.ndarray, model: BlockScaledAccumulator) -> tuple[np.ndarray, np.ndarray]:
    """c's value (0 where Inf/NaN: those decide the result elsewhere) and exponent (fp32's:
    subnormals at -126; a zero c at ``zero_c_exponent``)."""
    finite = np.where(np.isfinite(c), c, 0.0)
    ec = exponent(c, -126)
    np.putmask(ec, ec == NO_EXPONENT, model.zero_c_exponent)  # zero and non-finite c
    return finite, ec


def _products(ae: np.ndarray, be: np.ndarray, av: np.ndarray, bv: np.ndarray, outer: bool):
    """(exponents, values) generators of the products k = 0..ik-1, given k-major (ik, rows)
    operands: every pair of rows (outer, the result raveled) or row i with row i."""
    pair = (lambda x, y: (x[:, None] + y[None, :]).reshape(-1)) if outer else np.add
    times = (lambda x, y: (x[:, None] * y[None, :]).reshape(-1)) if outer else np.multiply
    return (pair(ae[k], be[k]) for k in range(ae.shape[0])), (times(av[k], bv[k]) for k in range(av.shape[0]))


def _term_loop(a: Side, b: Side, ks: slice, cf: np.ndarray, ec: np.ndarray, model: BlockScaledAccumulator,
               pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:  # fmt: skip
    """The instruction's rounded sum term by term: for all (a row, b row) pairs, or the given ones."""
    if pairs is None:
        ae, be, av, bv = (np.ascontiguousarray(x[:, ks].T) for x in (a.exponent, b.exponent, a.value, b.value))
    else:
        i, j = pairs
        ae, av = (np.ascontiguousarray(x[i, ks].T) for x in (a.exponent, a.value))
        be, bv = (np.ascontiguousarray(x[j, ks].T) for x in (b.exponent, b.value))
    exps, values = _products(ae, be, av, bv, pairs is None)
    # |product| < 2**(exponent + a.sig_bits + b.sig_bits): the bound of the float64 fast sum.
    total, _ = aligned_sum(itertools.chain([cf.reshape(-1)], values), itertools.chain([ec.reshape(-1)], exps),
                           model.frac_bits, model.term_rounding, a.sig_bits + b.sig_bits)
    return _round_out(total, model)


def _pair(x: np.ndarray, y: np.ndarray, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """(rows, ...) per-row arrays of a and b lined up for the results: every (a row, b row)
    pair (a's along axis 0, b's along axis 1), or row i with row i (``paired``)."""
    return (x, y) if paired else (x[:, None], y[None, :])


def _product_step(a: Side, b: Side, t: int, c: np.ndarray, model: BlockScaledAccumulator,
                  paired: bool = False) -> np.ndarray:  # fmt: skip
    """One instruction with a term per product (``term_exponent="product"``)."""
    ik, F = model.instruction_k, model.frac_bits
    ks = slice(t * ik, (t + 1) * ik)
    cf, ec = _c_terms(c, model)
    # The exact fast path: no term loses a bit and the float64 matrix product cannot round.
    limit = min(F, 53 - a.sig_bits - b.sig_bits - math.ceil(math.log2(ik)))
    ah, bh = _pair(a.high[:, t], b.high[:, t], paired)
    al, bl = _pair(a.low[:, t], b.low[:, t], paired)
    high = np.maximum(ec, ah + bh)
    fast = (high - (al + bl) <= limit) & ((cf == 0) | (ec - 23 >= high - F))
    if not fast.any():
        if paired:
            rows = np.arange(c.shape[0])
            return _term_loop(a, b, ks, cf, ec, model, (rows, rows))
        return _term_loop(a, b, ks, cf, ec, model).reshape(c.shape)
    out = _round_out(round_to_odd_sum(_exact_products(a.value[:, ks], b.value[:, ks], paired), cf), model)
    if not fast.all():
        slow = np.nonzero(~fast)
        i, j = (slow[0], slow[0]) if paired else slow
        out[slow] = _term_loop(a, b, ks, cf[slow], ec[slow], model, (i, j))
    return out


def _scale_step(a: Side, b: Side, t: int, c: np.ndarray, model: BlockScaledAccumulator,
                paired: bool = False) -> np.ndarray:  # fmt: skip
    """One instruction with a term per sub-block (``term_exponent="scale"``): the exact
    sub-block sum times both scale significands, at the scales' exponents."""
    ik, sb = model.instruction_k, model.sub_block
    cf, ec = _c_terms(c, model)
    shift = a.format.int_shift + b.format.int_shift
    values, exps = [cf], [ec]
    for g in range(t * ik, (t + 1) * ik, sb):
        blk = g // a.block
        sums = _exact_products(a.ints[:, g : g + sb], b.ints[:, g : g + sb], paired)  # integers below 2**53
        ea, eb = _pair(a.scale_exp[:, blk], b.scale_exp[:, blk], paired)
        sa, sb_ = _pair(a.scale_sig[:, blk], b.scale_sig[:, blk], paired)
        e = ea + eb
        v = sums * (sa * sb_) * pow2(e - shift)
        values.append(v)
        exps.append(np.where(v == 0, NO_EXPONENT, e) if model.zero_exponent is None else e)
    # A sub-block sum spans up to 52 bits above its scales' exponent: no float64 fast sum.
    return _round_out(aligned_sum(values, exps, model.frac_bits, model.term_rounding, None)[0], model)


def _specials(a: Side, b: Side, t: int, c: np.ndarray, out: np.ndarray, ik: int,
              paired: bool = False) -> np.ndarray:  # fmt: skip
    """Where a NaN or Inf takes part (an element, a NaN scale, c), the IEEE value of the
    instruction's products and c: NaN for a NaN, Inf*0 or Inf-Inf, otherwise the Inf."""
    bad_a, bad_b = _pair(a.bad[:, t], b.bad[:, t], paired)
    bad = bad_a | bad_b | ~np.isfinite(c)
    if not bad.any():
        return out
    where = np.nonzero(bad)
    i, j = (where[0], where[0]) if paired else where
    ks = slice(t * ik, (t + 1) * ik)
    with np.errstate(invalid="ignore"):
        s = (a.raw(i, ks) * b.raw(j, ks)).sum(axis=1) + c[where]
    out[where] = np.where(np.isfinite(s), out[where], s)
    return out


def run_fused(a: Side, b: Side, c: np.ndarray, model: BlockScaledAccumulator, paired: bool = False) -> np.ndarray:
    """The model over all of K for a's rows against b's: (rows of a, rows of b) float64 values
    in fp32, starting from the accumulator c; ``paired``: row i of a against row i of b only,
    (rows,) from c of shape (rows,), each the value the (1, 1) run of that pair gives."""
    step = _product_step if model.term_exponent == "product" else _scale_step
    for t in range(a.kp // model.instruction_k):
        c = _specials(a, b, t, c, step(a, b, t, c, model, paired), model.instruction_k, paired)
    return c
