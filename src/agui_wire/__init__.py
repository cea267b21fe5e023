"""agui_wire: AG-UI events on the wire, protobuf and SSE, both directions."""

from __future__ import annotations

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
)

PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
SSE_MEDIA_TYPE = "text/event-stream"

__all__ = [
    "PROTO_MEDIA_TYPE",
    "SSE_MEDIA_TYPE",
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
]
