"""Which release of another library is installed, and which release's rules fpemu applies.

Libraries change their conversions between releases (ml_dtypes 0.7 rounds float64 once where
0.6 went through float32, and rounds E8M0 plainly ties-away), so every convention of
:func:`~fpemu.like` is a rule set per *release series* ("0.6" covers 0.6.0, 0.6.1, ...).
A plain name follows the installed release; ``"ml_dtypes-0.6"`` names one.

>>> parse_version("2.13.0+cpu"), parse_version("0.7")
((2, 13, 0), (0, 7))
>>> pick_series(("0.5", "0.6", "0.7"), "0.6.0"), pick_series(("0.5", "0.6", "0.7"), "0.9.1")
('0.6', '0.7')
>>> pick_series(("2.13",), "2.4.0")  # older than every release checked: the oldest rules
'2.13'
"""

from __future__ import annotations

import re

__all__ = ["installed_version", "parse_version", "pick_series"]

#: The distribution that carries each library a convention names (None: not on PyPI, so a
#: plain name always means the newest rules fpemu knows).
DISTRIBUTIONS = {
    "ml_dtypes": "ml_dtypes",
    "gfloat": "gfloat",
    "torch": "torch",
    "transformer_engine": "transformer_engine",
    "torchao": "torchao",
    "microxcaling": None,
    "cuda": None,  # the CUDA toolkit's headers (cuda_fp8.hpp ...), no Python package
}


def parse_version(text: str) -> tuple[int, ...]:
    """The release numbers of a version string, local parts and suffixes dropped.

    >>> parse_version("0.5.1"), parse_version("1.1.0rc2")
    ((0, 5, 1), (1, 1, 0))
    """
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(text))
    if m is None:
        raise ValueError(f"cannot read a release number from {text!r}")
    return tuple(int(p) for p in m.group(1).split("."))


def installed_version(library: str) -> str | None:
    """The installed release of a library (from its package metadata; nothing is imported),
    or None when it is not installed or not a PyPI package.

    >>> installed_version("microxcaling") is None
    True
    """
    dist = DISTRIBUTIONS.get(library)
    if dist is None:
        return None
    from importlib import metadata  # (here, not at the top: ``import fpemu`` does not need it)

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def pick_series(series: tuple[str, ...], version: str | None) -> str:
    """The release series whose rules apply to ``version``: its own where fpemu knows it, else
    the newest one before it (the rules stand until a known change), else the oldest known.
    ``version=None`` (not installed) gives the newest. ``series`` is sorted oldest first.

    >>> pick_series(("0.5", "0.7"), None), pick_series(("0.5", "0.7"), "0.6.0")
    ('0.7', '0.5')
    """
    if version is None:
        return series[-1]
    v = parse_version(version)
    older = [s for s in series if parse_version(s) <= v[: len(parse_version(s))]]
    return older[-1] if older else series[0]
