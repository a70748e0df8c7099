"""The container: :class:`BlockArray` (codes, scales and their layout, every part checked on
construction) and :func:`dequantize`, the values it represents."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec import decode
from ..codec.dask_arrays import is_dask
from ..parallel import run_each
from .dask_blocks import dequantize_chunks
from .elements import element_table
from .formats import BlockFormat, get_block_format
from .layout import axes_tuple, block_regions, block_tuple, moved
from .layout import output_rows, region_rows, row_chunks, store_rows, unmoved
from .mx_scales import SCALE_ROUNDINGS, pow2_from_e8m0
from .nvfp4_scales import nvfp4_decode_scale, te_amax_is_degenerate
from .packing import pack_codes


# ---- the container --------------------------------------------------------------------------
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
        global_scale: NVFP4 only: the float32 per-tensor *decode* scale (TransformerEngine:
            ``1/S_enc`` with ``S_enc = 2688/amax``; torchao: ``amax/2688``); None for MX
            and ``nvfp4_ue5m3`` (no per-tensor scale). Derived from ``global_amax`` when not
            given.
        global_amax: NVFP4 only: the float32 tensor amax the scales were computed from
            (required for ``variant="te"``, whose dequantization uses it).
        variant: NVFP4 only: ``"te"`` (the default) or ``"torchao"``.
        scale_rounding: MX only: the rule the scales were computed with.

    Every part is checked, so a BlockArray rebuilt by hand fails here rather than wrapping a
    code around or crashing later:

    >>> BlockArray(np.zeros(4, np.uint8), np.full(1, 256), "mxfp4", 0, 32)
    Traceback (most recent call last):
    ...
    ValueError: BlockArray.scales: code 256 is out of range for E8M0 scales (0..255)
    """

    codes: np.ndarray
    scales: np.ndarray
    format: BlockFormat
    axis: int | tuple[int, int]
    block_size: int | tuple[int, int]
    global_scale: np.float32 | None = None
    global_amax: np.float32 | None = None
    variant: str | None = None
    scale_rounding: str | None = None

    def __post_init__(self) -> None:
        bf = get_block_format(self.format)
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
        self._check_tensor_fields()

    def _check_tensor_fields(self) -> None:
        """The per-tensor fields: NVFP4 needs valid ones (deriving a missing decode scale), MX
        and nvfp4_ue5m3 none."""
        if not self.format.tensor_scale:
            if (self.global_scale, self.global_amax, self.variant) != (None, None, None):
                raise ValueError("global_scale, global_amax and variant describe NVFP4 tensors; "
                                 f"a {self.format.name} BlockArray has none")
            if self.format.is_nvfp4 and self.scale_rounding is not None:
                raise ValueError(f"scale_rounding applies to MX formats; {self.format.name} scales "
                                 "follow NVFP4's rule")
            if self.scale_rounding is not None and self.scale_rounding not in SCALE_ROUNDINGS:
                raise ValueError(f"unknown scale_rounding {self.scale_rounding!r}; choose one of "
                                 f"{', '.join(SCALE_ROUNDINGS)}")
            return
        if self.scale_rounding is not None:
            raise ValueError("scale_rounding applies to MX formats; NVFP4 scales follow variant=")
        variant = "te" if self.variant is None else self.variant
        if variant not in ("te", "torchao"):
            raise ValueError(f"variant must be 'te' or 'torchao', got {variant!r}")
        amax = _tensor_scalar(self.global_amax, "global_amax", allow_inf=True)
        scale = _tensor_scalar(self.global_scale, "global_scale", allow_inf=False)
        if scale is not None and scale == 0:
            raise ValueError("global_scale must be > 0 (a decode scale of 0 erases the tensor)")
        if amax is None and (variant == "te" or scale is None):
            raise ValueError(f"an NVFP4 BlockArray ({variant}) needs global_amax"
                             + ("" if variant == "te" else " or global_scale"))
        if scale is None:
            scale = nvfp4_decode_scale(amax, variant)
        object.__setattr__(self, "variant", variant)
        object.__setattr__(self, "global_amax", amax)
        object.__setattr__(self, "global_scale", scale)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    @property
    def axes(self) -> tuple[int, ...]:
        return self.axis if isinstance(self.axis, tuple) else (self.axis,)

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.block_size if isinstance(self.block_size, tuple) else (self.block_size,)

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
        return dataclasses.replace(self, codes=codes, scales=scales)

    def pack(self) -> np.ndarray:
        """The element codes densely packed along the last axis (see :func:`pack_codes`).

        >>> from fpemu.mx import quantize
        >>> quantize([1.0, 2.0, 3.0, -6.0], "mxfp4").pack().tolist()
        [66, 245]
        """
        return pack_codes(self.codes, self.format.bits)

    def __repr__(self) -> str:
        extra = ""
        if self.global_scale is not None:
            extra = f", global_scale={float(self.global_scale)!r}, variant={self.variant!r}"
        return (
            f"BlockArray({self.format.name}, shape={self.shape}, axis={self.axis}, "
            f"block_size={self.block_size}, scales shape={self.scales.shape}{extra})"
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
    return arr.astype(np.uint8, copy=False)


def _tensor_scalar(value: Any, name: str, allow_inf: bool) -> np.float32 | None:
    """An NVFP4 per-tensor float32 field: None, or a number >= 0 (Inf only where allowed)."""
    if value is None:
        return None
    if np.ndim(value) != 0 or isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a single number, got {value!r}")
    v = np.float32(value)
    if np.isnan(v) or v < 0 or (np.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a {'' if allow_inf else 'finite '}number >= 0, "
                         f"got {float(v)}")
    return v


# ---- dequantize -----------------------------------------------------------------------------
def _nvfp4_factors(q: BlockArray, s: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """(per-block float32 factor, power of two applied after the element product) for NVFP4.

    TransformerEngine's kernel computes ``fp32(fp32(scale * amax) * fp32(1/2688))``; for an
    amax above FLT_MAX/448 its ``scale * amax`` overflows and finite tensors read back Inf and
    NaN (0 * Inf). fpemu runs the same float32 roundings with amax scaled by 2**-32 and the
    result by 2**32 (binary scaling commutes with rounding away from the subnormals), which is
    TE's result wherever TE stays finite. Where TE's S_enc is not 2688/amax (amax 0 or Inf,
    or S_enc clamped to FLT_MAX), amax/2688 is not the decode scale the data was encoded with,
    so the factor is ``fp32(scale * global_scale)``, the value the encoding represents.
    """
    f32 = np.float32
    scale = decode(s, q.format.scale, dtype=np.float32)
    if q.variant == "torchao" or te_amax_is_degenerate(q.global_amax):
        return scale * q.global_scale, f32(1.0)
    post = f32(2.0**32) if q.global_amax >= f32(2.0**100) else f32(1.0)
    amax = f32(q.global_amax / post)
    return (scale * amax) * f32(1.0 / 2688.0), post


def _block_factors(q: BlockArray, work: np.dtype) -> tuple[np.ndarray, Any]:
    """Per-block factors in the moved layout (lead..., nblocks...) and the post factor."""
    s = moved(q.scales, q.axes)
    if not q.format.is_nvfp4:
        return pow2_from_e8m0(s, work), None
    if not q.format.tensor_scale:  # element * scale: exact in float32 (6 * UE5M3: 2**-18 .. 688128)
        return decode(s, q.format.scale, dtype=np.float32), None
    factor, post = _nvfp4_factors(q, s)
    return factor, (None if post == 1 else post)


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
            dataclasses.replace(q, codes=c, scales=s), dtype=dtype, workers=1), dtype)
    bf = q.format
    wide = dtype.itemsize >= 8 and not bf.is_nvfp4
    work = np.dtype(np.float64) if wide else np.dtype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # Inf beyond the range; NaN blocks
        out = _dequantize_moved(q, work, workers)
        return np.ascontiguousarray(unmoved(out, q.axes), dtype=dtype)


def _dequantize_moved(q: BlockArray, work: np.dtype, workers: int | None = None) -> np.ndarray:
    """The values in the moved layout (block axes last), region by region."""
    axes, block = q.axes, q.block_shape
    table = element_table(q.format, work)
    factors, post = _block_factors(q, work)
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
