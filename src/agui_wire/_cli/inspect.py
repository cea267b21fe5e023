"""``agui-wire inspect``: a capture frame by frame, down to the bytes.

Strategy: one table line per frame (binary) or event (SSE, JSON Lines): index,
stream byte offset, length in bytes, event type, the ids that tie events
together (threadId, runId, messageId, toolCallId, stepName, subagentRunId...)
and a short preview of any ``delta``. ``--frame N`` shows one frame with its
event as JSON; ``--hex`` adds, for binary frames, the field-by-field dump of
``protodump`` (every byte, with offsets, field names and wire types) and, for
SSE or JSON Lines, a hexdump of the event's bytes. ``--json`` prints the table
as JSON Lines instead.

Contract: reading goes on past bad frames whenever the framing allows (a bad
frame is a table row saying what is wrong); exit 1 if any frame was bad or the
input held no event (``--allow-empty``: 0 for an empty stream), 2 if
``--frame N`` is past the end.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import IO, Any, Final

import orjson

from . import timeline
from ._args import (
    add_capture_argument,
    add_input_options,
    new_progress,
    no_events,
    read_capture,
)
from ._args import sources as open_args_sources
from ._capture import CaptureFrame
from ._common import EXIT_OK, EXIT_PROBLEMS, UsageError, human_bytes
from ._inputs import Input
from ._leftout import cli_words
from ._parser import add_command
from .protodump import dump_frame, hexdump

__all__ = ["ID_KEYS", "frame_ids", "register", "run"]

HELP = "list frames with offsets, sizes and ids; dump one field by field"
DESCRIPTION = """\
List a capture frame by frame: index, byte offset, length, type and ids
(threadId, runId, messageId, toolCallId, stepName, subagentRunId, ...).
--frame N --hex dumps one binary frame field by field (offsets, tags, schema
field names, wire types, lengths, values), like protoc --decode with bytes.
"""
EPILOG = """\
examples:
  agui-wire inspect capture.bin
  agui-wire inspect capture.bin --frame 17 --hex
  agui-wire inspect session.har --entry 4 --json | jq 'select(.type=="TOOL_CALL_START")'
