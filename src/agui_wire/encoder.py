"""Writing events: ``EventEncoder`` for servers, and the one-shot encoders.

Strategy: negotiate once (``negotiation.negotiate`` on the request's ``Accept``),
then every ``encode`` call goes straight to the transport's encoder: the Cython
frame encoder for protobuf (the pure-Python twin without the extension), orjson
for SSE. What a server writes to the socket always matches ``content_type``.

Events are dicts shaped as ``@ag-ui/core`` JSON, or the pydantic event objects of
the official Python SDK (PyPI ``ag-ui-protocol``), so a server written against
``ag_ui.encoder.EventEncoder`` switches by changing the import. Unlike that class,
``encode`` returns ``bytes`` (what the socket takes) and honours ``Accept``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import backend
from .negotiation import PROTO_MEDIA_TYPE, negotiate
from .proto_writer import DEFAULT_MAX_DEPTH
from .sse_writer import encode_sse as _encode_sse_dict
from .sse_writer import encode_sse_many as _encode_sse_many

__all__ = ["EventEncoder", "as_event_dict", "encode_proto", "encode_sse"]


def as_event_dict(event: Any) -> Any:
    """The JSON dict of an event: dicts as they are, pydantic models of the
    official SDK dumped the way its own encoder writes them (camelCase aliases,
    optional fields without a value left out by the SDK's serializer)."""
    if isinstance(event, dict):
        return event
    dump = getattr(event, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True)
    return event  # the encoders reject it with an EncodeError naming its type


def encode_proto(
    event: Mapping[str, Any] | Any,
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """One binary frame for ``event``: 4-byte big-endian length + ``ag_ui.Event``.

    Byte-identical to ``@ag-ui/proto`` 1.0.0 for valid events. Raises
    ``EncodeError`` (event type, JSON pointer, reason) for anything the wire cannot
    carry faithfully; see docs/wire-format.md for the rules.
    """
    return backend.encode_frame(
        as_event_dict(event),
        lossy_numbers=lossy_numbers,
        extra_keys=extra_keys,
        max_depth=max_depth,
    )


def encode_sse(event: Mapping[str, Any] | Any, *, id: str | None = None) -> bytes:
    """One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given)."""
    return _encode_sse_dict(as_event_dict(event), id=id)


class EventEncoder:
    """Encodes events in the transport the client asked for.

    ``accept`` is the request's ``Accept`` header. Protobuf is chosen only when the
    client prefers it (RFC 9110 negotiation; ``*/*`` and no header give SSE). With
    ``strict=True`` an ``Accept`` that allows neither transport raises
    ``NotAcceptable`` (answer 406); otherwise SSE is the fallback. The protobuf
    options are those of ``encode_proto``; SSE ignores them.
    """

    __slots__ = ("_extra_keys", "_lossy_numbers", "_max_depth", "_proto", "content_type")

    def __init__(
        self,
        accept: str | None = None,
        *,
        strict: bool = False,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        self.content_type: str = negotiate(accept, strict=strict)
        self._proto = self.content_type == PROTO_MEDIA_TYPE
        self._lossy_numbers = lossy_numbers
        self._extra_keys = extra_keys
        self._max_depth = max_depth
        if extra_keys not in ("drop", "error"):
            raise ValueError(f"extra_keys must be 'drop' or 'error', not {extra_keys!r}")

    def get_content_type(self) -> str:
        """The negotiated content type (the name ``ag_ui.encoder`` uses)."""
        return self.content_type

    @property
    def is_binary(self) -> bool:
        """Whether protobuf frames were negotiated."""
        return self._proto

    def encode(self, event: Mapping[str, Any] | Any) -> bytes:
        """One event in the negotiated transport."""
        if self._proto:
            return backend.encode_frame(
                as_event_dict(event),
                lossy_numbers=self._lossy_numbers,
                extra_keys=self._extra_keys,
                max_depth=self._max_depth,
            )
        return _encode_sse_dict(as_event_dict(event))

    def encode_many(self, events: Iterable[Mapping[str, Any] | Any]) -> bytes:
        """Several events in the negotiated transport, in one ``bytes``."""
        dicts = (as_event_dict(e) for e in events)
        if self._proto:
            return backend.encode_frames(
                dicts,
                lossy_numbers=self._lossy_numbers,
                extra_keys=self._extra_keys,
                max_depth=self._max_depth,
            )
        return _encode_sse_many(dicts)

    def __repr__(self) -> str:
        return f"EventEncoder(content_type={self.content_type!r})"
