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
from typing import Any, Callable, Iterable

import numpy as np

__all__ = ["resolve_workers", "run_pieces", "run_each", "MIN_PIECE"]

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
    run_each(fn, _pieces(n, resolve_workers(workers), min_piece), workers)


def run_each(fn: Callable[[Any], Any], items: Iterable[Any], workers: int | None = None) -> list:
    """``[fn(item) for item in items]`` on up to ``workers`` threads, in order; the first
    exception is raised here. Each thread works under the caller's ``np.errstate`` (NumPy's
    error settings belong to a thread), so a warning the caller silenced stays silent.

    >>> run_each(lambda i: i * i, range(5), workers=2)
    [0, 1, 4, 9, 16]
    """
    items = list(items)
    count = min(resolve_workers(workers), len(items))
    if count <= 1:
        return [fn(item) for item in items]
    settings = np.geterr()

    def call(item: Any) -> Any:
        with np.errstate(**settings):
            return fn(item)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(call, items))
