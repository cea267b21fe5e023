# Type stubs of the Cython extension agui_wire._fast. Each section mirrors one
# include file of _fast.pyx and the pure-Python twin that documents its contract.

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from typing_extensions import disjoint_base

from agui_wire._codec import stream_decoder
from agui_wire._codec.sources import Buffer
from agui_wire.errors import DecodeError

# ---------------------------------------------------------------------------
# _codec/_framing.pxi (twin: agui_wire._codec.framing)
# ---------------------------------------------------------------------------

def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """One frame: the 4-byte big-endian length of ``payload``, then ``payload``."""

@disjoint_base  # a cdef class: no class derives from it and another such base
class FrameReader:
    """Incremental reader of length-prefixed frames (contract: agui_wire._codec.framing)."""

    def __init__(self, max_frame_size: int = ...) -> None: ...
    @property
    def max_frame_size(self) -> int: ...
    @property
    def frames_read(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def bytes_fed(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    @property
    def pending_error(self) -> DecodeError | None: ...
    @property
    def closed(self) -> bool: ...
    def feed(self, chunk: Buffer) -> list[bytes | memoryview]: ...
    def close(self) -> None: ...

# ---------------------------------------------------------------------------
# _codec/_proto_writer_*.pxi (twin: agui_wire._codec.proto_writer)
# ---------------------------------------------------------------------------

def encode_payload(
    event: Mapping[str, Any],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = 1024,
) -> bytes:
    """The serialized ``ag_ui.Event`` for one event dict (no length prefix)."""

def encode_proto(
    event: Mapping[str, Any] | Any,
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = 1024,
) -> bytes:
    """One frame: the 4-byte big-endian payload length, then the ``Event`` bytes
    (a dict, or an official SDK pydantic event)."""

def encode_frames(
    events: Iterable[Mapping[str, Any]],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = 1024,
) -> bytes:
    """Frames for several events, concatenated: a binary stream body."""

@disjoint_base  # a cdef class: no class derives from it and another such base
class FrameEncoder:
    """``encode_proto`` with its options bound; ``.encode`` is one C call."""

    def __init__(
        self,
        *,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = 1024,
        convert: Callable[[Any], Any] | None = None,
    ) -> None: ...
    def encode(self, event: Any) -> bytes: ...
    def encode_many(self, events: Iterable[Any]) -> bytes: ...

def _encoder_fallbacks() -> int:
    """Events handed to proto_writer since import (errors, exotic input)."""

def _json_value(
    root: Any, as_struct: bool, max_depth: int, lossy: bool, outer: list[Any]
) -> bytes | tuple[int, Any, list[str | int]] | None:
    """For proto_writer's walk of an event handed over: the Value (or Struct) body
    of ``root``, or where the walk's first fault in it is, or None. ``outer``: the
    containers open around ``root``."""

# ---------------------------------------------------------------------------
# _codec/_proto_reader_*.pxi (twin: agui_wire._codec.proto_reader)
# ---------------------------------------------------------------------------

def decode_payload(
    data: bytes | bytearray | memoryview,
    *,
    invalid_utf8: str = "error",
    max_depth: int = 1024,
    invalid_events: str = "raise",
) -> dict[str, Any]:
    """Decode one serialized ``ag_ui.Event`` (a frame's payload) to its JSON dict;
    ``InvalidEvent`` for one ``@ag-ui/core``'s schemas reject, unless kept."""

def _decoder_fallbacks() -> int:
    """Payloads handed to proto_reader since import (errors, odd input)."""

# ---------------------------------------------------------------------------
# _codec/_sse_writer_*.pxi, _codec/_sse_reader.pxi
# (twins: sse_writer.SSEEncoder, sse_reader.plain_sse_blocks)
# ---------------------------------------------------------------------------

def encode_sse(
    event: Mapping[str, Any] | Any,
    *,
    id: str | None = None,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = 1024,
) -> bytes:
    """One SSE event (a dict, or an official SDK pydantic event), held to the
    contract; one C call in the common case."""

def encode_sse_many(
    events: Iterable[Mapping[str, Any]],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = 1024,
) -> bytes:
    """Several SSE events, concatenated; all or nothing."""

@disjoint_base  # a cdef class: no class derives from it and another such base
class SSEEncoder:
    """``encode_sse`` without ids, its options bound; one C call per event in the
    common case."""

    def __init__(
        self,
        *,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = 1024,
        convert: Callable[[Any], Any] | None = None,
    ) -> None: ...
    def encode(self, event: Any) -> bytes: ...
    def encode_many(self, events: Iterable[Any]) -> bytes: ...

def _sse_dict_entries() -> bool:
    """Whether the walks read a dict's entries without PyDict_Next (_dict_next.h)."""

def _sse_fallbacks() -> int:
    """Events handed to sse_writer since import (a fault, exotic input, a lossy
    integer past 64 bits, an id the C path does not write)."""

def plain_sse_blocks(
    chunk: bytes, pos: int, max_size: int, max_brackets: int, validate: bool = True
) -> tuple[list[dict[str, Any]], int]:
    """The SSE reader's fast path: the plain ``data: <json>`` blocks from ``pos``
    (with ``validate``, up to the first of an unknown type or breaking the contract)."""

def contract_holds(event: dict[str, Any]) -> bool:
    """Whether ``@ag-ui/core``'s schemas accept a decoded event of a known type."""

# ---------------------------------------------------------------------------
# _codec/_stream_decoder.pxi (twin: agui_wire._codec.stream_decoder)
# ---------------------------------------------------------------------------

@disjoint_base  # a cdef class: no class derives from it and another such base
class FrameDecoder(FrameReader):
    """Frames in, events out, per chunk (contract: agui_wire._codec.stream_decoder)."""

    def __init__(
        self,
        max_frame_size: int = ...,
        *,
        invalid_utf8: str = "error",
        max_depth: int = 1024,
        unknown_events: str = "skip",
        max_events: int | None = None,
        invalid_events: str = "raise",
    ) -> None: ...
    @property
    def content_type(self) -> str: ...
    @property
    def events_read(self) -> int: ...
    def feed(self, chunk: Buffer) -> list[dict[str, Any]]: ...  # type: ignore[override]
    def close(self) -> list[dict[str, Any]]: ...  # type: ignore[override]

@disjoint_base  # a cdef class: no class derives from it and another such base
class SSEDecoder:
    """SSE in, events out, per chunk (contract: agui_wire._codec.stream_decoder)."""

    def __init__(
        self,
        *,
        max_event_size: int = ...,
        invalid_utf8: str = "error",
        max_depth: int = 1024,
        max_events: int | None = None,
        unknown_events: str = "skip",
        invalid_events: str = "raise",
    ) -> None: ...
    @property
    def reader(self) -> Any: ...
    @property
    def content_type(self) -> str: ...
    @property
    def events_read(self) -> int: ...
    @property
    def last_event_id(self) -> str: ...
    @property
    def pending_error(self) -> DecodeError | None: ...
    def feed(self, chunk: Buffer) -> list[dict[str, Any]]: ...
    def close(self) -> list[dict[str, Any]]: ...

def decode_proto(
    data: Any,
    *,
    max_events: int | None = 1000000,
    unknown_events: str = "skip",
    invalid_utf8: str = "error",
    max_depth: int = 1024,
    max_frame_size: int = ...,
    max_event_size: int = ...,
    invalid_events: str = "raise",
) -> list[dict[str, Any]]:
    """Every event in a buffer of binary frames (contract: agui_wire._codec.stream_decoder)."""

def decode_sse(
    data: Any,
    *,
    max_events: int | None = 1000000,
    unknown_events: str = "skip",
    invalid_utf8: str = "error",
    max_depth: int = 1024,
    max_frame_size: int = ...,
    max_event_size: int = ...,
    invalid_events: str = "raise",
) -> list[dict[str, Any]]:
    """Every event of a whole SSE capture (contract: agui_wire._codec.stream_decoder)."""

def decode(
    source: Any,
    content_type: str | None = None,
    *,
    max_events: int | None = 1000000,
    **options: Any,
) -> list[dict[str, Any]]:
    """Every event of a whole capture (contract: agui_wire._codec.stream_decoder)."""

class EventDecoder(stream_decoder.EventDecoder):
    """Sans-I/O decoder of one AG-UI stream (contract: agui_wire._codec.stream_decoder),
    starting the C FrameDecoder and SSEDecoder."""

# ---------------------------------------------------------------------------
# _codec/_resp.pxi (twin: agui_wire._codec.resp)
# ---------------------------------------------------------------------------

def pack_commands(commands: Iterable[Sequence[object]]) -> bytes:
    """Every command (a sequence of arguments) as a RESP array of bulk strings,
    concatenated (contract: agui_wire._codec.resp)."""

def _resp_fallbacks() -> int:
    """Calls handed to resp.py since import (a refusal, a type packed there alone)."""
