# cython: language_level=3
"""C-accelerated hot path of agui_wire: the length-prefix framer, the direct
protobuf encoder and decoder for event dicts, and the SSE writer's and reader's
common cases, and the per-chunk decoders of EventDecoder.

Each part is the C twin ``_codec/_X.pxi`` of a pure-Python module
``_codec/X.py`` with identical behaviour, which the test suite runs side by side
(``AGUI_WIRE_PURE=1`` forces the pure twins everywhere).
"""

from agui_wire cimport _capi as capi
from agui_wire._capi cimport (
    AGW_MAX_EXACT,
    AGW_MAX_SAFE,
    AGW_MAX_EXACT_DOUBLE,
    AGW_U32_MAX,
    agw_popcount64,
    agw_ctz64,
    agw_prefetch_read,
    agw_str_hash,
    agw_str_ready,
    agw_utf8,
    agw_str_eq,
    agw_str_eq_ascii,
    agw_copy,
    agw_ids,
    agw_ids_has,
    agw_ids_add,
    agw_ids_del,
    agw_ids_clear,
    agw_ids_free,
)

include "_codec/_framing.pxi"
include "_codec/_proto_writer.pxi"
include "_codec/_proto_reader.pxi"
include "_codec/_sse_writer.pxi"
include "_codec/_sse_reader.pxi"
include "_codec/_frame_decoder.pxi"
