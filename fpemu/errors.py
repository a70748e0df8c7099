"""The one exception of fpemu's own: a command that cannot finish (everything else is a
``ValueError``/``TypeError`` naming a bad argument, or an ``OSError`` naming a file).

The command line prints it as one line and exits with status 1.

>>> raise RunError("no model reproduces the dump")
Traceback (most recent call last):
...
fpemu.errors.RunError: no model reproduces the dump
"""

from __future__ import annotations

__all__ = ["RunError"]


class RunError(Exception):
    """A command that cannot finish for a reason the user can act on (exit status 1)."""
