"""Scratch arrays the kernels reuse from call to call, one set per thread.

A kernel walks its input in cache-sized chunks through a few temporaries. Allocated afresh
for every call, each temporary of a chunk's size (a few hundred KiB) comes from the
operating system as new pages, and the first write into each page costs a page fault: on a
virtual machine more than the arithmetic itself (measured with benchmarks/profile_codec.py:
the first pass into a fresh 512 KiB array ran at 2.8 ns an element, the same pass into a
used one at 0.2). Reused, they stay mapped and in the cache. Each thread has its own, so
parallel pieces never share one; a caller names its buffers so that nested kernels never
share one either. Never return a scratch array to the user: it is overwritten by the next call.

>>> a = scratch("doctest", 4, np.uint8)
>>> b = scratch("doctest", 3, np.uint8)
>>> a.size, b.size, np.shares_memory(a, b)
(4, 3, True)
"""

from __future__ import annotations

import threading

import numpy as np

_LOCAL = threading.local()


def scratch(name: str, size: int, dtype) -> np.ndarray:
    """An uninitialised array of ``size`` elements of ``dtype``: this thread's buffer called
    ``name``, grown when too small."""
    pool = getattr(_LOCAL, "pool", None)
    if pool is None:
        pool = _LOCAL.pool = {}
    key = (name, np.dtype(dtype))
    buffer = pool.get(key)
    if buffer is None or buffer.size < size:
        buffer = pool[key] = np.empty(max(size, 1), dtype=dtype)
    return buffer[:size]
