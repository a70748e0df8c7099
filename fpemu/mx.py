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
division by a power-of-two scale is an exact multiplication. Nothing loops per block: the
whole pipeline runs on cache-sized chunks of many blocks at once.

Layout conventions (documented in ``docs/mx.md``):

* blocks run along ``axis``; a length that is not a multiple of the block size is padded with
  zeros inside the last block (padding never changes a block's amax, and it is dropped again);
* ``codes`` has the shape of the input; ``scales`` has the input's shape with the block axis
  (or axes, for 16x16 tiles) divided by the block size, rounded up;
* :meth:`BlockArray.pack` packs two FP4 codes per byte (element ``2i`` in the low nibble) and
  four FP6 codes per three bytes (a little-endian bit stream: element ``4i`` in bits 0-5 of
  byte ``3i``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .accumulator import _round_to_odd_sum
from .codec import decode, encode
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


# ---- the container --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class BlockArray:
    """A block-scaled array: element codes, scale codes, and how they are laid out.

    Attributes:
        codes: uint8 element codes, the shape of the original array (right-aligned: FP4 codes
            use the low 4 bits, FP6 the low 6; MXINT8 stores the two's complement byte).
        scales: uint8 scale codes (E8M0 for MX, UE4M3 for NVFP4), the original shape with the
            block axes divided by the block size (rounded up).
        format: the :class:`BlockFormat`.
        axis: the block axis (a tuple of two axes for 2-D tiles), non-negative.
        block_size: elements per block along ``axis`` (a pair for 2-D tiles).
        global_scale: NVFP4 only: the float32 per-tensor *decode* scale (TransformerEngine:
            ``1/S_enc`` with ``S_enc = 2688/amax``; torchao: ``amax/2688``); None for MX.
        global_amax: NVFP4 only: the float32 tensor amax the scales were computed from.
        variant: NVFP4 only: ``"te"`` or ``"torchao"`` (which dequantization arithmetic).
        scale_rounding: MX only: the rule the scales were computed with.
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
        # Checked so that a BlockArray rebuilt by hand (e.g. from unpack()) is consistent.
        for name in ("codes", "scales"):
            arr = np.asarray(getattr(self, name))
            if arr.dtype.kind not in "iu":
                raise TypeError(f"BlockArray.{name} must hold integer codes, got {arr.dtype}")
            object.__setattr__(self, name, arr.astype(np.uint8, copy=False))
        expect = list(self.codes.shape)
        if len(self.axes) != len(self.block_shape) or any(
            not 0 <= a < self.codes.ndim for a in self.axes
        ):
            raise ValueError(f"axis {self.axis} does not fit codes of shape {self.codes.shape}")
        for a, b in zip(self.axes, self.block_shape):
            expect[a] = -(-expect[a] // b)
        if tuple(expect) != self.scales.shape:
            raise ValueError(
                f"scales of shape {self.scales.shape} do not match codes of shape "
                f"{self.codes.shape} in blocks of {self.block_size} along axis {self.axis}"
            )

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


# ---- blocking: move the block axes last, pad, reshape ---------------------------------------
def _normalize_layout(
    ndim: int, axis: Any, block_size: Any, bf: BlockFormat
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validated (axes, block shape): one axis for 1-D blocks, two for 2-D tiles."""
    if block_size is None:
        block = (bf.block_size,)
    elif isinstance(block_size, (tuple, list)):
        block = tuple(block_size)
    else:
        block = (block_size,)
    if not 1 <= len(block) <= 2:
        raise ValueError(f"block_size must be an int or a pair of ints, got {block_size!r}")
    for b in block:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
            raise ValueError(f"block size must be a positive integer, got {b!r}")
    block = tuple(int(b) for b in block)
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
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"axis must be an integer, got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a {ndim}-D array")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"the two tile axes must differ, got {axis!r}")
    return tuple(out), block


