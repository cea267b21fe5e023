"""The C/Python seam: every Python name the extension ``agui_wire._fast`` may use.

Strategy: the C twins record a fault and hand every doubt to Python, which words
it, so each error text exists once, in a pure twin. Those words (error texts and
the errors they build, refusals, the slow paths an event is handed over to) and
the facts the C tables are built from (``schema``, the media types) are named
here and nowhere else: a ``.pxi`` imports this module
(``from agui_wire._codec import seam as _seam``) and reads
``_seam.<word>`` for a word of ``__all__``, plus the standard-library modules and
orjson that pyproject.toml's ``extension-seam`` contract lists. ``make lint``
checks it (tests/contract/seam_contract.py): a ``.pxi`` that imports another
module of the package, reads a name that is not a word, or a private name of
``schema``, breaks the contract. A word may be a private helper of its twin:
this module is where the C side's dependence on it is written down.

Contract: re-exports only, each from the pure twin (or the lower module) that
defines it; a word no ``.pxi`` reads breaks the contract too.
"""

from __future__ import annotations

from .. import schema
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ..errors import DecodeError, EncodeError, StreamClosed, UnknownPartWarning
from .encoder_inputs import as_event_dict, check_encode_options
from .framing import _CLOSED as FEED_AFTER_CLOSE
from .framing import ZERO_COPY_MIN, as_bytes_view, check_max_frame_size
from .framing import _too_large as frame_too_large
from .framing import _too_long_to_frame as too_long_to_frame
from .framing import _truncated as frame_truncated
from .proto_reader import _DEFAULTS as KIND_DEFAULTS
from .proto_reader import (
    FAULT_CONTENT,
    FAULT_DEPTH,
    FAULT_EMPTY,
    FAULT_GROUP,
    FAULT_NO_ARM,
    FAULT_NO_BASE,
    FAULT_ONEOF,
    FAULT_TOOL_RESULT,
    FAULT_TYPE,
    FAULT_UTF8,
    FAULT_WIRE,
    decode_payload,
    fault_error,
    refuse_invalid,
)
from .proto_writer import _prefix as frame_prefix
from .proto_writer import encode_frames, encode_handed_over, encode_payload, encode_proto
from .resp import pack_commands
from .sources import sniff
from .sse_reader import SSEEventReader
from .sse_writer import SSEEncoder, encode_sse, encode_sse_many
from .sse_writer import encode_handed_over as sse_handed_over
from .stream_decoder import (
    EventDecoder,
    Readers,
    bound_decoder,
    decode_all,
    decode_rest,
    decode_whole,
    over_limit,
    unknown_handler,
)

__all__ = [
    "FAULT_CONTENT",
    "FAULT_DEPTH",
    "FAULT_EMPTY",
    "FAULT_GROUP",
    "FAULT_NO_ARM",
    "FAULT_NO_BASE",
    "FAULT_ONEOF",
    "FAULT_TOOL_RESULT",
    "FAULT_TYPE",
    "FAULT_UTF8",
    "FAULT_WIRE",
    "FEED_AFTER_CLOSE",
    "KIND_DEFAULTS",
    "PROTO_MEDIA_TYPE",
    "SSE_MEDIA_TYPE",
    "ZERO_COPY_MIN",
    "DecodeError",
    "EncodeError",
    "EventDecoder",
    "Readers",
    "SSEEncoder",
    "SSEEventReader",
    "StreamClosed",
    "UnknownPartWarning",
    "as_bytes_view",
    "as_event_dict",
    "bound_decoder",
    "check_encode_options",
    "check_max_frame_size",
    "decode_all",
    "decode_payload",
    "decode_rest",
    "decode_whole",
    "encode_frames",
    "encode_handed_over",
    "encode_payload",
    "encode_proto",
    "encode_sse",
    "encode_sse_many",
    "fault_error",
    "frame_prefix",
    "frame_too_large",
    "frame_truncated",
    "over_limit",
    "pack_commands",
    "refuse_invalid",
    "schema",
    "sniff",
    "sse_handed_over",
    "too_long_to_frame",
    "unknown_handler",
]
