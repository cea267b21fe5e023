"""``agui-wire decode``: a capture (binary, SSE, HAR, gzip) as JSON Lines.

Strategy: a ``_capture.CaptureStream`` per input, one JSON line per event written as it
is decoded (output is flushed after every input chunk, so a live stream piped
in shows up live); bad frames and notes go to stderr with their index and byte
offset. ``--envelope`` wraps each event with its position; a HAR file with
several AG-UI responses is decoded whole with envelopes naming the entry.

Whatever it writes, the other commands read back: ``validate -``, ``encode -``,
``convert`` and ``inspect`` unwrap the envelopes (``_capture``).

Contract: stdout carries only events (or envelopes); exit 0 when every frame
decoded to an event ``@ag-ui/core`` accepts, 1 when any did not (also with
``--keep-going``, which only goes on) or when the input held no event
(``--allow-empty``: 0 for an empty stream). An event the reference's schemas reject
is still written (a broken capture is shown whole), and marked: a line on stderr
saying where and why, and with ``--envelope`` an ``"invalid"`` member
(``{"path", "reason"}``). What is
skipped is listed on stderr (``_leftout``: the first few, all with ``-v``).
"""

from __future__ import annotations

import argparse
from typing import IO, Any

import orjson

from ._args import (
    add_capture_argument,
    add_input_options,
    add_output_options,
    left_out,
    new_progress,
    no_events,
    open_output,
    read_capture,
    skip_frame,
)
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS, say
from ._leftout import cli_words
from ._parser import add_command

__all__ = ["register", "run"]

HELP = "decode a capture to JSON Lines"
DESCRIPTION = """\
Decode a capture of an AG-UI stream to JSON Lines, one event per line.

CAPTURE is a file, or - for stdin (also read when CAPTURE is left out and stdin is
not a terminal): a binary stream (application/vnd.ag-ui.event+proto),
an SSE stream (text/event-stream), a HAR file exported from browser devtools, or
any of these gzip-compressed. The format is detected; --format overrides it.
"""
EPILOG = """\
examples:
  agui-wire decode capture.bin
  curl -sN -H 'Accept: application/vnd.ag-ui.event+proto' $URL | agui-wire decode
  agui-wire decode session.har --entry 12 --pretty
  agui-wire decode broken.bin --keep-going --envelope > events.jsonl
"""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub, common, "decode", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run
    )
    add_capture_argument(p)
    p.add_argument("--pretty", action="store_true", help="indented JSON instead of one line each")
    p.add_argument(
        "--sort-keys",
        action="store_true",
        help="keys in sorted order, so the same events from either transport diff cleanly",
    )
    p.add_argument(
        "--envelope",
        action="store_true",
        help='wrap each event: {"index": N, "offset": BYTE, "event": {...}} (+ "entry" for HAR)',
    )
    add_input_options(p)
    add_output_options(p, binary=False)


def _writer(out: IO[bytes], pretty: bool, sort_keys: bool) -> Any:
    option = orjson.OPT_APPEND_NEWLINE | (orjson.OPT_INDENT_2 if pretty else 0)
    option |= orjson.OPT_SORT_KEYS if sort_keys else 0
    dumps = orjson.dumps
    write = out.write

    def emit(value: Any) -> None:
        write(dumps(value, option=option))

    return emit


def run(args: argparse.Namespace) -> int:
    found = open_args_sources(args, args.capture, allow_many=True)
    envelope = args.envelope or len(found) > 1
    failed = False
    log = left_out(args)
    with open_output(args.output, binary=False) as out:
        emit = _writer(out, args.pretty, args.sort_keys)
        for source in found:
            progress = new_progress(args, "decoding", source)

            def tick(done: int, progress: Any = progress) -> None:
                progress.update(done)
                out.flush()

            stream = read_capture(args, source)
            stream.progress = tick
            fatal = False
            invalid = 0  # events written though @ag-ui/core's schemas reject them
            try:
                for frame in stream:
                    if frame.error is not None:
                        progress.close()
                        failed = True
                        fatal = frame.fatal
                        if args.keep_going and not frame.fatal:
                            skip_frame(log, source, frame)
                            continue
                        tail = (
                            " (cannot continue past this)"
                            if frame.fatal and args.keep_going
                            else ""
                        )
                        say(f"{source.label}: {cli_words(str(frame.error))}{tail}")
                    elif frame.note is not None:
                        progress.close()
                        skip_frame(log, source, frame)
                    else:
                        if frame.invalid is not None:
                            progress.close()
                            failed = True
                            invalid += 1
                            say(
                                f"{source.label}: {cli_words(str(frame.invalid))} "
                                "(kept: @ag-ui/core's schemas reject it)"
                            )
                        if envelope:
                            record: dict[str, Any] = {}
                            if source.entry is not None:
                                record["entry"] = source.entry
                            record |= {
                                "index": frame.index,
                                "offset": frame.offset,
                                "event": frame.event,
                            }
                            if frame.invalid is not None:
                                record["invalid"] = {
                                    "path": frame.invalid.path,
                                    "reason": frame.invalid.reason,
                                }
                            emit(record)
                        else:
                            emit(frame.event)
            finally:
                progress.close()
            if invalid:
                say(
                    f"{source.label}: {invalid} of {stream.events} events break @ag-ui/core's "
                    "schemas (written, and marked above; agui-wire validate says more)"
                )
            if no_events(args, stream):
                failed = True
            elif stream.errors and fatal and not args.keep_going:
                pass  # the error line says it all: nothing after it can be read
            elif stream.errors and not args.keep_going:
                say(
                    f"{source.label}: stopped at the first error ({stream.events} events before "
                    "it; --keep-going continues past bad frames)"
                )
            elif stream.errors:
                say(
                    f"{source.label}: {stream.events} events decoded, {stream.errors} bad "
                    "frame(s)/event(s)" + ("; the last one ended the stream" if fatal else "")
                )
    if summary := log.summary():
        say(summary)
    return EXIT_PROBLEMS if failed else EXIT_OK
