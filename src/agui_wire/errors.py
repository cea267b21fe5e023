"""Every error and warning agui_wire raises.

Contract: encoding never writes something the caller did not mean, and decoding
never hands back something the bytes did not say. When either cannot be done the
caller gets one of these, carrying where it happened: the event type and JSON path
on encode; the frame or event index and the byte offset on decode. docs/errors.md
says when each is raised and how to continue past it.
"""

from __future__ import annotations

import copy

__all__ = [
    "AguiWireError",
    "DecodeError",
    "EncodeError",
    "FrameTooLarge",
    "LimitExceeded",
    "NotAcceptable",
    "SSEError",
    "TruncatedStream",
    "UnknownEventError",
    "UnknownEventWarning",
    "UnknownPartWarning",
]


class AguiWireError(Exception):
    """Base class of every error raised by agui_wire."""


class EncodeError(AguiWireError, ValueError):
    """An event cannot be encoded as given.

    ``event_type`` is the event's ``type`` (``None`` when missing or not a string);
    ``path`` is a JSON pointer to the offending value inside the event (``""`` for
    the event itself); ``reason`` says what is wrong with it.
    """

    def __init__(self, reason: str, *, event_type: str | None = None, path: str = "") -> None:
        self.reason = reason
        self.event_type = event_type
        self.path = path
        where = event_type if event_type is not None else "event"
        if path:
            where += f" at {path}"
        super().__init__(f"{where}: {reason}")


class DecodeError(AguiWireError, ValueError):
    """Bytes that do not decode to an AG-UI event.

    ``index`` is the 0-based frame (protobuf) or event (SSE) index in the stream,
    ``offset`` the absolute byte offset in the stream where the problem was found,
    ``frame_offset`` the offset where that frame or event starts. Any of them is
    ``None`` when unknown (a single payload decoded on its own has no stream
    position beyond its own bytes). The events before ``index`` were good: the
    stream-level decoders hand them out before raising.
    """

    def __init__(
        self,
        reason: str,
        *,
        index: int | None = None,
        offset: int | None = None,
        frame_offset: int | None = None,
        event_type: str | None = None,
    ) -> None:
        self.reason = reason
        self.index = index
        self.offset = offset
        self.frame_offset = frame_offset
        self.event_type = event_type
        #: The events decoded before the error, when a whole-buffer decoder
        #: (``decode``, ``decode_proto``) raised it; empty otherwise.
        self.events: list[dict[str, object]] = []
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.index is not None:
            parts.append(f"{self._unit} {self.index}")
        if self.offset is not None:
            parts.append(f"byte {self.offset}")
        if self.event_type is not None:
            parts.append(self.event_type)
        head = ", ".join(parts)
        return f"{head}: {self.reason}" if head else self.reason

    _unit = "frame"

    def located(self, *, index: int, frame_offset: int, base: int) -> DecodeError:
        """This error placed in a stream: frame ``index`` starts at byte
        ``frame_offset`` and the bytes this error's ``offset`` counts from start at
        ``base``. Payload decoders report offsets relative to the payload; the
        stream decoders move them to stream offsets with this."""
        err = copy.copy(self)
        err.index = index
        err.frame_offset = frame_offset
        err.offset = base + (self.offset or 0)
        err.args = (err._render(),)
        return err


class TruncatedStream(DecodeError):
    """The stream ended inside a frame (or inside an SSE event that is cut short)."""


class FrameTooLarge(DecodeError):
    """A frame declares a length above the configured ``max_frame_size``."""


class LimitExceeded(DecodeError):
    """A configured resource limit: JSON nesting (``max_depth``), events per decoder
    (``max_events``), SSE event size (``max_event_size``). Only raised for input
    that would decode with a higher limit; input with another fault raises that."""


class UnknownEventError(DecodeError):
    """A frame carries only event arms this protocol version does not know: an
    event from a later protocol. ``fields`` holds the unknown top-level fields as
    ``(field_number, payload_bytes)``. The stream decoders apply the caller's
    ``unknown_events`` policy to it (skip with a warning, raise, or a RAW event)."""

    def __init__(
        self,
        reason: str,
        *,
        fields: tuple[tuple[int, bytes], ...] = (),
        index: int | None = None,
        offset: int | None = None,
        frame_offset: int | None = None,
    ) -> None:
        super().__init__(reason, index=index, offset=offset, frame_offset=frame_offset)
        self.fields = fields


class SSEError(DecodeError):
    """An SSE event whose data is not a JSON object with a string ``type``."""

    _unit = "event"


class NotAcceptable(AguiWireError):
    """Strict negotiation found no transport the ``Accept`` header allows (HTTP 406)."""

    def __init__(self, accept: str | None) -> None:
        self.accept = accept
        super().__init__(
            f"no acceptable AG-UI transport in Accept: {accept!r}; "
            "offered text/event-stream and application/vnd.ag-ui.event+proto"
        )


class UnknownEventWarning(UserWarning):
    """A frame carried an event arm from a later protocol and was skipped."""


class UnknownPartWarning(UserWarning):
    """A content part (or its source) of a kind this protocol version does not know
    was dropped from its message, as the reference decoder does."""
