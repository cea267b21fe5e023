"""``agui-wire docs [PAGE]``: the documentation pages, for whoever has only the package.

Strategy: docstrings, error messages and ``--help`` name pages as ``docs/NAME.md``;
the wheel carries every one of them inside the package, as ``agui_wire/docs/NAME.md``
(setup.py's build_py copies the repository's ``docs/*.md`` there), so such a name
resolves against the installed package. This command lists them (name, title,
file) or prints one as it is (Markdown, to stdout: ``| less`` pages it). A checkout
(an editable install, or the in-place build) has no copy: there the pages are read
from the repository's ``docs/`` beside ``src/``.

Contract: ``agui-wire docs`` exits 0 with one line per page; ``agui-wire docs PAGE``
(``serving``, ``serving.md`` or ``docs/serving.md``) prints the page, ``--path`` its
file instead; an unknown page is a usage error (exit 2) that lists the pages; no
pages at all (a broken install) is an I/O error (exit 3).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import EXIT_OK, InputError, UsageError
from ._parser import add_command

__all__ = ["pages", "pages_dir", "register", "run"]

HELP = "list the documentation pages, or print one (they are in the package)"
DESCRIPTION = """\
The documentation pages that docstrings, error messages and --help name as
docs/NAME.md ship inside the installed package (agui_wire/docs/NAME.md). With no
PAGE, list them: name, title and file. With a PAGE, print it (Markdown).
"""
EPILOG = """\
examples:
  agui-wire docs
  agui-wire docs serving | less
  agui-wire docs docs/errors.md
  agui-wire docs cli --path
"""

_PACKAGE = Path(__file__).resolve().parent.parent


def pages_dir() -> Path:
    """Where the pages are: the package's copy, or a checkout's ``docs/``."""
    shipped = _PACKAGE / "docs"
    checkout = _PACKAGE.parent.parent / "docs"  # src/agui_wire -> the repository
    if not shipped.is_dir() and (checkout / "cli.md").is_file():
        return checkout
    return shipped


def pages() -> dict[str, Path]:
    """Every page by name (``serving`` for ``docs/serving.md``), in name order."""
    where = pages_dir()
    return {p.stem: p for p in sorted(where.glob("*.md"))} if where.is_dir() else {}


def _title(page: Path) -> str:
    with page.open(encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(sub, common, "docs", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run)
    p.add_argument("page", nargs="?", metavar="PAGE", help="a page: serving, docs/serving.md, ...")
    p.add_argument("--path", action="store_true", help="print the page's file, not the page")


def run(args: argparse.Namespace) -> int:
    found = pages()
    if not found:
        raise InputError(f"no documentation pages in {pages_dir()}: a broken install?")
    if args.page is None:
        width = max(len(name) for name in found) + 2
        for name, page in found.items():
            print(f"{name:<{width}}{_title(page)}")
        print(f"\n(in {pages_dir()}; agui-wire docs PAGE prints one)")
        return EXIT_OK
    name = Path(args.page).name.removesuffix(".md")
    if name not in found:
        raise UsageError(f"no page {args.page!r}; the pages are: {', '.join(found)}")
    if args.path:
        print(found[name])
    else:
        sys.stdout.write(found[name].read_text(encoding="utf-8"))
    return EXIT_OK
