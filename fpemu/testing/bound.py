"""The error bound of one accumulation model: for each output element, an interval holding
every result the model's arithmetic can give (the derivation is in docs/tolerance.md).

A running sum is held as ``P``, the exact sum of ``c`` and the products so far (in float64,
within ``slack``), and the error of the unit's running value ``r`` against it:
``elo <= r - (c + sum of products) <= ehi``. Each step adds its products to ``P`` and to the
error what its cuts and roundings can do: a term cut to ``F`` fraction bits below the block's
exponent ``E`` loses ``x - cut(x)``, computed exactly for the smallest and the largest ``E``
the step can have (the loss is monotone in ``E``); a rounding loses at most an ulp (half for
RNE) of the largest value it can see. The last rounding is applied to the interval's ends
instead (rounding is monotone), so both ends are values of the output format.

Only the model's parameters are read (kind, block, frac_bits, rounding, the second stage of
late-c models, c_after, lane order, promotion, flushing); nothing here runs fpemu's kernels.

>>> import numpy as np
>>> from fpemu.accumulator import get_accumulator
>>> a, b = np.array([[1.0, 2.0**-30]]), np.array([[1.0, 1.0]])
>>> lo, hi, wild = bound(a, b, np.zeros(1), get_accumulator("v100", "fp16"), "fp16", "fp16", "fp32", "model")
>>> lo.tolist(), hi.tolist(), wild.tolist()
([1.0], [1.0], [False])
"""

from __future__ import annotations

import math

import numpy as np

from ..accumulator import Accumulator, BlockFMA, BlockModel, Exact, Sequential, TwoStage
from ..arith import NO_EXPONENT, exponent, pow2
from ..formats import get_format
from .enclosure import apply, Ctx, make_rounding, Sum, sum_down, sum_up

_PRODUCT_LIMIT = 2.0**128  # products this large overflow in models with product_overflow


