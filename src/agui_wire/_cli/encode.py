"""``agui-wire encode``: JSON Lines of events to a binary or SSE stream.

Strategy: the events are read as a stream (``_capture``'s JSON Lines: one event
per line; an indented ``decode --pretty`` output or one JSON array also works) and
each is written as soon as it is encoded, with ``agui_wire.encode_proto`` or
``encode_sse``. ``write_events`` is shared with ``convert``.

Contract: an event that cannot be encoded is reported with its index, byte
offset in the input, type and JSON pointer; without ``--keep-going`` writing
stops there (what was written stays valid: whole frames / whole SSE events).
Binary output to a terminal needs ``-o`` or ``--force``. Exit 1 if any event was
not encoded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import IO, Any

import orjson

from .._encoder import encode_proto, encode_sse
from ..errors import EncodeError
from ..schema import DEFAULT_MAX_FRAME_SIZE
from ._args import (
    add_allow_empty,
    add_capture_argument,
    add_keep_going,
    add_output_options,
    left_out,
    new_progress,
    no_events,
    open_output,
    read_capture,
    skip_frame,
    skip_unencodable,
)
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS, say
from ._inputs import Input
from ._leftout import cli_words
from ._parser import add_command

__all__ = ["encoder_for", "register", "run", "write_events"]

HELP = "encode JSON Lines events to a binary or SSE stream"
DESCRIPTION = """\
Encode AG-UI events (JSON Lines, one event per line; - or nothing for stdin;
.gz accepted)
as a binary protobuf stream (4-byte length + ag_ui.Event per event,
application/vnd.ag-ui.event+proto) or as SSE (data: <json> per event).
"""
EPILOG = """\
examples:
  agui-wire encode events.jsonl --to proto -o capture.bin
  agui-wire decode capture.bin | jq -c 'select(.type != "RAW")' | agui-wire encode - --to sse
"""


def encoder_for(
    to: str, *, extra_keys: str = "drop", lossy_numbers: bool = False
) -> Callable[[dict[str, Any]], bytes]:
    if to == "proto":
        return lambda e: encode_proto(e, extra_keys=extra_keys, lossy_numbers=lossy_numbers)
    if to == "sse":
        return lambda e: encode_sse(e, extra_keys=extra_keys, lossy_numbers=lossy_numbers)
    option = orjson.OPT_APPEND_NEWLINE
    return lambda e: orjson.dumps(e, option=option)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub, common, "encode", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run
    )
    add_capture_argument(p, "events", "JSON Lines file of events")
    p.add_argument("--to", choices=("proto", "sse"), required=True, help="output transport")
    add_encode_options(p)
    add_keep_going(p)
    add_allow_empty(p)
    add_output_options(p, binary=True)
    p.set_defaults(format="jsonl", entry=None, unknown_events="skip")
    p.set_defaults(invalid_utf8="error", max_frame_size=DEFAULT_MAX_FRAME_SIZE, max_har_size=0)


def add_encode_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--extra-keys",
        choices=("drop", "error"),
        default="drop",
        help="keys the schema does not know: dropped on proto and written as given on SSE "
        "(default, as the reference), or an error on both",
    )
    p.add_argument(
        "--lossy-numbers",
        action="store_true",
        help="allow JSON numbers a double cannot hold exactly (proto: rounded; SSE: written "
        "as given, a JavaScript client rounds them)",
    )


def write_events(
    args: argparse.Namespace,
    source: Input,
    out: IO[bytes],
    encode: Callable[[dict[str, Any]], bytes],
) -> bool:
    """Decode ``source`` and write each event with ``encode``; False if any failed or
    the input held no event."""
    ok = True
    progress = new_progress(args, "converting", source)
    log = left_out(args)

    def tick(done: int) -> None:
        progress.update(done)
        out.flush()

    stream = read_capture(args, source)
    stream.progress = tick
    try:
        for frame in stream:
            if frame.error is not None:
                progress.close()
                ok = False
                if args.keep_going and not frame.fatal:
                    skip_frame(log, source, frame)
                else:
                    say(f"{source.label}: {cli_words(str(frame.error))}")
                continue
            if frame.event is None:
                if frame.note:
                    skip_frame(log, source, frame)
                continue
            try:
                data = encode(frame.event)
            except EncodeError as exc:
                progress.close()
                ok = False
                if not args.keep_going:
                    where = f"event {frame.index}"
                    if frame.offset is not None:
                        where += f" (byte {frame.offset})"
                    say(f"{source.label}: {where}: cannot encode: {cli_words(str(exc))}")
                    return False
                skip_unencodable(log, source.label, frame, exc, "cannot encode")
                continue
            out.write(data)
    finally:
        progress.close()
        if summary := log.summary():
            say(summary)
    if no_events(args, stream):
        return False
    return ok


def run(args: argparse.Namespace) -> int:
    (source,) = open_args_sources(args, args.events, allow_many=False)
    encode = encoder_for(args.to, extra_keys=args.extra_keys, lossy_numbers=args.lossy_numbers)
    with open_output(args.output, binary=args.to == "proto", force=args.force) as out:
        ok = write_events(args, source, out, encode)
    return EXIT_OK if ok else EXIT_PROBLEMS
