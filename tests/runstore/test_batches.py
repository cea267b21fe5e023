"""``agui_wire._runstore.batches``: a batch of stored payloads is decoded, framed and
SSE-encoded at most once whatever the number of readers, with ids ``n-g``; a
payload that does not decode is named; a compact prefix carries one id, its last."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire._codec.selected import encode_payload, frame
from agui_wire._runstore.batches import Batch, Prefix
from agui_wire.errors import StoreCorrupted
from examples.script import scripted_run

RUN = scripted_run("thread-1", "run-1")


class Ref:
    run_id = "run-1"
    stream = "where-it-is"


def batch(events: list[dict[str, Any]], first: int = 1, end: str | None = None) -> Batch:
    return Batch(Ref(), 42, first, [encode_payload(e) for e in events], end)


def sse_ids(data: bytes) -> list[str]:
    return [line[4:] for line in data.decode().splitlines() if line.startswith("id: ")]


def test_a_batch_reads_as_its_events() -> None:
    b = batch(RUN[:5], first=3)
    assert (b.first, b.last, b.generation) == (3, 7, 42)
    assert b.events() == RUN[:5]
    assert b.last_type == RUN[4]["type"]
    assert b.nbytes == sum(len(p) for p in b.payloads)


def test_its_bytes_are_built_once_and_frames_are_the_payloads() -> None:
    b = batch(RUN)
    binary, sse = b.data(True), b.data(False)
    assert binary is b.data(True)  # built once, shared by every reader
    assert sse is b.data(False)
    assert b.events() is b.events()
    assert binary == b"".join(frame(p) for p in b.payloads)  # never re-encoded
    assert decode(binary, PROTO_MEDIA_TYPE) == RUN
    assert decode(sse, SSE_MEDIA_TYPE) == RUN
    assert sse_ids(sse) == [f"{n}-42" for n in range(1, len(RUN) + 1)]
    assert b.decoded() == RUN  # what telemetry counts


def test_after_cuts_what_a_reader_has_and_keeps_the_decoded_events() -> None:
    b = batch(RUN[:10], first=1, end="finished")
    b.events()
    part = b.after(4)
    assert (part.first, part.last, part.end) == (5, 10, "finished")
    assert part._events == RUN[4:10]  # not decoded again
    assert b.after(0) is b
    empty = b.after(10)
    assert (empty.payloads, empty.end, empty.last) == ([], "finished", 10)
    assert empty.last_type is None


def test_an_end_marker_alone() -> None:
    b = Batch(Ref(), None, 8, [], "cancelled")
    assert (b.last, b.data(True), b.data(False), b.last_type) == (7, b"", b"", None)


def test_a_payload_that_does_not_decode_is_named() -> None:
    b = Batch(Ref(), 42, 5, [encode_payload(RUN[0]), b"\xff\xff\xff", encode_payload(RUN[1])], None)
    with pytest.raises(StoreCorrupted) as info:
        b.events()
    error = info.value
    assert (error.key, error.entry_id) == ("where-it-is", "6-42")
    assert "the stored payload of event 6 does not decode" in str(error)


def test_a_chunk_is_decoded_for_its_caller_and_not_kept() -> None:
    b = batch(RUN, first=3)
    assert b.chunk(0, 4) == RUN[:4]
    assert b._events is None  # decoded for the caller alone, not kept
    assert b.chunk(4, 3) == RUN[4:7]  # any size, from any event
    assert b.chunk(len(RUN) - 2, 5) == RUN[-2:]  # fewer at the end
    assert b._events is None
    b.events()
    assert b.chunk(4, 3) == RUN[4:7]  # decoded once: sliced


def test_a_chunk_that_does_not_decode_names_its_payload() -> None:
    payloads = [encode_payload(e) for e in RUN[:6]]
    payloads[4] = b"\xff\xff\xff"
    b = Batch(Ref(), 42, 5, payloads, None)
    assert b.chunk(0, 3) == RUN[:3]
    with pytest.raises(StoreCorrupted) as info:
        b.chunk(3, 3)
    assert info.value.entry_id == "9-42"
    assert "the stored payload of event 9 does not decode" in str(info.value)


def test_a_prefix_carries_one_id_its_last() -> None:
    events = RUN[:3]
    prefix = Prefix(events, 40, 42)
    assert str(prefix.last_id) == "40-42"
    assert prefix.last_type == events[-1]["type"]
    sse = prefix.data(False)
    assert sse_ids(sse) == ["40-42"]  # a reconnect inside the prefix starts over
    assert decode(sse, SSE_MEDIA_TYPE) == events
    assert decode(prefix.data(True), PROTO_MEDIA_TYPE) == events
    assert prefix.data(True) is prefix.data(True)
