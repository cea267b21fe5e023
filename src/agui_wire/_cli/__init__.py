"""``agui-wire``: the command line for AG-UI captures and transport cost.

Strategy: argparse with one subcommand per module (``decode``, ``encode``,
``convert``, ``inspect``, ``validate``, ``cost``); each module has
``register(subparsers, common)`` and a ``run(args) -> int``. Shared pieces:
``_inputs`` (file / stdin / gzip / HAR, format detection), ``_read`` (frames with
positions, ``--keep-going``), ``_args`` (options, output), ``_progress`` (the
stderr bar), ``protodump`` (field-by-field protobuf dump), ``report`` (the HTML
cost report). Console script ``agui-wire`` and ``python -m agui_wire`` both run
``main``.

Contract (also in ``--help`` and docs/cli.md): exit status 0 ok; 1 problems
found (a frame that does not decode, an invalid event or stream, an event that
cannot be encoded); 2 usage error; 3 I/O error. Errors are one line on stderr
naming the input, frame/event index and byte offset. stdout carries only the
command's output; progress bars appear on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._common import EXIT_IO, EXIT_OK, EXIT_USAGE, CliError, say

__all__ = ["build_parser", "main"]

EXIT_CODES = """\
exit status:
  0  ok
  1  problems found: a frame or event that does not decode, an invalid event or
     stream (validate), an event that cannot be encoded
  2  usage error: bad options, an ambiguous HAR file, binary output to a terminal
  3  I/O error: a file that cannot be read or written, an input over a size limit
"""


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from .._codec import backend
    from . import convert, cost, decode, encode, inspect, validate

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--no-progress",
        action="store_true",
        help="never draw a progress bar (it is drawn only when stderr is a terminal)",
    )
    parser = argparse.ArgumentParser(
        prog="agui-wire",
        description="AG-UI streams on the wire: decode, inspect and validate captures "
        "(binary protobuf, SSE, HAR, gzip), convert between transports, and measure "
        "what each transport costs.",
        epilog=EXIT_CODES + "\nfirst command to try:  agui-wire cost",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # the implementation in use: "cython" (the compiled extension) or "python" (the pure twins)
    version = f"agui-wire {__version__} ({backend.NAME})"
    parser.add_argument("--version", action="version", version=version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in (decode, encode, convert, inspect, validate, cost):
        module.register(sub, common)
    for action in sub.choices.values():
        action.epilog = ((action.epilog or "") + "\n" + EXIT_CODES).lstrip("\n")
        action.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agui-wire`` with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(args.run(args))
    except CliError as exc:
        say(exc.message)
        return exc.code
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (| head): not an error. Keep Python from complaining
        # about the unflushable stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_OK
    except OSError as exc:
        say(f"I/O error: {exc}")
        return EXIT_IO
