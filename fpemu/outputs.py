"""Files fpemu writes: the path is checked before any work is done, and the file is written
all at once, so a failed or interrupted run never leaves a partial file nor clobbers an old one.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
>>> with atomic_output(target) as tmp:
...     _ = tmp.write_text("done")
>>> target.read_text()
'done'
>>> check_output_path(target.parent)
Traceback (most recent call last):
...
IsADirectoryError: [Errno 21] is a directory, not a file: ...
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path
from typing import Iterator

__all__ = ["check_output_path", "atomic_output", "json_number", "json_numbers"]


def json_number(v: float) -> float | str:
    """A float as JSON allows it: Inf and NaN as text.

    >>> json_number(1.5), json_number(float("-inf"))
    (1.5, '-inf')
    """
    v = float(v)
    return v if v - v == 0 else str(v)


def json_numbers(values) -> list:
    """A sequence of floats as JSON allows them."""
    return [json_number(v) for v in values]


def _named(exc: OSError, path: Path) -> OSError:
    """The same OSError, naming the file the user gave instead of a temporary one."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def check_output_path(path: str | Path) -> Path:
    """Refuse an output path that cannot be written, before any work is done: a directory,
    a path in a missing directory or under a file, an existing read-only file (OSErrors
    that name the path)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    parent = path.parent
    if not parent.exists():
        raise FileNotFoundError(errno.ENOENT, f"directory {str(parent)!r} does not exist", str(path))
    if not parent.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{str(parent)!r} is not a directory", str(path))
    if path.exists() and not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only", str(path))
    return path


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """A fresh temporary file next to ``path`` to write; when the block ends without an
    error it replaces ``path``, otherwise it is removed: a failed or interrupted run never
    leaves a partial or unverified file (nor clobbers an old one)."""
    path = check_output_path(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.part"
    try:
        with open(tmp, "xb"):  # created with the user's umask, unlike mkstemp's 0600
            pass
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        yield tmp
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _named(exc, path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
