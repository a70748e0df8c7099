"""The arithmetic of the accumulation models, exact in float64 and int64.

Bottom up: ``operand`` (one operand prepared once, k-major: plain arrays, block arrays),
``products`` (two operands' exact products for every result, one k at a time, and the one
rule for Inf and NaN), ``rounding`` (rounding targets, the one output rounding), ``long_sum``
(the one exact long sum: int64 limbs read out rounded to odd), then one module per kind of
model: ``two_stage`` (AMD CDNA3's second stage), ``block`` (the one block FMA, its terms from a
``block_sum``: products, two stages), ``block_scaled`` (a block-scaled instruction's terms:
scaled products with an exact fast path, or sub-block sums), ``sequential`` (the IEEE loop and
FMA chains), ``pairwise`` (trees of roundings, AMD CDNA1/2's included), ``exact`` and
``blockwise`` (the exact dense and block models on the long sum), and ``run``, which drives a
dense model over all of K and applies DeepSeek-V3's promotion. The aligned sum, the cuts to
kept bits, powers of two and model exponents are :mod:`fpemu.arith`'s. Every function takes
exact values and a model's parameters; checking the user's operands is ``gemm``'s job.
"""
