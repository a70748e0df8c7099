"""Block-scaled matrix products through accumulator models: how a matrix unit adds MX and
NVFP4 products (per-block scale products, sub-block sums, kept bits, final rounding), with the
models as data.

Bottom up: ``model`` (:class:`BlockScaledAccumulator`, one model's parameters and their
checks), ``lookup`` (:func:`get_block_accumulator`: a name and the operands' formats to a model,
read from the one table of matrix units, :mod:`fpemu.isa`, where Blackwell's block-scaled
kinds sit beside its dense ones), ``operands`` (an operand's elements and
scales prepared once), ``fused`` (the tensor-core arithmetic, one instruction at a time) and
``matmul`` (the public :func:`matmul` and :func:`dot`; the exact model lives in
``fpemu.mx.dot_products``).

>>> from fpemu import mx
>>> a = mx.quantize([1.0, 2.0, 3.0], "mxfp8_e4m3"); b = mx.quantize([4.0, -1.0, 0.5], "mxfp8_e4m3")
>>> float(mx.dot(a, b, accumulator="b200")), get_block_accumulator("b200", "mxfp8_e4m3").frac_bits
(3.5, 48)
"""

from .lookup import block_accumulator_names, get_block_accumulator
from .matmul import cublaslt_alpha, dot, matmul
from .model import BlockScaledAccumulator, BlockScaledFMA, Blockwise

__all__ = ["BlockScaledAccumulator", "Blockwise", "BlockScaledFMA", "get_block_accumulator", "block_accumulator_names", "matmul", "dot",
           "cublaslt_alpha"]
