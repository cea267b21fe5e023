"""One frame or SSE event of a stream, with its position: ``Record``, and the records
of a chunk's frame payloads.

Strategy: ``RecordReader`` (one record per frame or event, past bad ones on request)
and the per-chunk decoders of ``EventDecoder`` both turn a chunk's payloads into
events with ``payload_records``, which locates each refusal (frame index, stream
byte offset) and applies the unknown-event policy, so the two cannot drift.

Contract: ``payload_records(payloads, index, offset, decode_payload,
unknown_events, refused)`` yields one ``Record`` per payload, frame ``index`` at
stream byte ``offset`` and each following the previous one's frame; a payload that
does not decode is a record with ``error`` set (located: ``index``, ``offset``,
``frame_offset``), except an event of a later protocol, which ``unknown_events``
makes a record with ``unknown`` set (``"skip"``), an ``UnknownEventError`` record
(``"raise"``) or a RAW event (``"raw"``: ``raw_unknown_event``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, Final

from ..errors import DecodeError, InvalidEvent, SSEUnknownEvent, UnknownEventError
from ..schema import FRAME_HEADER_SIZE
from .options import InvalidPolicy, UnknownPolicy

__all__ = ["UNKNOWN_EVENT_SOURCE", "Record", "payload_records", "raw_unknown_event"]

UNKNOWN_EVENT_SOURCE: Final = "agui_wire.unknown_event"


class Record:
    """One frame or SSE event of a stream (see the module doc)."""

    __slots__ = (
        "error",
        "event",
        "fatal",
        "index",
        "invalid",
        "length",
        "offset",
        "payload",
        "unknown",
    )

    def __init__(
        self,
        index: int,
        offset: int,
        length: int | None = None,
        event: dict[str, Any] | None = None,
        error: DecodeError | None = None,
        unknown: UnknownEventError | None = None,
        fatal: bool = False,
        payload: bytes | memoryview | None = None,
    ) -> None:
        self.index = index  # 0-based frame / SSE event number
        self.offset = offset  # stream byte offset where it starts
        self.length = length  # binary: 4 + payload bytes; SSE: None
        self.event = event  # the decoded event, or None
        self.error = error  # why it did not decode, or None
        self.unknown = unknown  # an event of a later protocol, skipped
        self.fatal = fatal  # nothing after this error can be read
        self.payload = payload  # binary: the frame's payload bytes
        # invalid_events="keep": why @ag-ui/core's schemas reject the event kept
        self.invalid: InvalidEvent | None = None

    def __repr__(self) -> str:
        what = (
            f"error={self.error!r}"
            if self.error is not None
            else f"unknown={self.unknown!r}"
            if self.unknown is not None
            else f"event={self.event!r}"
            + ("" if self.invalid is None else f", invalid={self.invalid!r}")
        )
        return f"Record(index={self.index}, offset={self.offset}, length={self.length}, {what}" + (
            ", fatal=True)" if self.fatal else ")"
        )


def raw_unknown_event(exc: UnknownEventError) -> dict[str, Any]:
    """The RAW event ``unknown_events="raw"`` gives for an event of a later protocol:
    an SSE event's JSON object as it came, a frame's unknown fields (their numbers
    and their bytes in base64)."""
    if isinstance(exc, SSEUnknownEvent):
        return {"type": "RAW", "source": UNKNOWN_EVENT_SOURCE, "event": exc.event}
    return {
        "type": "RAW",
        "source": UNKNOWN_EVENT_SOURCE,
        "event": {
            "fields": [
                {"number": n, "payload": base64.b64encode(data).decode("ascii")}
                for n, data in exc.fields
            ]
        },
    }


def payload_records(
    payloads: list[Any],
    index: int,
    offset: int,
    decode_payload: Callable[[Any], dict[str, Any]],
    unknown_events: UnknownPolicy,
    refused: DecodeError | None = None,
    invalid_events: InvalidPolicy = "raise",
) -> Iterator[Record]:
    """One record per payload: frame ``index`` starts at stream byte ``offset``
    and each payload follows the previous one's frame (see ``FrameReader``).
    ``refused``: the error ``payloads[0]`` raised when the caller decoded it
    already (it is not decoded again: a second decode would warn again).
    ``invalid_events="keep"``: an ``InvalidEvent`` is a record of the event as
    decoded, marked (``invalid``)."""
    for payload in payloads:
        size = len(payload)
        if refused is not None:
            yield _bad_payload(refused, payload, index, offset, unknown_events, invalid_events)
            refused = None
        else:
            try:
                yield Record(
                    index,
                    offset,
                    FRAME_HEADER_SIZE + size,
                    decode_payload(payload),
                    None,
                    None,
                    False,
                    payload,
                )
            except DecodeError as exc:
                yield _bad_payload(exc, payload, index, offset, unknown_events, invalid_events)
        index += 1
        offset += FRAME_HEADER_SIZE + size


def _bad_payload(
    exc: DecodeError,
    payload: Any,
    index: int,
    offset: int,
    unknown_events: UnknownPolicy,
    invalid_events: InvalidPolicy,
) -> Record:
    record = Record(index, offset, FRAME_HEADER_SIZE + len(payload), payload=payload)
    located = exc.located(index=index, frame_offset=offset, base=offset + FRAME_HEADER_SIZE)
    if isinstance(located, InvalidEvent) and invalid_events == "keep":
        record.event = located.event
        record.invalid = located
    elif not isinstance(located, UnknownEventError) or unknown_events == "raise":
        record.error = located
    elif unknown_events == "raw":
        record.event = raw_unknown_event(located)
    else:
        record.unknown = located
    return record
