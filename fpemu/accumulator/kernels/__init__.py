"""The arithmetic of the accumulation models, exact in float64 and int64.

Bottom up: ``rounding`` (rounding targets, powers of two, model exponents, the one correct
rounding of a sum), ``products`` (the exact products of every output element, handed out one
k at a time, and the Inf/NaN rule), one module per kind of model (``block``: the tensor-core
block FMA; ``sequential``: the IEEE loop; ``pairwise``: trees of roundings; ``exact``: the
long accumulator), and ``run``, which drives the chosen model over all of K and applies
DeepSeek-V3's promotion. Every function takes exact float64 values and a model's parameters;
checking the user's operands is ``matmul``'s job.
"""