def _to_blocks(x: np.ndarray, axes: tuple[int, ...], block: tuple[int, ...]) -> np.ndarray:
    """x rearranged to (..., nblocks..., block elements), zero-padded: a view when possible."""
    lead_axes = [a for a in range(x.ndim) if a not in axes]
    xm = np.transpose(x, lead_axes + list(axes))
    lengths = xm.shape[len(lead_axes):]
    pads = [(-n) % b for n, b in zip(lengths, block)]
    if any(pads):
        xm = np.pad(xm, [(0, 0)] * len(lead_axes) + [(0, p) for p in pads])
    lead = xm.shape[: len(lead_axes)]
    nblocks = [(n + p) // b for n, p, b in zip(lengths, pads, block)]
    if len(block) == 1:
        return xm.reshape(*lead, nblocks[0], block[0])
    t = xm.reshape(*lead, nblocks[0], block[0], nblocks[1], block[1])
    t = np.swapaxes(t, -3, -2)  # (..., nb0, nb1, b0, b1)
    return t.reshape(*lead, nblocks[0], nblocks[1], block[0] * block[1])


def _from_blocks(
    xb: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...], block: tuple[int, ...]
) -> np.ndarray:
    """Inverse of :func:`_to_blocks`: drop the padding and restore the original axis order."""
    lead_axes = [a for a in range(len(shape)) if a not in axes]
    lengths = [shape[a] for a in axes]
    lead = tuple(shape[a] for a in lead_axes)
    if len(block) == 1:
        xm = xb.reshape(*lead, xb.shape[-2] * xb.shape[-1])[..., : lengths[0]]
    else:
        nb0, nb1 = xb.shape[-3], xb.shape[-2]
        t = xb.reshape(*lead, nb0, nb1, block[0], block[1])
        t = np.swapaxes(t, -3, -2).reshape(*lead, nb0 * block[0], nb1 * block[1])
        xm = t[..., : lengths[0], : lengths[1]]
    order = lead_axes + list(axes)
    return np.transpose(xm, np.argsort(order))


def _scales_to_layout(s: np.ndarray, ndim: int, axes: tuple[int, ...]) -> np.ndarray:
    """Per-block array (..., nblocks...) back to the input's axis order."""
    lead_axes = [a for a in range(ndim) if a not in axes]
    return np.ascontiguousarray(np.transpose(s, np.argsort(lead_axes + list(axes))))


def _scales_from_layout(s: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    lead_axes = [a for a in range(s.ndim) if a not in axes]
    return np.transpose(s, lead_axes + list(axes))


#: Elements per chunk of the vectorised pipeline: 256 Ki float32 (1 MiB) keeps every
#: intermediate array of a chunk in cache; the passes then run 20-35% faster than over the
#: whole array at once. (A loop over chunks of many blocks, never over single blocks.)
_CHUNK_ELEMENTS = 1 << 18


def _row_chunks(rows: int, block_elements: int) -> list[slice]:
    """Slices of block rows, each about _CHUNK_ELEMENTS elements."""
    step = max(1, _CHUNK_ELEMENTS // max(block_elements, 1))
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)] or [slice(0, 0)]


def _as_rows(xb: np.ndarray) -> np.ndarray:
    """(..., nblocks, k) blocked array as (rows, k): a view for the default layout."""
    return xb.reshape(-1, xb.shape[-1])


def _generator(rounding: str, rng: Any) -> Any:
    """One Generator for all chunks, so chunked stochastic rounding draws fresh bits."""
    if str(rounding).lower() in ("stochastic", "sr"):
        return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return rng


# ---- input --------------------------------------------------------------------------------
def _as_float_array(x: Any) -> np.ndarray:
    """x as float32 (float16/float32 input) or float64 (float64, integer, Python numbers)."""
    arr = np.asarray(x)
    if not arr.dtype.isnative:  # the scale arithmetic reads the bit patterns in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if arr.dtype.kind == "f":
        if arr.dtype.itemsize > 8:
            raise TypeError(f"{arr.dtype} input is not supported: convert to float64 first")
        return arr if arr.dtype.itemsize >= 4 else arr.astype(np.float32)
    if arr.dtype.kind in "iu":
        return arr.astype(np.float64)
    raise TypeError(f"cannot quantize {arr.dtype} input: pass real numbers")


_BITS = {np.dtype(np.float32): (np.uint32, 23, 127), np.dtype(np.float64): (np.uint64, 52, 1023)}


# ---- MX scales ----------------------------------------------------------------------------------
def _amax_bits(xb: np.ndarray) -> np.ndarray:
    """Per-block max |x| as an unsigned bit pattern (one integer reduction; NaN patterns win)."""
    utype, mbits, _ = _BITS[xb.dtype]
    sign_off = utype(np.iinfo(utype).max >> 1)
    mag = np.bitwise_and(xb.view(utype), sign_off)
    return mag.max(axis=-1) if mag.shape[-1] else np.zeros(mag.shape[:-1], utype)


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


