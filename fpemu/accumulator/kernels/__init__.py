"""The arithmetic of the accumulation models, exact in float64 and int64.

Bottom up: ``rounding`` (rounding targets, the one correct rounding of a sum), ``products``
(the exact products of every output element, handed out one k at a time, the overflow and
Inf/NaN rules), one module per kind of model (``block``: the tensor-core block FMA, with
``two_stage`` for AMD CDNA3's late ``c``; ``sequential``: the IEEE loop and FMA chains;
``pairwise``: trees of roundings, AMD CDNA1/2's included; ``exact``: the long accumulator),
and ``run``, which drives the chosen model over all of K and applies DeepSeek-V3's promotion.
The aligned sum, the cuts to kept bits, powers of two and model exponents are
:mod:`fpemu.arith`'s. Every function takes exact float64 values and a model's parameters;
checking the user's operands is ``matmul``'s job.
"""
