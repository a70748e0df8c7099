"""Encoding float32 arrays by arithmetic on the top half of each bit pattern.

For a signed format of at most 8 bits with 1 to 5 mantissa bits, the top 16 bits of a float32
pattern (sign, 8 exponent bits, 7 fraction bits) hold the round bit and more; the low 16 bits
matter only as one sticky bit. Rounding is then a dozen whole-array uint16 and uint8
operations, which NumPy runs many lanes at a time: about twice as fast as a gather from the
2**17-entry table, which NumPy does one element at a time.

* ``a = (top & 0x7FFF) | s``, with ``s`` in bit 0, below the round bit (``d = 7 - M >= 2``
  bits are dropped): for nearest-even, ``s = 1`` where the low half or the kept last bit is
  non-zero (``min(low | (top & 2**d), 1)``), so that ``(a + 2**(d-1) - 1) >> d`` goes up
  exactly where the round bit is set and the sticky bits or the last bit are: ties go to
  even without a separate "add the last bit" pass. Ties away add ``2**(d-1)``, toward zero
  nothing, and need no ``s``. Subtracting the exponent rebias in the same addition leaves
  the magnitude code, less ``2**M``. Below the format's normal range the sum wraps around;
* every result above the largest finite code (subnormal range and zero, overflow, Inf, NaN)
  is looked up in the table instead: a few elements in usual data. Where they are many (FP4
  of normal data: most values lie below its smallest normal, 1), float arithmetic does the
  subnormal range first (:func:`_subnormal_range`), and the table the rest.

Which formats and options the arithmetic serves is not argued but checked: before first use,
:func:`top_half_plan` runs it over all 2**17 (top half, sticky) patterns, which are all the
inputs it can tell apart, and compares with the table; one differing code and the table is
used instead (the dispatch, :func:`fpemu.codec.encode_path`, then names ``fp32_table``).

Few specials or many is a step inside this one path, decided chunk by chunk from the chunk's
first 4096 elements: listing the specials, or the subnormal range by float arithmetic, or
the table for the whole chunk. Every way gives the same codes (the check above runs both
ways over all patterns), so the choice changes the speed, never a code.

MX's elements (values divided by their block's power-of-two scale) ride on the same
arithmetic without forming the quotients: :func:`encode_top_half_scaled` takes each block's
exponent off in the rounding's own addition (the public entry is
:func:`fpemu.codec.encode_scaled_blocks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from functools import lru_cache

from ...formats import Format
from ..chunks import TOP_HALF_CHUNK, chunk_size, last_axis_max
from ..chunks import scratch as reused
from ..options import Conversion
from .fp32_table import encode_table, refuse_nan_after, refuse_nan_before

# Elements whose specials are counted first, to choose between listing them (few) and the
# bulk ways (many): a full count costs as much as listing them where they are few. (A step
# inside this path, per chunk: every way gives the same codes, which top_half_plan checks.)
_SAMPLE = 4096

_INCREMENT = {"nearest_even": lambda d: (1 << (d - 1)) - 1, "nearest_away": lambda d: 1 << (d - 1),
              "toward_zero": lambda d: 0}


@dataclass(frozen=True)
class _Plan:
    """Constants of the arithmetic for one format and rounding."""

    drop: int  # fraction bits of the top half below the format's last kept bit
    offset: int  # added before the shift: rounding increment less the exponent rebias
    even: bool  # add the kept last bit (ties to even)
    largest: int  # largest magnitude code the arithmetic gives, less 2**M
    first_normal: int  # magnitude code of the smallest normal, 2**M
    sign_shift: int  # right shift from float32's sign (0x80 of the top byte) to the code's
    min_normal: float  # below it, in bulk, the subnormal range by float arithmetic (RNE only):
    magic: float  # a power of two whose float32 spacing is the format's subnormal spacing
    neg_zero: bool  # whether the format has -0 (else a negative rounded to zero is +0)
    rebias: int  # taken off float32's exponent field (in the top half's units, 2**7)
    emin: int  # the format's smallest normal exponent


def _candidate(fmt: Format, opts: Conversion) -> _Plan | None:
    """The plan the arithmetic would follow for fmt and opts, or None where it cannot apply."""
    if (
        opts.rounding not in _INCREMENT
        or not fmt.signed or fmt.twos_complement or not fmt.subnormals
        or fmt.bits > 8 or fmt.container_bits is not None
        or not 1 <= fmt.mantissa_bits <= 5 or fmt.exponent_bits < 1
        or fmt.max_code < 1 << fmt.mantissa_bits
    ):
        return None
    drop = 7 - fmt.mantissa_bits
    # float32's exponent field e is the format's e - (127 - bias); one binade more is taken
    # off so that every magnitude below the normal range wraps around to a huge value.
    rebias = (127 - fmt.bias + 1) << 7
    return _Plan(drop, (_INCREMENT[opts.rounding](drop) - rebias) % (1 << 16),
                 opts.rounding == "nearest_even", fmt.max_code - (1 << fmt.mantissa_bits),
                 1 << fmt.mantissa_bits, 8 - fmt.bits, fmt.min_normal,
                 2.0 ** (23 + fmt.emin - fmt.mantissa_bits), fmt.has_neg_zero, rebias, fmt.emin)


def _encode_piece(u: np.ndarray, plan: _Plan, table: np.ndarray, out: np.ndarray,
                  scratch: tuple[np.ndarray, ...], mode: str = "auto", scaled: _Scaled | None = None) -> bool:
    """Codes of the float32 patterns ``u`` (a piece) into ``out``. ``mode``: "auto" picks per
    piece; "sparse" looks every special up in the table; "subnormal" does the subnormal range
    by arithmetic first (the check runs both, so that it sees every sum). With ``scaled``,
    the codes of u's values divided by their blocks' powers of two (:func:`encode_top_half_scaled`).
    False, with ``out`` not all written, where ``scaled`` takes its blocks' exponents from
    their largest magnitudes and declines them (:func:`encode_top_half_block_max`); else True."""
    top, a, b, ones, special, small, f, keep = (s[: u.size] for s in scratch)
    if plan.even:
        np.copyto(b, u, casting="unsafe")  # the low halves (the plain copy takes u from memory)
    np.right_shift(u, np.uint32(16), out=top, casting="unsafe")
    if plan.even:  # s = (low half or last kept bit non-zero), in bit 0
        np.bitwise_and(top, np.uint16(1 << plan.drop), out=a)
        b |= a
        np.minimum(b, ones, out=b)  # (an array of ones: against a scalar NumPy has no SIMD loop)
        np.bitwise_and(top, np.uint16(0x7FFF), out=a)
        a |= b
    else:
        np.bitwise_and(top, np.uint16(0x7FFF), out=a)
    if scaled is None:
        a += np.uint16(plan.offset)
    else:  # the offset less each block's exponent: x / 2**e has e less in its exponent field
        blocks = a.reshape(-1, scaled.block)
        offsets = scaled.offsets
        if offsets is None:  # the exponents from each block's largest magnitude, read off a
            # (the sticky bit 0 never moves a maximum's exponent field, bits 7 up)
            offsets = scaled.offsets_of(last_axis_max(blocks))
            if offsets is None:
                return False
        np.add(blocks, offsets[:, None], out=blocks)
    a >>= np.uint16(plan.drop)
    np.greater(a, np.uint16(plan.largest), out=special)
    a += np.uint16(plan.first_normal)
    top >>= np.uint16(8 + plan.sign_shift)  # the sign, in the code's top bit
    top &= np.uint16(0x80 >> plan.sign_shift)
    a |= top
    np.copyto(out, a, casting="unsafe")
    sample = special[:_SAMPLE]
    if mode != "subnormal" and not (mode == "auto" and np.count_nonzero(sample) * 16 > sample.size):
        where = special.nonzero()[0]
        if mode == "sparse" or where.size * 16 <= u.size:  # few (or told so): look them up
            if where.size:
                values = u[where] if scaled is None else scaled.values(where).view(np.uint32)
                out[where] = _table_codes(values, table)
            return True
    if scaled is not None:  # many specials among the divided values: divide, then encode
        return _encode_piece(scaled.values(None).view(np.uint32), plan, table, out, scratch, mode)
    if plan.even:
        _subnormal_range(u.view(np.float32), plan, top, out, special, small, f, b, keep)
    count = np.count_nonzero(special)
    if mode == "auto" and count * 4 > u.size:  # still many: the table for the whole piece
        _table_codes(u, table, out)
    elif count:
        where = np.flatnonzero(special)
        out[where] = _table_codes(u[where], table)
    return True


def _subnormal_range(x: np.ndarray, plan: _Plan, sign: np.ndarray, out: np.ndarray, special: np.ndarray,
                     small: np.ndarray, f: np.ndarray, code: np.ndarray, keep: np.ndarray) -> None:
    """Codes of the magnitudes below the smallest normal into out, taken off ``special``.

    Adding a power of two whose float32 spacing is the format's subnormal spacing makes the
    FPU round the magnitude to nearest even on that grid; the low bits of the sum are then the
    code (a carry to the smallest normal included).
    """
    np.abs(x, out=f)
    np.less(f, np.float32(plan.min_normal), out=small)  # NaN is not small
    f += np.float32(plan.magic)
    np.subtract(f.view(np.uint32), np.float32(plan.magic).view(np.uint32), out=code, casting="unsafe")
    if plan.neg_zero:
        code |= sign
    else:  # no -0: only non-zero codes take the sign
        np.multiply(sign, code != 0, out=sign)
        code |= sign
    # out = code where small, else out: a blend through byte masks (copyto with where= and
    # a cast runs element by element, ten times slower)
    np.multiply(small.view(np.uint8), np.uint8(0xFF), out=keep)
    np.copyto(f.view(np.uint8)[: out.size], code, casting="unsafe")
    f.view(np.uint8)[: out.size] &= keep
    np.bitwise_not(keep, out=keep)
    out &= keep
    out |= f.view(np.uint8)[: out.size]
    np.greater(special, small, out=special)  # special and not small


def _table_codes(u: np.ndarray, table: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """table[(u >> 16) * 2 + (low 16 bits non-zero)]."""
    index = (u >> np.uint32(15)) & np.uint32(0x1FFFE)
    index |= (u & np.uint32(0xFFFF)) != 0
    return table.take(index, out=out)


def _scratch(size: int) -> tuple[np.ndarray, ...]:
    """This thread's temporaries of :func:`_encode_piece`, ``size`` elements each (the fourth
    filled with ones)."""
    kinds = (np.uint16, np.uint16, np.uint16, np.uint16, bool, bool, np.float32, np.uint8)
    buffers = tuple(reused(f"top_half.{i}", size, t) for i, t in enumerate(kinds))
    buffers[3].fill(1)
    return buffers


def encode_top_half(u: np.ndarray, plan: _Plan, table: np.ndarray, mode: str = "auto",
                     out: np.ndarray | None = None) -> np.ndarray:
    """Codes (uint8) of a flat uint32 array of float32 patterns (into out, if given)."""
    out = np.empty(u.size, dtype=np.uint8) if out is None else out
    step = chunk_size(TOP_HALF_CHUNK)  # larger in a parallel worker thread
    size = min(step, u.size)
    scratch = _scratch(size)
    with np.errstate(invalid="ignore"):  # signalling NaNs in the float arithmetic: the table decides them
        for start in range(0, u.size, step):
            piece = slice(start, min(start + step, u.size))
            _encode_piece(u[piece], plan, table, out[piece], scratch, mode)
    return out


@dataclass(frozen=True)
class _Scaled:
    """A piece's blocks of ``block`` elements, each to be divided by a power of two:
    ``offsets`` (uint16, one a block) replace the plan's offset, ``values(where)`` gives the
    divided float32 values at the piece's flat positions ``where`` (None: all of them).
    ``offsets`` None: ``offsets_of(maxima)`` gives them from the blocks' largest magnitudes
    (uint16 top halves of float32 patterns, sign off), or None to decline the piece."""

    block: int
    offsets: np.ndarray | None
    values: Callable[[np.ndarray | None], np.ndarray]
    offsets_of: Callable[[np.ndarray], np.ndarray | None] | None = None


def scaled_blocks_hold(plan: _Plan, exponents: np.ndarray, top_exponents: np.ndarray) -> bool:
    """Whether :func:`encode_top_half_scaled` is exact for blocks with these scale exponents e
    (x / 2**e) and these float32 exponent fields of their amax (all finite).

    Taking e off the exponent field is the division wherever the quotient is a float32
    normal. Elsewhere the field wraps below the format's normal range, so the element is a
    special and is encoded from the quotient itself, provided that (1) a zero or float32
    subnormal input (field 0, read as if normal when e < 0) still lands below the format's
    normal range: -e <= 126 + emin; (2) no quotient's field passes 254; (3) the lowest sum,
    -(e << 7) less the rebias, does not wrap all the way back into the codes.
    """
    if not exponents.size:
        return True
    low, high = int(exponents.min()), int(exponents.max())
    lowest = (1 << 16) - (max(high, 0) << 7) - plan.rebias
    # (2) first by a bound, max(top) - min(e), which usually settles it in two reductions
    highest = int(top_exponents.max()) - low <= 254 or int((top_exponents.astype(np.int64) - exponents).max()) <= 254
    return -low <= 126 + plan.emin and highest and 0 <= plan.rebias and (lowest >> plan.drop) > plan.largest


def encode_top_half_scaled(u: np.ndarray, plan: _Plan, table: np.ndarray, exponents: np.ndarray, block: int,
                         divided: Callable[[slice, np.ndarray | None], np.ndarray], out: np.ndarray) -> np.ndarray:
    """Codes (uint8, into out) of the float32 patterns u (flat, blocks of ``block``) each
    divided by 2**e, e its block's entry of ``exponents``, without computing the quotients:
    e comes off the exponent field in the rounding's own addition. ``divided(piece, where)``
    gives the quotients of u[piece] at the positions where (None: all), for the few elements
    the arithmetic leaves to the table. Exact where :func:`scaled_blocks_hold`."""
    offsets = _offsets(plan, exponents)
    step = chunk_size(TOP_HALF_CHUNK) // block * block
    scratch = _scratch(min(step, u.size))
    with np.errstate(invalid="ignore"):
        for start in range(0, u.size, step):
            piece = slice(start, min(start + step, u.size))
            scaled = _Scaled(block, offsets[start // block: piece.stop // block],
                             lambda where, piece=piece: divided(piece, where))
            _encode_piece(u[piece], plan, table, out[piece], scratch, "auto", scaled)
    return out


def _offsets(plan: _Plan, exponents: np.ndarray) -> np.ndarray:
    """The rounding's offsets (uint16, one a block) for blocks divided by 2**exponents
    (integers in [-127, 127]): ``plan.offset - (e << 7)`` modulo 2**16, in uint16 arithmetic
    (two's complement wraps alike)."""
    shifted = np.left_shift(exponents.astype(np.int16).view(np.uint16), np.uint16(7))
    return np.subtract(np.uint16(plan.offset), shifted, out=shifted)


def encode_top_half_block_max(u: np.ndarray, plan: _Plan, table: np.ndarray, block: int,
                              exponents_of: Callable[[np.ndarray], np.ndarray | None],
                              divided: Callable[[slice, np.ndarray | None], np.ndarray], exponents: np.ndarray,
                              out: np.ndarray) -> list[slice]:
    """As :func:`encode_top_half_scaled`, but each block's exponent e comes from its largest
    magnitude, read off the arithmetic's own top halves in the same pass over u (no pass of
    its own to find the maxima): ``exponents_of(maxima)`` maps the blocks' largest
    magnitudes (uint16: a float32 pattern's top half, sign off) to their exponents, or
    declines them with None. Each exponent is stored into ``exponents`` (one a block).
    Returned: the pieces (flat slices of u, whole blocks) left undone, where exponents_of
    declined, some block holds Inf or NaN, or the exponents lie outside what the folded
    division is exact for (:func:`scaled_blocks_hold`); their codes and exponents are not
    written, for the caller to compute."""
    step = chunk_size(TOP_HALF_CHUNK) // block * block
    scratch = _scratch(min(step, u.size))
    undone = []
    with np.errstate(invalid="ignore"):
        for start in range(0, u.size, step):
            piece = slice(start, min(start + step, u.size))
            blocks = slice(start // block, piece.stop // block)

            def offsets_of(maxima: np.ndarray, blocks: slice = blocks) -> np.ndarray | None:
                if int(maxima.max(initial=0)) >= 0x7F80:  # Inf or NaN (top half 0x7F80, low half non-zero)
                    return None
                found = exponents_of(maxima)
                if found is None or not scaled_blocks_hold(plan, found, maxima >> np.uint16(7)):
                    return None
                exponents[blocks] = found
                return _offsets(plan, found)

            scaled = _Scaled(block, None, lambda where, piece=piece: divided(piece, where), offsets_of)
            if not _encode_piece(u[piece], plan, table, out[piece], scratch, "auto", scaled):
                undone.append(piece)
    return undone


def top_half_plan(fmt: Format, opts: Conversion, table: np.ndarray) -> _Plan | None:
    """The plan for fmt and opts if it gives the table's code for every input, else None."""
    plan = _candidate(fmt, opts)
    if plan is None or table.dtype != np.uint8:
        return None
    index = np.arange(1 << 17, dtype=np.uint32)
    patterns = ((index >> 1) << 16) | (index & 1)
    exact = all(np.array_equal(encode_top_half(patterns, plan, table, mode), table)
                for mode in ("sparse", "subnormal"))
    return plan if exact else None


@lru_cache(maxsize=64)
def arithmetic_plan(fmt: Format, opts: Conversion) -> _Plan | None:
    """The checked plan for float32 input into fmt under opts (:func:`top_half_plan`, against
    the 17-bit table), or None where the arithmetic does not serve them. Cached: the check runs
    once per format and conversion."""
    return top_half_plan(fmt, opts, encode_table(fmt, opts))


def encode_float32_top_half(x: np.ndarray, fmt: Format, opts: Conversion, out: np.ndarray | None = None) -> np.ndarray:
    """Codes of a float32 array by the top-half arithmetic (into out, if given and of the
    format's code dtype), for fmt and opts whose :func:`arithmetic_plan` exists."""
    refuse_nan_before(x, fmt, opts)
    table = encode_table(fmt, opts)
    flat_out = None if out is None or out.dtype != table.dtype else out.reshape(-1)
    codes = encode_top_half(np.asarray(x, order="C").reshape(-1).view(np.uint32), arithmetic_plan(fmt, opts), table,
                            out=flat_out)
    refuse_nan_after(codes, fmt, opts)
    return codes.reshape(x.shape)
