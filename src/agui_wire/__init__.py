"""agui_wire: AG-UI events on the wire, protobuf and SSE, both directions.

Servers: ``EventEncoder(request.headers.get("accept"))`` negotiates the transport;
``.encode(event)`` gives the bytes to write and ``.content_type`` the header.
Clients and captures: ``EventDecoder``, ``decode``, ``iter_decode``,
``aiter_decode``. One-shot: ``encode_proto``/``decode_proto``, ``encode_sse``.
Message objects: ``event_to_proto``/``event_from_proto``. Protocol rules:
``validate_event``/``validate_stream``. Events are dicts shaped
as ``@ag-ui/core`` 1.0.0 JSON (or the official SDK's pydantic objects on encode).
docs/wire-format.md states the mapping; docs/errors.md the error contract.
"""

from __future__ import annotations

from .decoder import EventDecoder, aiter_decode, decode, decode_proto, iter_decode, sniff
from .encoder import EventEncoder, encode_proto, encode_sse
from .errors import (
    AguiWireError,
    DecodeError,
    EncodeError,
    FrameTooLarge,
    LimitExceeded,
    NotAcceptable,
    SSEError,
    TruncatedStream,
    UnknownEventError,
    UnknownEventWarning,
    UnknownPartWarning,
)
from .negotiation import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, negotiate
from .normalize import normalize
from .schema import EVENT_TYPES
from .upb import event_from_proto, event_to_proto
from .validate import Problem, StreamValidator, validate_event, validate_stream

__version__ = "0.1.0"

__all__ = [
    "EVENT_TYPES",
    "PROTO_MEDIA_TYPE",
    "SSE_MEDIA_TYPE",
    "AguiWireError",
    "DecodeError",
    "EncodeError",
    "EventDecoder",
    "EventEncoder",
    "FrameTooLarge",
    "LimitExceeded",
    "NotAcceptable",
    "Problem",
    "SSEError",
    "StreamValidator",
    "TruncatedStream",
    "UnknownEventError",
    "UnknownEventWarning",
    "UnknownPartWarning",
    "__version__",
    "aiter_decode",
    "decode",
    "decode_proto",
    "encode_proto",
    "encode_sse",
    "event_from_proto",
    "event_to_proto",
    "iter_decode",
    "negotiate",
    "normalize",
    "sniff",
    "validate_event",
    "validate_stream",
]
