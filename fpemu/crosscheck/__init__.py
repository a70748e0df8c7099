"""Cross-check fpemu against other implementations: ml_dtypes, numpy, torch (CPU and CUDA).

For every backend that is installed and every format it implements, three operations are
compared code for code:

* ``decode``: every code of the format (all of them up to 16 bits) read by the backend and by
  :func:`fpemu.decode`;
* ``cast f32`` / ``cast f64``: float32 / float64 values cast by the backend and encoded by
  :func:`fpemu.encode`. The values are the format's edge cases (every representable value and
  the float neighbours around it, every tie and the neighbours of every tie, the subnormal and
  overflow boundaries, +-0, +-Inf, quiet, signalling and payload NaNs) plus random data
  (random bit patterns and random values across the format's range).

When fpemu's default options do not reproduce the backend, a small set of option combinations
(overflow, NaN policy, ties away, and "cast through float32 first" for float64 sources) is
searched and the simplest one that reproduces every case is reported, e.g. ``torch saturates:
overflow='saturate'``. When none does, the closest one is reported with what is left.

The torch backend also compares CPU matrix products (fp32, bf16, fp16, FP8 through
``torch._scaled_mm``) with fpemu's IEEE fp32 loop. With CUDA, ``torch-cuda`` repeats the casts
on the GPU and compares GPU matrix products (fp16, bf16, tf32 and FP8 through
``torch._scaled_mm``) with the matching accumulator preset.

>>> rows = run_crosscheck(["numpy"], n_random=200)
>>> [(r.operation, r.format, r.status) for r in rows]
[('decode', 'fp16', 'identical'), ('cast f32', 'fp16', 'reproduced'), ('cast f64', 'fp16', 'reproduced'), ('cast f64', 'fp32', 'reproduced')]
>>> rows[1].reproduced_by.split(": ")[0]  # then nan='payload' (numpy's own rule) or 'quiet_payload' (F16C builds)
'numpy keeps NaN payload bits'

Which option reproduces a backend is a fact about that backend's build (and, for matrix
products, the CPU and thread count), so the report states it and the tests assert only what
holds for every build.

The package, in the order the data flows: ``table`` (:class:`Row`, one line of the report,
and :func:`format_table`), ``casts`` (:func:`compare_cast` with the option search, and
:func:`compare_decode`), ``matmul`` (:func:`compare_matmul`, torch's CPU and CUDA matrix
products), ``run`` (:func:`run_crosscheck`: the rows of every backend asked for) and ``cli``
(``fpemu crosscheck``). The inputs come from :mod:`fpemu.cases` and the backends from
:mod:`fpemu.backends`.
"""

from ..backends import BACKENDS
from ..cases import edge_cases, random_cases
from .casts import compare_cast, compare_decode
from .run import run_crosscheck
from .table import Row, format_table

__all__ = [
    "Row",
    "BACKENDS",
    "edge_cases",
    "random_cases",
    "compare_cast",
    "compare_decode",
    "run_crosscheck",
    "format_table",
]
