"""Fuzz target: the SSE decoder (``SSEParser``, ``SSEEventReader`` via ``EventDecoder``).

Strategy: the input is an event stream. The incremental parser reads it whole, a
byte at a time and in pseudo-random chunks; ``reference()`` below, a direct
non-incremental transcription of the WHATWG "parse an event stream" rules plus
the documented departures (an event without a trailing blank line is delivered
at close, marked cut; invalid UTF-8 is an error at its byte offset unless
``errors="replace"``), is the oracle for the parsed messages. ``EventDecoder``
then must give ``decode_sse_message`` of exactly those messages, with
``max_depth`` and a small ``max_event_size`` derived from the input checked for
consistency across chunkings.

Contract checked: the same messages (data, event, id, retry, index, offset) as
the oracle; the same events and the same error (class, message, positions) for
every chunking; nothing escapes but ``DecodeError``.
"""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from typing import Any

if __name__ == "__main__":
    import atheris

    _instrumented: Any = atheris.instrument_imports(include=["agui_wire", "fuzzlib"])
else:
    _instrumented = contextlib.nullcontext()

with _instrumented:
    from agui_wire import DecodeError, EventDecoder
    from agui_wire._codec.sse_reader import SSEMessage, SSEParser, decode_sse_message
    from agui_wire.errors import SSEUnknownEvent, UnknownEventWarning
    from tests.fuzz.fuzzlib import (
        Err,
        Ok,
        check_event,
        chunkings,
        describe,
        outcome,
        pick,
        same_outcome,
    )

SEEDS = "sse"
SSE = "text/event-stream"
_LINE = re.compile(rb"\r\n|\r|\n")
SIZES = (10 * 1024 * 1024, 8, 32, 100, 1000)
DEPTHS = (1024, 1, 2, 5)


def reference(data: bytes, errors: str) -> tuple[list[SSEMessage], int | None]:
    """(messages, offset of the first invalid UTF-8 byte or None)."""
    base = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    out: list[SSEMessage] = []
    data_lines: list[str] = []
    event = last_id = id_buf = ""
    retry: int | None = None
    block = -1
    pos = base
    while True:
        m = _LINE.search(data, pos)
        end = m.start() if m else len(data)
        raw = data[pos:end]
        if raw:
            if block < 0:
                block = pos
            try:
                line = raw.decode("utf-8", errors)
            except UnicodeDecodeError as exc:
                return out, pos + exc.start
            if not line.startswith(":"):
                name, colon, value = line.partition(":")
                if colon and value.startswith(" "):
                    value = value[1:]
                if name == "data":
                    data_lines.append(value)
                elif name == "event":
                    event = value
                elif name == "id" and "\0" not in value:
                    id_buf = value
                elif name == "retry" and value.isascii() and value.isdigit() and len(value) <= 18:
                    retry = int(value)
        if not raw or m is None:  # a blank line, or the end of the stream: dispatch
            last_id = id_buf
            if data_lines:
                text = "\n".join(data_lines)
                cut = m is None  # the end of the stream dispatched it, not a blank line
                out.append(
                    SSEMessage(text, event or "message", last_id, retry, len(out), block, cut)
                )
            data_lines, event, retry, block = [], "", None, -1
        if m is None:
            return out, None
        pos = m.end()


def parse(chunks: list[bytes], errors: str) -> tuple[list[SSEMessage], DecodeError | None]:
    parser = SSEParser(errors=errors)  # type: ignore[arg-type]
    got: list[SSEMessage] = []
    try:
        for chunk in chunks:
            got += parser.feed(chunk)
            if parser.pending_error is not None:
                raise parser.pending_error
        got += parser.close()
    except DecodeError as exc:
        return got, exc
    return got, None


def events(chunks: list[bytes], options: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    with warnings.catch_warnings():  # an event of an unknown type is skipped, with a warning
        warnings.simplefilter("ignore", UnknownEventWarning)
        return _events(chunks, options)


def _events(chunks: list[bytes], options: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    decoder = EventDecoder(SSE, **options)
    got: list[dict[str, Any]] = []
    for chunk in chunks:
        result = outcome(decoder.feed, chunk)
        if isinstance(result, Err):
            return got, result
        got += result.value
        if decoder.pending_error is not None:
            return got, outcome(decoder.feed, b"")
    result = outcome(decoder.close)
    if isinstance(result, Ok):
        got += result.value
    return got, result


def test_one_input(data: bytes) -> None:
    for errors in ("strict", "replace"):
        want, bad_utf8 = reference(data, errors)
        for name, chunks in chunkings(data):
            got, error = parse(chunks, errors)
            assert got == want[: len(got)], f"{name}/{errors}: messages differ from the reference"
            if bad_utf8 is None:
                assert error is None, f"{name}/{errors}: unexpected {error!r}"
                assert len(got) == len(want), f"{name}/{errors}: messages missing"
            else:
                assert error is not None, f"{name}/{errors}: invalid UTF-8 accepted"
                assert error.offset == bad_utf8, (name, error, bad_utf8)
                assert len(got) == len(want), f"{name}/{errors}: messages before the error"
    variants: list[dict[str, Any]] = [
        {},
        {"max_event_size": pick(data, SIZES, 3), "max_depth": pick(data, DEPTHS, 4)},
        {"invalid_utf8": "replace", "max_events": pick(data, (0, 1, 2, 5), 5)},
    ]
    for options in variants:
        first: tuple[list[dict[str, Any]], Any] | None = None
        for name, chunks in chunkings(data):
            got, end = events(chunks, options)
            for event in got:
                check_event(event)
            if first is None:
                first = (got, end)
                continue
            assert same_outcome(Ok(got), Ok(first[0])), f"{name} {options}: events differ"
            assert same_outcome(end, first[1]), (
                f"{name} {options}: {describe(end)} != {describe(first[1])}"
            )
    # the events are decode_sse_message of the reference messages, up to an error
    want, _ = reference(data, "strict")
    got, _ = events([data], {})
    expected: list[dict[str, Any]] = []
    for message in want:
        try:
            expected.append(decode_sse_message(message))
        except SSEUnknownEvent:
            continue  # skipped, as the decoder's default unknown_events="skip" has it
        except DecodeError:
            break
    assert same_outcome(Ok(got), Ok(expected)), "events differ from decode_sse_message"


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
