# cython: language_level=3
"""C-accelerated hot path of agui_wire: the length-prefix framer, the direct
protobuf encoder and decoder for event dicts, and the SSE writer's common case.

Each part lives in its own include file; every one has a pure-Python twin with
identical behaviour (framing.py, proto_writer.py, proto_reader.py, sse_writer.py)
that the test suite runs side by side (AGUI_WIRE_PURE=1 forces the twins).
"""

include "_framer.pxi"
include "_encoder.pxi"
include "_decoder.pxi"
include "_sse.pxi"
