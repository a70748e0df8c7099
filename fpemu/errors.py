"""The one exception of fpemu's own: a command that cannot finish (everything else is a
``ValueError``/``TypeError`` naming a bad argument, or an ``OSError`` naming a file).

The command line prints it as one line and exits with status 1.

>>> raise RunError("no model reproduces the dump")
Traceback (most recent call last):
...
fpemu.errors.RunError: no model reproduces the dump
"""

from __future__ import annotations

import sys
from typing import Callable, Mapping, NoReturn

__all__ = ["RunError", "moved_names", "moved_modules"]


class RunError(Exception):
    """A command that cannot finish for a reason the user can act on (exit status 1)."""


def moved_names(package: str, moved: dict[str, str]) -> Callable[[str], NoReturn]:
    """A package's module ``__getattr__`` for the names it no longer re-exports: each name of
    ``moved`` (name -> the module that defines it) fails saying where it lives now.

    >>> getattr_ = moved_names("fpemu.train", {"cmd_train": "fpemu.train.cli"})
    >>> getattr_("cmd_train")
    Traceback (most recent call last):
    ...
    AttributeError: fpemu.train.cmd_train is fpemu.train.cli.cmd_train now
    """

    def __getattr__(name: str) -> NoReturn:
        if name in moved:
            raise AttributeError(f"{package}.{name} is {moved[name]}.{name} now")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


class _MovedModules:
    """Last on ``sys.meta_path``: asked only once no real module was found, it answers for the
    modules :func:`moved_modules` was told of, with their new spelling."""

    moved: dict[str, str] = {}

    @classmethod
    def find_spec(cls, name: str, path=None, target=None) -> None:
        if name in cls.moved:
            # No ``name=`` on the error: ``from package import module`` would swallow it.
            raise ModuleNotFoundError(cls.moved[name])
        return None


def moved_modules(moved: Mapping[str, str]) -> None:
    """Make an import of each old module name of ``moved`` (old dotted name -> message) fail
    with its message instead of a bare "No module named".

    >>> moved_modules({"fpemu.old_example": "fpemu.old_example is fpemu.formats now"})
    >>> import fpemu.old_example
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: fpemu.old_example is fpemu.formats now
    """
    _MovedModules.moved.update(moved)
    if _MovedModules not in sys.meta_path:
        sys.meta_path.append(_MovedModules)
