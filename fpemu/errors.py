"""The one exception of fpemu's own: a command that cannot finish (everything else is a
``ValueError``/``TypeError`` naming a bad argument, or an ``OSError`` naming a file), and the
one rule that sorts a file's failure into the command line's two kinds.

The command line prints it as one line and exits with status 1.

>>> raise RunError("no model reproduces the dump")
Traceback (most recent call last):
...
fpemu.errors.RunError: no model reproduces the dump
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["RunError", "MISSING_PATH", "path_error", "optional_module"]


class RunError(Exception):
    """A command that cannot finish for a reason the user can act on (exit status 1)."""


#: A path given on the command line that does not exist or is the wrong kind (a directory
#: where a file goes, a file where a directory goes): a usage error (exit status 2), as a bad
#: value is. A path that exists but cannot be read or written (permissions, a full disk) is a
#: failed run (1).
MISSING_PATH = (FileNotFoundError, NotADirectoryError, IsADirectoryError)


def path_error(option: str, path: str, exc: OSError) -> Exception:
    """The error for ``option``'s ``path`` that ``exc`` refused, by the rule of
    :data:`MISSING_PATH`: a ValueError (usage) or a RunError (a failed run).

    >>> path_error("--plot", "/no/dir", FileNotFoundError(2, "directory '/no' does not exist", "/no/dir"))
    ValueError("cannot write --plot /no/dir: directory '/no' does not exist")
    """
    where = exc.filename if exc.filename is not None else path
    message = f"cannot write {option} {where}: {exc.strerror or exc}"
    return ValueError(message) if isinstance(exc, MISSING_PATH) else RunError(message)


def optional_module(name: str, needed_by: str) -> ModuleType:
    """The optional package ``name`` (torch, ml_dtypes ...), imported; where it is not
    installed, a ModuleNotFoundError that says what needs it and what to install.

    >>> optional_module("numpy", "the example").__name__
    'numpy'
    >>> optional_module("no_such_package", "fpemu.example")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: fpemu.example needs no_such_package, which is not installed: pip install no_such_package
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:  # the package is there, but something it needs is not: its own error
            raise
        raise ModuleNotFoundError(f"{needed_by} needs {name}, which is not installed: pip install {name}",
                                  name=name) from None
