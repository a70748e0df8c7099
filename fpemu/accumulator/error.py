"""Error of an emulated GEMM against the exact product (DeepSeek-V3's experiment):
:func:`gemm_error` and the bounds of its sizes."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

from ..arguments import is_whole
from ..codec import is_dask, quantize
from ..parallel import gathered, on_cluster
from .kernels.exact import exact_sum
from .kernels.operand import element_operand
from .kernels.products import element_products
from .lookup import input_formats, get_accumulator
from .gemm import dense_gemm, gemm
from .operands import accumulator_operand
from .pieces import row_pieces, values_per_row
from .model import Accumulator


def gemm_error(
    inputs: str | Sequence[str] = "e4m3",
    accumulator: str | Accumulator = "h100",
    k: int = 4096,
    *,
    m: int = 64,
    n: int = 64,
    promote: int | None = None,
    seed: int = 0,
    distribution: str = "uniform",
    step: Callable[[int], None] | None = None,
) -> dict:
    """Relative error of the emulated GEMM against the exact product, for random matrices.

    A (m, k) and B (k, n) are drawn (``"uniform"`` on [0, 1), so no cancellation hides the
    loss; or ``"normal"``), quantized to ``inputs`` (RNE); the reference is the exact product
    (rounded to odd at float64 precision). Returns the elementwise relative error's max and
    mean (over the entries whose exact value is not zero) and the normwise error
    ||C - C_exact||_F / ||C_exact||_F. ``step(rows)`` (a progress bar's) is told of the
    rows done, 2 m in all (the emulated GEMM's rows, then the exact product's), a row at a
    time as K runs where the kernels can tell.

    >>> r = gemm_error("e4m3", "h100", 512, m=4, n=4)
    >>> 0 < r["max"] < 0.01
    True

    The sizes are bounded (:data:`GEMM_ERROR_LIMITS`) because the matrices are drawn from
    them: an absurd ``k`` is refused before anything is allocated.
    """
    _check_gemm_error_sizes(m, k, n)
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if distribution not in ("uniform", "normal"):
        raise ValueError(f"distribution must be 'uniform' or 'normal', got {distribution!r}")
    fa, fb = input_formats(inputs)
    acc = get_accumulator(accumulator, (fa, fb))
    if promote is not None:
        acc = dataclasses.replace(acc, promote=promote, name=f"{acc.name}+promote{promote}")
    rng = np.random.default_rng(seed)
    draw = rng.random if distribution == "uniform" else rng.standard_normal
    A = quantize(draw((m, k)), fa)
    B = quantize(draw((k, n)), fb)
    step = step or (lambda rows: None)
    if is_dask(on_cluster(A[:1])):  # on a cluster: one call, its tiles
        got = np.asarray(gathered(gemm(on_cluster(A, 64), B, inputs=(fa, fb), accumulator=acc)), np.float64)
        step(m)
    else:  # B prepared once for every piece of rows (a long K made that the work), rows told as done
        c = accumulator_operand(None, (m, n), "fp32")
        got = dense_gemm(A, B, c, acc, fa, fb, "fp32", None, step).astype(np.float64)
    exact = np.empty((m, n))
    opb = element_operand(np.asarray(B, dtype=np.float64), fb, False, None)  # B prepared once
    exact_per_row = values_per_row(get_accumulator("exact"), k, n, paired=False)
    for rows in row_pieces(m, exact_per_row, workers=1):  # (its steps as the terms go in)
        prods = element_products(A[rows], opb, fa, fb, True, False)
        exact[rows] = exact_sum(prods, 0, k, np.zeros(prods.R), step, rows.stop - rows.start).reshape(-1, n)
    nz = exact != 0
    rel = np.abs(got[nz] - exact[nz]) / np.abs(exact[nz])
    return {
        "accumulator": acc.name,
        "inputs": f"{fa.name}" if fa == fb else f"{fa.name}x{fb.name}",
        "k": k,
        "shape": (m, n),
        "promote": promote,
        "max": float(rel.max()) if rel.size else 0.0,
        "mean": float(rel.mean()) if rel.size else 0.0,
        "normwise": _normwise(got, exact),
    }


# Bounds of gemm_error's sizes: each drawn matrix holds at most MAX_ELEMENTS values (float64,
# 512 MiB) and the emulated GEMM at most MAX_PRODUCTS products (about 2**24 per second).
GEMM_ERROR_LIMITS = {"max_elements": 2**26, "max_products": 2**32}


def _check_gemm_error_sizes(m: object, k: object, n: object) -> None:
    """m, k, n positive integers whose matrices and product count stay within the limits."""
    for name, value in (("m", m), ("k", k), ("n", n)):
        if not is_whole(value):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    limit = GEMM_ERROR_LIMITS["max_elements"]
    for what, size in (("A (m x k)", m * k), ("B (k x n)", k * n), ("C (m x n)", m * n)):
        if size > limit:
            raise ValueError(f"{what} would hold {size} values; the limit is {limit} (2**26)")
    if m * n * k > GEMM_ERROR_LIMITS["max_products"]:
        raise ValueError(
            f"m x n x k = {m * n * k} products is too many to emulate; the limit is "
            f"{GEMM_ERROR_LIMITS['max_products']} (2**32, several minutes)"
        )


def _normwise(got: np.ndarray, exact: np.ndarray) -> float:
    """||got - exact||_F / ||exact||_F; Inf when the exact product is zero and got is not."""
    diff = float(np.linalg.norm(got - exact))
    norm = float(np.linalg.norm(exact))
    if norm == 0:
        return 0.0 if diff == 0 else math.inf
    return diff / norm
