r"""The matrix unit: how tensor cores and matrix cores add products, for plain arrays and for
block arrays (MX, NVFP4), with the units and their models as data.

A matrix-multiply unit does not add ``a[0]*b[0] + ... + a[K-1]*b[K-1] + c`` the way an IEEE
loop does. NVIDIA tensor cores take a block of ``n`` exact products and the accumulator ``c``,
align them all to the largest exponent ``E`` with ``F`` fraction bits, truncate every term
toward zero, add the truncated terms exactly and round the sum once (toward zero for fp32
output). Longer dot products repeat this block by block (the rounded result is the next
block's ``c``). AMD matrix cores add in two stages (CDNA3: products first, ``c`` late, each
with its own kept bits) or as rounded pairwise trees (CDNA1/2, flushing subnormals on CDNA2).
Blackwell's block-scaled MMA fuses an instruction's scaled products (or sub-block sums) the
same way. One small dataclass per kind holds the parameters of such a model; the named
presets of :func:`get_accumulator` come from the published parameters of each architecture
and reproduce real GPU dumps bit for bit (NVIDIA), or reproduce MMA-Sim's models bit for bit
(AMD, Blackwell's block-scaled MMA), one per instruction family (see ``docs/accumulator.md``).

>>> acc = get_accumulator("v100", "fp16")
>>> acc.block, acc.frac_bits, acc.out_rounding
(4, 23, 'rz')
>>> float(dot([1.0], [1.0], -(1 - 2**-24), inputs="fp16", accumulator="v100")) == 2**-23
True
>>> float(dot([1.0], [1.0], -(1 - 2**-24), inputs="fp16", accumulator="a100")) == 2**-24
True

How the numbers are kept exact: every input of these formats is an fp32 value (or an element
times a block scale), so a product is exact in float64 (at most 48 significant bits, exponent
within +-300). Scaling it by ``2**(F-E)`` is exact, the float-to-int64 cast truncates it toward
zero, and the int64 terms add exactly, so the block model has no rounding error of its own; it
is vectorised over all output elements and loops only over k. The IEEE models use an
error-free two-sum and round-to-odd (53 >= 24 + 2 bits, so the one rounding that follows is
correct); the exact models use one long fixed-point accumulator in int64 limbs.

The package, bottom up (data flows one way, each module imports only those before it):
``units`` (the one table of matrix units: data; a new GPU is new rows), ``checks`` (why a
model's fields are refused: one table of every field's type and range), ``model`` (one plain
frozen dataclass per kind of model, all :class:`Accumulator`\ s, and
:func:`model_from_dict`), ``lookup`` (:func:`get_accumulator`: a name
``gpu[/family[/instruction]]`` and the operands' formats to a model), ``operands`` (what the
products accept), ``pieces`` (the one place that sizes pieces of rows), ``tensor_scale``
(NVFP4's per-tensor scales), ``kernels`` (the arithmetic, loaded on the first product: one
operand preparation, one block FMA kernel, one output rounding, one specials rule, one exact
long sum), ``dask_gemm``, ``gemm`` (:func:`gemm` and :func:`dot`, one signature and one return
type for plain and block arrays), ``error`` (:func:`gemm_error`) and ``cli``
(``fpemu gemm-error``, loaded on first use).
"""

from .lookup import accumulator_names, get_accumulator
from .tensor_scale import cublaslt_alpha
from .gemm import dot, gemm
from .model import Accumulator, BlockFMA, BlockModel, BlockScaledAccumulator, BlockScaledFMA, Blockwise, DenseModel
from .model import Exact, FusedModel, Pairwise, RoundedModel, Sequential, TwoStage, model_from_dict
from .model import Kind, OutRounding, TermExponent, TermRounding  # noqa: F401  (type names, outside __all__)

__all__ = [
    "Accumulator",
    "DenseModel",
    "FusedModel",
    "BlockFMA",
    "TwoStage",
    "Exact",
    "Sequential",
    "Pairwise",
    "BlockModel",
    "RoundedModel",
    "BlockScaledAccumulator",
    "Blockwise",
    "BlockScaledFMA",
    "model_from_dict",
    "get_accumulator",
    "cublaslt_alpha",
    "accumulator_names",
    "dot",
    "gemm",
    "gemm_error",
]


# Loaded on first use, so that import fpemu does not load the kernels: gemm_error (and the
# names the single module this package replaced had: GEMM_ERROR_LIMITS and private helpers
# some tests import from here), and the command line (outside __all__).
_LAZY = {"gemm_error": "error", "GEMM_ERROR_LIMITS": "error", "_check_gemm_error_sizes": "error",
         "_normwise": "error", "cmd_gemm_error": "cli", "register_cli": "cli"}  # fmt: skip


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
