"""From a name and the input formats to an :class:`Accumulator`: :func:`get_accumulator`,
:func:`accumulator_names`, and the reading of an ``inputs`` argument (one format or a pair)."""

from __future__ import annotations

from typing import Sequence

from ..arguments import option_name, unknown_name
from ..formats import Format, get_format
from ..formats.registry import one_or_pair
from ..isa import ARCHITECTURES, GPUS, IEEE, families, family_of, instruction_k, is_instruction
from .model import KINDS, Accumulator


def accumulator_names() -> list[str]:
    """Every name :func:`get_accumulator` knows: IEEE models, GPUs, architectures, and the
    architectures' instruction families that are no input format's default
    (``"cdna2/bf16"``; every GPU name takes ``/family`` too).

    >>> "h100" in accumulator_names() and "hopper" in accumulator_names()
    True
    >>> [n for n in accumulator_names() if "/" in n]
    ['cdna2/bf16', 'cdna3/f16_k4', 'cdna3/bf16_k4']
    """
    dense = [arch for arch in ARCHITECTURES if families(arch, block_scaled=False)]
    variants = [f"{arch}/{fam}" for arch in dense for fam in families(arch, False) if not _is_default(arch, fam)]
    gpus = [g for g, arch in GPUS.items() if arch in dense]
    return list(IEEE) + gpus + [a for a in dense if a not in GPUS] + variants


def _is_default(arch: str, family: str) -> bool:
    """Whether the family is the default (the first listed) for some input format it takes.

    >>> _is_default("cdna2", "bf16_1k"), _is_default("cdna2", "bf16")
    (True, False)
    """
    fams = families(arch, block_scaled=False)
    return any(next(f for f in fams if fmt in fams[f]["takes"]) == family for fmt in fams[family]["takes"])


def input_formats(inputs: str | Format | Sequence[str | Format]) -> tuple[Format, Format]:
    return one_or_pair(inputs, get_format, (str, Format), "inputs", "a format name")


def get_accumulator(
    name: str | Accumulator, inputs: str | Format | Sequence[str | Format] = "fp32", *, instruction: str | None = None
) -> Accumulator:
    """The named accumulation model for these input formats.

    ``name`` is an IEEE model ("exact", "fp32", "fp16", "bf16", "pairwise_fp32"), a GPU
    ("v100", "t4", "a100", "a30", "a2", "ada", "l40s", "h100", "h200", "h800", "b200",
    "mi100", "mi250", "mi300x", ...) or an architecture ("volta", "turing", "ampere", "ada",
    "hopper", "blackwell", "cdna1", "cdna2", "cdna3"). GPU parameters depend on the inputs
    (H100 fp16 fuses 16 products with F = 25, H100 e4m3 32 products with F = 13). Where a
    unit has several instruction families for the same inputs, the first listed in the
    table (:mod:`fpemu.isa`) is the default and ``instruction`` (or ``"gpu/family"``) picks
    another: CDNA2 bf16 is ``bf16_1k`` unless ``instruction="bf16"``; CDNA3 fp16/bf16 is the
    k = 8/16 family unless ``instruction="f16_k4"``/``"bf16_k4"``. ``instruction`` may also
    name one AMD instruction (``"v_mfma_f32_16x16x8bf16"``, the prefix optional): its family's
    model then reads its accumulator operand once per instruction of that K
    (``instruction_k``), which is where a flushing CDNA2 turns a -0 running sum into +0. An
    Accumulator passes through.

    >>> get_accumulator("h100", "e4m3").block, get_accumulator("h100", "fp16").block
    (32, 16)
    >>> get_accumulator("mi250", "bf16").block, get_accumulator("mi250/bf16", "bf16").block
    (4, 2)
    >>> acc = get_accumulator("mi250", "bf16", instruction="v_mfma_f32_16x16x8bf16")
    >>> acc.name, acc.block, acc.instruction_k
    ('mi250/bf16/f32_16x16x8bf16/bf16', 2, 8)
    >>> get_accumulator("v100", "bf16")
    Traceback (most recent call last):
    ...
    ValueError: v100 (volta) has no bf16 inputs in its matrix unit; it takes: fp16
    """
    if isinstance(name, Accumulator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"an accumulator is a name or an Accumulator, got {type(name).__name__}")
    key = option_name(name)
    if key in IEEE:
        return _model(key, IEEE[key])
    key, _, picked = key.partition("/")
    if picked and instruction is not None and picked != option_name(instruction):
        raise ValueError(f"{name!r} names the instruction {picked!r} but instruction={instruction!r}")
    picked = picked or (option_name(instruction) if instruction is not None else "")
    arch = GPUS.get(key, key)
    if arch not in ARCHITECTURES or not families(arch, block_scaled=False):
        where = "`fpemu accumulators`"
        raise ValueError(unknown_name("accumulator", name, accumulator_names(), where))
    fams = families(arch, block_scaled=False)
    fa, fb = input_formats(inputs)
    takes = list(dict.fromkeys(f for fam in fams.values() for f in fam["takes"]))
    label = key if key == arch else f"{key} ({arch})"
    for fmt in (fa, fb):
        if fmt.name not in takes:
            raise ValueError(f"{label} has no {fmt.name} inputs in its matrix unit; it takes: {', '.join(takes)}")
    single = picked if picked and is_instruction(arch, picked) else None
    if picked:
        picked = family_of(arch, picked) or picked
    if picked and picked not in fams:
        raise ValueError(f"{label} has no instruction family {picked!r}; it has: {', '.join(fams)}")
    usable = [f for f in ([picked] if picked else fams) if _multiplies(fams[f], fa.name, fb.name)]
    if not usable:
        which = f"{label}'s {picked} instructions" if picked else label
        raise ValueError(f"{which} do{'' if picked else 'es'} not multiply {fa.name} by {fb.name}")
    family = usable[0]
    pair = fa.name if fa == fb else f"{fa.name}x{fb.name}"
    default = picked == "" or picked == next(f for f in fams if _multiplies(fams[f], fa.name, fb.name))
    label = f"{key}/{pair}" if default else f"{key}/{family}/{pair}"
    params = dict(fams[family]["params"])
    if single is not None:
        label = f"{key}/{family}/{option_name(single).removeprefix('v_mfma_')}/{pair}"
        params["instruction_k"] = instruction_k(single)
    if "fp16_output" in params:  # the unit's fp16-writing model, named after this one
        params["fp16_output"] = _model(f"{label} (fp16 output)", params["fp16_output"])
    return _model(label, params)


def _model(name: str, params: dict) -> Accumulator:
    """The model a table row describes: its ``kind`` names the class, the rest are its fields.

    >>> _model("loop", dict(kind="sequential", acc_format="bf16"))
    Sequential(name='loop', instruction_k=None, promote=None, flush_subnormals=False, source='', acc_format='bf16', acc_rounding='rne')
    """
    fields = dict(params)
    return KINDS[fields.pop("kind")](name, **fields)


def _multiplies(family: dict, a: str, b: str) -> bool:
    """Whether an instruction family takes A in format a and B in format b.

    >>> _multiplies(ARCHITECTURES["blackwell"]["f8f6f4"], "e2m1", "e4m3")
    True
    >>> _multiplies(ARCHITECTURES["ampere"]["f16"], "fp16", "bf16")
    False
    """
    return a in family["takes"] and b in family["takes"] and (a == b or family["mixed"])
