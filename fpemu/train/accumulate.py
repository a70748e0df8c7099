"""GEMMs through an accumulator model of :mod:`fpemu.accumulator` (``fpemu.gemm``), with
DeepSeek-V3's promotion of the partial sums to FP32 every ``promote`` products as an option."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..formats import Format
from .checks import check_int


def accumulator_matmul(name: str, *formats: Format, promote: int | None = None) -> Callable[..., np.ndarray]:
    """``matmul(a, b, fa, fb)``: ``a @ b`` of operands already in the formats ``fa``, ``fb``,
    summed as the named unit sums them (FP32 output). Every pair of ``formats`` is looked up
    now, so a bad name or input format fails before training starts.

    >>> from fpemu import get_format
    >>> mm = accumulator_matmul("h100", get_format("e4m3"), promote=128)
    >>> mm(np.ones((1, 256)), np.ones((256, 1)), get_format("e4m3"), get_format("e4m3")).tolist()
    [[256.0]]
    """
    import dataclasses

    from ..accumulator import gemm, get_accumulator

    if promote is not None:
        promote = check_int("promote", promote, 1)
    models: dict[tuple[str, str], object] = {}

    def model(fa: Format, fb: Format):
        key = (fa.name, fb.name)
        if key not in models:
            acc = get_accumulator(name, (fa, fb))
            if promote is not None:
                acc = dataclasses.replace(acc, promote=promote, name=f"{acc.name}+promote{promote}")
            models[key] = acc
        return models[key]

    for fa in formats:
        for fb in formats:
            model(fa, fb)

    def matmul(a: np.ndarray, b: np.ndarray, fa: Format | None = None, fb: Format | None = None) -> np.ndarray:
        return gemm(a, b, inputs=(fa, fb), accumulator=model(fa, fb))

    return matmul


def block_matmul(name: str, kind: str) -> Callable[..., np.ndarray]:
    """``matmul(A, B)``: the product of two :class:`~fpemu.mx.BlockArray` of the block format
    ``kind`` (blocked along K) as the named block-scaled unit sums it (``fpemu.gemm``, FP32
    output). The model is looked up now, so a unit that has no MMA for the format fails
    before any work.

    >>> from fpemu import mx
    >>> mm = block_matmul("b200", "mxfp8_e4m3")
    >>> mm(mx.quantize(np.ones((1, 64)), "mxfp8_e4m3"), mx.quantize(np.ones((64, 1)), "mxfp8_e4m3", axis=0)).tolist()
    [[64.0]]
    """
    from ..accumulator import gemm, get_accumulator

    model = get_accumulator(name, kind)

    def matmul(a, b) -> np.ndarray:
        return gemm(a, b, accumulator=model)

    return matmul