def _mx_scale_codes(
    amax_bits: np.ndarray, dtype: np.dtype, bf: BlockFormat, scale_rounding: str, inf: str
) -> np.ndarray:
    """E8M0 scale code of each block from the bit pattern of its amax."""
    utype, mbits, bias = _BITS[np.dtype(dtype)]
    inf_bits = utype(((1 << (np.dtype(utype).itemsize * 8 - 1 - mbits)) - 1) << mbits)
    finite = np.minimum(amax_bits, inf_bits - utype(1))  # keep the arithmetic finite
    if scale_rounding == "floor":
        # X = 2**(floor(log2(amax)) - emax): the biased exponent field is floor(log2) + bias.
        e = (finite >> utype(mbits)).astype(np.int64) - bias
    elif scale_rounding == "ceil":
        e = _ceil_log2_bits(finite, dtype)
    elif scale_rounding == "even":
        # torchao EVEN: round amax to the element's precision (add half an element ulp to the
        # bit pattern, a carry rolls into the exponent), then take floor(log2).
        half = utype(1 << (mbits - bf.mantissa_bits - 1))
        e = ((finite + half) >> utype(mbits)).astype(np.int64) - bias
    elif scale_rounding == "rceil":
        # NVIDIA: scale = round-up to a power of two of amax * (1/max_elem), all in the working
        # precision (float32 for float32 input, exactly as cuBLAS/TE/torchao compute it).
        ftype = np.dtype(dtype).type
        amax = finite.view(dtype)
        with np.errstate(over="ignore"):
            v = amax * ftype(ftype(1) / ftype(bf.max_value))
        e = _ceil_log2_bits(v.view(utype), dtype) + bf.emax  # emax is subtracted below
    else:
        raise ValueError(
            f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
        )
    codes = np.clip(e - bf.emax + 127, 0, 254).astype(np.uint8)
    codes[amax_bits == 0] = 0
    nonfinite = amax_bits >= inf_bits
    if nonfinite.any():
        isnan = amax_bits > inf_bits
        codes[nonfinite] = 0xFE if inf == "saturate" else 0xFF
        codes[isnan] = 0xFF
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
def _encode_elements(
    y: np.ndarray, bf: BlockFormat, rounding: str, rng: Any
) -> np.ndarray:
    """Element codes of already-scaled values y (RNE and saturation by default, per OCP)."""
    if bf.is_int:
        if str(rounding).lower() not in ("nearest_even", "rne"):
            raise ValueError("MXINT8 supports rounding='nearest_even' only")
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
    rows: np.ndarray, bf: BlockFormat, scale_rounding: str, inf: str, rounding: str, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Element and scale codes of blocks laid out as rows (rows, k)."""
    scales = _mx_scale_codes(_amax_bits(rows), rows.dtype, bf, scale_rounding, inf)
    inv = _pow2_from_e8m0(np.where(scales == 255, 127, scales), rows.dtype, negate=True)
    with np.errstate(over="ignore", invalid="ignore"):
        y = rows * inv[:, None]  # exact: a power of two (results below 2**-126 round to 0 anyway)
    codes = _encode_elements(y, bf, rounding, rng)
    nan_blocks = scales == 255
    if nan_blocks.any():
        codes[nan_blocks] = _nan_fill(bf)
    return codes, scales


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
        x: real array of any rank >= 1 (float16 and float32 are computed in float32, float64 and
            integers in float64; NVFP4 always computes in float32, as its recipes do).
        fmt: ``mxfp8_e4m3``, ``mxfp8_e5m2``, ``mxfp6_e3m2``, ``mxfp6_e2m3``, ``mxfp4``,
            ``mxint8`` or ``nvfp4`` (case-insensitive).
        axis: the block axis (default -1); for 2-D tiles a pair (default ``(-2, -1)``).
        block_size: elements per block (default 32 for MX, 16 for NVFP4), or a pair such as
            ``(16, 16)`` for 2-D tiles (TransformerEngine's NVFP4 weight tiles).
        scale_rounding: MX scale rule: ``floor`` (OCP), ``rceil`` (NVIDIA), ``ceil`` or
            ``even`` (torchao). NVFP4 has its own rule (``variant``).
        rounding: element rounding, any mode of :func:`fpemu.encode` (default RNE; NVFP4
            gradients use ``"stochastic"`` with ``rng``). MXINT8 supports RNE only.
        rng: seed or ``np.random.Generator`` for stochastic rounding.
        inf: MX block containing +-Inf (and no NaN): ``"nan"`` gives scale 0xFF (the spec,
            torchao), ``"saturate"`` gives 0xFE with the Inf elements at +-max
            (TransformerEngine).
        variant: NVFP4 arithmetic: ``"te"`` (TransformerEngine, default) or ``"torchao"``.
        global_amax: NVFP4: use this tensor amax instead of max |x| (a calibrated amax).

    Returns:
        a :class:`BlockArray`.

    >>> q = quantize([100.0, -37.0, 5.0] + [0.0] * 13 + [0.001, -0.0004] + [0.0] * 14, "nvfp4")
    >>> q.scales.tolist(), q.codes[:3].tolist(), q.codes[16:18].tolist()
    ([126, 2], [7, 12, 1], [7, 13])
    """
    bf = get_block_format(fmt)
    arr = _as_float_array(x)
    if arr.ndim == 0:
        raise ValueError("quantize needs an array of at least one dimension")
    axes, block = _normalize_layout(arr.ndim, axis, block_size, bf)
    if inf not in ("nan", "saturate"):
        raise ValueError(f"inf must be 'nan' or 'saturate', got {inf!r}")
    if bf.is_nvfp4:
        if scale_rounding != "floor":
            raise ValueError("scale_rounding applies to MX formats; NVFP4 scales follow variant=")
        if inf != "nan":
            raise ValueError("inf= applies to MX formats; NVFP4 follows the variant's arithmetic")
        return _quantize_nvfp4(arr, bf, axes, block, rounding, rng, variant, global_amax)
    if scale_rounding not in SCALE_ROUNDINGS:
        raise ValueError(
            f"unknown scale_rounding {scale_rounding!r}; choose one of {', '.join(SCALE_ROUNDINGS)}"
        )
    if global_amax is not None or variant != "te":
        raise ValueError("global_amax and variant apply to NVFP4 only")
    xb = _to_blocks(arr, axes, block)
    rows = _as_rows(xb)
    codes = np.empty(rows.shape, np.uint8)
    scales = np.empty(rows.shape[0], np.uint8)
    rng = _generator(rounding, rng)
    for sl in _row_chunks(rows.shape[0], rows.shape[1]):
        codes[sl], scales[sl] = _quantize_mx_rows(rows[sl], bf, scale_rounding, inf, rounding, rng)
    codes = codes.reshape(xb.shape)
    scales = scales.reshape(xb.shape[:-1])
    return BlockArray(
        codes=np.ascontiguousarray(_from_blocks(codes, arr.shape, axes, block)),
        scales=_scales_to_layout(scales, arr.ndim, axes),
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        scale_rounding=scale_rounding,
    )


