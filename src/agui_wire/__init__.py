"""agui_wire: AG-UI events on the wire, protobuf and SSE, both directions.

Servers: ``EventEncoder(request.headers.get("accept"))`` negotiates the transport;
``.encode(event)`` gives the bytes to write and ``.content_type`` the header.
Clients and captures: ``EventDecoder``, ``decode``, ``iter_decode``,
``aiter_decode``; ``read_records``/``aread_records`` (``RecordReader``) read record
by record, with positions, past bad frames on request. One-shot:
``encode_proto``/``decode_proto``, ``encode_sse``.
Message objects: ``event_to_proto``/``event_from_proto``. Protocol rules:
``validate_event``/``validate_stream``. Events are dicts shaped
as ``@ag-ui/core`` 1.0.0 JSON (or the official SDK's pydantic objects on encode).
docs/wire-format.md states the mapping; docs/errors.md the error contract.
Modules imported on demand only: ``agui_wire.asgi`` (``EventStreamResponse``),
``agui_wire.client`` (``run_agent``), ``agui_wire.redis`` (``RunStore``: runs on
Redis Streams, resumable on any replica; the ``redis`` extra, docs/scaling.md).
The docs/NAME.md pages named here and in every docstring and message ship in the
package, as agui_wire/docs/NAME.md: ``agui-wire docs`` lists them and
``agui-wire docs NAME`` prints one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the private module that defines it. Nothing is imported until a
# name is first used (h11's habit: the package is a narrow index over private
# modules), so ``import agui_wire`` is cheap and loads neither protobuf's upb
# path nor the validator unless the program uses them.
_LAZY: dict[str, str] = {
    "EventDecoder": "._decoder",
    "aiter_decode": "._decoder",
    "decode": "._decoder",
    "decode_proto": "._decoder",
    "iter_decode": "._decoder",
    "sniff": "._codec.sources",
    "Record": "._codec.records",
    "RecordReader": "._reader",
    "read_records": "._reader",
    "aread_records": "._reader",
    "EventEncoder": "._encoder",
    "install": ".compat",
    "uninstall": ".compat",
    "encode_proto": "._encoder",
    "encode_sse": "._encoder",
    "AguiWireError": ".errors",
    "DecodeError": ".errors",
    "EncodeError": ".errors",
    "FrameTooLarge": ".errors",
    "LimitExceeded": ".errors",
    "NotAcceptable": ".errors",
    "SSEError": ".errors",
    "StreamClosed": ".errors",
    "TruncatedStream": ".errors",
    "UnknownEventError": ".errors",
    "UnknownEventWarning": ".errors",
    "UnknownPartWarning": ".errors",
    "PROTO_MEDIA_TYPE": "._mediatypes",
    "SSE_MEDIA_TYPE": "._mediatypes",
    "negotiate": "._negotiation",
    "normalize": "._normalize",
    "EVENT_TYPES": ".schema",
    "event_from_proto": "._codec.upb",
    "event_to_proto": "._codec.upb",
    "Problem": ".validate",
    "StreamValidator": ".validate",
    "validate_event": ".validate",
    "validate_stream": ".validate",
}

__all__ = ["__version__", *sorted(_LAZY)]

if TYPE_CHECKING:
    from ._codec.records import Record as Record
    from ._codec.sources import sniff as sniff
    from ._codec.upb import event_from_proto as event_from_proto
    from ._codec.upb import event_to_proto as event_to_proto
    from ._decoder import EventDecoder as EventDecoder
    from ._decoder import aiter_decode as aiter_decode
    from ._decoder import decode as decode
    from ._decoder import decode_proto as decode_proto
    from ._decoder import iter_decode as iter_decode
    from ._encoder import EventEncoder as EventEncoder
    from ._encoder import encode_proto as encode_proto
    from ._encoder import encode_sse as encode_sse
    from ._mediatypes import PROTO_MEDIA_TYPE as PROTO_MEDIA_TYPE
    from ._mediatypes import SSE_MEDIA_TYPE as SSE_MEDIA_TYPE
    from ._negotiation import negotiate as negotiate
    from ._normalize import normalize as normalize
    from ._reader import RecordReader as RecordReader
    from ._reader import aread_records as aread_records
    from ._reader import read_records as read_records
    from .compat import install as install
    from .compat import uninstall as uninstall
    from .errors import AguiWireError as AguiWireError
    from .errors import DecodeError as DecodeError
    from .errors import EncodeError as EncodeError
    from .errors import FrameTooLarge as FrameTooLarge
    from .errors import LimitExceeded as LimitExceeded
    from .errors import NotAcceptable as NotAcceptable
    from .errors import SSEError as SSEError
    from .errors import StreamClosed as StreamClosed
    from .errors import TruncatedStream as TruncatedStream
    from .errors import UnknownEventError as UnknownEventError
    from .errors import UnknownEventWarning as UnknownEventWarning
    from .errors import UnknownPartWarning as UnknownPartWarning
    from .schema import EVENT_TYPES as EVENT_TYPES
    from .validate import Problem as Problem
    from .validate import StreamValidator as StreamValidator
    from .validate import validate_event as validate_event
    from .validate import validate_stream as validate_stream


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agui_wire' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
