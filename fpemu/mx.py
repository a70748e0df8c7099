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

Every element conversion goes through :func:`fpemu.encode` (RNE, saturating, as the OCP spec
requires); scale codes are computed with integer operations on the IEEE bit patterns, and the
division by a power-of-two scale is an exact multiplication. Quantization never loops per
block: the whole pipeline runs on cache-sized chunks of many blocks at once (matmul loops over
K-blocks, each one vectorised over all rows and columns).

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
"""

from __future__ import annotations

import argparse
import errno
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .accumulator import _round_to_odd_sum
from .codec import ROUNDING_MODES, decode, encode, integers_to_float64
from .formats import Format, get_format

__all__ = [
    "BlockFormat",
    "BlockArray",
    "BLOCK_FORMATS",
    "SCALE_ROUNDINGS",
    "get_block_format",
    "quantize",
    "dequantize",
    "pack_codes",
    "unpack_codes",
    "unpack",
    "dot",
    "matmul",
    "register_cli",
]

#: Scale rounding rules for MX (see ``docs/mx.md`` for who uses which).
SCALE_ROUNDINGS = ("floor", "rceil", "ceil", "even")

_FLT_MAX = np.float32(np.finfo(np.float32).max)


# ---- the formats ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockFormat:
    """One block format: its element type, scale type and default block size.

    Attributes:
        name: canonical name (``mxfp8_e4m3`` ...).
        element: the element :class:`~fpemu.formats.Format`, or None for MXINT8.
        scale: the scale format (``e8m0`` for MX, ``ue4m3`` for NVFP4).
        block_size: default number of elements per block.
        emax: exponent of the element format's largest power of two (OCP ``emax_elem``).
        max_value: the largest element magnitude.
        mantissa_bits: element precision in fraction bits (INT8: 6 below the leading bit).
        bits: element width in bits (how densely :meth:`BlockArray.pack` stores it).

    >>> get_block_format("MXFP4").element.name, get_block_format("mxfp4").emax
    ('e2m1', 2)
    """

    name: str
    element: Format | None
    scale: Format
    block_size: int
    emax: int
    max_value: float
    mantissa_bits: int
    bits: int

    @property
    def is_nvfp4(self) -> bool:
        return self.scale.name == "ue4m3"

    @property
    def is_int(self) -> bool:
        return self.element is None

    @property
    def int_shift(self) -> int:
        """k such that every element value is an integer multiple of 2**-k."""
        if self.element is None:
            return 6
        return self.element.mantissa_bits - self.element.emin


def _block_formats() -> dict[str, BlockFormat]:
    e8m0, ue4m3 = get_format("e8m0"), get_format("ue4m3")
    table: dict[str, BlockFormat] = {}
    for name, elem in [
        ("mxfp8_e4m3", "e4m3"),
        ("mxfp8_e5m2", "e5m2"),
        ("mxfp6_e3m2", "e3m2"),
        ("mxfp6_e2m3", "e2m3"),
        ("mxfp4", "e2m1"),
    ]:
        f = get_format(elem)
        table[name] = BlockFormat(name, f, e8m0, 32, f.emax, f.max, f.mantissa_bits, f.bits)
    table["mxint8"] = BlockFormat("mxint8", None, e8m0, 32, 0, 127 / 64, 6, 8)
    f = get_format("e2m1")
    table["nvfp4"] = BlockFormat("nvfp4", f, ue4m3, 16, f.emax, f.max, f.mantissa_bits, 4)
    return table


BLOCK_FORMATS: dict[str, BlockFormat] = _block_formats()
_BLOCK_ALIASES = {
    "mxfp8": "mxfp8_e4m3", "mxfp8e4m3": "mxfp8_e4m3", "mxfp8e5m2": "mxfp8_e5m2",
    "mxfp6e3m2": "mxfp6_e3m2", "mxfp6e2m3": "mxfp6_e2m3", "mxfp4_e2m1": "mxfp4",
    "mxfp4e2m1": "mxfp4",
}  # fmt: skip


def get_block_format(fmt: str | BlockFormat) -> BlockFormat:
    """Look a block format up by name (case-insensitive).

    >>> get_block_format("nvfp4").block_size
    16
    >>> get_block_format("mxfp5")
    Traceback (most recent call last):
    ...
    ValueError: unknown block format 'mxfp5'; choose one of mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, mxint8, nvfp4
    """
    if isinstance(fmt, BlockFormat):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"a block format is a name such as 'mxfp4', got {type(fmt).__name__}")
    key = fmt.strip().lower().replace("-", "_")
    key = _BLOCK_ALIASES.get(key, key)
    if key not in BLOCK_FORMATS:
        raise ValueError(f"unknown block format {fmt!r}; choose one of {', '.join(BLOCK_FORMATS)}")
    return BLOCK_FORMATS[key]



#: Largest block size (each axis) accepted: far beyond any real format (32, 16, 16x16) while
#: keeping block offsets and the exact integer dot-product limbs well inside int64.
_MAX_BLOCK = 1 << 31


# ---- the container --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class BlockArray:
    """A block-scaled array: element codes, scale codes, and how they are laid out.

    Attributes:
        codes: uint8 element codes, the shape of the original array (right-aligned: FP4 codes
            use the low 4 bits, FP6 the low 6; MXINT8 stores the two's complement byte and
            also accepts int8 values -128..127).
        scales: uint8 scale codes (E8M0 for MX, UE4M3 0..127 for NVFP4), the original shape
            with the block axes divided by the block size (rounded up).
        format: the :class:`BlockFormat` (or its name).
        axis: the block axis (a tuple of two axes for 2-D tiles); stored non-negative.
        block_size: elements per block along ``axis`` (a pair for 2-D tiles), 1 .. 2**31.
        global_scale: NVFP4 only: the float32 per-tensor *decode* scale (TransformerEngine:
            ``1/S_enc`` with ``S_enc = 2688/amax``; torchao: ``amax/2688``); None for MX.
            Derived from ``global_amax`` when not given.
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
        block = _block_tuple(self.block_size)
        axes = _axes_tuple(self.axis, codes.ndim, block)
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
        """The per-tensor fields: NVFP4 needs valid ones (deriving a missing decode scale), MX none."""
        if not self.format.is_nvfp4:
            if (self.global_scale, self.global_amax, self.variant) != (None, None, None):
                raise ValueError("global_scale, global_amax and variant describe NVFP4 tensors; "
                                 f"a {self.format.name} BlockArray has none")
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
            scale = _nvfp4_decode_scale(amax, variant)
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

    def dequantize(self, dtype: Any = np.float32) -> np.ndarray:
        """The represented values (see :func:`dequantize`)."""
        return dequantize(self, dtype=dtype)

    def pack(self) -> np.ndarray:
        """The element codes densely packed along the last axis (see :func:`pack_codes`).

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
    """Integer codes as uint8, refusing any that do not fit the format (no silent wrap)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"BlockArray.{what} must hold integer codes, got {arr.dtype}")
    if what == "codes":
        limit, name = 1 << bf.bits, f"{bf.name} elements"
        lowest = -128 if bf.is_int else 0  # MXINT8: an int8 value is its two's complement byte
    else:
        limit, name = (128, "UE4M3 scales") if bf.is_nvfp4 else (256, "E8M0 scales")
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


# ---- layout: block sizes, axes ---------------------------------------------------------------
def _block_tuple(block_size: Any) -> tuple[int, ...]:
    """A block size (or a pair, for 2-D tiles) as validated ints in 1 .. 2**31."""
    block = tuple(block_size) if isinstance(block_size, (tuple, list)) else (block_size,)
    if not 1 <= len(block) <= 2:
        raise ValueError(f"block_size must be an int or a pair of ints, got {block_size!r}")
    for b in block:
        if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, np.integer)):
            raise ValueError(f"block size must be a positive integer, got {b!r}")
        if not 1 <= b <= _MAX_BLOCK:
            raise ValueError(f"block size must be an integer from 1 to 2**31, got {b!r}")
    return tuple(int(b) for b in block)


