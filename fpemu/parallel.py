"""Work on every core: an array's elements in contiguous pieces, one thread each.

NumPy releases the GIL inside its kernels, so threads over pieces of a large array run in
parallel. Every elementwise result depends on its element alone (stochastic rounding too:
its random bits are a function of the seed and the element's position, see
:mod:`fpemu.codec.rounding`), so the answer is the same bits for every number of workers.

The default number of workers is ``FPEMU_WORKERS`` from the environment, else the number of
CPUs. Small arrays stay on one thread: below about a million elements for the costly
kernels (stochastic rounding, the generic kernel), below a few million for the light ones
(lookup tables, bit-pattern arithmetic), where starting threads and handing the GIL between
them cost more than the second core gives.

>>> resolve_workers(3)
3
>>> out = []
>>> run_pieces(lambda s: out.append((s.start, s.stop)), 10, workers=4, min_piece=3)
>>> sorted(out)
[(0, 3), (3, 6), (6, 10)]
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .arguments import is_whole

__all__ = ["resolve_workers", "run_pieces", "run_each", "MIN_PIECE", "LIGHT_MIN_PIECE", "dask_scheduler",
           "on_cluster", "gathered", "rows_on_cluster"]

#: Below this many elements per piece the threads cost more than they save. Measured on the
#: 2-core build VM (``python benchmarks/bench_parallel.py --crossover``): stochastic rounding
#: on two threads is 0.9x of one at 256K elements and 1.0-1.3x from 1M on.
MIN_PIECE = 1 << 19
#: The same for light kernels (a few ns an element): e4m3 encode on two threads is 0.6-0.9x
#: of one below 1M elements and 1.1-1.4x from 2M on; bf16 encode and decode break even
#: around 4M.
LIGHT_MIN_PIECE = 1 << 21


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
    if not is_whole(workers) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    return int(workers)


def _pieces(n: int, workers: int, min_piece: int) -> list[slice]:
    count = max(1, min(workers, n // max(min_piece, 1)))
    bounds = [n * i // count for i in range(count + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


def run_pieces(fn: Callable[[slice], object], n: int, workers: int | None = None,
               min_piece: int | None = None, light: bool = False) -> None:
    """Call ``fn(piece)`` for contiguous slices covering ``range(n)``, in parallel threads
    (each slice at least ``min_piece`` long: by default :data:`MIN_PIECE`, or
    :data:`LIGHT_MIN_PIECE` for a ``light`` kernel); the first exception is raised here.

    >>> calls = []
    >>> run_pieces(calls.append, 3 * MIN_PIECE, workers=2, light=True)
    >>> calls
    [slice(0, 1572864, None)]
    """
    if min_piece is None:  # read at call time, so that tests can lower them
        min_piece = LIGHT_MIN_PIECE if light else MIN_PIECE
    run_each(fn, _pieces(n, resolve_workers(workers), min_piece), workers)


_THREAD = threading.local()


def in_worker() -> bool:
    """Whether this thread is one of :func:`run_each`'s parallel workers (kernels then take
    larger cache chunks: each NumPy call hands the GIL to the other thread and back, which
    costs more than a chunk of 2**16 elements takes to compute).

    >>> in_worker(), run_each(lambda _: in_worker(), range(2), workers=2)
    (False, [True, True])
    """
    return getattr(_THREAD, "worker", False)


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
        _THREAD.worker = True
        with np.errstate(**settings):
            return fn(item)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(call, items))


# Past one machine: the commands that take --scheduler connect here for their run.
_CLIENT: list = []  # the connected client while a dask_scheduler block runs


@contextlib.contextmanager
def dask_scheduler(address: str | None) -> Iterator[Any]:
    """Connect to a Dask scheduler for the block (None: stay on this machine); inside it,
    :func:`on_cluster` hands arrays to the cluster."""
    if address is None:
        yield None
        return
    try:
        import distributed
    except ImportError:
        raise ValueError("--scheduler needs Dask: pip install 'fpemu[dask]'") from None
    import dask

    # Not the process's default client: one that failed to connect would stay the default and
    # every later Dask computation of the process would wait on it. The block's computations
    # use it through dask.config, undone when the block ends.
    try:
        client = distributed.Client(address, timeout="10s", set_as_default=False)
    except ValueError as exc:  # distributed's own words on a malformed address
        raise ValueError(f"bad Dask scheduler address {address!r}: {exc}") from None
    except (OSError, TimeoutError) as exc:
        raise OSError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    _CLIENT.append(client)
    try:
        with dask.config.set(scheduler=client):
            yield client
    finally:
        _CLIENT.pop()
        client.close()


def on_cluster(x: np.ndarray, rows: int = 1 << 16) -> Any:
    """x as a Dask array of blocks of ``rows`` along the first axis while a scheduler is
    connected (fpemu's functions then run block by block there), else x itself."""
    if not _CLIENT:
        return x
    import dask.array as da

    return da.from_array(x, chunks=(max(1, rows),) + tuple(x.shape[1:]))


def gathered(x: Any) -> Any:
    """A Dask result computed (on the connected scheduler), anything else as it is."""
    return x.compute() if hasattr(x, "compute") and hasattr(x, "map_blocks") else x


def rows_on_cluster(fn: Callable[..., np.ndarray], *arrays: np.ndarray, rows: int = 1 << 14) -> np.ndarray:
    """``fn(*arrays)`` for a function of rows (every array shares axis 0, and each output row
    depends on its input rows alone): on the connected scheduler one task per ``rows`` rows,
    the results concatenated; else here, at once."""
    if not _CLIENT:
        return fn(*arrays)
    client = _CLIENT[-1]
    n = len(arrays[0])
    tasks = [client.submit(fn, *(a[i:i + rows] for a in arrays), pure=False) for i in range(0, n, max(1, rows))]
    return np.concatenate(client.gather(tasks)) if tasks else fn(*arrays)
