"""Pieces of captured streams, good and bad, for the tests that hold two decoders of
the same bytes to the same result (the streaming twins, the one-shots against
``EventDecoder``): whole frames and SSE blocks that hypothesis strings together and
cuts anywhere."""

from __future__ import annotations

import agui_wire
from tests.support.corpus import CORPUS
from tests.support.wire import frame, ld

# -- binary frames ---------------------------------------------------------------------

GOOD_FRAMES = [agui_wire.encode_proto(e) for e in CORPUS[:40]]
# a content part of an unknown kind: decodes, with a warning
UNKNOWN_PART = frame(ld(22, ld(1, b"\x08\x15"), ld(3, b"m"), ld(4, b"t"), ld(7, ld(9, b""))))
FUTURE = b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28"  # an event of a later protocol
EMPTY = b"\x00\x00\x00\x00"  # an empty frame: refused
NOT_PROTOBUF = frame(b"\xff\xff")
BAD_UTF8 = frame(ld(7, ld(1, b"\x08\x06"), ld(2, ld(3, b"\xff"))))
BIG = b"\x00\x01\x00\x00"  # declares 64 KiB: over a small max_frame_size, else cut short
FRAMES = [*GOOD_FRAMES, UNKNOWN_PART, FUTURE, EMPTY, NOT_PROTOBUF, BAD_UTF8, BIG]

# -- SSE blocks ------------------------------------------------------------------------

EVENT = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}'
SSE_BLOCKS = [
    *(agui_wire.encode_sse(e) for e in CORPUS[:20]),
    b"data: " + EVENT + b"\n\n",
    b"data:" + EVENT + b"\n\n",
    b"data: " + EVENT + b"\r\n\r\n",
    b"id: 7\ndata: " + EVENT + b"\n\n",
    b": keep-alive\n\n",
    b'data: {"type":\ndata: "CUSTOM","name":"n","value":1}\n\n',
    b"\n",
    b"data: [1]\n\n",
    b"data: {bad\n\n",
    b'data: {"type":"CUSTOM","name":"\xff","value":1}\n\n',
    b'data: {"type":"CUSTOM","name":"n","value":' + b"[" * 40 + b"]" * 40 + b"}\n\n",
    b'data: {"type":"CUSTOM","name":"' + b"x" * 4053 + b'","value":1}\n\n',
    b"\xef\xbb\xbf",
    b"data: " + EVENT,  # no blank line: the event is cut short
]
