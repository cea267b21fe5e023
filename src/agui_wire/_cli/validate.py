"""``agui-wire validate``: every event against the 1.0 schema, the stream against
the protocol's sequencing rules, and every state patch against the state.

Strategy: frames are read as ``decode --keep-going`` does (a frame that does not
decode is a problem and reading goes on when the framing allows), and each
event goes through ``agui_wire.validate.StreamValidator`` with its index and
byte offset. Each AG-UI response of a HAR file is its own stream. Problems are
printed as they are found (``--json``: one JSON document at the end), coloured
on a terminal unless ``NO_COLOR`` is set (``_style``).

An input with no event is the ``stream.empty`` error, with a line on stderr saying
what the input held (``--allow-empty``: an empty stream is valid).

Contract: exit 0 only when no error was found (notes, such as keys the loose
schema does not name, do not count unless ``--strict``); 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

import orjson

from ..validate import Problem, StreamValidator
from ._args import (
    add_capture_argument,
    add_input_options,
    new_progress,
    no_events,
    read_capture,
)
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS
from ._inputs import Input
from ._leftout import cli_words
from ._parser import add_command
from ._style import Style

__all__ = ["register", "run"]

HELP = "check events against the 1.0 schema and the stream against its rules"
DESCRIPTION = """\
Validate a capture: every event against the AG-UI 1.0 schema (the zod rules of
@ag-ui/core: required and typed fields, enums, integer ranges, JSON pointers...),
the stream against the protocol's sequencing rules (@ag-ui/client verifyEvents:
RUN_STARTED first, nothing after the end of a run, START/CONTENT/END pairing by id
for text messages, tool calls and reasoning, steps, subagents, attribution), and
every STATE_DELTA / ACTIVITY_DELTA against the state built so far (RFC 6902).

Each problem is printed with its event index, byte offset, JSON path and rule.
Keys the schema does not name are notes, not errors (the 1.0 schema is loose).
"""
EPILOG = """\
examples:
  agui-wire validate capture.bin
  agui-wire validate session.har --json | jq '.problems[] | select(.severity=="error")'
"""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub, common, "validate", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run
    )
    add_capture_argument(p)
    p.add_argument("--json", action="store_true", help="one JSON document with every problem")
    p.add_argument("--strict", action="store_true", help="notes count as problems too")
    p.add_argument("--no-notes", action="store_true", help="do not print notes")
    p.add_argument(
        "--limit",
        type=int,
        default=200,
        metavar="N",
        help="print at most N problems per stream (default 200; 0: all); all are counted",
    )
    layers = p.add_argument_group("checks")
    layers.add_argument("--no-schema", action="store_true", help="skip the schema check")
    layers.add_argument("--no-sequence", action="store_true", help="skip the sequence check")
    layers.add_argument("--no-state", action="store_true", help="skip applying patches")
    add_input_options(p, keep_going=False)


def _decode_problem(frame: Any) -> Problem:
    err = frame.error
    return Problem(
        "error",
        "decode",
        cli_words(err.reason) + (" (reading stopped here)" if frame.fatal else " (skipped)"),
        frame.index,
        err.offset if err.offset is not None else frame.offset,
    )


def _validate(
    args: argparse.Namespace, source: Input, out: IO[str]
) -> tuple[list[Problem], int, int]:
    validator = StreamValidator(
        schema=not args.no_schema, sequence=not args.no_sequence, state=not args.no_state
    )
    progress = new_progress(args, "validating", source)
    stream = read_capture(args, source, keep_going=True, progress=progress)
    printed = 0
    style = Style(out)
    found: list[Problem] = []
    prefix = f"{source.label}: "

    def report(problems: list[Problem]) -> None:
        nonlocal printed
        for p in problems:
            found.append(p)
            if args.json or (p.severity == "note" and args.no_notes):
                continue
            if args.limit and printed >= args.limit:
                continue
            progress.close()
            text = str(p)
            mark = f"{p.severity} [{p.rule}]"
            text = text.replace(mark, style.paint(mark, p.severity), 1)
            print(prefix + text, file=out)
            printed += 1

    try:
        for frame in stream:
            if frame.error is not None:
                report([_decode_problem(frame)])
            elif frame.event is not None:
                report(validator.feed(frame.event, index=frame.index, offset=frame.offset))
        wrong = no_events(args, stream)  # says on stderr what an eventless input held
        closing = validator.close(end_offset=stream.end_offset)
        if not (stream.events or stream.errors or wrong):  # an empty stream, --allow-empty
            closing = [p for p in closing if p.rule != "stream.empty"]
        report(closing)
    finally:
        progress.close()
    return found, validator.events, printed


def _summary(label: str, events: int, problems: list[Problem], printed: int, style: Style) -> str:
    errors = sum(p.severity == "error" for p in problems)
    notes = len(problems) - errors
    verdict = style.paint("valid", "valid") if not errors else style.paint("INVALID", "invalid")
    text = f"{label}: {verdict}: {events:,} events, {errors} error(s), {notes} note(s)"
    if printed < len(problems):
        text += f" ({len(problems) - printed} not printed)"
    return text


def run(args: argparse.Namespace) -> int:
    found = open_args_sources(args, args.capture, allow_many=True)
    failed = False
    out = sys.stdout
    documents = []
    for source in found:
        problems, events, printed = _validate(args, source, out)
        errors = [p for p in problems if p.severity == "error" or args.strict]
        failed = failed or bool(errors)
        if args.json:
            doc: dict[str, Any] = {"input": source.label}
            if source.entry is not None:
                doc["entry"] = source.entry
            doc |= {
                "valid": not errors,
                "events": events,
                "errors": sum(p.severity == "error" for p in problems),
                "notes": sum(p.severity == "note" for p in problems),
                "problems": [p.as_dict() for p in problems],
            }
            documents.append(doc)
        else:
            print(_summary(source.label, events, problems, printed, Style(out)), file=out)
    if args.json:
        payload: Any = documents[0] if len(documents) == 1 else documents
        out.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_PROBLEMS if failed else EXIT_OK
