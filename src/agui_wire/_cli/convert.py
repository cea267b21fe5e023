"""``agui-wire convert``: a capture from one transport to another.

Strategy: ``decode`` and ``encode`` joined, streaming: each event is written in
the target transport as soon as it is read (``encode.write_events``). The input
is anything ``decode`` reads (binary, SSE, JSON Lines, HAR with ``--entry``,
gzip); the output is ``proto``, ``sse`` or ``jsonl``.

Contract: as ``decode`` for bad input frames and as ``encode`` for events that
cannot be written; a HAR file with several AG-UI responses needs ``--entry``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._args import add_capture_argument, add_input_options, add_output_options, open_output
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS
from ._parser import add_command
from .encode import add_encode_options, encoder_for, write_events

__all__ = ["register", "run"]

HELP = "convert a capture between binary, SSE and JSON Lines"
DESCRIPTION = """\
Convert a capture (binary, SSE, JSON Lines, HAR, gzip; detected) to another
transport: proto (binary frames), sse, or jsonl.
"""
EPILOG = """\
examples:
  agui-wire convert capture.sse --to proto -o capture.bin
  agui-wire convert session.har --entry 3 --to sse
  agui-wire convert capture.bin.gz --to jsonl -o events.jsonl
"""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub, common, "convert", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run
    )
    add_capture_argument(p)
    p.add_argument("--to", choices=("proto", "sse", "jsonl"), required=True, help="output format")
    add_encode_options(p)
    add_input_options(p)
    add_output_options(p, binary=True)


def run(args: argparse.Namespace) -> int:
    (source,) = open_args_sources(args, args.capture, allow_many=False)
    encode = encoder_for(args.to, extra_keys=args.extra_keys, lossy_numbers=args.lossy_numbers)
    with open_output(args.output, binary=args.to == "proto", force=args.force) as out:
        ok = write_events(args, source, out, encode)
    return EXIT_OK if ok else EXIT_PROBLEMS
