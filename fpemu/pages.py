"""The documentation pages as installed: ``fpemu docs`` lists them, ``fpemu docs NAME`` prints
one. The pages of the repository's ``docs/`` ship inside the package (``fpemu/docs``: pyproject
maps the package ``fpemu.docs`` to ``docs/``), so an installed fpemu has its documentation
offline, and the command line's help names a page by ``fpemu docs NAME`` instead of a path
that exists only in a checkout. In a checkout (or an editable install) the pages are read from
``docs/`` itself.

>>> "mx" in page_names() and page_title("mx").startswith("Block formats")
True
>>> page_text("nope")
Traceback (most recent call last):
...
ValueError: unknown page 'nope'; `fpemu docs` lists them all
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .arguments import option_name, unknown_name

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["page_names", "page_title", "page_text", "page_path"]


def _pages() -> Traversable:
    """The directory of the pages: the installed package's ``docs``, else the checkout's."""
    installed = resources.files(__package__) / "docs"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[1] / "docs"


def page_names() -> list[str]:
    """The pages, by name (``mx`` for ``mx.md``), sorted."""
    pages = _pages()
    if not pages.is_dir():
        return []
    return sorted(p.name[:-3] for p in pages.iterdir() if p.name.endswith(".md"))


def page_path(name: str) -> Traversable:
    """Where page ``name`` is (a ValueError naming the closest pages if there is none)."""
    key = option_name(name)
    if key not in page_names():
        raise ValueError(unknown_name("page", name, page_names(), "`fpemu docs`"))
    return _pages() / f"{key}.md"


def page_text(name: str) -> str:
    """The Markdown of page ``name``."""
    return page_path(name).read_text(encoding="utf-8")


def page_title(name: str) -> str:
    """The page's first heading, without its ``#``."""
    for line in page_text(name).splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return name


def cmd_docs(args: argparse.Namespace) -> int:
    """``fpemu docs``: the pages and their titles; ``fpemu docs NAME``: the page (``--path``:
    where it is, to open it in an editor or a Markdown viewer)."""
    from .errors import RunError

    if args.page is None:
        names = page_names()
        if not names:
            raise RunError("this installation of fpemu has no documentation pages")
        width = max(map(len, names))
        for name in names:
            print(f"{name:<{width}}  {page_title(name)}")
        return 0
    print(page_path(args.page) if args.path else page_text(args.page), end="" if not args.path else "\n")
    return 0


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fpemu docs``."""
    p = subparsers.add_parser("docs", help="the documentation pages (installed with fpemu): list them, print one")
    p.add_argument("page", nargs="?", default=None, help="a page to print, e.g. mx (default: list the pages)")
    p.add_argument("--path", action="store_true", help="print where the page is instead of its text")
    p.set_defaults(func=cmd_docs)