def _tensor_amax(rows: np.ndarray, bmax: np.ndarray) -> np.float32:
    """max |x| over the tensor with NaNs ignored (CUDA's fmaxf reductions skip NaN), from the
    float32 block rows and their per-block magnitude maxima (NaN patterns exceed 0x7F800000)."""
    inf = np.uint32(0x7F800000)
    nan_blocks = bmax > inf
    if nan_blocks.any():
        part = np.bitwise_and(rows[nan_blocks].view(np.uint32), np.uint32(0x7FFFFFFF))
        bmax = np.concatenate([bmax[~nan_blocks], np.where(part > inf, 0, part).ravel()])
    return np.float32(bmax.max(initial=np.uint32(0)).view(np.float32))


def _quantize_nvfp4(
    arr: np.ndarray,
    bf: BlockFormat,
    axes: tuple[int, ...],
    block: tuple[int, ...],
    rounding: str,
    rng: Any,
    variant: str,
    global_amax: float | None,
) -> BlockArray:
    """NVFP4 two-level scaling in float32, TransformerEngine's or torchao's arithmetic."""
    if variant not in ("te", "torchao"):
        raise ValueError(f"variant must be 'te' or 'torchao', got {variant!r}")
    f32 = np.float32
    x = arr.astype(np.float32, copy=False)
    xb = _to_blocks(x, axes, block)
    rows = _as_rows(xb)
    chunks = _row_chunks(rows.shape[0], rows.shape[1])
    bmax = np.empty(rows.shape[0], np.uint32)
    for sl in chunks:
        bmax[sl] = _amax_bits(rows[sl])
    bamax = bmax.view(np.float32)  # NaN patterns win: a NaN block's amax is NaN
    amax = _tensor_amax(rows, bmax) if global_amax is None else f32(global_amax)
    if np.isnan(amax) or amax < 0:
        raise ValueError(f"global_amax must be a number >= 0, got {float(amax)}")
    ue4m3 = get_format("ue4m3")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if variant == "te":
            # Step 1: S_enc = 2688 / amax, fminf'ed to FLT_MAX; 1 when amax is 0 or Inf.
            s_enc = np.fmin(f32(2688.0) / amax, _FLT_MAX)
            if amax == 0 or s_enc == 0:
                s_enc = f32(1.0)
            # Step 2: block scale = e4m3_rne(clamp(amax_b * (S_enc * (1/6)), -448, 448)).
            s = bamax * f32(s_enc * f32(f32(1.0) / f32(6.0)))
            scales = encode(np.minimum(s, f32(448.0)), ue4m3)
            # Step 3: enc = min(1 / (fp32(scale) * (1 / S_enc)), FLT_MAX).
            s_dec = f32(f32(1.0) / s_enc)
            scale_f = decode(scales, ue4m3, dtype=np.float32)
            mult = np.minimum(f32(1.0) / (scale_f * s_dec), _FLT_MAX)
            # Step 4: q = e2m1_rne(clamp(x * enc, -6, 6)). The clamp is left to the saturating
            # encode below: 6 is representable, so clamping before rounding and saturating after
            # it agree for every rounding mode (and NaN stays NaN either way).
            global_scale = s_dec
        else:
            # torchao (per_tensor_amax_to_scale and _nvfp4_quantize, two-level path):
            # pts = amax / 2688; scale = e4m3(clamp((amax_b / 6) / pts, 2**-6, 448));
            # data * ((1 / pts) / scale), clamped to +-6.
            pts = f32(amax / f32(2688.0))
            if pts == 0 or not np.isfinite(pts):
                pts = f32(1.0)  # ours: torchao would divide by zero here
            scaled = (bamax / f32(6.0)) / pts
            scales = encode(np.clip(scaled, f32(2.0**-6), f32(448.0)), ue4m3)
            mult = (f32(1.0) / pts) / decode(scales, ue4m3, dtype=np.float32)
            global_scale = pts  # data * mult is clamped to +-6 by the saturating encode
        codes = np.empty(rows.shape, np.uint8)
        rng = _generator(rounding, rng)
        for sl in chunks:
            y = rows[sl] * mult[sl, None]
            codes[sl] = encode(y, bf.element, rounding=rounding, overflow="saturate", nan="zero", rng=rng)
    codes = codes.reshape(xb.shape)
    scales = scales.reshape(xb.shape[:-1])
    bamax = bamax.reshape(xb.shape[:-1])
    nan_blocks = np.isnan(bamax)
    if nan_blocks.any():
        scales[nan_blocks] = ue4m3.nan_code
        codes[nan_blocks] = 0
    return BlockArray(
        codes=np.ascontiguousarray(_from_blocks(codes, arr.shape, axes, block)),
        scales=_scales_to_layout(scales.astype(np.uint8), arr.ndim, axes),
        format=bf,
        axis=axes[0] if len(axes) == 1 else axes,
        block_size=block[0] if len(block) == 1 else block,
        global_scale=f32(global_scale),
        global_amax=f32(amax),
        variant=variant,
    )


