"""Work on every core: an array's elements in contiguous pieces, one thread each.

NumPy releases the GIL inside its kernels, so threads over pieces of a large array run in
parallel. Every elementwise result depends on its element alone (stochastic rounding too:
its random bits are a function of the seed and the element's position, see
:mod:`fpemu.codec.rounding`), so the answer is the same bits for every number of workers.

The default number of workers is ``FPEMU_WORKERS`` from the environment, else the number of
CPUs; arrays smaller than a few hundred thousand elements stay on one thread.

>>> resolve_workers(3)
3
>>> out = []
>>> run_pieces(lambda s: out.append((s.start, s.stop)), 10, workers=4, min_piece=3)
>>> sorted(out)
[(0, 3), (3, 6), (6, 10)]
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

__all__ = ["resolve_workers", "run_pieces", "MIN_PIECE"]

#: Below this many elements per piece the threads cost more than they save.
MIN_PIECE = 1 << 17


def resolve_workers(workers: int | None) -> int:
    """The number of threads: ``workers``, or ``FPEMU_WORKERS``, or the CPU count.

    >>> resolve_workers(0)
    Traceback (most recent call last):
    ...
    ValueError: workers must be a whole number >= 1, got 0
    """
    if workers is None:
        env = os.environ.get("FPEMU_WORKERS", "").strip()
        if env:
            try:
                workers = int(env)
            except ValueError:
                raise ValueError(f"FPEMU_WORKERS must be a whole number >= 1, got {env!r}") from None
            if workers < 1:
                raise ValueError(f"FPEMU_WORKERS must be a whole number >= 1, got {env!r}")
            return workers
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    return workers


def _pieces(n: int, workers: int, min_piece: int) -> list[slice]:
    count = max(1, min(workers, n // max(min_piece, 1)))
    bounds = [n * i // count for i in range(count + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


def run_pieces(fn: Callable[[slice], object], n: int, workers: int | None = None,
               min_piece: int = MIN_PIECE) -> None:
    """Call ``fn(piece)`` for contiguous slices covering ``range(n)``, in parallel threads
    (each slice at least ``min_piece`` long); the first exception is raised here."""
    pieces = _pieces(n, resolve_workers(workers), min_piece)
    if len(pieces) == 1:
        fn(pieces[0])
        return
    with ThreadPoolExecutor(max_workers=len(pieces)) as pool:
        for future in [pool.submit(fn, piece) for piece in pieces]:
            future.result()
