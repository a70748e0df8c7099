"""The cross-check run: every operation of every format of every backend asked for."""

from __future__ import annotations

from typing import Callable, Sequence

from ..arguments import is_whole
from ..backends import BACKENDS, Backend
from ..formats import get_format
from ..progress import progress
from .casts import compare_cast, compare_decode
from .matmul import cpu_matmul_rows, gpu_matmul_rows
from .table import Row


def backend_rows(backend: Backend, formats: Sequence[str] | None = None, n_random: int = 20000, seed: int = 0,
                 step: Callable[[int], None] = lambda n=1: None) -> list[Row]:
    """Every cross-check row of one (available) backend (``step()`` after each format)."""
    rows = []
    for fmt in backend.dtypes():
        if formats and get_format(fmt).name not in {get_format(f).name for f in formats}:
            continue
        skip = backend.skip_ops(fmt)
        ops = ["decode"] + [f"cast {s}" for s in backend.sources]
        for op in ops:
            if op in skip:
                if skip[op] not in ("identity", "2**32 codes"):
                    rows.append(Row(op, fmt, backend.name, status="unsupported", note=skip[op]))
                continue
            try:
                if op == "decode":
                    rows.append(compare_decode(backend, fmt))
                else:
                    rows.append(compare_cast(backend, fmt, op.split()[1], n_random, seed))
            except (RuntimeError, NotImplementedError) as exc:  # the backend's build lacks it (torch raises these)
                note = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                rows.append(Row(op, fmt, backend.name, status="unsupported", note=f"{backend.name} raised: {note}"))
        step(1)
    return rows


def run_crosscheck(
    backends: Sequence[str] = ("all",),
    formats: Sequence[str] | None = None,
    n_random: int = 20000,
    seed: int = 0,
    matmul: bool = True,
    quiet: bool = True,
) -> list[Row]:
    """Run the cross-check for the named backends ("all" = every one); missing backends give
    one ``skipped`` row each. A progress bar shows on a terminal unless ``quiet``."""
    names = list(BACKENDS) if "all" in backends else list(backends)
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise ValueError(f"unknown backend {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"choose from {', '.join(BACKENDS)} or all")  # fmt: skip
    if formats is not None:
        formats = [get_format(f).name for f in formats]  # an unknown name fails before any work
    _check_n_random(n_random)
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rows: list[Row] = []
    present = [(name, BACKENDS[name]()) for name in names]
    total = sum(len(b.dtypes()) + (name in ("torch", "torch-cuda") and matmul) for name, b in present
                if not b.missing())
    with progress(total, "crosscheck", enabled=None if not quiet else False) as step:
        for name, backend in present:
            why = backend.missing()
            if why:
                rows.append(Row("-", "-", name, status="skipped", note=why))
                continue
            rows.extend(backend_rows(backend, formats, n_random, seed, step))
            if name == "torch" and matmul:
                rows.extend(cpu_matmul_rows())
                step(1)
            if name == "torch-cuda" and matmul:
                rows.extend(gpu_matmul_rows("cuda"))
                step(1)
    return rows


#: Most random cases per cast: each is cast by the backend and encoded under up to ~80 option
#: sets, for every format, so the run time is proportional to it.
MAX_RANDOM = 1_000_000


def _check_n_random(n: int) -> int:
    if not is_whole(n):
        raise TypeError(f"n must be an integer, got {n!r}")
    if not 0 <= n <= MAX_RANDOM:
        raise ValueError(f"n (random cases per cast) must be in 0..{MAX_RANDOM:,}, got {n:,}")
    return int(n)
