"""Progress of a long command on stderr, off with ``--quiet``: on a terminal a bar (tqdm's
where installed, ``pip install fpemu[progress]``, else one plain line rewritten in place);
elsewhere (a pipe, a log, CI) a line ``label: i/total (s)`` every :data:`LINES_EVERY_S`
seconds, the first only after that long, so a short run stays silent and a run of minutes
never is.

>>> with progress(3, "cases", enabled=False) as step:
...     for _ in range(3):
...         step()
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Callable, Iterator

__all__ = ["progress", "wanted", "step_lines", "LINES_EVERY_S"]

#: Where stderr is not a terminal, a long command's progress line comes at most this often
#: (seconds); read at each call, so a test can set it.
LINES_EVERY_S = 5.0


def wanted(quiet: bool = False) -> bool:
    """Whether to show progress: stderr is a terminal and the user did not ask for quiet."""
    return not quiet and hasattr(sys.stderr, "isatty") and sys.stderr.isatty()


@contextlib.contextmanager
def progress(total: int, label: str, enabled: bool | None = None,
             lines_every: float | None = None) -> Iterator[Callable[[int], None]]:
    """A ``step(n=1)`` callback that advances a bar of ``total`` steps, shown when ``enabled``
    (default: :func:`wanted`); the bar is cleared when the block ends.

    Where ``enabled`` is None and stderr is not a terminal (a log, a pipe), a line
    ``label: i/total (s)`` on stderr at most every ``lines_every`` seconds (default
    :data:`LINES_EVERY_S`), the first one only after that long (a short run stays silent);
    ``enabled=False`` (--quiet) silences both."""
    if enabled is None:
        enabled = wanted()
        if not enabled:
            yield _lines(total, label, LINES_EVERY_S if lines_every is None else lines_every)
            return
    if not enabled:
        yield lambda n=1: None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        with tqdm(total=total, desc=label, file=sys.stderr, leave=False, dynamic_ncols=True) as bar:
            yield bar.update
        return
    done = [0]
    last = [0.0]

    def step(n: int = 1) -> None:
        done[0] += n
        now = time.monotonic()
        if now - last[0] >= 0.2 or done[0] >= total:
            last[0] = now
            sys.stderr.write(f"\r{label}: {done[0]}/{total}")
            sys.stderr.flush()

    try:
        yield step
    finally:
        sys.stderr.write("\r" + " " * (len(label) + 2 * len(str(total)) + 4) + "\r")
        sys.stderr.flush()


def _lines(total: int, label: str, every: float) -> Callable[[int], None]:
    """A ``step`` that prints a progress line at most every ``every`` seconds."""
    start = time.monotonic()
    done, last = [0], [start]

    def step(n: int = 1) -> None:
        done[0] += n
        now = time.monotonic()
        if now - last[0] >= every:
            last[0] = now
            print(f"{label}: {done[0]}/{total} ({now - start:.0f} s)", file=sys.stderr, flush=True)

    return step


def step_lines(every: float | None = None) -> Callable[[str, int, int], None]:
    """A ``show(label, i, n)`` callback (a training loop's, per step) for where no bar shows:
    a line ``label: step i/n (s)`` on stderr at most every ``every`` seconds (default
    :data:`LINES_EVERY_S`), the first only after that long, and none once a run is done.

    >>> show = step_lines(every=3600.0)
    >>> show("fp16", 1, 300)  # (silent: not an hour yet)
    """
    every = LINES_EVERY_S if every is None else every
    start = time.monotonic()
    last = [start]

    def show(label: str, i: int, n: int) -> None:
        now = time.monotonic()
        if now - last[0] >= every and i < n:
            last[0] = now
            print(f"{label}: step {i}/{n} ({now - start:.0f} s)", file=sys.stderr, flush=True)

    return show
