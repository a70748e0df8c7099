"""A tensor core's block-scaled MMA (:class:`~fpemu.accumulator.BlockScaledFMA`): the block FMA
of :mod:`.block`, one instruction of ``instruction_k`` products a block, whose terms are
either each element times its scale, at the exponent of that product (``term_exponent=
"product"``), or each sub-block's exact sum times both scales, at the scales' exponents
(``"scale"``). The result of an instruction is rounded to fp32 and is the next one's ``c``.

Exact and fast: every term is an exact float64 (a scaled element has at most 8 significant
bits, an FP4 sub-block sum is an integer from a float64 matrix product that cannot round), so
the aligned sum is exact (:func:`check_fits` refuses operands where it would not be). With
product terms, a result whose instruction provably loses no bit (every term's lowest set bit
at or above ``E - F``, bounded from each row's largest exponent and lowest set bit; ``c``
likewise) takes the exact sum of the instruction's products from one float64 matrix product
(exact while the sum spans at most 53 bits, also checked from the bounds) and skips the term
loop; the others run it.
"""

from __future__ import annotations

import numpy as np

from ...arith import NO_EXPONENT, aligned_sum, pow2
from ...mx.formats import BlockFormat
from ..model import BlockScaledFMA
from .block import BlockSum, chain_blocks, exact_products, product_sum
from .operand import Operand
from .products import Products
from .rounding import rounding_target


def check_fits(model: BlockScaledFMA, fa: BlockFormat, fb: BlockFormat, block: int) -> None:
    """Refuse operands whose terms the model could not keep exact in float64 and int64."""
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


def run_block_scaled(a: Operand, b: Operand, c: np.ndarray, model: BlockScaledFMA, paired: bool = False) -> np.ndarray:
    """The model over all of K for a's rows against b's columns: (rows, columns) float64
    values in fp32, starting from the accumulator c; ``paired``: row i of a against column
    i of b only, (rows,) from c of shape (rows,), each the value the (1, 1) product of that
    pair gives."""
    prods = Products(a, b, outer=not paired)  # product terms: the operands' bounds per instruction give the fast path
    if model.term_exponent == "product":
        terms = product_sum(prods, model.term_rounding)
    else:
        terms = _sub_block_terms(prods, a, b, model, paired)
    t = rounding_target("fp32", model.out_rounding, overflow=model.overflow)
    out = chain_blocks(prods, 0, prods.K, c.reshape(-1), model.instruction_k, terms, t, -126, model.frac_bits,
                       model.zero_c_exponent)
    return out.reshape(c.shape)


def _pair(op: np.ufunc, x: np.ndarray, y: np.ndarray, paired: bool) -> np.ndarray:
    """op of a per-row array of a and a per-column array of b, for each raveled result."""
    return op(x, y) if paired else op(x[:, None], y[None, :]).reshape(-1)


def _sub_block_terms(prods: Products, a: Operand, b: Operand, model: BlockScaledFMA, paired: bool) -> BlockSum:
    """The instruction's sum with a term per sub-block: the exact sub-block sum times both
    scale significands, at the scales' exponents (not renormalised)."""
    sb = model.sub_block
    shift = a.format.int_shift + b.format.int_shift
    unit_a, unit_b = 2.0 ** -a.format.scale.mantissa_bits, 2.0 ** -b.format.scale.mantissa_bits

    def block_sum(s: int, e: int, cf: np.ndarray, ec: np.ndarray, F: int) -> np.ndarray:
        values, exps = [cf], [ec]
        for g in range(s, e, sb):
            blk = g // a.block
            sums = exact_products(a.ints[g : g + sb], b.ints[g : g + sb], not paired)  # integers below 2**53
            ex = _pair(np.add, a.scale_exp[blk], b.scale_exp[blk], paired)
            scales = _pair(np.multiply, a.scale_int[blk] * unit_a, b.scale_int[blk] * unit_b, paired)
            v = sums * scales * pow2(ex - shift)
            values.append(v)
            exps.append(np.where(v == 0, NO_EXPONENT, ex) if model.zero_exponent is None else ex)
        # A sub-block sum spans up to 52 bits above its scales' exponent: no float64 fast sum.
        return aligned_sum(values, exps, F, model.term_rounding, None)[0]

    return block_sum
