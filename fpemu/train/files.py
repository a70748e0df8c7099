"""Output files of the train and infer commands: the checks before training and strict JSON."""

from __future__ import annotations

import errno
import math
from pathlib import Path


def check_json_file(path: str) -> None:
    """Open ``path`` for appending (creating nothing that was not there): an OSError naming
    it if it is a directory, its directory is missing, or it is not writable."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(p))
    existed = p.exists()
    with open(p, "a"):
        pass
    if not existed:
        p.unlink()


def finite_or_null(value: object) -> object:
    """``value`` with every non-finite float replaced by None (JSON null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value