# ---- dequantize -----------------------------------------------------------------------------
def _element_table(bf: BlockFormat, dtype: Any) -> np.ndarray:
    """Value of every element code (built by the codec; MXINT8: two's complement / 64)."""
    if bf.is_int:
        return np.arange(256, dtype=np.uint8).view(np.int8).astype(dtype) * np.dtype(dtype).type(2.0**-6)
    return decode(np.arange(1 << bf.element.bits), bf.element, dtype=dtype)


def dequantize(q: BlockArray, dtype: Any = np.float32) -> np.ndarray:
    """Values of a :class:`BlockArray`.

    MX: ``element * 2**(scale - 127)``, computed exactly in float32 (every product of an element
    value and a power of two in [2**-127, 2**127] is a float32 or overflows) and then cast to
    ``dtype`` (float64 computes in float64). A NaN scale makes its whole block NaN.

    NVFP4 follows the variant's arithmetic in float32: TransformerEngine multiplies each E2M1
    value by ``fp32(fp32(scale * amax) * fp32(1/2688))``; torchao by ``fp32(global * scale)``.

    >>> dequantize(quantize([7.0, 3.0, 1.0, 0.4], "mxfp4")).tolist()
    [6.0, 3.0, 1.0, 0.5]
    """
    if not isinstance(q, BlockArray):
        raise TypeError(f"dequantize takes a BlockArray, got {type(q).__name__}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dequantize returns floats, got dtype {dtype}")
    bf = q.format
    work = np.dtype(np.float64) if (dtype == np.float64 and not bf.is_nvfp4) else np.dtype(np.float32)
    axes, block = q.axes, q.block_shape
    table = _element_table(bf, work)
    if q.codes.size and int(q.codes.max()) >= table.size:
        raise ValueError(f"element code {int(q.codes.max())} is out of range for {bf.name}")
    cb = _to_blocks(q.codes, axes, block)  # padding codes are 0, the value +0
    s = _scales_from_layout(q.scales, axes).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        if not bf.is_nvfp4:
            factor = _pow2_from_e8m0(s, work)
        elif q.variant == "torchao":
            factor = q.global_scale * decode(s, bf.scale, dtype=np.float32)
        else:
            f32 = np.float32
            factor = (decode(s, bf.scale, dtype=np.float32) * q.global_amax) * f32(1.0 / 2688.0)
        rows = _as_rows(cb)
        out = np.empty(rows.shape, work)
        for sl in _row_chunks(rows.shape[0], rows.shape[1]):
            np.multiply(table.take(rows[sl]), factor[sl, None], out=out[sl])
    out = out.reshape(cb.shape)
    return np.ascontiguousarray(_from_blocks(out, q.shape, axes, block), dtype=dtype)


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
    if bits not in (4, 6, 8):
        raise ValueError(f"bits must be 4, 6 or 8, got {bits}")
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
    else:
        raise ValueError(f"bits must be 4, 6 or 8, got {bits}")
    if length is not None:
        if not 0 <= length <= out.shape[-1]:
            raise ValueError(f"length {length} exceeds the {out.shape[-1]} codes the bytes hold")
        out = out[..., :length]
    return np.ascontiguousarray(out.astype(np.uint8))


