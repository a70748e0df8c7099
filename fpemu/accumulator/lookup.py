"""From a name and the operands' formats to a model: :func:`get_accumulator`, the one lookup of
dense and block-scaled models, and :func:`accumulator_names`.

One grammar for every name, ``gpu[/family[/instruction]]``, read as fpemu reads every option
(stripped, lower case): an IEEE model (``"exact"``, ``"fp32"``, ...), a GPU (``"h100"``) or an
architecture (``"hopper"``), then optionally an instruction family of its table row (a dense
family such as ``"bf16"``, a block-scaled kind such as ``"mxf8f6f4"``) or one of its
instructions, then optionally one instruction. Element formats pick among the unit's dense
families, block formats (MX, NVFP4) among its block-scaled ones; a name of the other kind is
refused in one message.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..arguments import option_name, unknown_name
from ..formats import Format, get_format
from ..formats.registry import one_or_pair
from ..mx.formats import BLOCK_FORMATS, BlockFormat, get_block_format
from .model import KINDS, Accumulator, BlockScaledAccumulator
from .units import ARCHITECTURES, BLOCK_EXACT, GPUS, IEEE, families, family_of, instruction_k, is_instruction

#: Where every name is listed, as messages say it.
WHERE = "`fpemu accumulators`"


def accumulator_names(block_scaled: bool | None = None) -> list[str]:
    """Every name :func:`get_accumulator` knows: IEEE models, GPUs, architectures, and the
    instruction families of an architecture that are no operand format's default
    (``"cdna2/bf16"``; every GPU name takes ``/family`` too). ``block_scaled``: only the names
    that take block formats (True) or element formats (False).

    >>> "h100" in accumulator_names() and "mmasim-blackwell" in accumulator_names()
    True
    >>> [n for n in accumulator_names() if "/" in n]
    ['rtx-blackwell/f16_k8', 'rtx-blackwell/tf32_k4', 'rtx-blackwell/fp8_k16', 'cdna2/bf16', 'cdna3/f16_k4', 'cdna3/bf16_k4']
    >>> accumulator_names(block_scaled=True)
    ['exact', 'b200', 'rtx5090', 'rtx5080', 'rtxpro6000', 'blackwell', 'rtx-blackwell', 'mmasim-blackwell']
    """
    kinds = (False, True) if block_scaled is None else (block_scaled,)
    archs = [a for a in ARCHITECTURES if any(families(a, k) for k in kinds)]
    ieee = [n for n in IEEE if n == "exact" or False in kinds]
    gpus = [g for g, arch in GPUS.items() if arch in archs]
    variants = [f"{a}/{fam}" for k in kinds for a in archs for fam in families(a, k) if not _is_default(a, fam, k)]
    return ieee + gpus + [a for a in archs if a not in GPUS] + variants


def _is_default(arch: str, family: str, block_scaled: bool) -> bool:
    """Whether the family is the default (the first listed) for some operand format it takes.

    >>> _is_default("cdna2", "bf16_1k", False), _is_default("cdna2", "bf16", False)
    (True, False)
    """
    fams = families(arch, block_scaled)
    return any(next(f for f in fams if fmt in fams[f]["takes"]) == family for fmt in fams[family]["takes"])


def operand_format(x: str | Format | BlockFormat) -> Format | BlockFormat:
    """An element format or a block format, from its name.

    >>> operand_format("e4m3").name, operand_format("MXFP4").name
    ('e4m3', 'mxfp4')
    """
    if isinstance(x, (Format, BlockFormat)):
        return x
    try:
        return get_format(x)
    except ValueError as element:
        try:
            return get_block_format(x)
        except ValueError:
            raise ValueError(f"{element}; block formats: {', '.join(BLOCK_FORMATS)}") from None


def operand_formats(inputs: Any) -> tuple[Format | BlockFormat, Format | BlockFormat]:
    """The formats of A and B (one value for both, or a pair): two element formats or two
    block formats."""
    fa, fb = one_or_pair(inputs, operand_format, (str, Format, BlockFormat), "inputs", "a format name")
    if isinstance(fa, BlockFormat) != isinstance(fb, BlockFormat):
        raise ValueError(f"inputs are two element formats or two block formats, got {fa.name} and {fb.name}")
    return fa, fb


def input_formats(inputs: str | Format | Sequence[str | Format]) -> tuple[Format, Format]:
    """The element formats of plain A and B (one format or a pair)."""
    return one_or_pair(inputs, get_format, (str, Format), "inputs", "a format name")


def wrong_operands(label: str, block_scaled: bool) -> str:
    """The one message refusing a model of the other kind: a dense one for block arrays, a
    block-scaled one for plain arrays.

    >>> wrong_operands("h100 (hopper)", True)
    'h100 (hopper) has no block-scaled MMA: block arrays take exact, b200, rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell'
    """
    names = accumulator_names(block_scaled)
    if block_scaled:
        kind, operands, take = "block-scaled", "block arrays", f"{', '.join(names[:-1])} or {names[-1]}"
    else:
        kind, operands, take = "dense", "plain arrays", f"a dense model ({WHERE} lists them)"
    return f"{label} has no {kind} MMA: {operands} take {take}"


def get_accumulator(
    name: str | Accumulator,
    inputs: str | Format | BlockFormat | Sequence[str | Format | BlockFormat] | None = None,
    *,
    instruction: str | None = None,
    block_size: int | None = None,
) -> Accumulator:
    """The named accumulation model for operands of these formats.

    ``name`` (``gpu[/family[/instruction]]``) is an IEEE model ("exact", "fp32", "fp16",
    "bf16", "pairwise_fp32"), a GPU ("v100", "t4", "a100", "a30", "a2", "ada", "l40s",
    "h100", "h200", "h800", "b200", "rtx5090", "rtxpro6000", "mi100", "mi250", "mi300x", ...)
    or an architecture ("volta", ..., "blackwell", "rtx-blackwell" (sm_120, MMA-Sim's model),
    "cdna1", "cdna2", "cdna3", and MMA-Sim's published model "mmasim-blackwell"). ``inputs`` (A's and B's, or one for both; default fp32) are element
    formats, for the dense models, or block formats (MX, NVFP4), for the block-scaled ones:
    ``"exact"`` is then the exact blockwise model (:class:`~fpemu.accumulator.Blockwise`).
    GPU parameters depend on the inputs (H100 fp16 fuses 16 products with F = 25, H100 e4m3
    32 products with F = 13). Where a unit has several instruction families for the same
    inputs, the first in the table (:mod:`.units`) is the default and ``instruction`` (or
    ``"gpu/family"``) picks another: CDNA2 bf16 is ``bf16_1k`` unless ``instruction="bf16"``;
    CDNA3 fp16/bf16 is the k = 8/16 family unless ``"f16_k4"``/``"bf16_k4"``; Blackwell's
    MXFP4 x MXFP4 is ``mxf4nvf4`` unless ``"mxf8f6f4"``; RTX Blackwell's k = 16 fp16 is
    ``f16`` unless ``"f16_k8"`` or a k = 8 instruction (``"m16n8k8.f32.f16.f16.f32"``). An AMD instruction's own name
    (``"v_mfma_f32_16x16x8bf16"``, the prefix optional) picks its family, whose model then
    reads its accumulator once per instruction of that K (``instruction_k``), which is where a
    flushing CDNA2 turns a -0 running sum into +0. ``block_size`` is the K-block size of block
    operands (default: the format's). A model passes through (refused if ``inputs`` are of
    the other kind).

    >>> get_accumulator("h100", "e4m3").block, get_accumulator("h100", "fp16").block
    (32, 16)
    >>> get_accumulator("mi250", "bf16").block, get_accumulator("mi250/bf16", "bf16").block
    (4, 2)
    >>> acc = get_accumulator("mi250", "bf16", instruction="v_mfma_f32_16x16x8bf16")
    >>> acc.name, acc.block, acc.instruction_k
    ('mi250/bf16/f32_16x16x8bf16/bf16', 2, 8)
    >>> get_accumulator("b200", "mxfp8_e4m3").name, get_accumulator("b200/mxf8f6f4", "mxfp4").instruction_k
    ('b200/mxf8f6f4/e4m3', 32)
    >>> get_accumulator("rtx5090", "fp16").block, get_accumulator("rtx5090", "fp16", instruction="m16n8k8.f32.f16.f16.f32").block
    (16, 8)
    >>> type(get_accumulator("exact", "nvfp4")).__name__, type(get_accumulator("exact", "fp16")).__name__
    ('Blockwise', 'Exact')
    >>> get_accumulator("v100", "bf16")
    Traceback (most recent call last):
    ...
    ValueError: v100 (volta) has no bf16 inputs in its matrix unit; it takes: fp16
    >>> get_accumulator("h100", "mxfp8_e4m3")
    Traceback (most recent call last):
    ...
    ValueError: h100 (hopper) has no block-scaled MMA: block arrays take exact, b200, rtx5090, rtx5080, rtxpro6000, blackwell, rtx-blackwell or mmasim-blackwell
    """
    if isinstance(name, Accumulator):
        if instruction is not None:
            raise ValueError("instruction= picks a preset's instruction family; a model already is one")
        if inputs is not None:
            block_scaled = isinstance(operand_formats(inputs)[0], BlockFormat)
            if isinstance(name, BlockScaledAccumulator) != block_scaled:
                raise ValueError(wrong_operands(f"{type(name).__name__} {name.name!r}", block_scaled))
        return name
    if not isinstance(name, str):
        raise TypeError(f"an accumulator is a name or a model (an Accumulator), got {type(name).__name__}")
    fa, fb = operand_formats("fp32" if inputs is None else inputs)
    block_scaled = isinstance(fa, BlockFormat)
    if block_size is not None and not block_scaled:
        raise ValueError("block_size= is the K-block size of block formats; these inputs are element formats")
    key, picked = _read_name(name, instruction)
    if key in IEEE:
        if picked:
            raise ValueError(f"the {key} model has no instructions: instruction= picks a GPU's")
        if block_scaled and key != "exact":
            raise ValueError(wrong_operands(key, True))
        return _model(key, BLOCK_EXACT if block_scaled else IEEE[key])
    arch = GPUS.get(key, key)
    if arch not in ARCHITECTURES:
        raise ValueError(unknown_name("accumulator", name, accumulator_names(), WHERE))
    label = key if key == arch else f"{key} ({arch})"
    if not families(arch, block_scaled):
        raise ValueError(wrong_operands(label, block_scaled))
    if block_scaled:
        return _block_scaled(key, arch, label, picked, fa, fb, fa.block_size if block_size is None else block_size)
    return _dense(key, arch, label, picked, fa, fb)


def _read_name(name: str, instruction: str | None) -> tuple[str, str]:
    """(the model, GPU or architecture; the family and instruction picked, "" for none) of
    ``gpu[/family[/instruction]]`` and ``instruction=``, which must not disagree.

    >>> _read_name(" MI250/bf16 ", None), _read_name("b200", "mxf8f6f4")
    (('mi250', 'bf16'), ('b200', 'mxf8f6f4'))
    """
    key, _, picked = option_name(name).partition("/")
    if picked and instruction is not None and picked.rpartition("/")[2] != option_name(instruction):
        raise ValueError(f"{name!r} names the instruction {picked!r} but instruction={instruction!r}")
    if instruction is not None and not picked:
        picked = option_name(instruction)
    if picked.count("/") > 1:
        raise ValueError(unknown_name("accumulator", name, accumulator_names(), WHERE))
    return key, picked


def _model(name: str, params: dict) -> Accumulator:
    """The model a table row describes: its ``kind`` names the class, the rest are its fields.

    >>> _model("loop", dict(kind="sequential", acc_format="bf16"))
    Sequential(name='loop', source='', instruction_k=None, promote=None, flush_subnormals=False, acc_format='bf16', acc_rounding='rne')
    """
    fields = dict(params)
    return KINDS[fields.pop("kind")](name, **fields)


def _pick(arch: str, label: str, picked: str, block_scaled: bool) -> tuple[list[str], str | None]:
    """(the families the name allows, in table order; the one instruction it names, if any)
    from ``family``, ``instruction`` or ``family/instruction``."""
    fams = families(arch, block_scaled)
    if not picked:
        return list(fams), None
    family, _, single = picked.partition("/")
    if not single and is_instruction(arch, family):
        single = family
    found = family_of(arch, family)
    if found not in fams or (single and family_of(arch, single) != found):
        raise ValueError(f"{label} has no instruction family {family!r}; it has: {', '.join(fams)}")
    return [found], single or None


def _dense(key: str, arch: str, label: str, picked: str, fa: Format, fb: Format) -> Accumulator:
    fams = families(arch, block_scaled=False)
    takes = list(dict.fromkeys(f for fam in fams.values() for f in fam["takes"]))
    for fmt in (fa, fb):
        if fmt.name not in takes:
            raise ValueError(f"{label} has no {fmt.name} inputs in its matrix unit; it takes: {', '.join(takes)}")
    allowed, single = _pick(arch, label, picked, block_scaled=False)
    usable = [f for f in allowed if _multiplies(fams[f], fa.name, fb.name)]
    if not usable:
        which = f"{label}'s {allowed[0]} instructions" if picked else label
        raise ValueError(f"{which} do{'' if picked else 'es'} not multiply {fa.name} by {fb.name}")
    family = usable[0]
    pair = fa.name if fa == fb else f"{fa.name}x{fb.name}"
    default = family == next(f for f in fams if _multiplies(fams[f], fa.name, fb.name))
    name = f"{key}/{pair}" if default else f"{key}/{family}/{pair}"
    params = dict(fams[family]["params"])
    if single is not None:
        name = f"{key}/{family}/{option_name(single).removeprefix('v_mfma_')}/{pair}"
        params["instruction_k"] = instruction_k(single)
    if "fp16_output" in params:  # the unit's fp16-writing model, named after this one
        params["fp16_output"] = _model(f"{name} (fp16 output)", params["fp16_output"])
    return _model(name, params)


def _multiplies(family: dict, a: str, b: str) -> bool:
    """Whether an instruction family takes A in format a and B in format b.

    >>> _multiplies(ARCHITECTURES["blackwell"]["f8f6f4"], "e2m1", "e4m3")
    True
    >>> _multiplies(ARCHITECTURES["ampere"]["f16"], "fp16", "bf16")
    False
    """
    return a in family["takes"] and b in family["takes"] and (a == b or family["mixed"])


def _block_scaled(key: str, arch: str, label: str, picked: str, fa: BlockFormat, fb: BlockFormat,
                  block: int) -> Accumulator:  # fmt: skip
    if fa.is_nvfp4 != fb.is_nvfp4:
        raise ValueError("cannot mix MX and NVFP4 operands")
    table = families(arch, block_scaled=True)
    allowed, _ = _pick(arch, label, picked, block_scaled=True)
    usable = [k for k in allowed if _kind_takes(table[k], fa, fb, block)]
    if not usable:
        pair = f"{fa.element.name} x {fb.element.name} with {fa.scale.name} blocks of {block}"
        which = ", ".join(f"{k} ({_describe(table[k])})" for k in allowed)
        raise ValueError(f"{label} has no block-scaled MMA for {pair}; its kinds: {which}")
    kind = usable[0]
    pair = fa.element.name if fa.element == fb.element else f"{fa.element.name}x{fb.element.name}"
    return _model(f"{key}/{kind}/{pair}", dict(table[kind]["params"], instruction_k=table[kind]["k"]))


def _kind_takes(kind: dict, fa: BlockFormat, fb: BlockFormat, block: int) -> bool:
    """Whether a block-scaled kind multiplies A of format fa by B of format fb in blocks of block."""
    elements = fa.element.name in kind["takes"] and fb.element.name in kind["takes"]
    same = fa.element.name == fb.element.name or kind["mixed"]
    return elements and same and (fa.scale.name, block) in kind["scales"]


def _describe(kind: dict) -> str:
    scales = ", ".join(f"{s} blocks of {b}" for s, b in kind["scales"])
    return f"{'/'.join(kind['takes'])} with {scales}"
