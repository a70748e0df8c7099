"""How the kernels walk an array: in cache-sized chunks, through scratch arrays reused from
call to call. Every chunk size of the codec and of the MX pipelines is here, with the
measurement that chose it; none changes a result (each element's code depends on that
element alone), only how fast it comes.

A chunk's temporaries should stay in the CPU cache (the arithmetic then costs little more
than reading the input once), while each NumPy call (1-2 us whatever its size) is spread
over enough elements. In a parallel worker thread (:func:`fpemu.parallel.run_pieces`)
chunks grow, since every NumPy call hands the GIL to the other thread and back.

Allocated afresh for every call, each temporary of a chunk's size (a few hundred KiB) comes
from the operating system as new pages, and the first write into each page costs a page
fault: on a virtual machine more than the arithmetic itself (measured with
benchmarks/profile_codec.py: the first pass into a fresh 512 KiB array ran at 2.8 ns an
element, the same pass into a used one at 0.2). So the kernels take their temporaries from
:func:`scratch`: one set per thread, so that parallel pieces never share one; a caller names
its buffers so that nested kernels never share one either. Never return a scratch array to
the user: it is overwritten by the next call.

>>> [(s.start, s.stop) for s in chunks(10, 4)]
[(0, 4), (4, 8), (8, 10)]
>>> a = scratch("doctest", 4, np.uint8)
>>> b = scratch("doctest", 3, np.uint8)
>>> a.size, b.size, np.shares_memory(a, b)
(4, 3, True)
"""

from __future__ import annotations

import threading

import numpy as np

from ..parallel import in_worker

#: The default chunk (the lookup of the input tables, quantize's float32 magic-number path):
#: 2**16 spread NumPy's per-call cost over too few elements: float16 and int16 input through
#: the lookup tables ran 1.07-1.13x faster at 2**18.
CHUNK = 1 << 18

#: The generic kernel keeps a dozen 8-byte temporaries an element.
GENERIC_CHUNK = 1 << 14

#: The light kernels on float32 input (the 17-bit table lookup, bf16/tf32 bit rounding, bf16
#: decode, the float fields: a few same-type passes): 2**17 elements keep a
#: chunk's input, temporaries and codes (about 1.3 MiB for bf16) in a core's L2 cache, so a
#: neighbour's memory traffic does not reach the passes after the first. 4M float32 values,
#: 4-8 alternating rounds, thread CPU time, 2-core VM (2026-12-07), 2**17 against 2**19:
#: bf16 encode from float32 1.23-1.31x, 1.31-1.33x beside a memory-bound neighbour; bf16 up
#: 1.46x/1.54x; the e3m4 table, tf32 1.05-1.10x; bf16 decode 0.96-1.07x (float64 input: see
#: :data:`NARROW_CHUNK`).
LIGHT_CHUNK = 1 << 17

#: The float64 -> float32 narrowing (:mod:`.fast.float32_alike`) and the light kernels it
#: feeds from float64 input: 2**19, since at 2**17 the narrowing's two dozen NumPy calls a
#: chunk cost more than the smaller chunk saves (idle, 8 alternating rounds, 4M float64 normals, 2**17 against 2**19: e4m3
#: 0.93x, e5m2 0.87x, e2m1 0.88x, bf16 0.97x).
NARROW_CHUNK = 1 << 19

#: The top-half arithmetic (its twenty NumPy calls a chunk): 2**17 keeps a chunk's uint16
#: temporaries in a core's L2 beside a memory-bound neighbour. 4M float32 values, 8
#: alternating rounds, thread CPU time, 2-core VM (2026-12-07), 2**17 against 2**18, idle
#: (other work on the machine) / beside bench_table's memory load: e4m3 1.09/1.11x, e5m2
#: 1.09/1.08x, e2m1 1.08/1.15x, MXFP8 quantize 1.05/1.26x; 2**16 no better than 2**17.
TOP_HALF_CHUNK = 1 << 17

#: The most elements a chunk of a parallel worker thread grows to: two threads' temporaries
#: of 2**20 elements no longer stay in the cache (e4m3 on 2 workers: 496 Melem/s, 957 at 2**19).
WORKER_CHUNK = 1 << 19

#: Elements per chunk of block rows in the MX pipelines (quantize, dequantize): 512 Ki
#: float32 (2 MiB) keeps every intermediate array of a chunk in cache (L2 or L3); the passes
#: then run 20-35% faster than over the whole array at once, and 4-6% faster than at 256 Ki,
#: where NumPy's per-call cost weighs more (compare.py, mx.quantize). (A loop over chunks of
#: many blocks, never over single blocks.)
MX_CHUNK = 1 << 19


def chunk_size(base: int = CHUNK) -> int:
    """Elements per chunk: ``base``; in a parallel worker thread four times that, up to
    :data:`WORKER_CHUNK` (there the GIL's hand-over between threads, once per NumPy call,
    outweighs the cache's gain, until two threads' temporaries outgrow the cache)."""
    return max(base, min(base * 4, WORKER_CHUNK)) if in_worker() else base


def chunks(n: int, size: int | None = None):
    """Slices covering range(n) in cache-sized pieces (default: :func:`chunk_size`)."""
    size = chunk_size() if size is None else size
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


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


def last_axis_max(a: np.ndarray) -> np.ndarray:
    """The maximum over the last axis of a C-contiguous array: adjacent pairs halved along
    the flat array while the length is even (one long strided pass each, together about one
    pass over a; a reduction over 32 elements a block costs NumPy a call per block, 2.6 times
    slower), then a reduction over the odd rest. (The MX scales' amax and the top-half
    arithmetic's block maxima: one walk for both.)

    >>> last_axis_max(np.array([[3, 9, 2, 4, 1, 1], [0, 5, 7, 6, 8, 2]], np.uint32)).tolist()
    [9, 8]
    """
    k, lead = a.shape[-1], a.shape[:-1]
    flat, level = a.reshape(-1), 0
    while k % 2 == 0:  # (into two reused buffers in turn, never into a)
        half = scratch(f"amax.half{level % 2}", flat.size // 2, a.dtype)
        flat, k, level = np.maximum(flat[0::2], flat[1::2], out=half), k // 2, level + 1
    if k == 1:  # (a copy: a reduction over one element a row costs a call a row)
        return flat.reshape(lead).copy()
    return flat.reshape(lead + (k,)).max(axis=-1)  # (a new array)
