"""The argparse pieces every ``agui-wire`` command shares: one ``add_command()``,
help that reflows by paragraph, and the exit-status epilog.

Strategy: a subcommand module calls ``add_command(sub, common, name, ...)``
once and adds its own options to the parser it returns; the name, one-line
help, description, examples, the shared ``common`` options, the formatter,
the exit-status epilog and ``run`` are set here, so no two commands differ in
how they are opened. ``HelpFormatter`` refills prose paragraphs to the
terminal width (at most ``MAX_WIDTH`` columns) and keeps indented blocks
(examples, tables) verbatim, so ``--help`` never breaks a sentence where the
source text happened to break it, nor lets the terminal cut a word.

Contract: a description or epilog is paragraphs separated by blank lines; a
paragraph with an indented line (``examples:`` then ``  agui-wire ...``) is
printed as written; any other is one flowing paragraph.
"""

from __future__ import annotations

import argparse
import shutil
import textwrap
from collections.abc import Callable
from typing import Any, Final

__all__ = ["EXIT_CODES", "MAX_WIDTH", "HelpFormatter", "add_command", "command_list"]

MAX_WIDTH: Final = 100

EXIT_CODES: Final = """\
exit status:
  0  ok
  1  problems found: a frame or event that does not decode, an invalid event or
     stream (validate), an event that cannot be encoded, a capture with no events
  2  usage error: bad options, an ambiguous HAR file, binary output to a terminal
  3  I/O error: a file that cannot be read or written, an input over a size limit
"""


class HelpFormatter(argparse.HelpFormatter):
    """Prose paragraphs refilled, indented blocks verbatim (see the module doc)."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        width = min(shutil.get_terminal_size().columns - 2, MAX_WIDTH)
        kwargs.setdefault("width", max(width, 40))
        super().__init__(prog, **kwargs)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.split("\n")
            if any(line[:1].isspace() for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                flowing = " ".join(line.strip() for line in lines)
                out.append(
                    textwrap.fill(
                        flowing,
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                        break_long_words=False,
                        break_on_hyphens=False,
                    )
                )
        return "\n\n".join(out) + "\n"


def add_command(
    sub: Any,
    common: argparse.ArgumentParser,
    name: str,
    *,
    help: str,
    description: str,
    epilog: str,
    run: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``; its module adds its own options to it."""
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        parents=[common],
        help=help,
        description=description,
        epilog=(epilog.rstrip("\n") + "\n\n" + EXIT_CODES).lstrip("\n"),
        formatter_class=HelpFormatter,
    )
    p.set_defaults(run=run)
    return p


def command_list(sub: Any) -> str:
    """One line per subcommand: its name and one-line help."""
    choices = sub._choices_actions  # the (name, help) pairs argparse keeps, in order
    width = max(len(a.dest) for a in choices) + 2
    return "\n".join(f"  {a.dest:<{width}}{a.help}" for a in choices)