def unpack(packed: Any, fmt: str | BlockFormat, length: int | None = None) -> np.ndarray:
    """Element codes of a block format from :meth:`BlockArray.pack` output.

    >>> q = quantize([1.0, 2.0, 3.0], "mxfp4")
    >>> unpack(q.pack(), "mxfp4", 3).tolist() == q.codes.tolist()
    True
    """
    return unpack_codes(packed, get_block_format(fmt).bits, length)


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
    """Scale codes with one entry per (row, K-block): 2-D tiles are repeated along the row."""
    if q.codes.ndim != 2:
        raise ValueError(f"matmul operands must be 2-D, got shape {q.shape}")
    axes, block = q.axes, q.block_shape
    if len(axes) == 1:
        if axes[0] != k_axis:
            raise ValueError(
                f"operand must be blocked along its K axis ({k_axis}), got axis={axes[0]}"
            )
        return q.scales
    other = 1 - k_axis
    rows = q.shape[other]
    return np.repeat(q.scales, block[axes.index(other)], axis=other).take(
        np.arange(rows), axis=other
    )


def _k_block(q: BlockArray, k_axis: int) -> int:
    return q.block_shape[q.axes.index(k_axis)] if k_axis in q.axes else -1


def _limbs_to_float64_odd(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """The integer hi * 2**16 + lo (int64 limbs) as float64 rounded to odd.

    Rounding to odd at 53 bits followed by one rounding to float32 (24 bits) equals a single
    rounding of the exact integer (Boldo and Melquiond), so no double rounding creeps in.
    """
    hi = hi + (lo >> 16)  # normalise: 0 <= lo < 2**16 (arithmetic shift carries the sign)
    lo = lo & 0xFFFF
    hf = hi.astype(np.float64)  # may round when |hi| > 2**53: keep the residual exactly
    rest = (hi - hf.astype(np.int64)) * 65536 + lo  # small, exact in int64 and float64
    return _round_to_odd_sum(hf * 65536.0, rest.astype(np.float64))


def _block_product_sums(ia: np.ndarray, ib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact sum_k ia[m, k] * ib[k, n] as two int64 limbs (hi * 2**16 + lo).

    ia and ib are integers below 2**32 in magnitude; ia is split into 16-bit halves so each
    partial product stays below 2**48 and a sum of up to 2**15 of them cannot overflow.
    """
    lo_a = ia & 0xFFFF
    hi_a = ia >> 16
    return hi_a @ ib, lo_a @ ib


def matmul(a: BlockArray, b: BlockArray) -> np.ndarray:
    """C = A @ B for block-scaled A (M, K) blocked along K and B (K, N) blocked along K.

    The OCP Dot/DotGeneral model: for every K-block, the sum of the element products is formed
    *exactly* (integer arithmetic on the scaled significands), multiplied by both scales and
    rounded once to float32; the per-block results are then added in float32 in block order
    (block 0 first). NVFP4: the two UE4M3 block scales are folded into the exact integer sum;
    the result is finally multiplied by ``fp32(global_scale_a * global_scale_b)`` in float32.
    Blocks holding NaN/Inf (scale or element) are computed with float64 arithmetic instead so
    they propagate NaN/Inf as IEEE arithmetic would.

    >>> A = quantize(np.ones((2, 32)), "mxfp8_e4m3")
    >>> B = quantize(np.full((32, 3), 0.5), "mxfp8_e4m3", axis=0)
    >>> matmul(A, B).tolist()
    [[16.0, 16.0, 16.0], [16.0, 16.0, 16.0]]
    """
    for q in (a, b):
        if not isinstance(q, BlockArray):
            raise TypeError(f"matmul takes BlockArrays, got {type(q).__name__}")
    if a.format.is_nvfp4 != b.format.is_nvfp4:
        raise ValueError("cannot mix MX and NVFP4 operands")
    if a.codes.ndim != 2 or b.codes.ndim != 2:
        raise ValueError(f"matmul operands must be 2-D, got shapes {a.shape} and {b.shape}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    bs = _k_block(a, 1)
    if bs < 1 or bs != _k_block(b, 0):
        raise ValueError(
            f"K block sizes differ or K is not blocked: A {a.block_size} on axis {a.axis}, "
            f"B {b.block_size} on axis {b.axis}"
        )
    sa = _k_scales(a, 1).astype(np.int64)  # (M, nb)
    sb = _k_scales(b, 0).astype(np.int64)  # (nb, N)
    nb = sa.shape[1]
    pad = nb * bs - k
    ta, fa = _int_table(a.format)
    tb, fb = _int_table(b.format)
    ca = np.pad(a.codes, [(0, 0), (0, pad)]).astype(np.intp)
    cb = np.pad(b.codes, [(0, pad), (0, 0)]).astype(np.intp)
    ia, ib = ta[ca].reshape(m, nb, bs), tb[cb].reshape(nb, bs, n)
    bad_a = ~fa[ca].reshape(m, nb, bs).all(axis=-1)
    bad_b = ~fb[cb].reshape(nb, bs, n).all(axis=1)
    shift = a.format.int_shift + b.format.int_shift
    if a.format.is_nvfp4:
        # UE4M3 scale values are integers times 2**-9: fold them into the integer operands.
        ua = np.ldexp(decode(np.arange(128), "ue4m3"), 9)
        bad_a |= sa == 0x7F
        bad_b |= sb == 0x7F
        ia = ia * np.where(sa == 0x7F, 0, ua[np.minimum(sa, 0x7E)]).astype(np.int64)[..., None]
        ib = ib * np.where(sb == 0x7F, 0, ua[np.minimum(sb, 0x7E)]).astype(np.int64)[:, None, :]
        exp_a = np.full(sa.shape, -9, np.int64)
        exp_b = np.full(sb.shape, -9, np.int64)
    else:
        bad_a |= sa == 255
        bad_b |= sb == 255
        exp_a, exp_b = sa - 127, sb - 127
    acc = np.zeros((m, n), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(nb):
            hi, lo = _block_product_sums(ia[:, j, :], ib[j])
            exact = _limbs_to_float64_odd(hi, lo)
            e = exp_a[:, j][:, None] + exp_b[j][None, :] - shift
            block = np.ldexp(exact, e.astype(np.int32)).astype(np.float32)
            special = bad_a[:, j][:, None] | bad_b[j][None, :]
            if special.any():
                fallback = _dequantized_block(a, 1, j, bs) @ _dequantized_block(b, 0, j, bs)
                block = np.where(special, fallback.astype(np.float32), block)
            acc = acc + block
        if a.format.is_nvfp4:
            alpha = np.float32(a.global_scale) * np.float32(b.global_scale)
            acc = acc * alpha
    return acc


def _dequantized_block(q: BlockArray, k_axis: int, j: int, bs: int) -> np.ndarray:
    """float64 values of K-block j (used only for blocks with NaN/Inf)."""
    vals = q.dequantize(np.float64)
    sl = [slice(None), slice(None)]
    sl[k_axis] = slice(j * bs, (j + 1) * bs)
    part = vals[tuple(sl)]
    missing = bs - part.shape[k_axis]
    if missing:
        widths = [(0, 0), (0, 0)]
        widths[k_axis] = (0, missing)
        part = np.pad(part, widths)
    return part


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
def _read_values(text: str) -> np.ndarray:
    """Numbers from a file (.npy, or text with numbers separated by spaces/commas/newlines)
    or from a comma/space separated list on the command line."""
    path = Path(text)
    if path.suffix == ".npy" and path.exists():
        return np.asarray(np.load(path), dtype=np.float64).ravel()
    if path.exists() and path.is_file():
        text = path.read_text()
    tokens = text.replace(",", " ").split()
    if not tokens:
        raise ValueError("no values given")
    try:
        return np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError:
        raise ValueError(f"cannot read {text[:40]!r} as numbers or an existing file") from None


def describe(q: BlockArray, x: np.ndarray) -> str:
    """Text report: each block's scale, codes and quantization error (1-D arrays).

    >>> print(describe(quantize([7.0, 3.0, 0.4], "mxfp4"), np.array([7.0, 3.0, 0.4])))
    mxfp4: 3 values, 1 block of 32, E8M0 scales (floor)
    block 0: scale 0x7F = 2^0
      codes:  7 5 1
      values: 6 3 0.5
      errors: 1 0 -0.1
      max |error| 1, rms error 0.5802
    """
    bf = q.format
    deq = q.dequantize(np.float64)
    nblocks = q.scales.size
    width = 1 if bf.bits == 4 else 2
    bs = q.block_shape[0]
    rounding = q.scale_rounding
    head = f"{bf.name}: {x.size} values, {nblocks} block{'s' if nblocks != 1 else ''} of {bs}, "
    if bf.is_nvfp4:
        head += (f"UE4M3 scales, {q.variant} arithmetic, global amax {float(q.global_amax):.6g}, "
                 f"global decode scale {float(q.global_scale):.6g}")
    else:
        head += f"E8M0 scales ({rounding})"
    lines = [head]
    for j in range(nblocks):
        sl = slice(j * bs, min((j + 1) * bs, x.size))
        code = int(q.scales[j])
        if bf.is_nvfp4:
            sval = f"{float(decode(code, bf.scale)):.6g}"
        else:
            sval = "NaN" if code == 255 else f"2^{code - 127}"
        err = x[sl] - deq[sl]
        finite = np.isfinite(err)
        lines.append(f"block {j}: scale 0x{code:02X} = {sval}")
        lines.append("  codes:  " + " ".join(f"{int(c):0{width}X}" for c in q.codes[sl]))
        lines.append("  values: " + " ".join(f"{v:.6g}" for v in deq[sl]))
        lines.append("  errors: " + " ".join(f"{v:.4g}" for v in err))
        if finite.any():
            e = err[finite]
            lines.append(f"  max |error| {np.max(np.abs(e)):.4g}, rms error {np.sqrt(np.mean(e * e)):.4g}")
    return "\n".join(lines)


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
    p.add_argument("--block-size", "-b", type=int, default=None, help="elements per block")
    p.add_argument("--scale-rounding", "-s", default="floor", choices=SCALE_ROUNDINGS,
                   help="MX scale rule (default floor, the OCP rule)")
    p.add_argument("--inf", default="nan", choices=("nan", "saturate"),
                   help="scale of an MX block holding Inf: 0xFF (nan) or 0xFE (saturate)")
    p.add_argument("--variant", default="te", choices=("te", "torchao"), help="NVFP4 arithmetic")
    p.set_defaults(func=cmd_mx)
