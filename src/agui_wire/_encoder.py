"""Writing events: ``EventEncoder`` for servers, and the one-shot encoders.

Strategy: negotiate once (``negotiation.negotiate`` on the request's ``Accept``),
then every ``encode`` call goes straight to the transport's encoder: the Cython
frame encoder for protobuf, orjson behind the Cython SSE writer for SSE (the
pure-Python twins without the extension). What a server writes to the socket
always matches ``content_type``.

Events are dicts shaped as ``@ag-ui/core`` JSON, or the pydantic event objects of
the official Python SDK (PyPI ``ag-ui-protocol``), so a server written against
``ag_ui.encoder.EventEncoder`` switches by changing the import. Unlike that class,
``encode`` returns ``bytes`` (what the socket takes) and honours ``Accept``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ._codec import backend
from ._codec.proto_writer import DEFAULT_MAX_DEPTH
from ._codec.sse_writer import encode_sse as _encode_sse_dict
from ._negotiation import PROTO_MEDIA_TYPE, negotiate

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


_SSE: Final = backend.SSEEncoder(convert=as_event_dict)


def encode_sse(event: Mapping[str, Any] | Any, *, id: str | None = None) -> bytes:
    """One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given)."""
    if id is None:
        return _SSE.encode(event)
    return _encode_sse_dict(as_event_dict(event), id=id)


class EventEncoder:
    """Encodes events in the transport the client asked for.

    ``accept`` is the request's ``Accept`` header. Protobuf is chosen only when the
    client prefers it (RFC 9110 negotiation; ``*/*`` and no header give SSE). With
    ``strict=True`` an ``Accept`` that allows neither transport raises
    ``NotAcceptable`` (answer 406); otherwise SSE is the fallback. The protobuf
    options are those of ``encode_proto``; SSE ignores them.
    """

    # ``encode`` and ``encode_many`` are bound per instance to the transport's
    # encoder (for protobuf a C method with the options bound), so encoding an
    # event is one call: no Python frame, no keyword parsing, no branch on the
    # transport. The methods below document them and serve subclasses.
    encode: Callable[[Mapping[str, Any] | Any], bytes]
    encode_many: Callable[[Iterable[Mapping[str, Any] | Any]], bytes]

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
        frames = backend.FrameEncoder(
            lossy_numbers=lossy_numbers,
            extra_keys=extra_keys,
            max_depth=max_depth,
            convert=as_event_dict,
        )
        if self.content_type == PROTO_MEDIA_TYPE:
            self.encode = frames.encode
            self.encode_many = frames.encode_many
        else:
            sse = backend.SSEEncoder(convert=as_event_dict)
            self.encode = sse.encode
            self.encode_many = sse.encode_many

    def get_content_type(self) -> str:
        """The negotiated content type (the name ``ag_ui.encoder`` uses)."""
        return self.content_type

    @property
    def is_binary(self) -> bool:
        """Whether protobuf frames were negotiated."""
        return self.content_type == PROTO_MEDIA_TYPE

    def __repr__(self) -> str:
        return f"EventEncoder(content_type={self.content_type!r})"
