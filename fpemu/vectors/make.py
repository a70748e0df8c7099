"""The vectors: a cast's inputs with fpemu's codes and values, MX and NVFP4 blocks, dot
products of an accumulator model; each with the metadata that made it."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arguments import is_whole, option_name
from ..cases import edge_cases, matmul_inputs, random_cases
from ..codec import Conversion, decode, encode
from ..formats import get_format
from ..parallel import gathered, on_cluster, rows_on_cluster
from ..version import __version__
from .exhaustive import exhaustive_inputs

if TYPE_CHECKING:
    from ..accumulator import Accumulator

VECTOR_KINDS = ("edge", "random", "exhaustive")
_UINT = {"f32": np.uint32, "f64": np.uint64}
FLOAT = {"f32": np.float32, "f64": np.float64}

#: Most input values one file may hold (cast inputs, block elements, dot products): the work
#: and memory are proportional to it, so a typo such as ``--n 1000000000000`` is refused
#: up front instead of exhausting memory.
MAX_VALUES = 10_000_000
#: Longest dot product of dot vectors (the models loop over blocks of K).
MAX_K = 1 << 16


def _version() -> str:
    return __version__


def _positive_count(name: str, value: int, limit: int, per: int = 1, what: str = "values per file") -> int:
    """value as an int in 1..limit // per, or an error saying why (before any allocation)."""
    if not is_whole(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    if value * per > limit:
        made = f" (= {value * per:,} {what})" if per > 1 else ""
        raise ValueError(f"{name} = {value:,} is too large{made}: at most {limit:,} {what}")
    return int(value)


def cast_vectors(
    fmt: str,
    kind: str = "edge",
    n: int = 10000,
    *,
    conversion: Conversion | None = None,
    rounding: str | None = None,
    overflow: str | None = None,
    nan: str | None = None,
    source: str = "f32",
    seed: int = 0,
) -> dict[str, Any]:
    """Inputs and fpemu's expected codes and values for a cast into ``fmt``.

    ``kind``: ``edge`` (ties, neighbours of every value and tie, subnormal and overflow
    boundaries, zeros, Infs, NaNs: see :func:`fpemu.cases.edge_cases`), ``random``
    (``n`` random bit patterns and values, from ``seed``) or ``exhaustive``
    (:func:`exhaustive_inputs`: every input class a deterministic rounding can tell apart;
    formats of at most 16 bits). NaN inputs are left out when the options make fpemu raise on
    them. The cast is a :class:`~fpemu.Conversion` (``conversion=``, e.g. :func:`~fpemu.like`'s,
    with ``directed_overflow``, ``via``, ``sr_bits``) or the keywords ``rounding``, ``overflow``,
    ``nan``; the metadata records every option it fixes.

    Stochastic rounding (``rounding="sr"``) draws from ``seed`` too, so the file can be
    re-checked; as no kernel shares fpemu's random bits, such files also hold ``code_down``
    and ``code_up`` (rounding down and up): every stochastic code is one of the two. P3109's
    stochastic roundings with ``sr_bits`` N (and gfloat's ``stochastic_odd``) take their N bits
    per value from the file: ``random_bits`` (the conversion's, broadcast to the inputs, or
    drawn from ``seed``), so a kernel fed the same bits must give every code.

    >>> v = cast_vectors("e2m1", "edge")
    >>> v["meta"]["format"], v["code"].dtype, len(v["code"]) == len(v["value"])
    ('e2m1', dtype('uint8'), True)
    >>> v = cast_vectors("e4m3", "random", 8, conversion=Conversion(rounding="sra", sr_bits=3, overflow="saturate"))
    >>> v["meta"]["sr_bits"], v["random_bits"].dtype, bool((v["random_bits"] < 8).all())
    (3, dtype('uint32'), True)
    """
    from ..codec import STOCHASTIC_WITH_BITS, is_stochastic

    f = get_format(fmt)
    if kind not in VECTOR_KINDS:
        raise ValueError(f"kind must be one of {', '.join(VECTOR_KINDS)}, got {kind!r}")
    if source not in FLOAT:
        raise ValueError(f"source must be 'f32' or 'f64', got {source!r}")
    _check_seed(seed)
    conv = Conversion.of(conversion, rounding=rounding, overflow=overflow, nan=nan)
    canonical = conv.resolved(f).rounding  # bad options fail before any work
    stochastic = is_stochastic(canonical)
    given_bits = canonical in STOCHASTIC_WITH_BITS
    encode(np.zeros(1), f, conversion=conv.replace(random_bits=None))
    if kind == "exhaustive":
        if stochastic:
            raise ValueError("stochastic rounding depends on every input bit below the kept ones, so no input set "
                             "is exhaustive for it: use --kind edge or random (with --seed)")  # fmt: skip
        x = exhaustive_inputs(f, FLOAT[source])
    elif kind == "edge":
        x, _ = edge_cases(f, FLOAT[source])
    else:
        n = _positive_count("n", n, MAX_VALUES, what="cast inputs per file")
        x, _ = random_cases(f, FLOAT[source], n, seed)
    if not f.has_nan and option_name(conv.nan) in (None, "raise"):
        x = x[~np.isnan(x)]  # fpemu raises on these by default: no expected code to give
    bits = None
    if given_bits:  # the file carries the N bits of each value: a kernel can be fed the same
        bits = (np.random.default_rng(seed).integers(0, 1 << conv.sr_bits, x.size) if conv.random_bits is None
                else np.broadcast_to(conv.random_bits, x.shape)).astype(np.uint32)
        conv = conv.replace(random_bits=bits)

    def cast(c: Conversion, rng: int | None = None) -> np.ndarray:  # on `fpemu vectors --scheduler`'s Dask, if any
        return gathered(encode(on_cluster(x), f, conversion=c, rng=rng))

    codes = cast(conv, seed if stochastic and not given_bits else None)  # the seed draws stochastic rounding's bits
    values = decode(codes, f)
    meta = dict(type="cast", format=f.name, kind=kind, rounding=conv.rounding or "nearest_even", overflow=conv.overflow,
                nan=conv.nan, source=source, seed=seed, n=int(x.size), fpemu=_version())  # fmt: skip
    meta.update({k: conv[k] for k in ("sr_bits", "directed_overflow", "no_code", "via") if k in conv})
    out = {"meta": meta, "input_bits": x.view(_UINT[source]), "code": codes, "value": values}
    if bits is not None:
        out["random_bits"] = bits
    if stochastic:
        meta["stochastic"] = ("code: fpemu's stochastic rounding with random_bits" if given_bits else
                              "code: one draw of fpemu's stochastic rounding from seed") + "; code_down/code_up: its two choices"
        plain = conv.replace(sr_bits=None, random_bits=None)
        out["code_down"] = cast(plain.replace(rounding="down"))
        out["code_up"] = cast(plain.replace(rounding="up"))
    return out


def _check_seed(seed: int) -> None:
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def block_vectors(fmt: str, kind: str = "random", n: int = 64, *, scale_rounding: str | None = None,
                  seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """MX / NVFP4 vectors: ``n`` blocks (one a row) of float32 inputs with the expected scale
    code per block, element codes and dequantized values; NVFP4 treats the whole array as one
    tensor (its per-tensor scale goes into the metadata). ``scale_rounding`` is the MX scale
    rule (default ``floor``); NVFP4's UE4M3 scales have none, and refuse any other rule.

    ``kind``: ``random`` (values over several binades, one block in eight all zero, a few
    with a value near a power of two) or ``edge`` (the SPEC section 3/4 example blocks and
    blocks around every power-of-two amax of the element format).

    >>> v = block_vectors("mxfp4", n=4)
    >>> v["input_bits"].shape, v["scale"].shape, v["code"].shape
    ((4, 32), (4,), (4, 32))
    """
    from .. import mx

    bf = mx.get_block_format(fmt)
    k = bf.block_size
    if kind not in ("random", "edge"):
        raise ValueError(f"block vectors come in kinds 'random' and 'edge', got {kind!r}")
    _check_seed(seed)
    if kind == "random":
        n = _positive_count("n", n, MAX_VALUES, per=k, what="block elements per file")
    rng = np.random.default_rng(seed)
    if kind == "random":
        x = rng.standard_normal((n, k)) * np.exp2(rng.integers(-20, 20, size=(n, 1)))
        x[:: 8] = 0.0
        x[3::8, 0] = np.exp2(rng.integers(-10, 10, size=x[3::8].shape[0])) * (1 - 2.0**-24)
    elif kind == "edge":
        rows = [[500.0, -3.0, 0.1, 0.001, 1.0], [7.0, 3.0, 1.0, 0.4, -0.24, 0.26, 5.0], [150.0, 1.0], [0.0],
                [100.0, -37.0, 5.0], [0.001, -0.0004]]  # fmt: skip
        top = bf.max_value
        for e in range(-8, 9):
            for m in (1.0, 1.5, 1 - 2.0**-24):
                rows.append([top * m * 2.0**e, -top * 2.0**e / 3, top * 2.0**e / 1000])
        x = np.zeros((len(rows), k))
        for i, r in enumerate(rows):
            x[i, : len(r)] = r
    x = x.astype(np.float32)
    sr = scale_rounding if bf.is_nvfp4 else scale_rounding or "floor"  # NVFP4: quantize refuses a rule
    q = mx.quantize(on_cluster(x, 1 << 12), bf, axis=-1, scale_rounding=sr).compute()
    meta = dict(type="block", format=bf.name, kind=kind, scale_rounding=None if bf.is_nvfp4 else sr, seed=seed,
                n=int(x.shape[0]), fpemu=_version(),
                global_scale=None if q.global_scale is None else float(q.global_scale))  # fmt: skip
    return {
        "meta": meta,
        "input_bits": x.view(np.uint32),
        "scale": q.scales.reshape(-1),
        "code": q.codes,
        "value": q.dequantize(np.float32),
    }


def dot_vectors(inputs: str, accumulator: "str | Accumulator", k: int | None = None, n: int = 1000, *, out: str = "fp32",
                seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Dot products ``d = a . b + c`` of a named accumulator, in the hwdata layout (fp32 bit
    patterns ``a``, ``b`` (n, K), ``c`` (n,), ``d_fp32`` or ``d_fp16`` (n,)).

    K defaults to two blocks of the model (so the recursive accumulation is covered); inputs
    spread over about 2**-8..2**8, random signs; c random (fp16-rounded for fp16 output).

    >>> v = dot_vectors("fp16", "v100", n=3)
    >>> v["a"].shape, v["meta"]["accumulator"], v["meta"]["model"]["frac_bits"]
    ((3, 8), 'v100/fp16', 23)
    """
    from ..accumulator import dot, get_accumulator
    from ..codec import quantize

    if out not in ("fp32", "fp16"):
        raise ValueError(f"dot vectors have fp32 or fp16 results (the hwdata columns d_fp32, d_fp16), got out={out!r}")
    _check_seed(seed)
    acc = get_accumulator(accumulator, inputs)
    K = _positive_count("k", k, MAX_K, what="products per row") if k is not None else 2 * min(getattr(acc, "block", None) or 16, 1024)
    n = _positive_count("n", n, MAX_VALUES, per=K, what="products per file")
    a, bt = matmul_inputs(inputs, n, K, n, seed)
    b = bt.T.copy()
    rng = np.random.default_rng(seed + 1)
    c = quantize(rng.standard_normal(n) * np.exp2(rng.integers(-6, 6, size=n)), "fp16" if out == "fp16" else "fp32")
    c[::5] = 0.0
    d = rows_on_cluster(lambda a, b, c: dot(a, b, c, inputs=inputs, accumulator=acc, out=out), a, b, c)
    as_bits = lambda v: np.asarray(v, dtype=np.float32).view(np.uint32)  # noqa: E731
    # The model's parameters go into the file too, so a file made with a custom Accumulator
    # (or with a preset that later changes) can still be re-checked.
    meta = dict(type="dot", inputs=get_format(inputs).name, accumulator=acc.name, model=dataclasses.asdict(acc),
                out=out, k=K, seed=seed, n=n, fpemu=_version())  # fmt: skip
    return {"meta": meta, "a": as_bits(a), "b": as_bits(b), "c": as_bits(c), f"d_{out}": as_bits(d)}
