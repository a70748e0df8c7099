"""How the rows of a product are cut into pieces: the one place that sizes them, for every
model, dense or block-scaled, GEMM or batched dot.

A piece of rows is computed at once, its arrays vectorised over all of its results, and the
pieces run on the workers' threads. A piece holds about :data:`PIECE_VALUES` values, so that
the (results,) arrays a kernel walks for every k stay in cache; on several workers, each gets
a piece of at least :data:`MIN_ROWS` rows where there are enough. Rows are independent in
every model, so the pieces never change a bit.

>>> [(s.start, s.stop) for s in row_pieces(5, 1 << 15)]
[(0, 2), (2, 4), (4, 5)]
>>> [(s.start, s.stop) for s in row_pieces(200, 4, workers=2)]
[(0, 100), (100, 200)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..parallel import resolve_workers
from .model import Accumulator, DenseModel, Exact, Pairwise

#: Values one piece holds at once (2**16: its float64 and int64 arrays stay in cache).
PIECE_VALUES = 1 << 16
#: Fewest rows worth a thread of their own.
MIN_ROWS = 64
#: Limbs the exact dense model's long accumulator holds per result (about).
EXACT_LIMBS = 16


def k_stretches(k0: int, k1: int, unit: int, parts: int) -> list[tuple[int, int]]:
    """products k0..k1-1 in about ``parts`` consecutive stretches (at least one), each ending
    on a multiple of ``unit`` past k0 but the last: where a kernel chains its blocks (of
    ``unit`` products) from one stretch into the next, the same bits as one run over all,
    and a progress bar's steps while a long K runs.

    >>> k_stretches(0, 100, 32, 2), k_stretches(0, 10, 32, 4), k_stretches(5, 5, 32, 3)
    ([(0, 64), (64, 100)], [(0, 10)], [(5, 5)])
    """
    blocks = -(-(k1 - k0) // max(unit, 1))
    count = max(1, min(parts, blocks))
    ends = [k0 + min(k1 - k0, -(-blocks * (i + 1) // count) * unit) for i in range(count)]
    return list(zip([k0] + ends[:-1], ends))


def told_stretches(k0: int, k1: int, unit: int, parts: int,
                   tick: Callable[[int], None] | None) -> Iterator[tuple[int, int]]:
    """:func:`k_stretches`, telling ``tick(1)`` after each one is worked and the rest of
    ``parts`` at the end (``parts`` in all; none without a tick or parts).

    >>> told = []
    >>> [s for s in told_stretches(0, 10, 32, 3, told.append)], told
    ([(0, 10)], [1, 2])
    """
    stretches = k_stretches(k0, k1, unit, parts)
    for stretch in stretches:
        yield stretch
        if tick is not None and parts:
            tick(1)
    if tick is not None and parts > len(stretches):
        tick(parts - len(stretches))


def values_per_row(model: Accumulator, K: int, N: int, paired: bool) -> int:
    """What one row of A holds at once in the model's kernel: its results (N of a GEMM, one of
    a dot), each with the values the model keeps for it (a pairwise tree's products, the exact
    model's limbs); a dense dot's piece holds its rows of both operands, K values a row.

    >>> from fpemu.accumulator import get_accumulator
    >>> values_per_row(get_accumulator("h100", "fp16"), 64, 128, False), values_per_row(get_accumulator("exact"), 64, 128, False)
    (128, 2048)
    >>> values_per_row(get_accumulator("h100", "fp16"), 64, 1, True), values_per_row(get_accumulator("b200", "nvfp4"), 64, 1, True)
    (64, 1)
    """
    if paired:
        return max(K, 1) if isinstance(model, DenseModel) else 1
    held = 1
    if isinstance(model, Pairwise):
        held = max(K if model.block is None else model.block, 1)
    elif isinstance(model, Exact):
        held = EXACT_LIMBS
    return max(N, 1) * held


def row_pieces(rows: int, per_row: int, workers: int | None = None, at_least: int = 1) -> list[slice]:
    """Slices covering ``range(rows)``: pieces of about :data:`PIECE_VALUES` values
    (``per_row`` values a row, at least one row a piece), smaller where that gives each of
    several workers a piece of at least :data:`MIN_ROWS` rows, and ``at_least`` pieces where
    there are that many rows (a progress bar's steps).

    >>> [(s.start, s.stop) for s in row_pieces(5, 1, at_least=2)]
    [(0, 3), (3, 5)]
    """
    size = min(max(1, PIECE_VALUES // max(per_row, 1)), max(1, -(-rows // at_least)))
    threads = resolve_workers(workers)
    if threads > 1:
        size = min(size, max(MIN_ROWS, -(-rows // threads)))
    return [slice(i, min(i + size, rows)) for i in range(0, rows, size)]
