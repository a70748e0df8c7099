"""The argument rules every layer shares, so that one rule holds everywhere: what a whole
number is, how an option's name is spelled, and how an unknown name is refused.

* A whole number is a Python or NumPy integer, never a bool (``True`` is an ``int`` to Python,
  and a mistake here): :func:`is_whole`, exactly what :class:`~fpemu.formats.Format` accepts.
* Names (of options, formats, block formats, accumulators) are compared stripped and in lower
  case: :func:`option_name`, on the command line too (``type=option_name``).
* An unknown name is refused with its closest matches, not with every name known:
  :func:`unknown_name`.
* A nested list whose rows differ in length is refused by name: :func:`as_array`.
* A whole-number option of the command line is checked by its parser, so that the error names
  the flag (``--steps``), not the Python parameter behind it: :func:`whole_number`.

>>> is_whole(np.int64(8)), is_whole(True), option_name(" Saturate ")
(True, False, 'saturate')
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Iterable, Mapping

import numpy as np

__all__ = ["is_whole", "option_name", "unknown_name", "as_array", "whole_number"]


def is_whole(value: Any) -> bool:
    """Whether value is an integer argument: a Python or NumPy integer, not a bool.

    >>> [is_whole(v) for v in (3, np.uint8(3), True, np.bool_(True), 3.0)]
    [True, True, False, False, False]
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def option_name(value: Any) -> Any:
    """The spelling in which fpemu compares a name: stripped and in lower case. Anything but a
    string passes through unchanged, for the caller's own error to name.

    >>> option_name("RNE"), option_name(None)
    ('rne', None)
    """
    return value.strip().lower() if isinstance(value, str) else value


def unknown_name(what: str, name: Any, known: Iterable[str], where: str | None = None, *,
                 aliases: Mapping[str, str] | None = None, note: str = "") -> str:
    """The message refusing an unknown ``what``: the closest of the ``known`` names, if any is
    close (an alias that is close, alias -> name in ``aliases``, suggests the name it stands
    for: the spelling the list shows); then where the others are listed (``where``) or, for a
    short list (``where`` None), every known name; ``note`` is appended.

    >>> unknown_name("format", "e4m4", ["e4m3", "e3m4", "fp16"], "`fpemu formats`")
    "unknown format 'e4m4'; did you mean e4m3 or e3m4? `fpemu formats` lists the rest"
    >>> unknown_name("format", "zz", ["e4m3"], "`fpemu formats`")
    "unknown format 'zz'; `fpemu formats` lists them all"
    >>> unknown_name("variant", "torcha0", ["te", "torchao"])
    "unknown variant 'torcha0'; did you mean torchao? choose one of te, torchao"
    >>> unknown_name("block format", "e4m3", ["mxfp8_e4m3", "mxfp4"], aliases={"mxfp8e4m3": "mxfp8_e4m3"})
    "unknown block format 'e4m3'; did you mean mxfp8_e4m3? choose one of mxfp8_e4m3, mxfp4"
    """
    known, aliases = list(known), dict(aliases or {})
    key = option_name(name) if isinstance(name, str) else str(name)
    matches = difflib.get_close_matches(key, known + list(aliases), n=4, cutoff=0.6)
    close = list(dict.fromkeys(aliases.get(match, match) for match in matches))  # each name once, as listed
    guess = ""
    if close:
        names = f"{', '.join(close[:-1])} or {close[-1]}" if len(close) > 1 else close[0]
        guess = f"did you mean {names}? "
    if where is None:
        tail = f"choose one of {', '.join(known)}"
    else:
        tail = f"{where} lists {'the rest' if close else 'them all'}"
    return f"unknown {what} {name!r}; {guess}{tail}{note}"


def as_array(x: Any, what: str) -> np.ndarray:
    """``np.asarray(x)``; a ragged nested list (rows of different lengths), which NumPy
    refuses in its own words, is refused naming ``what``.

    >>> as_array([[1.0, 2.0], [3.0]], "x")
    Traceback (most recent call last):
    ...
    ValueError: x is a ragged list (its rows differ in length): pass a rectangular array of numbers
    """
    try:
        return np.asarray(x)
    except ValueError as exc:
        if "inhomogeneous" not in str(exc) and "sequence" not in str(exc):
            raise
        raise ValueError(f"{what} is a ragged list (its rows differ in length): pass a rectangular array "
                         "of numbers") from None


def whole_number(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type=`` for a whole number in ``lo .. hi`` (no upper bound: None); the
    parser's error names the flag (``argument --steps: must be ...``).

    >>> whole_number(1, 10)("7")
    7
    >>> whole_number(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a whole number >= 1, got '0'
    """

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            import argparse  # (only here: ``import fpemu`` loads no command line)

            bound = f">= {lo}" if hi is None else f"in {lo}..{hi}"
            raise argparse.ArgumentTypeError(f"must be a whole number {bound}, got {text!r}")
        return value

    return parse
