"""SSEEventReader's fast path (plain ``data: <json>`` blocks parsed straight from the
bytes) behaves exactly like the general WHATWG parser it shortcuts: same events,
same error, same index and offset, for any stream and any chunking."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agui_wire._codec.sse_reader import SSEEventReader
from agui_wire.errors import DecodeError

EVENT = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}'
BLOCKS = st.sampled_from(
    [
        b"data: " + EVENT + b"\n\n",
        b"data: " + EVENT + b"\n\n",
        b"data:" + EVENT + b"\n\n",
        b"data: " + EVENT + b"\r\n\r\n",
        b"id: 7\ndata: " + EVENT + b"\n\n",
        b": keep-alive\n\n",
        b"event: x\ndata: " + EVENT + b"\n\n",
        b'data: {"type":\ndata: "CUSTOM","name":"n","value":1}\n\n',
        b"retry: 10\n\n",
        b"\n",
        b"data: [1]\n\n",
        b'data: {"type": ""}\n\n',
        b"data: {bad\n\n",
        b'data: {"type":"CUSTOM","name":"\xff","value":1}\n\n',
        b'data: {"type":"CUSTOM","name":"n","value":' + b"[" * 40 + b"]" * 40 + b"}\n\n",
        b'data: {"type":"CUSTOM","name":"' + b"x" * 4053 + b'","value":1}\n\n',  # at 4096
        b'data: {"type":"CUSTOM","name":"' + b"x" * 4056 + b'","value":1}\n\n',  # just past
        b"\xef\xbb\xbf",
        b"data: " + EVENT,
    ]
)


def general_feed(reader: SSEEventReader, chunk: bytes) -> list[Any]:
    """What ``SSEEventReader.feed`` does when its fast path does not apply."""
    if reader._error is not None:
        raise reader._error
    return reader._decode(reader.parser.feed(chunk))


def run(stream: bytes, cuts: list[int], general: bool) -> tuple[list[Any], Any]:
    reader = SSEEventReader(max_depth=30, max_event_size=4096)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    bounds = [0, *points, len(stream)]
    events: list[Any] = []
    try:
        for a, b in itertools.pairwise(bounds):
            chunk = stream[a:b]
            events += general_feed(reader, chunk) if general else reader.feed(chunk)
        events += reader.close()
    except DecodeError as exc:
        return events, (type(exc), exc.index, exc.offset, exc.reason)
    return events, None


@given(st.lists(BLOCKS, max_size=12), st.lists(st.integers(0, 10_000), max_size=6))
def test_fast_path_is_the_general_parser(blocks: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(blocks)
    assert run(stream, cuts, general=False) == run(stream, cuts, general=True)


def test_fast_path_takes_plain_blocks() -> None:
    reader = SSEEventReader()
    body = (b"data: " + EVENT + b"\n\n") * 3
    assert len(reader.feed(body)) == 3
    assert reader.parser.events_read == 3
    assert reader.parser.bytes_fed == len(body)
    assert len(reader.feed(body[:10])) == 0
    assert len(reader.feed(body[10:])) == 3
    assert reader.parser.events_read == 6