def _axes_tuple(axis: Any, ndim: int, block: tuple[int, ...]) -> tuple[int, ...]:
    """Validated non-negative block axes, one per block dimension."""
    if axis is None:
        axis = -1 if len(block) == 1 else (-2, -1)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(axes) != len(block):
        raise ValueError(
            f"{len(block)}-D blocks {block} need {len(block)} axes, got axis={axis!r}"
        )
    if ndim < len(axes):
        raise ValueError(f"a {ndim}-D array has no room for {len(axes)}-D blocks")
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"axis must be an integer, got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a {ndim}-D array")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"the two tile axes must differ, got {axis!r}")
    return tuple(out)


def _normalize_layout(
    ndim: int, axis: Any, block_size: Any, bf: BlockFormat
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validated (axes, block shape): one axis for 1-D blocks, two for 2-D tiles."""
    block = _block_tuple(bf.block_size if block_size is None else block_size)
    return _axes_tuple(axis, ndim, block), block


# ---- blocking: block axes last, cut into regions of equal tiles -------------------------------
def _moved(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x with the block axes moved last (a view; the identity for the default layout)."""
    lead_axes = [a for a in range(x.ndim) if a not in axes]
    return np.transpose(x, lead_axes + list(axes))


def _unmoved(xm: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`_moved`, as a C-contiguous array."""
    lead_axes = [a for a in range(xm.ndim) if a not in axes]
    return np.ascontiguousarray(np.transpose(xm, np.argsort(lead_axes + list(axes))))


@dataclass(frozen=True)
class _Region:
    """Part of the block axes holding tiles of one shape: the full blocks, or the shorter
    last block of an axis whose length is not a multiple of the block size."""

    elems: tuple[slice, ...]  # along the block axes, in elements
    blocks: tuple[slice, ...]  # the same part in blocks
    tile: tuple[int, ...]  # the tile shape (a full block, or the real part of the last one)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.elems)

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.blocks)


def _regions(lengths: tuple[int, ...], block: tuple[int, ...]) -> list[_Region]:
    """The block axes cut into at most 2 (1-D) or 4 (2-D tiles) regions of equal tiles.

    A short last block is its own region with its real length, so padding is never
    allocated: a block size of 10**9 for three values costs three values.
    """
    per_axis = []
    for n, b in zip(lengths, block):
        full = n // b
        parts = [(slice(0, full * b), slice(0, full), b)] if full else []
        if n > full * b:
            parts.append((slice(full * b, n), slice(full, full + 1), n - full * b))
        per_axis.append(parts)
    return [_Region(tuple(p[0] for p in combo), tuple(p[1] for p in combo),
                    tuple(p[2] for p in combo)) for combo in itertools.product(*per_axis)]


def _nblocks(lengths: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-(-n // b) for n, b in zip(lengths, block))


def _tiles_as_rows(sub: np.ndarray, tile: tuple[int, ...]) -> np.ndarray:
    """(lead..., n0*t0[, n1*t1]) -> (tiles, elements per tile), tiles in row-major order of
    (lead..., n0[, n1]): a view for 1-D blocks whenever numpy can make one."""
    if len(tile) == 1:
        return sub.reshape(-1, tile[0])
    lead = sub.shape[:-2]
    t = sub.reshape(*lead, sub.shape[-2] // tile[0], tile[0], sub.shape[-1] // tile[1], tile[1])
    return np.swapaxes(t, -3, -2).reshape(-1, tile[0] * tile[1])


def _rows_as_tiles(rows: np.ndarray, shape: tuple[int, ...], tile: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`_tiles_as_rows`: rows back to a region of the given shape."""
    if len(tile) == 1:
        return rows.reshape(shape)
    lead = shape[:-2]
    t = rows.reshape(*lead, shape[-2] // tile[0], shape[-1] // tile[1], tile[0], tile[1])
    return np.swapaxes(t, -3, -2).reshape(shape)


def _region_rows(xm: np.ndarray, r: _Region) -> np.ndarray:
    """The tiles of region r of the moved array as rows (tiles, elements per tile)."""
    return _tiles_as_rows(xm[(Ellipsis,) + r.elems], r.tile)


def _output_rows(out_m: np.ndarray, r: _Region) -> tuple[np.ndarray, bool]:
    """Rows to write region r's results into: a view of out_m when numpy can make one (the
    default layout), else scratch rows that :func:`_store_rows` copies back."""
    sub = out_m[(Ellipsis,) + r.elems]
    k = int(np.prod(r.tile))
    if len(r.tile) == 1:
        rows = sub.reshape(-1, k)
        if np.may_share_memory(rows, out_m):
            return rows, False
    return np.empty((sub.size // k, k), out_m.dtype), True


def _store_rows(out_m: np.ndarray, r: _Region, rows: np.ndarray, scratch: bool) -> None:
    if scratch:
        lead = out_m.shape[: out_m.ndim - len(r.tile)]
        out_m[(Ellipsis,) + r.elems] = _rows_as_tiles(rows, lead + r.sizes, r.tile)


#: Elements per chunk of the vectorised pipeline: 256 Ki float32 (1 MiB) keeps every
#: intermediate array of a chunk in cache; the passes then run 20-35% faster than over the
#: whole array at once. (A loop over chunks of many blocks, never over single blocks.)
_CHUNK_ELEMENTS = 1 << 18


def _row_chunks(rows: int, block_elements: int) -> list[slice]:
    """Slices of block rows, each about _CHUNK_ELEMENTS elements."""
    step = max(1, _CHUNK_ELEMENTS // max(block_elements, 1))
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)] or [slice(0, 0)]


def _canonical_rounding(rounding: Any) -> str:
    """The codec's canonical name of an element rounding mode (checked even for empty input)."""
    if not isinstance(rounding, str) or rounding.lower() not in ROUNDING_MODES:
        raise ValueError(
            f"unknown rounding {rounding!r}; choose one of {', '.join(sorted(set(ROUNDING_MODES)))}"
        )
    return ROUNDING_MODES[rounding.lower()]


def _generator(rounding: str, rng: Any) -> Any:
    """One Generator for all chunks, so chunked stochastic rounding draws fresh bits."""
    if rounding == "stochastic":
        return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return rng


# ---- input --------------------------------------------------------------------------------
def _as_float_array(x: Any) -> np.ndarray:
    """x as float32 (float16/float32 and ml_dtypes' narrow floats, all widened exactly) or
    float64 (float64, integers, Python numbers), in native byte order.

    Integers beyond 2**53 become float64 rounded *to odd*, so the single later rounding into
    an element format (at most 24 bits) equals the rounding of the integer itself.
    """
    arr = np.asarray(x)
    if not arr.dtype.isnative:  # the scale arithmetic reads the bit patterns in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    kind = arr.dtype.kind
    if kind == "f":
        if arr.dtype.itemsize > 8:
            raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
        return arr if arr.dtype.itemsize >= 4 else arr.astype(np.float32)
    if kind in "iu":
        return integers_to_float64(arr)
    if kind == "V" and arr.dtype.itemsize <= 2 and arr.dtype.names is None:
        try:  # ml_dtypes' bfloat16, float8_*, ... widen to float32 exactly
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"cannot quantize {arr.dtype} input: pass real numbers (a float or integer array)")


def _float32_for_nvfp4(arr: np.ndarray) -> np.ndarray:
    """NVFP4's recipes compute in float32: float64 input is rounded to float32 (RNE), and a
    finite value that would become Inf is refused rather than quantized as if it were Inf."""
    if arr.dtype == np.float64:
        too_big = np.isfinite(arr) & (np.abs(arr) >= 2.0**128 - 2.0**103)  # RNE -> Inf from here
        if too_big.any():
            example = float(arr[too_big].reshape(-1)[0])
            raise ValueError(
                f"nvfp4 computes in float32, and {int(too_big.sum())} finite input value(s) such "
                f"as {example:g} lie beyond float32's range (max 3.4028235e+38): scale the input "
                "down (or clip it) first"
            )
    with np.errstate(under="ignore"):
        return arr.astype(np.float32, copy=False)


_BITS = {np.dtype(np.float32): (np.uint32, 23, 127), np.dtype(np.float64): (np.uint64, 52, 1023)}
_F64_INF_BITS = np.uint64(0x7FF0000000000000)


# ---- MX scales ----------------------------------------------------------------------------------
def _amax_bits(xb: np.ndarray) -> np.ndarray:
    """Per-block max |x| as an unsigned bit pattern (one integer reduction; NaN patterns win)."""
    utype, mbits, _ = _BITS[xb.dtype]
    sign_off = utype(np.iinfo(utype).max >> 1)
    mag = np.bitwise_and(xb.view(utype), sign_off)
    return mag.max(axis=-1) if mag.shape[-1] else np.zeros(mag.shape[:-1], utype)


def _as_float64_bits(amax_bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Per-block amax patterns as float64 patterns (exact: float32 subnormals become normal),
    so every scale rule sees the same value whatever the input precision."""
    if np.dtype(dtype) == np.float64:
        return amax_bits
    with np.errstate(invalid="ignore"):  # a signalling NaN pattern stays a NaN
        return amax_bits.view(np.float32).astype(np.float64).view(np.uint64)


def _ceil_log2_bits(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """ceil(log2(v)) for positive finite bit patterns v (int64); subnormals give <= -bias
    except that the binade just below the smallest normal rounds up to 1 - bias when v exceeds
    half of it (fp32: values above 2**-127 give -126, the NVIDIA rule)."""
    utype, mbits, bias = _BITS[np.dtype(dtype)]
    efield = (bits >> utype(mbits)).astype(np.int64)
    mant = bits & utype((1 << mbits) - 1)
    normal_up = (mant != 0).astype(np.int64)
    sub_up = (mant > utype(1 << (mbits - 1))).astype(np.int64)
    return np.where(efield == 0, sub_up - bias, efield - bias + normal_up)


def _rn32_product(a: np.ndarray, c: float) -> np.ndarray:
    """float32 (RNE) of the exact product of finite float64 values a and a float32 value c.

    a is split into its top 29 and low 24 significand bits, so both partial products fit
    float64's 53 bits exactly; their sum rounded to odd and then to float32 is the correct
    rounding of the exact product (Boldo and Melquiond). For float32 a this is exactly the
    float32 multiplication ``fp32(a * c)``.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    head = (a.view(np.uint64) & ~np.uint64((1 << 24) - 1)).view(np.float64)
    with np.errstate(over="ignore"):  # products beyond float32 round to Inf, as intended
        return _round_to_odd_sum(head * c, (a - head) * c).astype(np.float32)


def _scale_exponent(bits: np.ndarray, bf: BlockFormat, scale_rounding: str) -> np.ndarray:
    """log2 of the unclamped scale plus emax, per block, from finite float64 amax patterns."""
    if scale_rounding == "floor":
        # X = 2**(floor(log2(amax)) - emax): the biased exponent field is floor(log2) + bias.
        return (bits >> np.uint64(52)).astype(np.int64) - 1023
    if scale_rounding == "ceil":
        return _ceil_log2_bits(bits, np.float64)
    if scale_rounding == "even":
        # torchao EVEN: round amax to the element's precision (add half an element ulp to the
        # bit pattern, a carry rolls into the exponent), then take floor(log2).
        half = np.uint64(1 << (52 - bf.mantissa_bits - 1))
        return ((bits + half) >> np.uint64(52)).astype(np.int64) - 1023
    if scale_rounding == "rceil":
        # NVIDIA: round up to a power of two fp32(amax * fp32(1/max_elem)), the product
        # rounded once to float32 (what cuBLAS/TE/torchao compute for float32 input).
        c = float(np.float32(1) / np.float32(bf.max_value))
        v = _rn32_product(bits.view(np.float64), c)
        return _ceil_log2_bits(v.view(np.uint32), np.float32) + bf.emax
    raise ValueError(
        f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
    )


def _mx_scale_codes(
    amax_bits: np.ndarray, dtype: np.dtype, bf: BlockFormat, scale_rounding: str, inf: str
) -> np.ndarray:
    """E8M0 scale code of each block from the bit pattern of its amax."""
    bits = _as_float64_bits(amax_bits, dtype)
    finite = np.minimum(bits, _F64_INF_BITS - np.uint64(1))  # keep the arithmetic finite
    e = _scale_exponent(finite, bf, scale_rounding)
    codes = np.clip(e - bf.emax + 127, 0, 254).astype(np.uint8)
    codes[bits == 0] = 0
    nonfinite = bits >= _F64_INF_BITS
    if nonfinite.any():
        codes[nonfinite] = 0xFE if inf == "saturate" else 0xFF
        codes[bits > _F64_INF_BITS] = 0xFF
    return codes


def _pow2_from_e8m0(codes: np.ndarray, dtype: np.dtype, negate: bool = False) -> np.ndarray:
    """2**(code - 127) (or its reciprocal) built from bits; NaN for 0xFF. Exact in float32,
    where 2**-127 is the subnormal 0x00400000."""
    c = codes.astype(np.int64)
    e = (127 - c) if negate else (c - 127)
    dtype = np.dtype(dtype)
    utype, mbits, bias = _BITS[dtype]
    biased = e + bias
    bits = np.where(biased >= 1, biased << mbits, 1 << (mbits - 1 + np.minimum(biased, 1)))
    quiet_nan = (((1 << (dtype.itemsize * 8 - 1 - mbits)) - 1) << mbits) | (1 << (mbits - 1))
    bits = np.where(c == 255, quiet_nan, bits)
    return bits.astype(utype).view(dtype)


# ---- element encoding -----------------------------------------------------------------------
#: Roundings that tell a tiny nonzero value from zero (up/down by its sign, odd always): for
#: them an element whose scaled value underflowed the working precision must stay nonzero.
_TINY_MATTERS = frozenset({"up", "down", "odd"})


def _restore_underflow(y: np.ndarray, x: np.ndarray) -> None:
    """Give elements whose scaled value underflowed to 0 the smallest subnormal back, signed.

    x * 2**-s underflows (float32: below 2**-149) only far below every element format's
    smallest step (>= 2**-17), where any nonzero magnitude rounds alike in every mode, so
    this equals rounding the exact quotient, in float32 and float64 alike.
    """
    lost = (y == 0) & (x != 0)
    if lost.any():
        y[lost] = np.copysign(np.finfo(y.dtype).smallest_subnormal, x[lost])


def _encode_elements(
    y: np.ndarray, bf: BlockFormat, rounding: str, rng: Any
) -> np.ndarray:
    """Element codes of already-scaled values y (RNE and saturation by default, per OCP)."""
    if bf.is_int:
        with np.errstate(invalid="ignore"):
            q = np.rint(y * y.dtype.type(64))  # exact scaling; rint is ties-to-even
            np.clip(q, -127, 127, out=q)  # symmetric: OCP clamps to +-max normal
            return q.astype(np.int8).view(np.uint8)
    nan = "zero" if not bf.element.has_nan else None
    return encode(y, bf.element, rounding=rounding, overflow="saturate", nan=nan, rng=rng)


def _nan_fill(bf: BlockFormat) -> int:
    """Element code written into a block whose scale is NaN."""
    if bf.element is not None and bf.element.has_nan:
        return int(bf.element.nan_code)
    return 0


# ---- quantize -------------------------------------------------------------------------------
def _quantize_mx_rows(
    rows: np.ndarray, bf: BlockFormat, scale_rounding: str, inf: str, rounding: str, rng: Any,
    out: np.ndarray,
) -> np.ndarray:
    """Scale codes of blocks laid out as rows (rows, k); their element codes go into out."""
    scales = _mx_scale_codes(_amax_bits(rows), rows.dtype, bf, scale_rounding, inf)
    nan_blocks = scales == 255
    inv = _pow2_from_e8m0(np.where(nan_blocks, 127, scales), rows.dtype, negate=True)
    with np.errstate(over="ignore", invalid="ignore"):
        y = rows * inv[:, None]  # exact down to the working precision's subnormals
    if rounding in _TINY_MATTERS:
        _restore_underflow(y, rows)
    out[...] = _encode_elements(y, bf, rounding, rng)
    if nan_blocks.any():
        out[nan_blocks] = _nan_fill(bf)
    return scales


def _quantize_mx(
    arr: np.ndarray, bf: BlockFormat, axes: tuple[int, ...], block: tuple[int, ...],
    scale_rounding: str, inf: str, rounding: str, rng: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """(codes, scales) in the input's layout, region by region, chunk by chunk."""
    xm = _moved(arr, axes)
    lead, lengths = xm.shape[: xm.ndim - len(block)], xm.shape[xm.ndim - len(block):]
    codes_m = np.empty(xm.shape, np.uint8)
    scales_m = np.empty(lead + _nblocks(lengths, block), np.uint8)
    rng = _generator(rounding, rng)
    for r in _regions(lengths, block):
        rows = _region_rows(xm, r)
        out, scratch = _output_rows(codes_m, r)
        scales = np.empty(rows.shape[0], np.uint8)
        for sl in _row_chunks(*rows.shape):
            scales[sl] = _quantize_mx_rows(rows[sl], bf, scale_rounding, inf, rounding, rng, out[sl])
        _store_rows(codes_m, r, out, scratch)
        scales_m[(Ellipsis,) + r.blocks] = scales.reshape(lead + r.counts)
    return _unmoved(codes_m, axes), _unmoved(scales_m, axes)


def quantize(
    x: Any,
    fmt: str | BlockFormat,
    *,
    axis: int | tuple[int, int] | None = None,
    block_size: int | tuple[int, int] | None = None,
    scale_rounding: str = "floor",
    rounding: str = "nearest_even",
    rng: int | np.random.Generator | None = None,
    inf: str = "nan",
    variant: str = "te",
    global_amax: float | None = None,
) -> BlockArray:
    """Quantize ``x`` into a block format.

    Args:
        x: real array of any rank >= 1 (float16, float32 and ml_dtypes floats are computed in
            float32, float64 and integers in float64, with the same codes for equal values;
            NVFP4 always computes in float32, as its recipes do). Never modified.
        fmt: ``mxfp8_e4m3``, ``mxfp8_e5m2``, ``mxfp6_e3m2``, ``mxfp6_e2m3``, ``mxfp4``,
            ``mxint8`` or ``nvfp4`` (case-insensitive).
        axis: the block axis (default -1); for 2-D tiles a pair (default ``(-2, -1)``).
        block_size: elements per block (default 32 for MX, 16 for NVFP4), or a pair such as
            ``(16, 16)`` for 2-D tiles (TransformerEngine's NVFP4 weight tiles); 1 .. 2**31.
        scale_rounding: MX scale rule: ``floor`` (OCP), ``rceil`` (NVIDIA), ``ceil`` or
            ``even`` (torchao). NVFP4 has its own rule (``variant``).
        rounding: element rounding, any mode of :func:`fpemu.encode` (default RNE; NVFP4
            gradients use ``"stochastic"`` with ``rng``). MXINT8 supports RNE only.
        rng: seed or ``np.random.Generator`` for stochastic rounding.
        inf: MX block containing +-Inf (and no NaN): ``"nan"`` gives scale 0xFF (the spec,
            torchao), ``"saturate"`` gives 0xFE with the Inf elements at +-max
            (TransformerEngine).
        variant: NVFP4 arithmetic: ``"te"`` (TransformerEngine, default) or ``"torchao"``.
        global_amax: NVFP4: use this tensor amax (a finite number > 0) instead of max |x|
            (a calibrated or delayed amax).

    Returns:
        a :class:`BlockArray`.

    >>> q = quantize([100.0, -37.0, 5.0] + [0.0] * 13 + [0.001, -0.0004] + [0.0] * 14, "nvfp4")
    >>> q.scales.tolist(), q.codes[:3].tolist(), q.codes[16:18].tolist()
    ([126, 2], [7, 12, 1], [7, 13])
    """
    bf = get_block_format(fmt)
    raw = np.asarray(x)
    arr = _as_float_array(raw)
    if arr.ndim == 0:
        raise ValueError("quantize needs an array of at least one dimension")
    axes, block = _normalize_layout(arr.ndim, axis, block_size, bf)
    rounding = _canonical_rounding(rounding)
    if inf not in ("nan", "saturate"):
        raise ValueError(f"inf must be 'nan' or 'saturate', got {inf!r}")
    if bf.is_nvfp4:
        if scale_rounding != "floor":
            raise ValueError("scale_rounding applies to MX formats; NVFP4 scales follow variant=")
        if inf != "nan":
            raise ValueError("inf= applies to MX formats; NVFP4 follows the variant's arithmetic")
        return _quantize_nvfp4(arr, bf, axes, block, rounding, rng, variant, global_amax)
    _check_mx_options(raw, arr, bf, scale_rounding, rounding, variant, global_amax)
    with np.errstate(over="ignore", invalid="ignore"):  # saturation and NaN blocks are handled
        codes, scales = _quantize_mx(arr, bf, axes, block, scale_rounding, inf, rounding, rng)
    return BlockArray(
        codes=codes,
        scales=scales,
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        scale_rounding=scale_rounding,
    )


def _check_mx_options(
    raw: np.ndarray, arr: np.ndarray, bf: BlockFormat, scale_rounding: str, rounding: str,
    variant: str, global_amax: Any,
) -> None:
    """Refuse MX options that do not apply or that fpemu cannot honour exactly."""
    if scale_rounding not in SCALE_ROUNDINGS:
        raise ValueError(
            f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
        )
    if global_amax is not None or variant != "te":
        raise ValueError("global_amax and variant apply to NVFP4 only")
    if bf.is_int and rounding != "nearest_even":
        raise ValueError("MXINT8 supports rounding='nearest_even' only")
    if scale_rounding == "rceil" and raw.dtype.kind in "iu" and arr.size:
        # rceil rounds amax * (1/max) to float32 from the exact amax; an integer beyond 2**53
        # has no exact float64 amax (its round-to-odd copy keeps floor/ceil/even exact only).
        if float(np.max(np.abs(arr))) >= 2.0**53:
            raise ValueError("scale_rounding='rceil' on integers beyond 2**53 in magnitude is not "
                             "computed exactly: convert the input to float64 first")


# ---- NVFP4 --------------------------------------------------------------------------------------
def _tensor_amax(rows: np.ndarray, bmax: np.ndarray) -> np.uint32:
    """max |x| (as a float32 pattern) over some block rows with NaNs ignored (CUDA's fmaxf
    reductions skip NaN), from the rows and their per-block magnitude maxima."""
    inf = np.uint32(0x7F800000)
    nan_blocks = bmax > inf
    if nan_blocks.any():
        part = np.bitwise_and(rows[nan_blocks].view(np.uint32), np.uint32(0x7FFFFFFF))
        bmax = np.concatenate([bmax[~nan_blocks], np.where(part > inf, 0, part).ravel()])
    return np.uint32(bmax.max(initial=np.uint32(0)))


def _te_s_enc(amax: np.float32) -> np.float32:
    """TransformerEngine's S_enc = fmin(2688 / amax, FLT_MAX); 1 when amax is 0 or S_enc is 0
    (amax = Inf)."""
    f32 = np.float32
    with np.errstate(divide="ignore", over="ignore"):
        s_enc = np.fmin(f32(2688.0) / amax, _FLT_MAX)
    return f32(1.0) if (amax == 0 or s_enc == 0) else f32(s_enc)


def _torchao_pts(amax: np.float32) -> np.float32:
    """torchao's per-tensor scale amax / 2688; 1 where that is 0 or not finite (torchao would
    divide by zero)."""
    with np.errstate(over="ignore", under="ignore"):
        pts = np.float32(amax / np.float32(2688.0))
    return pts if (pts != 0 and np.isfinite(pts)) else np.float32(1.0)


def _nvfp4_decode_scale(amax: np.float32, variant: str) -> np.float32:
    """The per-tensor decode scale a tensor of this amax is encoded with."""
    if variant == "te":
        return np.float32(np.float32(1.0) / _te_s_enc(amax))
    return _torchao_pts(amax)


def _te_amax_is_degenerate(amax: np.float32) -> bool:
    """Whether TransformerEngine's S_enc is not 2688 / amax (amax 0 or Inf, or so small that
    2688 / amax overflows and S_enc is clamped to FLT_MAX)."""
    with np.errstate(divide="ignore", over="ignore"):
        return bool(amax == 0 or not np.isfinite(amax) or not np.isfinite(np.float32(2688.0) / amax))


def _nvfp4_block_scales(
    bamax: np.ndarray, variant: str, amax: np.float32
) -> tuple[np.ndarray, np.ndarray]:
    """(UE4M3 scale codes, float32 multiplier for the elements) per block, from block amaxes."""
    f32 = np.float32
    ue4m3 = get_format("ue4m3")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if variant == "te":
            # Step 2: block scale = e4m3_rne(min(amax_b * (S_enc * (1/6)), 448)).
            s_enc = _te_s_enc(amax)
            scales = encode(np.minimum(bamax * f32(s_enc * f32(f32(1.0) / f32(6.0))), f32(448.0)), ue4m3)
            # Step 3: enc = min(1 / (fp32(scale) * (1 / S_enc)), FLT_MAX).
            s_dec = f32(f32(1.0) / s_enc)
            mult = np.minimum(f32(1.0) / (decode(scales, ue4m3, dtype=np.float32) * s_dec), _FLT_MAX)
        else:
            # torchao (per_tensor_amax_to_scale and _nvfp4_quantize, two-level path):
            # pts = amax / 2688; scale = e4m3(clamp((amax_b / 6) / pts, 2**-6, 448));
            # data * ((1 / pts) / scale), clamped to +-6 (by the saturating encode).
            pts = _torchao_pts(amax)
            scales = encode(np.clip((bamax / f32(6.0)) / pts, f32(2.0**-6), f32(448.0)), ue4m3)
            mult = (f32(1.0) / pts) / decode(scales, ue4m3, dtype=np.float32)
    return scales, mult


def _global_amax_argument(global_amax: Any) -> np.float32:
    """A caller's tensor amax: a finite number > 0 that float32 represents (an Inf, NaN, 0 or
    negative amax would silently give all-Inf, all-NaN or all-zero tensors)."""
    if np.ndim(global_amax) != 0 or isinstance(global_amax, (bool, np.bool_, str, bytes)):
        raise TypeError(f"global_amax must be a single number, got {global_amax!r}")
    try:
        value = float(global_amax)
    except (TypeError, ValueError):
        raise TypeError(f"global_amax must be a number, got {global_amax!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"global_amax must be a finite number > 0, got {value}")
    with np.errstate(over="ignore", under="ignore"):
        amax = np.float32(value)
    if not np.isfinite(amax) or amax == 0:
        raise ValueError(f"global_amax {value} is outside float32's range, in which NVFP4 "
                         "computes its scales")
    return amax


def _quantize_nvfp4(
    arr: np.ndarray,
    bf: BlockFormat,
    axes: tuple[int, ...],
    block: tuple[int, ...],
    rounding: str,
    rng: Any,
    variant: str,
    global_amax: Any,
) -> BlockArray:
    """NVFP4 two-level scaling in float32, TransformerEngine's or torchao's arithmetic."""
    if variant not in ("te", "torchao"):
        raise ValueError(f"variant must be 'te' or 'torchao', got {variant!r}")
    given = None if global_amax is None else _global_amax_argument(global_amax)
    xm = _moved(_float32_for_nvfp4(arr), axes)
    lead, lengths = xm.shape[: xm.ndim - len(block)], xm.shape[xm.ndim - len(block):]
    regions = _regions(lengths, block)
    rows = [_region_rows(xm, r) for r in regions]
    bmax = [_block_amax_bits(rr) for rr in rows]
    measured = max((_tensor_amax(rr, bm) for rr, bm in zip(rows, bmax)), default=np.uint32(0))
    amax = np.uint32(measured).view(np.float32) if given is None else given
    codes_m = np.empty(xm.shape, np.uint8)
    scales_m = np.empty(lead + _nblocks(lengths, block), np.uint8)
    rng = _generator(rounding, rng)
    for r, rr, bm in zip(regions, rows, bmax):
        out, scratch = _output_rows(codes_m, r)
        scales = _nvfp4_region(rr, bm.view(np.float32), variant, amax, rounding, rng, out, bf)
        _store_rows(codes_m, r, out, scratch)
        scales_m[(Ellipsis,) + r.blocks] = scales.reshape(lead + r.counts)
    return BlockArray(
        codes=_unmoved(codes_m, axes),
        scales=_unmoved(scales_m, axes),
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        global_scale=_nvfp4_decode_scale(amax, variant),
        global_amax=np.float32(amax),
        variant=variant,
    )


def _block_amax_bits(rows: np.ndarray) -> np.ndarray:
    """Per-block magnitude maxima of float32 rows as uint32 patterns, chunk by chunk."""
    bmax = np.empty(rows.shape[0], np.uint32)
    for sl in _row_chunks(*rows.shape):
        bmax[sl] = _amax_bits(rows[sl])
    return bmax


def _nvfp4_region(
    rows: np.ndarray, bamax: np.ndarray, variant: str, amax: np.float32, rounding: str,
    rng: Any, out: np.ndarray, bf: BlockFormat,
) -> np.ndarray:
    """Scale codes of one region's blocks (rows); the element codes go into out."""
    scales, mult = _nvfp4_block_scales(bamax, variant, amax)
    with np.errstate(over="ignore", invalid="ignore"):
        for sl in _row_chunks(*rows.shape):
            # Step 4: q = e2m1(clamp(x * enc, -6, 6)). The clamp is left to the saturating
            # encode: 6 is representable, so clamping before rounding and saturating after it
            # agree for every rounding mode (and NaN stays NaN either way).
            y = rows[sl] * mult[sl, None]
            out[sl] = encode(y, bf.element, rounding=rounding, overflow="saturate", nan="zero", rng=rng)
    nan_blocks = np.isnan(bamax)
    if nan_blocks.any():
        scales[nan_blocks] = get_format("ue4m3").nan_code
        out[nan_blocks] = 0
    return scales.astype(np.uint8)


# ---- dequantize -----------------------------------------------------------------------------
def _element_table(bf: BlockFormat, dtype: Any) -> np.ndarray:
    """Value of every element code (built by the codec; MXINT8: two's complement / 64)."""
    if bf.is_int:
        return np.arange(256, dtype=np.uint8).view(np.int8).astype(dtype) * np.dtype(dtype).type(2.0**-6)
    return decode(np.arange(1 << bf.element.bits), bf.element, dtype=dtype)


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
    if q.variant == "torchao" or _te_amax_is_degenerate(q.global_amax):
        return scale * q.global_scale, f32(1.0)
    post = f32(2.0**32) if q.global_amax >= f32(2.0**100) else f32(1.0)
    amax = f32(q.global_amax / post)
    return (scale * amax) * f32(1.0 / 2688.0), post


def _block_factors(q: BlockArray, work: np.dtype) -> tuple[np.ndarray, Any]:
    """Per-block factors in the moved layout (lead..., nblocks...) and the post factor."""
    s = _moved(q.scales, q.axes)
    if not q.format.is_nvfp4:
        return _pow2_from_e8m0(s, work), None
    factor, post = _nvfp4_factors(q, s)
    return factor, (None if post == 1 else post)


def dequantize(q: BlockArray, dtype: Any = np.float32) -> np.ndarray:
    """Values of a :class:`BlockArray`.

    MX: ``element * 2**(scale - 127)``, computed exactly in float32 (every product of an element
    value and a power of two in [2**-127, 2**127] is a float32 or overflows) and then cast to
    ``dtype``; float64 and wider compute in float64, where every MX value is exact. A value
    beyond the range of ``dtype`` reads +-Inf there (the correctly rounded result; ask for
    float64 to see it). A NaN scale makes its whole block NaN.

    NVFP4 follows the variant's arithmetic in float32: TransformerEngine multiplies each E2M1
    value by ``fp32(fp32(scale * amax) * fp32(1/2688))`` (evaluated without TE's intermediate
    overflow, see ``docs/mx.md``); torchao by ``fp32(global * scale)``.

    >>> dequantize(quantize([7.0, 3.0, 1.0, 0.4], "mxfp4")).tolist()
    [6.0, 3.0, 1.0, 0.5]
    """
    if not isinstance(q, BlockArray):
        raise TypeError(f"dequantize takes a BlockArray, got {type(q).__name__}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dequantize returns floats, got dtype {dtype}")
    bf = q.format
    wide = dtype.itemsize >= 8 and not bf.is_nvfp4
    work = np.dtype(np.float64) if wide else np.dtype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # Inf beyond the range; NaN blocks
        out = _dequantize_moved(q, work)
        return np.ascontiguousarray(_unmoved(out, q.axes), dtype=dtype)


def _dequantize_moved(q: BlockArray, work: np.dtype) -> np.ndarray:
    """The values in the moved layout (block axes last), region by region."""
    axes, block = q.axes, q.block_shape
    table = _element_table(q.format, work)
    factors, post = _block_factors(q, work)
    cm = _moved(q.codes, axes)
    lengths = cm.shape[cm.ndim - len(block):]
    out_m = np.empty(cm.shape, work)
    for r in _regions(lengths, block):
        rows = _region_rows(cm, r)
        factor = factors[(Ellipsis,) + r.blocks].reshape(-1)
        out, scratch = _output_rows(out_m, r)
        for sl in _row_chunks(*rows.shape):
            np.multiply(table.take(rows[sl]), factor[sl, None], out=out[sl])
            if post is not None:
                out[sl] *= post
        _store_rows(out_m, r, out, scratch)
    return out_m


# ---- packing ------------------------------------------------------------------------------------
def pack_codes(codes: Any, bits: int) -> np.ndarray:
    """Pack element codes densely along the last axis.

    * ``bits=4``: two codes per byte, element ``2i`` in the low nibble and ``2i+1`` in the high
      nibble (PyTorch's ``float4_e2m1fn_x2`` as fed to cuBLAS, torchao ``pack_uint4``);
    * ``bits=6``: four codes per three bytes as a little-endian bit stream (element ``j`` in bits
      ``6j .. 6j+5``; byte 0 = ``c0 | c1 << 6``, byte 1 = ``c1 >> 2 | c2 << 4``, byte 2 =
      ``c2 >> 4 | c3 << 2``), the layout of AMD rocRoller's ``getFp6`` (the FP4 order, extended);
    * ``bits=8``: the codes unchanged.

    The last axis is padded with zero codes to a multiple of 2 (FP4) or 4 (FP6).

    >>> pack_codes([0x1, 0x2, 0xF], 4).tolist()
    [33, 15]
    >>> pack_codes([1, 2, 3, 63], 6).tolist()
    [129, 48, 252]
    """
    c = np.asarray(codes)
    if c.dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got {c.dtype}")
    if c.ndim == 0:
        c = c.reshape(1)
    _check_bits(bits)
    if c.size and (int(c.min()) < 0 or int(c.max()) >= 1 << bits):
        raise ValueError(f"codes do not fit in {bits} bits")
    c = c.astype(np.uint8)
    if bits == 8:
        return c.copy()
    group = 2 if bits == 4 else 4
    pad = (-c.shape[-1]) % group
    if pad:
        c = np.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, pad)])
    g = c.reshape(*c.shape[:-1], c.shape[-1] // group, group)
    if bits == 4:
        return (g[..., 0] | (g[..., 1] << 4)).astype(np.uint8)
    a, b, d, e = (g[..., i] for i in range(4))
    out = np.stack([a | (b << 6), (b >> 2) | (d << 4), (d >> 4) | (e << 2)], axis=-1)
    return out.reshape(*c.shape[:-1], 3 * g.shape[-2]).astype(np.uint8)


def unpack_codes(packed: Any, bits: int, length: int | None = None) -> np.ndarray:
    """Inverse of :func:`pack_codes`: codes along the last axis (``length`` of them, default
    all that the bytes hold).

    >>> unpack_codes([33, 15], 4, 3).tolist()
    [1, 2, 15]
    >>> unpack_codes([129, 48, 252], 6).tolist()
    [1, 2, 3, 63]
    """
    p = np.asarray(packed)
    if p.dtype.kind not in "iu" or (p.size and (int(p.min()) < 0 or int(p.max()) > 255)):
        raise ValueError("packed data must be bytes (integers 0..255)")
    p = np.atleast_1d(p).astype(np.uint8)
    _check_bits(bits)
    if bits == 8:
        out = p.copy()
    elif bits == 4:
        out = np.stack([p & 0xF, p >> 4], axis=-1).reshape(*p.shape[:-1], 2 * p.shape[-1])
    elif bits == 6:
        if p.shape[-1] % 3:
            raise ValueError(f"packed FP6 data has {p.shape[-1]} bytes, not a multiple of 3")
        t = p.reshape(*p.shape[:-1], p.shape[-1] // 3, 3)
        b0, b1, b2 = t[..., 0], t[..., 1], t[..., 2]
        out = np.stack(
            [b0 & 0x3F, (b0 >> 6) | ((b1 & 0xF) << 2), (b1 >> 4) | ((b2 & 0x3) << 4), b2 >> 2],
            axis=-1,
        ).reshape(*p.shape[:-1], 4 * t.shape[-2])
    if length is not None:
        if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)):
            raise ValueError(f"length must be a non-negative integer, got {length!r}")
        if not 0 <= length <= out.shape[-1]:
            raise ValueError(f"length {length} is not between 0 and the {out.shape[-1]} codes "
                             "the bytes hold")
        out = out[..., :length]
    return np.ascontiguousarray(out.astype(np.uint8))


def unpack(packed: Any, fmt: str | BlockFormat, length: int | None = None) -> np.ndarray:
    """Element codes of a block format from :meth:`BlockArray.pack` output.

    >>> q = quantize([1.0, 2.0, 3.0], "mxfp4")
    >>> unpack(q.pack(), "mxfp4", 3).tolist() == q.codes.tolist()
    True
    """
    return unpack_codes(packed, get_block_format(fmt).bits, length)


def _check_bits(bits: Any) -> None:
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)) \
            or bits not in (4, 6, 8):
        raise ValueError(f"bits must be 4, 6 or 8, got {bits!r}")


# ---- dot products -------------------------------------------------------------------------------
def _int_table(bf: BlockFormat) -> tuple[np.ndarray, np.ndarray]:
    """(element value * 2**int_shift as int64, is-finite) for every code."""
    if bf.is_int:
        codes = np.arange(256, dtype=np.uint8)
        return codes.view(np.int8).astype(np.int64), np.ones(256, bool)
    v = decode(np.arange(1 << bf.element.bits), bf.element)
    finite = np.isfinite(v)
    ints = np.where(finite, np.ldexp(np.where(finite, v, 0.0), bf.int_shift), 0.0)
    return ints.astype(np.int64), finite


def _k_scales(q: BlockArray, k_axis: int) -> np.ndarray:
    """Scale codes (int64) with one entry per (row, K-block): a 2-D tile's scale is taken
    for each of its rows (by index, so the cost follows the rows, not the tile size)."""
    axes, block = q.axes, q.block_shape
    if len(axes) == 1:
        if axes[0] != k_axis:
            raise ValueError(
                f"operand must be blocked along its K axis ({k_axis}), got axis={axes[0]}"
            )
        return q.scales.astype(np.int64)
    other = 1 - k_axis
    rows = np.arange(q.shape[other]) // block[axes.index(other)]
    return q.scales.take(rows, axis=other).astype(np.int64)


def _k_block(q: BlockArray, k_axis: int) -> int:
    return q.block_shape[q.axes.index(k_axis)] if k_axis in q.axes else -1


#: K elements per exact partial sum: products below 2**48, so 2**14 of them stay below 2**62.
_K_PART = 1 << 14


def _exact_sums_odd(ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """sum_k ia[m, k] * ib[k, n], exact, as float64 rounded to odd.

    ia and ib are integers below 2**32 in magnitude. ia is split into 16-bit halves so every
    product is below 2**48; K is summed 2**14 at a time so no int64 sum overflows, and the
    parts are carried into three limbs (top * 2**48 + mid * 2**16 + low) that hold any K up to
    2**31. Rounding to odd at 53 bits followed by one rounding to float32 equals a single
    rounding of the exact sum (Boldo and Melquiond), so no double rounding creeps in.
    """
    m, n = ia.shape[0], ib.shape[1]
    top, mid, low = (np.zeros((m, n), np.int64) for _ in range(3))
    for s in range(0, max(ia.shape[1], 1), _K_PART):
        a, b = ia[:, s : s + _K_PART], ib[s : s + _K_PART]
        hi, lo = (a >> 16) @ b, (a & 0xFFFF) @ b  # the part's sum is hi * 2**16 + lo
        hi += lo >> 16  # carry so that 0 <= lo < 2**16 (arithmetic shift keeps the sign)
        low += lo & 0xFFFF
        mid += hi & 0xFFFFFFFF
        top += hi >> 32
    mid += low >> 16
    top += mid >> 32
    rest = ((mid & 0xFFFFFFFF) << 16) | (low & 0xFFFF)  # below 2**48: exact in float64
    return _round_to_odd_sum(top.astype(np.float64) * 2.0**48, rest.astype(np.float64))


def _check_matmul(a: BlockArray, b: BlockArray) -> int:
    """The K block size shared by A (M, K) and B (K, N), after checking both operands."""
    for q in (a, b):
        if not isinstance(q, BlockArray):
            raise TypeError(f"matmul takes BlockArrays, got {type(q).__name__}")
    if a.format.is_nvfp4 != b.format.is_nvfp4:
        raise ValueError("cannot mix MX and NVFP4 operands")
    if a.codes.ndim != 2 or b.codes.ndim != 2:
        raise ValueError(f"matmul operands must be 2-D, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    bs = _k_block(a, 1)
    if bs < 1 or bs != _k_block(b, 0):
        raise ValueError(
            f"K block sizes differ or K is not blocked: A {a.block_size} on axis {a.axis}, "
            f"B {b.block_size} on axis {b.axis}"
        )
    return bs


class _Operand:
    """One matmul operand's integer elements and per-(row, K-block) scales.

    ``ints(ks)``: element values * 2**int_shift (times the UE4M3 scale * 2**9 for NVFP4) of
    the K slice ks, ``bad(ks)``: whether a row holds a non-finite element there; ``exp`` the
    power of two of each block's scale (E8M0) or -9 (NVFP4, whose scales are folded into the
    integers), ``nan_scale`` where the scale is NaN.
    """

    def __init__(self, q: BlockArray, k_axis: int) -> None:
        self.q, self.k_axis = q, k_axis
        self.table, self.finite = _int_table(q.format)
        s = _k_scales(q, k_axis)
        if k_axis == 0:
            s = s.T  # (N, nb): rows of B's transpose
        self.scales = s
        if q.format.is_nvfp4:
            self.nan_scale = s == 0x7F
            ue4m3 = np.ldexp(decode(np.arange(128), "ue4m3"), 9)  # integers times 2**-9
            self.fold = np.where(self.nan_scale, 0, ue4m3[np.minimum(s, 0x7E)]).astype(np.int64)
            self.exp = np.full(s.shape, -9, np.int64)
        else:
            self.nan_scale = s == 255
            self.fold = None
            self.exp = s - 127

    def codes(self, ks: slice) -> np.ndarray:
        """(rows, k) element codes of the K slice ks as indices."""
        codes = self.q.codes[:, ks] if self.k_axis == 1 else self.q.codes[ks, :].T
        return codes.astype(np.intp)

    def ints(self, j: int, ks: slice) -> tuple[np.ndarray, np.ndarray]:
        """(rows, k) integers of K-block j and whether each row is non-finite there."""
        c = self.codes(ks)
        ints = self.table[c]
        if self.fold is not None:
            ints = ints * self.fold[:, j, None]
        bad = ~self.finite[c].all(axis=1) | self.nan_scale[:, j]
        return ints, bad

    def values(self, j: int, ks: slice) -> np.ndarray:
        """(rows, k) float64 values of MX K-block j (exact; NaN rows where the scale is)."""
        v = _element_table(self.q.format, np.float64)[self.codes(ks)]
        return v * _pow2_from_e8m0(self.scales[:, j], np.float64)[:, None]


def matmul(a: BlockArray, b: BlockArray) -> np.ndarray:
    """C = A @ B for block-scaled A (M, K) blocked along K and B (K, N) blocked along K.

    The OCP Dot/DotGeneral model: for every K-block, the sum of the element products is formed
    *exactly* (integer arithmetic on the scaled significands), multiplied by both scales and
    rounded once to float32; the per-block results are then added in float32 in block order
    (block 0 first). NVFP4: the two UE4M3 block scales are folded into the exact integer sum;
    the result is finally multiplied by ``fp32(global_scale_a * global_scale_b)`` in float32
    (rounded exactly instead where that product leaves float32's normal range). Blocks holding
    NaN/Inf (scale or element) are computed with float64 arithmetic instead so they propagate
    NaN/Inf as IEEE arithmetic would.

    >>> A = quantize(np.ones((2, 32)), "mxfp8_e4m3")
    >>> B = quantize(np.full((32, 3), 0.5), "mxfp8_e4m3", axis=0)
    >>> matmul(A, B).tolist()
    [[16.0, 16.0, 16.0], [16.0, 16.0, 16.0]]
    """
    bs = _check_matmul(a, b)
    (m, k), n = a.shape, b.shape[1]
    opa, opb = _Operand(a, 1), _Operand(b, 0)
    shift = a.format.int_shift + b.format.int_shift
    acc = np.zeros((m, n), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(-(-k // bs)):
            ks = slice(j * bs, min((j + 1) * bs, k))
            ia, bad_a = opa.ints(j, ks)
            ib, bad_b = opb.ints(j, ks)
            exact = _exact_sums_odd(ia, ib.T)
            e = opa.exp[:, j, None] + opb.exp[None, :, j] - shift
            block = np.ldexp(exact, e.astype(np.int32)).astype(np.float32)
            special = bad_a[:, None] | bad_b[None, :]
            if special.any():
                block = np.where(special, _special_block(opa, opb, j, ks), block)
            acc = acc + block
        if a.format.is_nvfp4:
            acc = _apply_global_scales(acc, a.global_scale, b.global_scale)
    return acc


def _special_block(opa: _Operand, opb: _Operand, j: int, ks: slice) -> np.ndarray:
    """float32 of K-block j's product in float64 (only read where a NaN/Inf takes part, so
    the result is NaN or +-Inf there whatever the rounding of the finite terms)."""
    if opa.q.format.is_nvfp4:  # E2M1 has no Inf: only a NaN scale makes a block special
        return np.full((opa.q.shape[0], opb.q.shape[1]), np.nan, np.float32)
    return (opa.values(j, ks) @ opb.values(j, ks).T).astype(np.float32)


def _apply_global_scales(acc: np.ndarray, ga: np.float32, gb: np.float32) -> np.ndarray:
    """acc * fp32(ga * gb), as a GEMM's float32 alpha does; where that alpha overflows or is
    subnormal (it would turn finite results into Inf or lose bits), acc * ga * gb rounded once."""
    alpha = np.float32(ga) * np.float32(gb)
    if np.isfinite(alpha) and alpha >= np.finfo(np.float32).tiny:
        return acc * alpha
    p = acc.astype(np.float64) * float(ga)  # 24 x 24 bits: exact
    finite = np.isfinite(p)
    out = _rn32_product(np.where(finite, p, 0.0), float(gb))
    out[~finite] = (p[~finite] * float(gb)).astype(np.float32)
    return out


def dot(a: BlockArray, b: BlockArray) -> np.float32:
    """The OCP Dot of two 1-D block arrays (see :func:`matmul` for the arithmetic).

    >>> x = quantize([1.0, 2.0, 3.0], "mxfp4"); y = quantize([4.0, -1.0, 0.5], "mxfp4")
    >>> float(dot(x, y))
    3.5
    """
    for q in (a, b):
        if not isinstance(q, BlockArray):
            raise TypeError(f"dot takes BlockArrays, got {type(q).__name__}")
        if q.codes.ndim != 1:
            raise ValueError(f"dot takes 1-D block arrays, got shape {q.shape}")
    if a.shape != b.shape:
        raise ValueError(f"dot needs equal lengths, got {a.shape[0]} and {b.shape[0]}")
    return np.float32(matmul(_as_row(a), _as_column(b))[0, 0])


def _as_row(q: BlockArray) -> BlockArray:
    return BlockArray(q.codes[None, :], q.scales[None, :], q.format, 1, q.block_size,
                      q.global_scale, q.global_amax, q.variant, q.scale_rounding)


def _as_column(q: BlockArray) -> BlockArray:
    return BlockArray(q.codes[:, None], q.scales[:, None], q.format, 0, q.block_size,
                      q.global_scale, q.global_amax, q.variant, q.scale_rounding)


# ---- command line -------------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"


def _read_values(text: str) -> np.ndarray:
    """Real numbers (flattened) from a file (.npy, or text with numbers separated by
    spaces/commas/newlines) or from a comma/space separated list on the command line.

    A file that cannot be read raises OSError naming it (exit status 1); contents that are not
    real numbers raise the ValueError/TypeError that quantize itself would, naming the file.
    """
    path = Path(text)
    if _exists(path) or path.suffix.lower() == ".npy":
        return _read_file(path)
    values = _parse_numbers(text)
    if values is None:
        if path.suffix.lower() in (".txt", ".csv", ".dat", ".npz"):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), text)
        raise ValueError(f"cannot read {text[:40]!r} as numbers or an existing file")
    return values


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # e.g. a list of values too long to be a file name
        return False


def _parse_numbers(text: str) -> np.ndarray | None:
    """float64 numbers from comma/space separated text; None if a token is not a number."""
    tokens = text.replace(",", " ").split()
    if not tokens:
        raise ValueError("no values given")
    try:
        return np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError:
        return None


def _read_file(path: Path) -> np.ndarray:
    """The numbers in a .npy or text file, flattened, as an array quantize accepts."""
    with open(path, "rb") as f:  # a missing file or a directory: OSError naming it
        is_npy = f.read(len(_NPY_MAGIC)) == _NPY_MAGIC
    if is_npy or path.suffix.lower() == ".npy":
        data = _load_npy(path)
    else:
        try:
            values = _parse_numbers(path.read_text())
        except UnicodeDecodeError:
            values = None
        except ValueError:
            raise ValueError(f"{path}: no values in the file") from None
        if values is None:
            raise ValueError(f"{path}: neither a .npy file nor text of numbers")
        data = values
    try:
        arr = _as_float_array(data).reshape(-1)  # the API's own check (complex, strings, ...)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None
    if not arr.size:
        raise ValueError(f"{path}: no values in the file")
    return arr


def _load_npy(path: Path) -> np.ndarray:
    """A .npy array; a truncated or corrupt file is an OSError naming it (it cannot be read),
    an array of Python objects a TypeError (no numbers to quantize)."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            header = {(1, 0): np.lib.format.read_array_header_1_0,
                      (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if header is not None and header(f)[2].hasobject:
                raise TypeError(f"{path}: holds Python objects, not numbers")
            f.seek(0)
            return np.asarray(np.load(f, allow_pickle=False))
        except (ValueError, EOFError) as exc:
            raise OSError(None, f"not a valid .npy file ({exc})", str(path)) from None


def describe(q: BlockArray, x: Any) -> str:
    """Text report: each block's scale, codes and quantization error (1-D arrays).

    >>> print(describe(quantize([7.0, 3.0, 0.4], "mxfp4"), np.array([7.0, 3.0, 0.4])))
    mxfp4: 3 values, 1 block of 32, E8M0 scales (floor)
    block 0: scale 0x7F = 2^0
      codes:  7 5 1
      values: 6 3 0.5
      errors: 1 0 -0.1
      max |error| 1, rms error 0.5802
    """
    if not isinstance(q, BlockArray):
        raise TypeError(f"describe takes a BlockArray, got {type(q).__name__}")
    if q.codes.ndim != 1:
        raise ValueError(f"describe explains 1-D block arrays, got shape {q.shape}")
    x = _as_float_array(x).astype(np.float64)
    if x.shape != q.shape:
        raise ValueError(f"describe needs the {q.shape[0]} quantized values, got shape {x.shape}")
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN inputs give NaN errors
        deq = q.dequantize(np.float64)
        lines = [_describe_head(q)]
        for j in range(q.scales.size):
            lines += _describe_block(q, x, deq, j)
    return "\n".join(lines)


def _describe_head(q: BlockArray) -> str:
    bf, nblocks = q.format, q.scales.size
    head = f"{bf.name}: {q.codes.size} values, {nblocks} block{'s' if nblocks != 1 else ''} of {q.block_size}, "
    if not bf.is_nvfp4:
        return head + f"E8M0 scales ({q.scale_rounding or 'unknown rule'})"
    amax = "unknown" if q.global_amax is None else f"{float(q.global_amax):.6g}"
    return head + (f"UE4M3 scales, {q.variant} arithmetic, global amax {amax}, "
                   f"global decode scale {float(q.global_scale):.6g}")


def _describe_block(q: BlockArray, x: np.ndarray, deq: np.ndarray, j: int) -> list[str]:
    bs, bf = q.block_shape[0], q.format
    sl = slice(j * bs, min((j + 1) * bs, x.size))
    code = int(q.scales[j])
    if bf.is_nvfp4:
        sval = f"{float(decode(code, bf.scale)):.6g}"
    else:
        sval = "NaN" if code == 255 else f"2^{code - 127}"
    width = 1 if bf.bits == 4 else 2
    err = x[sl] - deq[sl]
    lines = [
        f"block {j}: scale 0x{code:02X} = {sval}",
        "  codes:  " + " ".join(f"{int(c):0{width}X}" for c in q.codes[sl]),
        "  values: " + " ".join(f"{v:.6g}" for v in deq[sl]),
        "  errors: " + " ".join(f"{v:.4g}" for v in err),
    ]
    e = np.abs(err[np.isfinite(err)])
    if e.size:
        top = float(e.max())
        # rms scaled by the largest error: squaring errors near 1e300 must not overflow
        rms = top * float(np.sqrt(np.mean((e / top) ** 2))) if top > 0 else 0.0
        lines.append(f"  max |error| {top:.4g}, rms error {rms:.4g}")
    return lines


def cmd_mx(args: argparse.Namespace) -> int:
    """``fpemu mx``: quantize values into a block format and explain each block."""
    x = _read_values(args.values)
    q = quantize(
        x,
        args.format,
        block_size=args.block_size,
        scale_rounding=args.scale_rounding,
        inf=args.inf,
        variant=args.variant,
    )
    print(describe(q, x))
    return 0


def register_cli(subparsers: Any) -> None:
    """Add the ``mx`` subcommand to the ``fpemu`` command line."""
    p = subparsers.add_parser(
        "mx", help="quantize values into an MX/NVFP4 block format and show each block"
    )
    p.add_argument(
        "values",
        metavar="FILE_OR_VALUES",
        help="a .npy or text file, or numbers such as '7,3,1,0.4' (flattened to 1-D)",
    )
    p.add_argument("--format", "-f", default="mxfp8_e4m3", help=f"one of {', '.join(BLOCK_FORMATS)}")
    p.add_argument("--block-size", "-b", type=int, default=None,
                   help="elements per block (1 .. 2**31; default: the format's)")
    p.add_argument("--scale-rounding", "-s", default="floor", choices=SCALE_ROUNDINGS,
                   help="MX scale rule (default floor, the OCP rule)")
    p.add_argument("--inf", default="nan", choices=("nan", "saturate"),
                   help="scale of an MX block holding Inf: 0xFF (nan) or 0xFE (saturate)")
    p.add_argument("--variant", default="te", choices=("te", "torchao"), help="NVFP4 arithmetic")
    p.set_defaults(func=cmd_mx)