"""

#: The keys shown as ids, in this order.
ID_KEYS: Final = (
    "threadId",
    "runId",
    "parentRunId",
    "subagentRunId",
    "parentSubagentRunId",
    "stepName",
    "messageId",
    "parentMessageId",
    "toolCallId",
    "parentToolCallId",
    "entityId",
    "activityType",
    "name",
)
_ID_TYPES_WITH_NAME: Final = frozenset({"CUSTOM", "SUBAGENT_STARTED"})


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub, common, "inspect", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run
    )
    add_capture_argument(p)
    p.add_argument("--frame", type=int, metavar="N", help="show only frame/event N (0-based)")
    p.add_argument(
        "--hex",
        action="store_true",
        help="binary: annotated field-by-field dump; SSE/JSON Lines: hexdump of the bytes",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per frame instead")
    timeline.add_timeline_options(p)
    add_input_options(p, keep_going=False)


def frame_ids(event: dict[str, Any]) -> dict[str, Any]:
    """The id-like keys of an event (``ID_KEYS``), in order."""
    etype = event.get("type")
    return {
        k: event[k]
        for k in ID_KEYS
        if k in event
        and event[k] is not None
        and (k != "name" or etype in _ID_TYPES_WITH_NAME)
        and not isinstance(event[k], (dict, list))
    }


def _preview(event: dict[str, Any], limit: int = 28) -> str:
    """What the event says beyond its ids: the tool called, the text it carries,
    the shape of a snapshot (its top-level keys or length)."""
    parts = []
    name = event.get("toolCallName")
    if isinstance(name, str):
        parts.append(f"toolCallName={name}")
    for key in ("delta", "content", "encryptedValue", "message"):
        value = event.get(key)
        if isinstance(value, str):
            text = orjson.dumps(value).decode()
            if len(text) > limit:
                text = text[: limit - 2] + '…"'
            parts.append(f"{key}={text}")
            break
        if isinstance(value, list) and key == "delta":
            parts.append(f"{key}=[{len(value)} ops]")
            break
    for key in ("snapshot", "messages", "content", "value"):
        value = event.get(key)
        if isinstance(value, dict):
            keys = ", ".join(value)
            if len(keys) > 2 * limit:
                keys = keys[: 2 * limit - 1] + "…"
            parts.append(f"{key}={{{keys}}}")
        elif isinstance(value, list) and key != "delta":
            parts.append(f"{key}=[{len(value)} item{'' if len(value) == 1 else 's'}]")
    return "  ".join(parts)


class _Window:
    """The raw bytes of the stream from some offset on (SSE hexdumps)."""

    def __init__(self) -> None:
        self.chunks: list[tuple[int, bytes]] = []

    def tap(self, chunk: bytes, at: int) -> None:
        self.chunks.append((at, chunk))

    def trim(self, before: int) -> None:
        while self.chunks and self.chunks[0][0] + len(self.chunks[0][1]) <= before:
            self.chunks.pop(0)

    def get(self, start: int, length: int) -> bytes:
        out = bytearray()
        for at, chunk in self.chunks:
            lo, hi = max(start, at), min(start + length, at + len(chunk))
            if lo < hi:
                out += chunk[lo - at : hi - at]
        return bytes(out)


def _row(frame: CaptureFrame) -> str:
    offset = "?" if frame.offset is None else f"{frame.offset:,}"
    length = "?" if frame.length is None else f"{frame.length:,}"
    head = f"{frame.index:>6}  {offset:>11}  {length:>8}  "
    if frame.error is not None:
        return head + f"{'!! BAD':<26}  {cli_words(frame.error.reason)}"
    if frame.note is not None:
        return head + f"{'(skipped)':<26}  {frame.note}"
    event = frame.event or {}
    return head + f"{event.get('type', '?')!s:<26}  " + _describe(event)


def _record(frame: CaptureFrame, source: Input) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    if source.entry is not None:
        rec["entry"] = source.entry
    rec |= {"index": frame.index, "offset": frame.offset, "length": frame.length}
    if frame.error is not None:
        rec |= {"type": None, "error": frame.error.reason, "error_offset": frame.error.offset}
    elif frame.note is not None:
        rec |= {"type": None, "note": frame.note}
    else:
        event = frame.event or {}
        rec |= {"type": event.get("type"), "ids": frame_ids(event)}
    return rec


def _detail(frame: CaptureFrame, source: Input, window: _Window, hex_: bool, out: IO[str]) -> None:
    print(_row(frame), file=out)
    if frame.event is not None:
        print(orjson.dumps(frame.event, option=orjson.OPT_INDENT_2).decode(), file=out)
    if frame.error is not None and frame.error.offset is not None:
        print(f"!! byte {frame.error.offset}: {frame.error.reason}", file=out)
    if not hex_:
        return
    print(file=out)
    if source.format == "proto" and frame.payload is not None and frame.offset is not None:
        for line in dump_frame(frame.payload, frame.offset):
            print(line, file=out)
    elif frame.offset is not None and frame.length:
        for line in hexdump(window.get(frame.offset, frame.length), frame.offset):
            print(line, file=out)


def _inspect(args: argparse.Namespace, source: Input, out: IO[str]) -> tuple[int, int, int]:
    window = _Window()
    wanted = args.frame
    detail = wanted is not None or args.hex
    progress = new_progress(args, "inspecting", source)
    stream = read_capture(
        args,
        source,
        keep_going=True,
        progress=progress,
        keep_payload=detail and source.format == "proto",
        sse_lengths=True,
        tap=window.tap if detail and source.format != "proto" else None,
    )
    seen = bad = 0
    if not args.json and wanted is None:
        print(f"{'index':>6}  {'offset':>11}  {'length':>8}  {'type':<26}  ids", file=out)
    frames: Iterator[CaptureFrame] = iter(stream)
    try:
        for frame in frames:
            seen = frame.index + 1
            bad += frame.error is not None
            if wanted is not None and frame.index != wanted:
                if frame.offset is not None:
                    window.trim(frame.offset)
                continue
            progress.close()
            if args.json:
                out.write(orjson.dumps(_record(frame, source)).decode() + "\n")
            elif detail:
                _detail(frame, source, window, args.hex, out)
                if wanted is None:
                    print(file=out)
            else:
                print(_row(frame), file=out)
            if frame.offset is not None:
                window.trim(frame.offset)
            if wanted is not None:
                return seen, bad, 1
    finally:
        progress.close()
    if wanted is not None:
        raise UsageError(f"{source.label}: no frame {wanted}: it has {seen} (0..{seen - 1})")
    if not args.json:
        kind = {"proto": "binary frames", "sse": "SSE events", "jsonl": "JSON lines"}
        size = human_bytes(stream.end_offset)
        if stream.end_offset >= 1024:  # below that human_bytes already says "N B"
            size += f" ({stream.end_offset:,} bytes)"
        print(f"{seen:,} {kind[source.format]}, {size}" + (f", {bad} bad" if bad else ""), file=out)
    if no_events(args, stream):
        bad += 1
    return seen, bad, 0


def _describe(event: dict[str, Any]) -> str:
    ids = "  ".join(f"{k}={v}" for k, v in frame_ids(event).items())
    return "  ".join(x for x in (ids, _preview(event)) if x)


def run(args: argparse.Namespace) -> int:
    if args.timeline or args.html or args.timing:
        if not args.timeline:
            raise UsageError("--html and --timing go with --timeline")
        return timeline.run(args, _describe)
    found = open_args_sources(args, args.capture, allow_many=True)
    failed = False
    out = sys.stdout
    for n, source in enumerate(found):
        if len(found) > 1 and not args.json:
            if n:
                print(file=out)
            # the label already names the entry ("x.har entry 3"): the request follows it
            what = f": {source.har.exchange()}" if source.har else ""
            print(f"== {source.label}{what}", file=out)
        _, bad, _ = _inspect(args, source, out)
        failed = failed or bad > 0
    return EXIT_PROBLEMS if failed else EXIT_OK