def _cut_error(x: np.ndarray, g_lo: np.ndarray, g_hi: np.ndarray, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """The range of cut(x) - x over the grids g_lo..g_hi (powers of two; exact in float64):
    ``x - cut(x)`` is x's fmod (rz) or mod (rd) by the grid, which only grows with the grid."""
    cut = np.trunc if rounding == "rz" else np.floor
    e1, e2 = cut(x / g_lo) * g_lo - x, cut(x / g_hi) * g_hi - x
    return np.minimum(e1, e2), np.maximum(e1, e2)


def _exponents(st: Sum, Ep: np.ndarray, ctx: Ctx) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest alignment exponent of a block: the products' largest (known)
    and the running value's, which lies in a range (a zero one counts as zero_c_exponent)."""
    zce = ctx.acc.zero_c_exponent
    rmag, rmin = st.mag(), st.min_mag()
    E_hi = np.maximum(np.maximum(Ep, exponent(rmag, ctx.c_emin)), zce)
    E_lo = np.maximum(Ep, np.where(rmin > 0, exponent(rmin, ctx.c_emin), min(zce, ctx.c_emin)))
    return E_lo, E_hi


def _largest(ep: np.ndarray) -> np.ndarray:
    return ep.max(axis=1) if ep.shape[1] else np.full(ep.shape[0], NO_EXPONENT)


def _block(st: Sum, p: np.ndarray, ep: np.ndarray, ctx: Ctx, final: bool) -> None:
    """One block FMA (products p, model exponents ep) on the running value, NVIDIA style."""
    acc, F = ctx.acc, ctx.acc.frac_bits
    E_lo, E_hi = _exponents(st, _largest(ep), ctx)
    lo, hi = _cut_error(p, pow2(E_lo - F)[:, None], pow2(E_hi - F)[:, None], acc.term_rounding)
    _cut_running(st, pow2(E_lo - F), pow2(E_hi - F), acc.term_rounding)
    st.add(p)
    st.err(sum_down(lo), sum_up(hi))
    ctx.round_step(st, final)


def _cut_running(st: Sum, g_lo: np.ndarray, g_hi: np.ndarray, rounding: str, dropped=None) -> None:
    """The accumulator term r cut to a grid in g_lo..g_hi (or, where ``dropped`` may hold,
    dropped): cut_g(r) grows with r, so it lies between the cuts of r's interval's ends; the
    running error becomes that range less the exact sum so far."""
    cut = np.trunc if rounding == "rz" else np.floor
    rlo, rhi = st.ends()
    low = np.minimum(cut(rlo / g_lo) * g_lo, cut(rlo / g_hi) * g_hi)
    high = np.maximum(cut(rhi / g_lo) * g_lo, cut(rhi / g_hi) * g_hi)
    if dropped is not None:
        low, high = np.where(dropped, np.minimum(low, 0.0), low), np.where(dropped, np.maximum(high, 0.0), high)
    st.set_range(low, high)


def _late_block(st: Sum, p: np.ndarray, ep: np.ndarray, ctx: Ctx, final: bool) -> None:
    """One two-stage block (late c, AMD CDNA3): the product stage is known exactly (its
    exponents are the products' own); the product sum and c are then cut below
    M = max(E_p, e_c), whose range comes from r's."""
    acc = ctx.acc
    cut = {"rz": np.trunc, "rd": np.floor}
    lanes = [slice(0, None, 2), slice(1, None, 2)] if acc.even_odd else [slice(None)]
    sums, exps, first = [], [], []
    for lane in lanes:
        q = p[:, lane]
        E = _largest(ep[:, lane])
        g = pow2(E - acc.frac_bits)[:, None]
        kept = cut[acc.term_rounding](q / g) * g
        sums.append(kept.sum(axis=1))  # exact: on the grid g, at most F + 2 + log2(n) bits
        exps.append(E)
        first.append(kept - q)
    Ep = np.maximum.reduce(exps) if len(exps) > 1 else exps[0]
    if acc.lane_frac_bits is not None:
        gl = pow2(Ep - acc.lane_frac_bits)
        kept = [cut[acc.late_rounding](v / gl) * gl for v in sums]
        first += [(k - v)[:, None] for k, v in zip(kept, sums)]
        sums = kept
    S = sums[0] if len(sums) == 1 else sums[0] + sums[1]  # exact: both on one grid
    first = np.concatenate(first, axis=1)
    M_lo, M_hi = _exponents(st, Ep, ctx)
    slo, shi = _cut_error(S, pow2(M_lo - acc.sum_frac_bits), pow2(M_hi - acc.sum_frac_bits), acc.late_rounding)
    cf = acc.sum_frac_bits if acc.c_frac_bits is None else acc.c_frac_bits
    dropped = None
    if acc.c_window is not None:  # c is dropped when its exponent is more than c_window below M
        rmin = st.min_mag()
        dropped = (rmin == 0) | (exponent(rmin, ctx.c_emin) < M_hi - acc.c_window)
    _cut_running(st, pow2(M_lo - cf), pow2(M_hi - cf), acc.late_rounding, dropped)
    st.add(p)
    st.err(sum_down(first) + slo, sum_up(first) + shi)
    ctx.round_step(st, final)


def _fixed_point(errors, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) = errors(V) for a V that bounds every value of a chain: V = base + e with e
    at least the errors' size at V, found by doubling."""
    extra = np.zeros(base.shape)
    while True:
        lo, hi = errors(base + extra)
        need = np.maximum(-lo, hi)
        if (need <= extra).all():
            return lo, hi
        extra = np.maximum(extra, 2 * need)


def _any_blocks(st: Sum, p: np.ndarray, ep: np.ndarray, ctx: Ctx, final: bool) -> None:
    """Blocks over products p in an unknown order (``order="any"``, or a lane order): every
    value in the chain is at most |r| + sum|p| + the chain's error. For a late-c model, each
    block's second-stage cuts are bounded by their grids below the largest exponent."""
    acc, F = ctx.acc, ctx.acc.frac_bits
    nb = max(1, -(-p.shape[1] // (acc.block or max(p.shape[1], 1))))
    Ep, rz = _largest(ep), acc.term_rounding == "rz"

    def errors(V):
        E = np.maximum(np.maximum(Ep, exponent(V, ctx.c_emin)), acc.zero_c_exponent)
        g = pow2((Ep if acc.late_c else E) - F)
        lo, hi = _cut_error(p, pow2(ep - F), g[:, None], acc.term_rounding)  # a block's E >= its products'
        if acc.late_c:  # per block: the lanes' cut, the product sum's, c's (or c dropped)
            lanes = 2 * pow2(Ep - acc.lane_frac_bits) if acc.lane_frac_bits is not None else 0.0
            cf = acc.sum_frac_bits if acc.c_frac_bits is None else acc.c_frac_bits
            c_grid = pow2(E - cf) if acc.c_window is None else np.maximum(pow2(E - cf), pow2(E - acc.c_window + 1))
            c_loss = nb * (lanes + pow2(E - acc.sum_frac_bits) + np.minimum(V, c_grid))
        else:
            c_loss = nb * (np.minimum(V, g) if rz else g)
        rlo, rhi = ctx.round_error(V, (False, False))
        k = nb - 1 if final else nb
        down_only = not rz and not acc.late_c
        return sum_down(lo) - c_loss + k * rlo, sum_up(hi) + (0.0 if down_only else c_loss) + k * rhi

    lo, hi = _fixed_point(errors, st.mag() + sum_up(np.abs(p)))
    st.add(p)
    st.err(lo, hi)


def _roundings(st: Sum, p: np.ndarray, ctx: Ctx, count: int) -> None:
    """``count`` roundings of values at most |r| + sum|p| + their own error; p added exactly."""
    lo, hi = _fixed_point(lambda V: tuple(count * e for e in ctx.round_error(V, (False, False))),
                          st.mag() + sum_up(np.abs(p)))  # fmt: skip
    st.add(p)
    st.err(lo, hi)


def _steps(st: Sum, p: np.ndarray, ep: np.ndarray, ctx: Ctx, final: bool, order: str) -> None:
    """The model over products p from the running sum st, in its own order or in any."""
    acc, K = ctx.acc, p.shape[1]
    if isinstance(acc, BlockFMA) and (acc.c_after or acc.lane_order is not None):
        ik = acc.instruction_k or max(K, 1)
        for s in range(0, max(K, 1), ik):
            last = final and s + ik >= K
            if not acc.c_after:
                _any_blocks(st, p[:, s : s + ik], ep[:, s : s + ik], ctx, last)
                continue
            part = Sum(np.zeros(p.shape[0]))  # the instruction's blocks from zero, c after
            _any_blocks(part, p[:, s : s + ik], ep[:, s : s + ik], ctx, False)
            st.merge(part)
            ctx.round_step(st, last)
    elif isinstance(acc, BlockModel) and order == "any":
        _any_blocks(st, p, ep, ctx, final)
    elif isinstance(acc, BlockModel):
        step, n = (_late_block if acc.late_c else _block), acc.block
        for s in range(0, K, n) if K else range(1):
            step(st, p[:, s : s + n], ep[:, s : s + n], ctx, final and s + n >= K)
    elif isinstance(acc, Sequential) and order == "any":
        _roundings(st, p, ctx, max(K - 1, 0) if final else K)
    elif isinstance(acc, Sequential):
        for k in range(K):
            st.add(p[:, k : k + 1])
            ctx.round_step(st, final and k == K - 1)
    else:
        _pairwise(st, p, ctx, final, order)


def _pairwise(st: Sum, p: np.ndarray, ctx: Ctx, final: bool, order: str) -> None:
    """Trees of ``block`` products (first rounded, with round_products), each added to the
    running value. A rounded addition errs by at most u|x| + eta, so a tree of depth d over
    leaves of total size L errs by e_d, with e_l = e_(l-1) + u (L + e_(l-1)) + nodes_l eta."""
    acc, t, K = ctx.acc, ctx.t, p.shape[1]
    n = acc.block or max(K, 1)
    nb = max(1, -(-K // n))
    u = 2.0 ** -(t.fmt.mantissa_bits + (1 if t.mode == "rne" else 0))
    eta = 2.0**t.fmt.emin if t.flush else 2.0 ** (t.fmt.emin - t.fmt.mantissa_bits)
    q = apply(p, t) if acc.round_products else p  # each product's rounding, exactly
    groups = [slice(0, K)] if order == "any" else [slice(s, s + n) for s in range(0, K, n)]
    for g in groups:
        tree, nodes, L = np.zeros(p.shape[0]), n, sum_up(np.abs(q[:, g]))
        ctx.wild |= L >= t.fmt.max  # a product or a node may overflow to Inf
        trees = nb if order == "any" else 1  # the products of all trees at once: the bound is linear in L
        for _ in range(math.ceil(math.log2(n)) if n > 1 else 0):
            nodes = -(-nodes // 2)
            tree = tree + u * (L + tree) + trees * nodes * eta
        tree = np.nextafter(tree * (1 + 2.0**-40), np.inf)  # float64's own error in the recursion
        diff = q[:, g] - p[:, g]  # exact: a product and its rounding differ in few bits
        st.add(p[:, g])
        st.err(sum_down(diff) - tree, sum_up(diff) + tree)
        if order == "any":
            _roundings(st, p[:, :0], ctx, nb - 1 if final else nb)
        else:
            ctx.round_step(st, final and g.stop >= K)


def bound(a: np.ndarray, b: np.ndarray, c: np.ndarray, acc: Accumulator, fa, fb, out: str, order: str):
    """(lo, hi, wild) for the dot products ``sum_k a[r, k] * b[r, k] + c[r]`` of one model:
    a, b (R, K) values of the input formats fa, fb; c (R,) the accumulator operand as the unit
    reads it (fp32, fp16 for fp16 output). lo and hi are values of ``out``; where ``wild``
    (an Inf/NaN operand, or a value that may overflow) they are -inf and inf."""
    fa, fb = get_format(fa), get_format(fb)
    acc = acc.for_output(out)
    if isinstance(acc, TwoStage) and (acc.sum_frac_bits is None or acc.frac_bits + (acc.block or 1).bit_length() + 4 > 52):
        raise ValueError(f"no error bound for {acc.name!r}: a late-c model needs sum_frac_bits and F + log2(block) <= 48")
    if acc.promote is not None and out == "fp16":
        raise ValueError(f"no error bound for {acc.name!r}: promotion with fp16 output")
    finite = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1) & np.isfinite(c)
    a, b, c = (np.where(np.isfinite(x), x, 0.0) for x in (a, b, c))
    if acc.flush_subnormals:  # the unit reads subnormal inputs as zero
        a, b = np.where(np.abs(a) < fa.min_normal, 0.0, a), np.where(np.abs(b) < fb.min_normal, 0.0, b)
    p = a * b  # exact: at most 48 significant bits
    ea, eb = (exponent(x, f.emin).astype(np.int64) for x, f in ((a, fa), (b, fb)))
    if isinstance(acc, BlockModel) and acc.zero_exponent is not None:  # a zero operand takes part in the alignment
        ea, eb = np.where(a == 0, acc.zero_exponent, ea), np.where(b == 0, acc.zero_exponent, eb)
    ep = ea + eb
    ctx = Ctx(acc, out, a.shape[0])
    ctx.wild |= ~finite
    if isinstance(acc, BlockModel) and acc.product_overflow:
        ctx.wild |= (np.abs(p) >= _PRODUCT_LIMIT).any(axis=1)
    if isinstance(acc, Exact):
        st = Sum(c)
        st.add(p)
        return (*ctx.finish(st, ctx.finals), ctx.wild)
    if acc.promote is None:
        st = Sum(c if isinstance(acc, BlockModel) else apply(c, ctx.t))  # a loop reads c in its format
        _steps(st, p, ep, ctx, True, order)
        return (*ctx.finish(st, ctx.finals), ctx.wild)
    fp32 = make_rounding("fp32", "rne")  # DeepSeek-V3: each interval from zero, added to fp32 (RNE)
    st, K = Sum(apply(c, fp32)), p.shape[1]
    for s in range(0, K, acc.promote):
        part = Sum(np.zeros(p.shape[0]))
        _steps(part, p[:, s : s + acc.promote], ep[:, s : s + acc.promote], ctx, False, order)
        st.merge(part)
        ctx.round_step(st, s + acc.promote >= K, fp32)
    finals = [fp32] + ([make_rounding(out, "rne")] if out != "fp32" else [])
    return (*ctx.finish(st, finals), ctx.wild)
