# cython: language_level=3
"""C-accelerated hot path of agui_wire: the length-prefix framer, the direct
protobuf encoder and decoder for event dicts, the SSE writer's and reader's
common cases, the per-chunk decoders of EventDecoder, and the RESP packer of the
run store's Redis commands.

Each part is the C twin ``_codec/_X.pxi`` (or its parts ``_X_<part>.pxi``, in X.py's
order) of a pure-Python module ``_codec/X.py`` with identical behaviour, which the
test suite runs side by side (``AGUI_WIRE_PURE=1`` forces the pure twins everywhere).
``_codec/_common.pxi`` comes first: what every twin may use without declaring it.
"""

include "_codec/_common.pxi"
include "_codec/_framing.pxi"
include "_codec/_proto_writer_wire.pxi"
include "_codec/_proto_writer_messages.pxi"
include "_codec/_proto_writer_entry.pxi"
include "_codec/_proto_writer_refusals.pxi"
include "_codec/_proto_writer_tables.pxi"
include "_codec/_sse_writer_json.pxi"
include "_codec/_sse_writer_shapes.pxi"
include "_codec/_sse_writer_entry.pxi"
include "_codec/_proto_reader_wire.pxi"
include "_codec/_proto_reader_messages.pxi"
include "_codec/_proto_reader_event.pxi"
include "_codec/_proto_reader_entry.pxi"
include "_codec/_proto_reader_tables.pxi"
include "_codec/_sse_reader.pxi"
include "_codec/_stream_decoder.pxi"
include "_codec/_resp.pxi"
