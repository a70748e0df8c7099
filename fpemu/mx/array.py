"""The container: :class:`BlockArray`, what every block-scaled array has (codes, scales and
their layout, every part checked on construction), and :func:`dequantize`, the values it
represents. The two families are its subclasses, each with only its own fields, and an array
is built by its family's class: :class:`~fpemu.mx.mx_array.MXArray` (E8M0 scales and the rule
that made them) for the MX formats, :class:`~fpemu.mx.nvfp4_array.NVFP4Array` (UE4M3/UE5M3 scales
and NVFP4's per-tensor scale) for ``nvfp4`` and ``nvfp4_ue5m3``. ``BlockArray`` itself is what
both have in common (``isinstance(q, BlockArray)``), not a class to build:

>>> import numpy as np
>>> from fpemu import mx
>>> mx.BlockArray(np.zeros(32, np.uint8), np.full(1, 127), "mxfp4", 0, 32)
Traceback (most recent call last):
...
TypeError: BlockArray is the base of the block arrays: build MXArray (MX formats) or NVFP4Array (nvfp4, nvfp4_ue5m3), or call mx.quantize
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec import is_dask
from ..parallel import run_each
from .dask_blocks import dequantize_chunks
from .elements import element_table
from .formats import BlockFormat, get_block_format
from .layout import axes_tuple, block_regions, block_tuple, moved
from .layout import output_rows, region_rows, row_chunks, store_rows, unmoved
from .packing import pack_codes

@dataclass(frozen=True, eq=False)
class BlockArray:
    """A block-scaled array: element codes, scale codes, and how they are laid out.

    Attributes:
        codes: uint8 element codes, the shape of the original array (right-aligned: FP4 codes
            use the low 4 bits, FP6 the low 6; MXINT8 stores the two's complement byte and
            also accepts int8 values -128..127).
        scales: uint8 scale codes (E8M0 for MX, UE4M3 0..127 for NVFP4, UE5M3 for
            ``nvfp4_ue5m3``), the original shape with the block axes divided by the block
            size (rounded up).
        format: the :class:`BlockFormat` (or its name).
        axis: the block axis (a tuple of two axes for 2-D tiles); stored non-negative.
        block_size: elements per block along ``axis`` (a pair for 2-D tiles), 1 .. 2**31.

    Built by the family's class (``MXArray(codes, scales, format, axis, block_size,
    scale_rounding=None)``, ``NVFP4Array(codes, scales, format, axis, block_size,
    global_scale=None, global_amax=None, variant=None)``). Every part is checked, so an array
    rebuilt by hand fails here rather than wrapping a code around or crashing later. The
    codes and scales are read-only (a writable array given is copied: the caller's stays
    writable, and no code can be written that the checks did not see; a read-only one is
    taken as it is):

    >>> from fpemu.mx import MXArray
    >>> MXArray(np.zeros(4, np.uint8), np.full(1, 256), "mxfp4", 0, 32)
    Traceback (most recent call last):
    ...
    ValueError: BlockArray.scales: code 256 is out of range for E8M0 scales (0..255)
    >>> q = MXArray(np.zeros(32, np.uint8), np.full(1, 127, np.uint8), "mxfp4", 0, 32)
    >>> q.codes[0] = 99
    Traceback (most recent call last):
    ...
    ValueError: assignment destination is read-only
    """

    codes: np.ndarray
    scales: np.ndarray
    format: BlockFormat
    axis: int | tuple[int, int]
    block_size: int | tuple[int, int]

    def __new__(cls, *args: Any, **fields: Any) -> BlockArray:
        if cls is BlockArray:
            raise TypeError("BlockArray is the base of the block arrays: build MXArray (MX formats) or "
                            "NVFP4Array (nvfp4, nvfp4_ue5m3), or call mx.quantize")
        return super().__new__(cls)

    @classmethod
    def holds(cls, bf: BlockFormat) -> bool:
        """Whether this family's arrays hold block format ``bf``."""
        raise NotImplementedError

    def __post_init__(self) -> None:
        bf = get_block_format(self.format)
        if not self.holds(bf):
            home = "NVFP4Array" if bf.is_nvfp4 else "MXArray"
            raise ValueError(f"{type(self).__name__} does not hold {bf.name}: build {home}")
        codes = _code_array(self.codes, "codes", bf)
        scales = _code_array(self.scales, "scales", bf)
        block = block_tuple(self.block_size)
        axes = axes_tuple(self.axis, codes.ndim, block)
        for name, value in (("format", bf), ("codes", codes), ("scales", scales),
                            ("axis", axes[0] if len(axes) == 1 else axes),
                            ("block_size", block[0] if len(block) == 1 else block)):
            object.__setattr__(self, name, value)  # frozen: normalised once, here
        expect = list(codes.shape)
        for a, b in zip(axes, block):
            expect[a] = -(-expect[a] // b)
        if tuple(expect) != scales.shape:
            raise ValueError(
                f"scales of shape {scales.shape} do not match codes of shape "
                f"{codes.shape} in blocks of {self.block_size} along axis {self.axis}"
            )
        self._check_family_fields()

    def _check_family_fields(self) -> None:
        """The family's own fields, checked (and normalised) once the layout is."""

    def block_factors(self, scales: np.ndarray, work: np.dtype) -> tuple[np.ndarray, Any]:
        """Per-block factors of ``scales`` (the scale codes, any layout) in dtype ``work`` or
        float32, and a factor applied after the element products (None: none)."""
        raise NotImplementedError

    def work_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype :func:`dequantize` computes in for output ``dtype``."""
        return np.dtype(np.float32)

    def _repr_extra(self) -> str:
        return ""

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    @property
    def axes(self) -> tuple[int, ...]:
        return self.axis if isinstance(self.axis, tuple) else (self.axis,)

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.block_size if isinstance(self.block_size, tuple) else (self.block_size,)

    def with_layout(self, codes: Any, scales: Any, axis: Any = None, block_size: Any = None) -> BlockArray:
        """The same tensor (format, per-tensor fields, scale rule) around other codes and scales
        (reshaped, sliced, transposed), on ``axis`` (default: this one) in blocks of
        ``block_size`` (default: these), checked as any BlockArray."""
        return dataclasses.replace(self, codes=codes, scales=scales,
                                   axis=self.axis if axis is None else axis,
                                   block_size=self.block_size if block_size is None else block_size)

    def dequantize(self, dtype: Any = np.float32, *, workers: int | None = None) -> np.ndarray:
        """The represented values (see :func:`dequantize`)."""
        return dequantize(self, dtype=dtype, workers=workers)

    def compute(self) -> BlockArray:
        """This BlockArray in memory (its Dask codes and scales computed and checked); an
        in-memory one is returned as it is."""
        if not is_dask(self.codes) and not is_dask(self.scales):
            return self
        import dask

        codes, scales = dask.compute(self.codes, self.scales)
        return self.with_layout(read_only(codes), read_only(scales))

    def pack(self) -> np.ndarray:
        """The element codes densely packed along the last axis (see :func:`pack_codes`).

        >>> from fpemu.mx import quantize
        >>> quantize([1.0, 2.0, 3.0, -6.0], "mxfp4").pack().tolist()
        [66, 245]
        """
        return pack_codes(self.codes, self.format.bits)

    def __repr__(self) -> str:
        return (
            f"BlockArray({self.format.name}, shape={self.shape}, axis={self.axis}, "
            f"block_size={self.block_size}, scales shape={self.scales.shape}{self._repr_extra()})"
        )


def _code_array(values: Any, what: str, bf: BlockFormat) -> np.ndarray:
    """Integer codes as uint8, refusing any that do not fit the format (no silent wrap).
    Dask codes are checked chunk by chunk when computed (dequantize or compute)."""
    if is_dask(values):
        if values.dtype.kind not in "iu":
            raise TypeError(f"BlockArray.{what} must hold integer codes, got {values.dtype}")
        return values
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"BlockArray.{what} must hold integer codes, got {arr.dtype}")
    if what == "codes":
        limit, name = 1 << bf.bits, f"{bf.name} elements"
        lowest = -(limit >> 1) if bf.is_int else 0  # MXINT8: an int8 value is its two's complement byte
    else:
        limit, name = bf.scale.num_codes, f"{bf.scale_label} scales"
        lowest = 0
    if arr.size and not (arr.dtype == np.uint8 and limit == 256):  # uint8 fits 8-bit codes
        lo, hi = int(arr.min()), int(arr.max())
        if lo < lowest or hi >= limit:
            bad = lo if lo < lowest else hi
            raise ValueError(f"BlockArray.{what}: code {bad} is out of range for {name} "
                             f"({lowest}..{limit - 1})")
    out = arr.astype(np.uint8, copy=False)
    if out is arr and out.flags.writeable:  # the caller's own array: they keep it writable
        out = out.copy()
    return read_only(out)


def read_only(arr: np.ndarray) -> np.ndarray:
    """``arr`` marked read-only, for an array its maker hands over to a block array (nobody
    else holds it), which then takes it without a copy."""
    arr.flags.writeable = False
    return arr


def dequantize(q: BlockArray, dtype: Any = np.float32, *, workers: int | None = None) -> np.ndarray:
    """Values of a :class:`BlockArray` (on ``workers`` threads over chunks of blocks).

    MX: ``element * 2**(scale - 127)``, computed exactly in float32 (every product of an element
    value and a power of two in [2**-127, 2**127] is a float32 or overflows) and then cast to
    ``dtype``; float64 and wider compute in float64, where every MX value is exact. A value
    beyond the range of ``dtype`` reads +-Inf there (the correctly rounded result; ask for
    float64 to see it). A NaN scale makes its whole block NaN.

    NVFP4 follows the variant's arithmetic in float32: TransformerEngine multiplies each E2M1
    value by ``fp32(fp32(scale * amax) * fp32(1/2688))`` (evaluated without TE's intermediate
    overflow, see ``docs/mx.md``); torchao by ``fp32(global * scale)``. ``nvfp4_ue5m3``: the
    E2M1 value times its UE5M3 scale, exactly.

    >>> from fpemu.mx import quantize
    >>> dequantize(quantize([7.0, 3.0, 1.0, 0.4], "mxfp4")).tolist()
    [6.0, 3.0, 1.0, 0.5]
    """
    if not isinstance(q, BlockArray):
        raise TypeError(f"dequantize takes a BlockArray, got {type(q).__name__}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dequantize returns floats, got dtype {dtype}")
    if is_dask(q.codes) or is_dask(q.scales):  # chunk by chunk: each holds whole blocks
        return dequantize_chunks(q.codes, q.scales, lambda c, s: dequantize(
            q.with_layout(c, s), dtype=dtype, workers=1), dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # Inf beyond the range; NaN blocks
        out = _dequantize_moved(q, q.work_dtype(dtype), workers)
        return np.ascontiguousarray(unmoved(out, q.axes), dtype=dtype)


def _dequantize_moved(q: BlockArray, work: np.dtype, workers: int | None = None) -> np.ndarray:
    """The values in the moved layout (block axes last), region by region."""
    axes, block = q.axes, q.block_shape
    table = element_table(q.format, work)
    factors, post = q.block_factors(moved(q.scales, axes), work)
    cm = moved(q.codes, axes)
    lengths = cm.shape[cm.ndim - len(block):]
    out_m = np.empty(cm.shape, work)
    for r in block_regions(lengths, block):
        rows = region_rows(cm, r)
        factor = factors[(Ellipsis,) + r.blocks].reshape(-1)
        out, scratch = output_rows(out_m, r)
        def chunk(sl: slice, rows=rows, factor=factor, out=out) -> None:
            np.multiply(table.take(rows[sl]), factor[sl, None], out=out[sl])
            if post is not None:
                out[sl] *= post

        run_each(chunk, row_chunks(*rows.shape), workers)
        store_rows(out_m, r, out, scratch)
    return out_m
