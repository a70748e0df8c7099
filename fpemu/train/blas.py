"""BLAS thread pinning: OpenBLAS on one thread while training runs (speed, and the same bits
whatever ``OPENBLAS_NUM_THREADS`` says)."""

from __future__ import annotations

import contextlib
from typing import Callable


@contextlib.contextmanager
def single_threaded_blas():
    """Run every OpenBLAS loaded in this process on one thread inside the block (a no-op where
    none can be found).

    The network's matrices are small (1024 x 64): splitting them over threads gains nothing and,
    on a busy machine, OpenBLAS's spinning threads made a step up to 100x slower. The thread
    count also decides which kernel OpenBLAS picks (on AVX-512 machines its "direct" sgemm,
    which sums in another order, is skipped for mid-sized products when more than one thread
    may run), and so the last bit of the sums: code that must match a
    run bit for bit computes under this same context. Every OpenBLAS is pinned, not just the
    first found, in case another library (torch on some platforms) brings its own.
    """
    controls = _openblas_thread_controls()
    before = [int(get()) for get, _ in controls]
    for _, put in controls:
        put(1)
    try:
        yield
    finally:
        for (_, put), n in zip(controls, before):
            put(n)


def _openblas_thread_controls() -> list[tuple[Callable[[], int], Callable[[int], None]]]:
    """(get_num_threads, set_num_threads) of every OpenBLAS mapped into this process."""
    try:
        import ctypes

        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
        controls = []
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            names = [(f"{prefix}get_num_threads{suffix}", f"{prefix}set_num_threads{suffix}")
                     for prefix in ("scipy_openblas_", "openblas_") for suffix in ("64_", "")]
            for get_name, put_name in names:
                get, put = getattr(lib, get_name, None), getattr(lib, put_name, None)
                if get is not None and put is not None:
                    controls.append((get, put))
                    break
        return controls
    except (OSError, AttributeError):  # no /proc (not Linux), or a library that will not load
        return []
