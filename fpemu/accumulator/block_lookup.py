"""From a name and the operands' block formats to a
:class:`~fpemu.accumulator.BlockScaledAccumulator`: :func:`get_block_accumulator` and
:func:`block_accumulator_names`."""

from __future__ import annotations

from typing import Any, Sequence

from ..formats.registry import one_or_pair
from ..mx.formats import BlockFormat, get_block_format
from .model import KINDS, BlockScaledAccumulator
from .units import ARCHITECTURES, BLOCK_EXACT, GPUS, families


def _block_scaled_archs() -> list[str]:
    """The architectures (and models of one, such as MMA-Sim's) with block-scaled MMA."""
    return [arch for arch in ARCHITECTURES if families(arch, block_scaled=True)]


def block_accumulator_names() -> list[str]:
    """Every name :func:`get_block_accumulator` knows.

    >>> block_accumulator_names()
    ['exact', 'b200', 'blackwell', 'mmasim-blackwell']
    """
    archs = _block_scaled_archs()
    return ["exact", *(g for g, arch in GPUS.items() if arch in archs), *archs]


def _formats(formats: Any) -> tuple[BlockFormat, BlockFormat]:
    return one_or_pair(formats, get_block_format, (str, BlockFormat), "formats", "a block format name")


def _kind_takes(kind: dict, fa: BlockFormat, fb: BlockFormat, block: int) -> bool:
    """Whether an instruction kind multiplies A of format fa by B of format fb in blocks of block."""
    elements = fa.element.name in kind["takes"] and fb.element.name in kind["takes"]
    same = fa.element.name == fb.element.name or kind["mixed"]
    return elements and same and (fa.scale.name, block) in kind["scales"]


def _describe(kind: dict) -> str:
    scales = ", ".join(f"{s} blocks of {b}" for s, b in kind["scales"])
    return f"{'/'.join(kind['takes'])} with {scales}"


def get_block_accumulator(
    name: str | BlockScaledAccumulator,
    formats: str | BlockFormat | Sequence[str | BlockFormat],
    *,
    block_size: int | None = None,
    instruction: str | None = None,
) -> BlockScaledAccumulator:
    """The named block-scaled model for operands of these block formats (A's and B's).

    ``name``: ``"exact"`` (the OCP model with exact block sums, any formats), ``"b200"`` or
    ``"blackwell"`` (what the hardware evidence supports), ``"mmasim-blackwell"`` (MMA-Sim's
    published model). ``block_size`` is the K-block size (default: the format's);
    ``instruction`` picks the Blackwell kind (``"mxf8f6f4"``, ``"mxf4nvf4"``) where both take
    the operands (MXFP4 x MXFP4 in blocks of 32; default ``mxf4nvf4``). A
    BlockScaledAccumulator passes through.

    >>> get_block_accumulator("b200", "mxfp8_e4m3").name, get_block_accumulator("b200", "nvfp4").instruction_k
    ('b200/mxf8f6f4/e4m3', 64)
    >>> get_block_accumulator("mmasim-blackwell", "mxfp4", instruction="mxf8f6f4").frac_bits
    25
    >>> get_block_accumulator("b200", "mxint8")
    Traceback (most recent call last):
    ...
    ValueError: b200 (blackwell) has no block-scaled MMA for int8 x int8 with e8m0 blocks of 32; its kinds: mxf4nvf4 (e2m1 with e8m0 blocks of 32, e8m0 blocks of 16, ue4m3 blocks of 16), mxf8f6f4 (e4m3/e5m2/e3m2/e2m3/e2m1 with e8m0 blocks of 32)
    """
    if isinstance(name, BlockScaledAccumulator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a block-scaled accumulator is a name or a BlockScaledAccumulator, got {type(name).__name__}")
    fa, fb = _formats(formats)
    if fa.is_nvfp4 != fb.is_nvfp4:
        raise ValueError("cannot mix MX and NVFP4 operands")
    key = name.strip().lower()
    if key == "exact":
        if instruction is not None:
            raise ValueError("the exact model has no instructions: instruction= applies to hardware models")
        return _model("exact", BLOCK_EXACT)
    arch = GPUS.get(key, key)
    if arch not in _block_scaled_archs():
        raise ValueError(f"unknown block-scaled accumulator {name!r}; known: {', '.join(block_accumulator_names())}")
    label = key if key == arch else f"{key} ({arch})"
    block = fa.block_size if block_size is None else block_size
    table = families(arch, block_scaled=True)
    kinds = [instruction.strip().lower()] if instruction is not None else list(table)
    unknown = [k for k in kinds if k not in table]
    if unknown:
        raise ValueError(f"unknown instruction {instruction!r}; {label}'s block-scaled kinds: {', '.join(table)}")
    usable = [k for k in kinds if _kind_takes(table[k], fa, fb, block)]
    if not usable:
        pair = f"{fa.element.name} x {fb.element.name} with {fa.scale.name} blocks of {block}"
        which = ", ".join(f"{k} ({_describe(table[k])})" for k in kinds)
        raise ValueError(f"{label} has no block-scaled MMA for {pair}; its kinds: {which}")
    kind = usable[0]
    pair = fa.element.name if fa.element == fb.element else f"{fa.element.name}x{fb.element.name}"
    return _model(f"{key}/{kind}/{pair}", dict(table[kind]["params"], instruction_k=table[kind]["k"]))


def _model(name: str, params: dict) -> BlockScaledAccumulator:
    """The model a table row describes: its ``kind`` names the class, the rest are its fields."""
    fields = dict(params)
    return KINDS[fields.pop("kind")](name, **fields)
