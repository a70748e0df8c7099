"""Micro-scaling block formats: OCP MX (MXFP8, MXFP6, MXFP4, MXINT8) and NVIDIA NVFP4.

A block format stores a tensor as narrow *element codes* plus one shared *scale code* per block
of ``k`` consecutive elements (along one axis). The value of element ``i`` of a block is
``scale * element_value(code_i)``.

* OCP MX v1.0: ``k = 32``, the scale is E8M0 (a power of two, ``2**(code - 127)``; 0xFF is NaN),
  elements are E4M3, E5M2, E3M2, E2M3, E2M1 or INT8 (two's complement with an implicit 2**-6).
* NVFP4: ``k = 16`` E2M1 elements, a UE4M3 block scale (an E4M3 value used for positive numbers)
  and an FP32 per-tensor scale, computed with TransformerEngine's float32 arithmetic by default.

>>> q = quantize([500.0, -3.0, 0.1, 0.001, 1.0], "mxfp8_e4m3")
>>> hex(int(q.scales[0])), [hex(int(c)) for c in q.codes]
('0x7f', ['0x7e', '0xc4', '0x1d', '0x1', '0x38'])
>>> q.dequantize().tolist()
[448.0, -3.0, 0.1015625, 0.001953125, 1.0]
>>> r = quantize([500.0, -3.0, 0.1, 0.001, 1.0], "mxfp8_e4m3", scale_rounding="rceil")
>>> hex(int(r.scales[0])), r.dequantize().tolist()
('0x80', [512.0, -3.0, 0.1015625, 0.0, 1.0])

Every element conversion is the codec's, into the element :class:`~fpemu.formats.Format` (RNE by
default, saturating as the OCP spec requires; INT8's deterministic modes use numpy's exact
integer roundings, held to :func:`fpemu.encode`'s codes by the tests); scale codes are computed
with integer operations on the IEEE bit patterns, and the division by a power-of-two scale is
an exact multiplication. Quantization never loops per block: the whole pipeline runs on
cache-sized chunks of many blocks at once. Products of block arrays are the matrix unit's:
:func:`fpemu.gemm` and :func:`fpemu.dot` take them (:mod:`fpemu.accumulator`).

Layout conventions (documented in ``docs/mx.md``):

* blocks run along ``axis``; a length that is not a multiple of the block size ends in one
  shorter block (as if padded with zeros, which never change a block's amax; the padding is
  never materialised, so the cost follows the data and not the block size);
* ``codes`` has the shape of the input; ``scales`` has the input's shape with the block axis
  (or axes, for 16x16 tiles) divided by the block size, rounded up;
* :meth:`BlockArray.pack` packs two FP4 codes per byte (element ``2i`` in the low nibble) and
  four FP6 codes per three bytes (a little-endian bit stream: element ``4i`` in bits 0-5 of
  byte ``3i``).

No floating-point warning escapes a public function: every overflow or invalid operation inside
is deliberate (saturation, NaN blocks) and handled explicitly.

The package, one job per module; each imports only from the modules listed before it:

* ``formats``: :class:`BlockFormat` and the registry of block formats (data);
* ``inputs``: input arrays as float32/float64, element rounding names, the RNG;
* ``layout``: block sizes and axes checked, block axes moved last, regions of equal tiles;
* ``elements``: scaled values to element codes, and the value of every code;
* ``mx_scales``: the MX E8M0 scale rules (floor, rceil, ceil, even; torchao's eager rceil);
* ``conventions``: other libraries' MX and NVFP4 rules by name (``convention=``: torchao, TransformerEngine; the table is the codec's, beside their element rules);
* ``nvfp4_scales``: NVFP4's per-tensor and block scales (TransformerEngine, torchao);
* ``four_over_six``: NVFP4's Four Over Six: its rule names and each candidate's block error,
  in TransformerEngine's order;
* ``packing``: FP4/FP6 codes packed into bytes and back;
* ``array``: :class:`BlockArray` (what every block array has) and :func:`dequantize`;
  ``mx_array``, ``nvfp4_array``: its two families, :class:`MXArray` and :class:`NVFP4Array`;
* ``mx_quantization`` and ``nvfp4_quantization``: the two quantization pipelines;
* ``quantization``: :func:`quantize`, which checks its options and runs one of them;
* ``scale_layout`` and ``gemm_buffers``: the 128x4 tiled scale layout of cuBLASLt/CUTLASS,
  an operand as the buffers a GEMM kernel reads (:func:`gemm_buffers`) and back, and its
  scales one per (row, K-block) as every block-scaled product reads them;
* ``description``: :func:`describe` (each block's scale, codes and errors, in words) and
  ``describe_json``;
* ``cli``: the ``fpemu mx`` command (loaded on first use: ``import fpemu`` loads no command line).
"""

from __future__ import annotations

from .array import BlockArray, dequantize
from .mx_array import MXArray
from .nvfp4_array import NVFP4Array
from .conventions import CONVENTION_NAMES
from .description import describe as describe  # a public name outside __all__, as before
from .formats import BLOCK_FORMATS, BlockFormat, get_block_format
from .four_over_six import FOUR_OVER_SIX, four_over_six_rule
from .gemm_buffers import from_gemm_buffers, gemm_buffers
from .mx_scales import SCALE_ROUNDINGS
from .packing import pack_codes, unpack, unpack_codes
from .quantization import quantize
from .scale_layout import from_blocked, to_blocked

__all__ = [
    "BlockFormat",
    "BlockArray",
    "MXArray",
    "NVFP4Array",
    "BLOCK_FORMATS",
    "SCALE_ROUNDINGS",
    "CONVENTION_NAMES",
    "FOUR_OVER_SIX",
    "four_over_six_rule",
    "get_block_format",
    "quantize",
    "dequantize",
    "pack_codes",
    "unpack_codes",
    "unpack",
    "gemm_buffers",
    "from_gemm_buffers",
    "to_blocked",
    "from_blocked",
]


def __getattr__(name: str):
    """``cmd_mx`` and ``register_cli`` (the command line, outside __all__) on first use."""
    if name in ("cmd_mx", "register_cli"):
        from . import cli

        return getattr(cli, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
