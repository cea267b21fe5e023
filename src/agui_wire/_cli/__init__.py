"""``agui-wire``: the command line for AG-UI captures and transport cost.

Strategy: argparse with one subcommand per module (``decode``, ``encode``,
``convert``, ``inspect``, ``validate``, ``cost``, ``record``, ``docs``); each module has
``register(subparsers, common)``, which opens its parser with
``_parser.add_command``, and a ``run(args) -> int``. Shared pieces: ``_inputs``
(file / stdin / gzip / HAR, format detection), ``_capture`` (frames with
positions, ``--keep-going``, JSON Lines envelopes, what an eventless input held),
``_args`` (options, output), ``_leftout`` (every event gone past, listed),
``_style`` (colour on a terminal), ``_progress`` (the stderr bar), ``protodump``
(field-by-field protobuf dump), ``cost_measure``, ``verdict``, ``_costmodel`` and
``report`` (what ``cost`` measures, says and draws), ``_timings`` (a recording's
arrival times), ``timeline`` with ``_timeline``, ``_timeline_text`` and
``timeline_html`` (``inspect --timeline``).
Console script ``agui-wire`` and ``python -m agui_wire`` both run ``main``; with
no command it lists the commands, one line each.

Contract (also in ``--help`` and docs/cli.md: ``agui-wire docs cli``): exit status
0 ok; 1 problems found (a frame that does not decode, an invalid event or stream,
an event that cannot be encoded or is left out, an input with no event); 2 usage
error; 3 I/O error. Errors are one line on stderr
naming the input, frame/event index and byte offset. stdout carries only the
command's output; progress bars appear on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._common import EXIT_IO, EXIT_OK, EXIT_USAGE, CliError, say
from ._leftout import SHOWN
from ._parser import EXIT_CODES, HelpFormatter, command_list

__all__ = ["build_parser", "main"]

USAGE = "usage: agui-wire COMMAND [options] CAPTURE   (agui-wire COMMAND --help for one)"


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from .._codec import selected
    from . import convert, cost, decode, docs, encode, inspect, record, validate

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--no-progress",
        action="store_true",
        help="never draw a progress bar (it is drawn only when stderr is a terminal)",
    )
    common.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help=f"list every event left out or skipped (default: the first {SHOWN})",
    )
    parser = argparse.ArgumentParser(
        prog="agui-wire",
        description="AG-UI streams on the wire: decode, inspect and validate captures "
        "(binary protobuf, SSE, HAR, gzip), convert between transports, and measure "
        "what each transport costs.",
        epilog=EXIT_CODES
        + "\nfirst commands to try:\n  agui-wire cost  what each transport costs, on a sample run"
        + "\n  agui-wire docs  the documentation pages (they ship in the package)",
        formatter_class=HelpFormatter,
    )
    # the implementation in use: "cython" (the compiled extension) or "python" (the pure twins)
    version = f"agui-wire {__version__} ({selected.NAME})"
    parser.add_argument("--version", action="version", version=version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (decode, encode, convert, inspect, validate, cost, record, docs):
        module.register(sub, common)
    parser.set_defaults(commands=sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agui-wire`` with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            # argparse reports these against the top-level usage; the command's is the one
            # that helps (`agui-wire decode --bogus` -> decode's usage)
            command = parser if args.command is None else args.commands.choices[args.command]
            command.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        print(f"{USAGE}\n\ncommands:\n{command_list(args.commands)}", file=sys.stderr)
        return EXIT_USAGE
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
