"""Block-scaled GEMM vectors: A and B as the buffers a Blackwell kernel reads (packed element
codes, scale factors in cuBLASLt's/CUTLASS's 128x4 tiles: :func:`fpemu.mx.gemm_buffers`), c,
and the expected D of a block-scaled accumulator model (:func:`fpemu.gemm`).

Arrays: ``a_data`` (M, packed bytes of K codes), ``a_scale`` (tiled 1-D uint8), ``b_data``
(N, packed bytes: B K-major, as the kernel reads it), ``b_scale``, ``c`` and ``d`` (M, N)
fp32 bit patterns. The metadata holds the model's parameters, the shapes, the block size and
NVFP4's per-tensor amaxes and cuBLASLt alpha, so a file re-checks on its own.

>>> v = block_gemm_vectors("mxfp4", "b200", k=64, n=2)
>>> v["a_data"].shape, v["a_scale"].shape, v["d"].shape, v["meta"]["accumulator"]
((2, 32), (512,), (2, 2), 'b200/mxf4nvf4/e2m1')
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..arguments import is_whole
from ..codec import quantize
from ..version import __version__

#: Most results (M * N) and most products (M * N * K) per file.
MAX_RESULTS, MAX_PRODUCTS = 1 << 20, 1 << 31


def _count(name: str, value: Any, limit: int) -> int:
    if not is_whole(value) or not 1 <= value <= limit:
        raise ValueError(f"{name} must be an integer in 1..{limit:,}, got {value!r}")
    return int(value)


def block_gemm_vectors(fmt: str, accumulator: Any = "b200", k: int | None = None, n: int = 128, *,
                       instruction: str | None = None, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """An (n x k) @ (k x n) block-scaled GEMM D = A @ B + c of block format ``fmt`` in the
    model ``accumulator``; K defaults to four K-blocks. Rows of A and columns of B spread over
    2**-8..2**8 (one scale each), c random with every fifth zero."""
    from .. import mx
    from ..accumulator import cublaslt_alpha, gemm, get_accumulator

    bf = mx.get_block_format(fmt)
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    n = _count("n", n, 1 << 10)
    K = _count("k", 4 * bf.block_size if k is None else k, MAX_PRODUCTS // (n * n))
    model = get_accumulator(accumulator, bf, instruction=instruction)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, K)) * np.exp2(rng.integers(-8, 8, (n, 1)))
    w = rng.standard_normal((K, n)) * np.exp2(rng.integers(-8, 8, (1, n)))
    qa, qb = mx.quantize(x.astype(np.float32), bf), mx.quantize(w.astype(np.float32), bf, axis=0)
    c = np.asarray(quantize(rng.standard_normal((n, n)), "fp32"), dtype=np.float32)
    c.reshape(-1)[::5] = 0.0
    d = gemm(qa, qb, c, accumulator=model)
    a_data, a_scale = mx.gemm_buffers(qa, "a")
    b_data, b_scale = mx.gemm_buffers(qb, "b")
    nv = bf.tensor_scale  # NVFP4's per-tensor scale (nvfp4_ue5m3 has none)
    meta = dict(type="block_gemm", format=bf.name, accumulator=model.name, model=dataclasses.asdict(model),
                shape=[n, n, K], block_size=bf.block_size, scale_layout="128x4 tiles (cuBLASLt, CUTLASS, to_blocked)",
                operands="A (M, K) and B as (N, K), both K-major", seed=seed, n=n * n, fpemu=__version__,
                global_amax=[float(qa.global_amax), float(qb.global_amax)] if nv else None,
                variant=qa.variant if nv else None,
                alpha=float(cublaslt_alpha(qa, qb)) if nv else None)  # fmt: skip
    bits = lambda v: np.ascontiguousarray(v, dtype=np.float32).view(np.uint32)  # noqa: E731
    return {"meta": meta, "a_data": a_data, "a_scale": a_scale, "b_data": b_data, "b_scale": b_scale,
            "c": bits(c), "d": bits(d)}


def verify_block_gemm(v: dict[str, Any]) -> tuple[int, int]:
    """(results, identical): the file's operands read back from its buffers, D recomputed
    with the recorded model."""
    from .. import mx
    from ..accumulator import gemm, model_from_dict

    meta = v["meta"]
    m, n, k = meta["shape"]
    amax = meta["global_amax"] or [None, None]
    extra = lambda i: dict(global_amax=amax[i], variant=meta["variant"]) if amax[i] is not None else {}  # noqa: E731
    qa = mx.from_gemm_buffers(v["a_data"], v["a_scale"], meta["format"], (m, k), "a",
                              block_size=meta["block_size"], **extra(0))  # fmt: skip
    qb = mx.from_gemm_buffers(v["b_data"], v["b_scale"], meta["format"], (k, n), "b",
                              block_size=meta["block_size"], **extra(1))  # fmt: skip
    model = model_from_dict(meta["model"])
    d = gemm(qa, qb, v["c"].view(np.float32), accumulator=model)
    same = d.astype(np.float32).view(np.uint32) == v["d"]
    return int(same.size), int(same.sum())
