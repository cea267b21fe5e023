"""docs/errors.md, claim by claim: each test names the section it holds to the code.

Strategy: the document is the contract callers read, so every sentence that says
what happens on bad input has a test here (or names the test file that has it:
limits in test_limits.py, decoder disagreements in tests/fuzz/test_regressions.py).
Inputs are small and hand-built with tests/support/wire.py; both transports and every
payload decoder (pure, Cython when built, upb) are covered where the claim is
about them.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings
from typing import Any

import pytest

import agui_wire
from agui_wire import (
    PROTO_MEDIA_TYPE,
    AguiWireError,
    DecodeError,
    EncodeError,
    EventDecoder,
    FrameTooLarge,
    LimitExceeded,
    NotAcceptable,
    RecordReader,
    SSEError,
    StreamClosed,
    TruncatedStream,
    UnknownEventError,
    UnknownEventWarning,
    decode,
    decode_proto,
    encode_proto,
    encode_sse,
    iter_decode,
    read_records,
)
from agui_wire._codec.framing import FrameReader
from agui_wire._codec.proto_reader import decode_payload
from agui_wire._codec.sse_reader import (
    SSEEventReader,
    SSELimitExceeded,
    SSEParser,
)
from tests.fuzz.fuzzlib import payload_decoders
from tests.support.wire import base, double, frame, ld, string, tag, v_num, varint, vi

PROTO = "application/vnd.ag-ui.event+proto"
SSE = "text/event-stream"
DECODERS = payload_decoders()
GOOD = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}


def good() -> bytes:
    return encode_proto(GOOD)


def bad() -> bytes:
    return frame(ld(2, base(5)))  # the envelope says TMC, the base event TOOL_CALL_END


# -- The classes ---------------------------------------------------------------------


def test_hierarchy() -> None:
    for cls in (DecodeError, EncodeError, NotAcceptable):
        assert issubclass(cls, AguiWireError)
    for cls in (TruncatedStream, FrameTooLarge, LimitExceeded, UnknownEventError, SSEError):
        assert issubclass(cls, DecodeError)
    assert issubclass(SSELimitExceeded, LimitExceeded)
    assert issubclass(DecodeError, ValueError)
    assert issubclass(EncodeError, ValueError)
    assert not issubclass(NotAcceptable, ValueError)
    for name in ("DecodeError", "FrameTooLarge", "LimitExceeded", "SSEError", "TruncatedStream"):
        assert getattr(agui_wire, name)


def pickle_round_trip(err: Exception) -> Exception:
    back: Exception = pickle.loads(pickle.dumps(err))
    return back


def test_encode_error_says_where() -> None:
    with pytest.raises(EncodeError) as info:
        encode_proto({"type": "TEXT_MESSAGE_CONTENT", "messageId": 5, "delta": "d"})
    assert info.value.event_type == "TEXT_MESSAGE_CONTENT"
    assert info.value.path == "/messageId"
    assert info.value.reason
    assert str(info.value) == f"TEXT_MESSAGE_CONTENT at /messageId: {info.value.reason}"


def every_error() -> list[Exception]:
    """One of each error class of agui_wire.errors, as the library raises them."""
    e = agui_wire.errors
    decoded = e.DecodeError("bad byte", index=2, offset=40, frame_offset=30, event_type="RAW")
    decoded.events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    return [
        e.AguiWireError("a base class, raised by nobody, still whole"),
        e.EncodeError("bad", event_type="CUSTOM", path="/value/0"),
        e.EncodeError("no type"),
        e.EventTooLarge("too big", event_type="RAW", index=7, size=11_000_000, limit=10_485_756),
        decoded,
        e.TruncatedStream("3 bytes left over", index=1, offset=9, frame_offset=6),
        e.FrameTooLarge("length 20000000", index=0, offset=0, frame_offset=0),
        e.LimitExceeded("deeper than 1024", index=0, offset=5, frame_offset=0),
        e.UnknownEventError("an unknown arm", fields=((99, b"\x08\x01"),), index=3),
        e.SSEError("data is not JSON", index=1, offset=12, frame_offset=10),
        e.SSELimitExceeded("event larger than 10 MiB", index=0, offset=10_485_760),
        e.JsonLineError("not an object", index=4),
        e.StreamClosed("feed() after close()"),
        e.NotAcceptable("application/json"),
        e.MissingDependency("agui_wire.redis", "redis", "redis"),
        e.CompressionUnavailable("br", "brotli"),
        e.SchemaError("StepStartedEvent.ratio", "double"),
        e.PointerError("~2 is not an escape"),
        e.PatchError("test failed", 2, {"op": "test", "path": "/a", "value": 1}),
        e.AgentHTTPError("http://127.0.0.1:8000/agent", 500, b"boom"),
        e.UnexpectedContentType("http://127.0.0.1:8000/agent", "text/html"),
        e.IncompleteRun("the body ended", events_read=3, last_event_id="3-7"),
        e.SequenceError("a second RUN_STARTED", index=4, event_type="RUN_STARTED"),
        e.StoreError("r", "Redis refused a command"),
        e.StoreUnavailable("r", "Redis unreachable for 10 s"),
        e.StoreDraining("r", "the store is draining"),
        e.StoreUnsupported("r", "Redis refused the store's scripts"),
        e.RunNotFound("r", "no such run"),
        e.RunLost("r", "evicted"),
        e.RunReplaced("r", "another generation"),
        e.RunAbandoned("r", "its producer vanished"),
        e.StoreFull("r", "maxmemory"),
        e.StoreCorrupted("r", "agui:{3}:k", "2-8", "a missing field"),
        e.ResumePastEnd("r", 8, 7),
        e.ResumePastEnd("r", 50, 2, live=True),
        e.UnknownGeneration("r", "2-42", 42, 7248736939718),
        e.RunInProgress("r", "another producer holds the lease"),
        e.LeaseLost("r", "the lease expired"),
        e.HistoryTrimmed("r", 2, 50),
    ]


def test_every_error_class_is_in_every_error() -> None:
    classes = {
        c
        for c in map(vars(agui_wire.errors).get, agui_wire.errors.__all__)
        if isinstance(c, type) and issubclass(c, Exception) and not issubclass(c, Warning)
    }
    assert classes == {type(err) for err in every_error()}


@pytest.mark.parametrize("copy_of", [pickle_round_trip, copy.copy, copy.deepcopy])
def test_an_error_survives_pickling_and_copying(copy_of: Any) -> None:
    # what a process pool or a task queue does to an error on its way back: each class
    # comes back as raised (most build their message from arguments their args lack)
    for err in every_error():
        back = copy_of(err)
        assert (type(back), str(back), vars(back)) == (type(err), str(err), vars(err))
        assert back.args == err.args
    assert repr(every_error()[1]) == "EncodeError('bad', event_type='CUSTOM', path='/value/0')"


def test_decode_error_says_where() -> None:
    stream = good() + bad()
    with pytest.raises(DecodeError) as info:
        decode_proto(stream)
    err = info.value
    assert (err.index, err.frame_offset) == (1, len(good()))
    assert err.offset is not None
    assert err.offset > err.frame_offset  # inside the bad frame's payload
    assert err.reason
    assert f"frame 1, byte {err.offset}" in str(err)


def test_frame_too_large_on_the_prefix_alone() -> None:
    decoder = EventDecoder(PROTO, max_frame_size=10)
    with pytest.raises(FrameTooLarge) as info:
        decoder.feed(b"\x00\x00\x00\x0b")
    assert info.value.offset == 0


def test_truncated_stream_says_how_many_bytes() -> None:
    with pytest.raises(TruncatedStream, match="5 trailing bytes") as info:
        decode_proto(good() + good()[:5])
    assert len(info.value.events) == 1


def test_sse_error_counts_events() -> None:
    with pytest.raises(SSEError, match=r"^event 1, ") as info:
        decode(b'data: {"type":"A"}\n\ndata: [1]\n\n', SSE)
    assert info.value.index == 1


def test_unknown_event_error_holds_fields() -> None:
    future = ld(32, base(40))
    with pytest.raises(UnknownEventError) as info:
        decode_proto(frame(future), unknown_events="raise")
    assert info.value.fields == ((32, future[3:]),)  # after the tag and the length


def test_bad_options_are_value_errors_at_once() -> None:
    bad: list[dict[str, Any]] = [
        {"max_depth": 0},
        {"max_depth": 10001},
        {"max_depth": 1.5},
        {"max_depth": True},
        {"unknown_events": "ignore"},
        {"invalid_utf8": "x"},
        {"max_frame_size": -1},
        {"max_event_size": 0},
        {"max_events": -1},
    ]
    for kwargs in bad:
        for content_type in (None, PROTO, SSE):  # at construction, whatever the transport
            with pytest.raises(ValueError, match=next(iter(kwargs))) as info:
                EventDecoder(content_type, **kwargs)
            assert not isinstance(info.value, DecodeError)
    with pytest.raises(ValueError, match="not an AG-UI stream content type"):
        EventDecoder("text/html")


@pytest.mark.parametrize("content_type", [None, PROTO, SSE])
def test_a_chunk_that_is_not_bytes_like_is_a_type_error(content_type: str | None) -> None:
    decoder = EventDecoder(content_type)
    for chunk in (5, "text"):
        with pytest.raises(TypeError):
            decoder.feed(chunk)  # type: ignore[arg-type]
    body = good() if content_type == PROTO else encode_sse(GOOD)
    assert decoder.feed(body) == [GOOD]  # nothing was added by the refused calls


@pytest.mark.parametrize("content_type", [None, PROTO, SSE])
def test_stream_closed(content_type: str | None) -> None:
    assert issubclass(StreamClosed, AguiWireError)
    assert issubclass(StreamClosed, RuntimeError)
    assert not issubclass(StreamClosed, DecodeError)
    decoder = EventDecoder(content_type)
    decoder.close()
    with pytest.raises(StreamClosed):
        decoder.feed(good())
    for reader in (FrameReader(), SSEParser()):
        reader.close()
        with pytest.raises(StreamClosed):
            reader.feed(b"")


# -- What you get of the stream before an error ---------------------------------------


@pytest.mark.parametrize("content_type", [PROTO, SSE])
def test_streaming_delivers_good_events_then_raises(content_type: str) -> None:
    if content_type == PROTO:
        stream = good() * 2 + bad() + good()
    else:
        stream = encode_sse(GOOD) * 2 + b"data: [1]\n\n" + encode_sse(GOOD)
    decoder = EventDecoder(content_type)
    assert len(decoder.feed(stream)) == 2
    pending = decoder.pending_error
    assert isinstance(pending, DecodeError)
    for call in (lambda: decoder.feed(good()), decoder.close):  # a failed decoder stays failed
        with pytest.raises(DecodeError) as info:
            call()
        assert info.value is pending
    # also when what failed was the sniffing of the first byte
    sniffing = EventDecoder()
    with pytest.raises(DecodeError, match="cannot tell") as first:
        sniffing.feed(b"\x80garbage")
    for call in (lambda: sniffing.feed(encode_sse(GOOD)), sniffing.close):
        with pytest.raises(DecodeError) as info:
            call()
        assert info.value is first.value
    # the iterators raise right after the good events, without more data
    got: list[Any] = []

    def chunks() -> Any:
        yield stream
        raise AssertionError("asked for more data after the error")

    def drain() -> None:
        for event in iter_decode(chunks(), content_type):
            got.append(event)

    with pytest.raises(DecodeError):
        drain()
    assert len(got) == 2


def test_first_chunk_bad_raises_at_once() -> None:
    with pytest.raises(DecodeError):
        EventDecoder(PROTO).feed(bad())


def test_whole_buffer_errors_carry_the_events() -> None:
    with pytest.raises(DecodeError) as info:
        decode(good() * 3 + bad())
    assert len(info.value.events) == 3
    assert info.value.events[0] == GOOD


def test_encode_many_is_all_or_nothing() -> None:
    from agui_wire import EventEncoder

    encoder = EventEncoder(PROTO)
    with pytest.raises(EncodeError):
        encoder.encode_many([GOOD, {"type": "NOPE"}])


# -- Continuing past an error ----------------------------------------------------------


def test_continue_past_a_bad_frame_with_read_records() -> None:
    stream = good() + bad() + good()
    records = list(read_records(stream, keep_going=True))
    assert [r.event for r in records] == [GOOD, None, GOOD]
    err = records[1].error
    assert err is not None
    assert not records[1].fatal
    assert (records[1].index, records[1].offset, records[1].length) == (
        1,
        len(good()),
        len(bad()),
    )
    # the next frame starts at frame_offset + 4 + its length
    at = err.frame_offset
    assert at is not None
    length = int.from_bytes(stream[at : at + 4], "big")
    assert records[2].offset == at + 4 + length
    assert decode_proto(stream[at + 4 + length :]) == [GOOD]
    # without keep_going the error record is the last one; nothing is raised
    assert len(list(read_records(stream))) == 2


def test_continue_past_a_bad_sse_event_with_read_records() -> None:
    stream = encode_sse(GOOD) + b"data: [1]\n\n" + b"data: \xff\n\n" + encode_sse(GOOD)
    records = list(read_records(stream, keep_going=True))
    assert [r.event for r in records] == [GOOD, None, None, GOOD]
    assert [r.index for r in records] == [0, 1, 2, 3]
    assert all(isinstance(r.error, SSEError) for r in records[1:3])
    assert all(r.length is None for r in records)


def test_what_ends_the_stream_even_with_keep_going() -> None:
    too_large = list(read_records(good() + b"\xff\xff\xff\xff" + good(), keep_going=True))
    assert isinstance(too_large[-1].error, FrameTooLarge)
    assert too_large[-1].fatal
    cut = list(read_records(good() + good()[:5], PROTO_MEDIA_TYPE, keep_going=True))
    assert isinstance(cut[-1].error, TruncatedStream)
    assert cut[-1].fatal
    (first,) = read_records(b"\x80", keep_going=True)
    assert first.fatal
    reader = RecordReader(PROTO_MEDIA_TYPE, keep_going=True)
    (record,) = reader.feed(b"\xff\xff\xff\xff")
    with pytest.raises(FrameTooLarge) as info:
        reader.feed(good())
    assert info.value is record.error


def test_frame_too_large_is_fine_with_a_higher_limit() -> None:
    payload = good()[4:]
    with pytest.raises(FrameTooLarge):
        decode_proto(frame(payload), max_frame_size=len(payload) - 1)
    assert decode_proto(frame(payload), max_frame_size=len(payload)) == [GOOD]


def test_limit_exceeded_means_a_higher_limit_decodes_it() -> None:
    value = v_num(1)
    for _ in range(3):
        value = ld(6, ld(1, value))
    payload = ld(7, base(6), ld(2, value))
    for _, decode_payload_ in DECODERS:
        with pytest.raises(LimitExceeded):
            decode_payload_(payload, max_depth=2)
        assert decode_payload_(payload, max_depth=3)["snapshot"] == [[[1]]]


def test_sse_size_and_orjson_cap_are_decided_on_what_was_read() -> None:
    # max_event_size: invalid UTF-8 before the limit is the SSEError; the JSON of an
    # event over the limit is not judged, so a higher limit may reveal another fault
    bad_utf8 = b'data: {"type":"X","v":"\xff' + b"x" * 100 + b'"}\n\n'
    with pytest.raises(SSEError, match="invalid UTF-8"):
        decode(bad_utf8, SSE, max_event_size=50)
    bad_json = b'data: {"type":"X", oops' + b"x" * 100 + b"\n\n"
    with pytest.raises(SSELimitExceeded):
        decode(bad_json, SSE, max_event_size=50)
    with pytest.raises(SSEError, match="not valid JSON"):
        decode(bad_json, SSE, max_event_size=1000)
    # orjson's cap: read up to the level past it; a syntax error before it is the SSEError
    with pytest.raises(SSELimitExceeded, match="orjson"):
        decode(b'data: {"type":"X","v":' + b"[" * 2000 + b"x\n\n", SSE)
    with pytest.raises(SSEError, match="not valid JSON"):
        decode(b'data: {"type":"X",,"v":' + b"[" * 2000 + b"\n\n", SSE)
    # below the cap the event is read whole first: too deep and malformed is the SSEError
    with pytest.raises(SSEError, match="not valid JSON"):
        decode(b'data: {"type":"X","v":' + b"[" * 10 + b"x\n\n", SSE, max_depth=5)
    with pytest.raises(SSEError, match="not a JSON object"):
        decode(b"data: " + b"[" * 10 + b"]" * 10 + b"\n\n", SSE, max_depth=5)
    # and read_records (RecordReader) says the same
    records = list(read_records(bad_utf8, SSE, max_event_size=50))
    assert isinstance(records[0].error, SSEError)
    assert not isinstance(records[0].error, SSELimitExceeded)


# -- Where the reference is lenient, and what we do ------------------------------------


@pytest.mark.parametrize("name_decode", DECODERS, ids=[n for n, _ in DECODERS])
def test_invalid_utf8(name_decode: Any) -> None:
    name, decode_payload_ = name_decode
    payload = ld(2, base(1), string(2, "m"), ld(3, b"a\xffb"))
    with pytest.raises(DecodeError) as info:
        decode_payload_(payload)
    if name != "upb":
        assert info.value.offset == payload.index(b"\xff")
        assert decode_payload_(payload, invalid_utf8="replace")["delta"] == "a\ufffdb"
    assert decode(b'data: {"type":"A","s":"\xff"}\n\n', invalid_utf8="replace") == [
        {"type": "A", "s": "\ufffd"}
    ]


def test_unknown_arm_policies() -> None:
    stream = frame(ld(32, base(40))) + good()
    with pytest.warns(UnknownEventWarning):
        assert decode_proto(stream) == [GOOD]
    with pytest.raises(UnknownEventError):
        decode_proto(stream, unknown_events="raise")
    raw = decode_proto(stream, unknown_events="raw")[0]
    assert raw["type"] == "RAW"
    assert raw["source"] == "agui_wire.unknown_event"


@pytest.mark.parametrize("name_decode", DECODERS, ids=[n for n, _ in DECODERS])
def test_protobuf_rows(name_decode: Any) -> None:
    _, d = name_decode
    tmc = ld(2, base(1), string(2, "m"), string(3, "d"))
    # the same arm twice: merged
    assert d(ld(2, base(1), string(2, "m")) + ld(2, string(3, "d"))) == GOOD
    # two different arms: an error
    with pytest.raises(DecodeError, match="more than one arm"):
        d(ld(1, base(0)) + tmc)
    # base type mismatch, arm without base event, empty frame
    with pytest.raises(DecodeError, match="TOOL_CALL_END"):
        d(ld(2, base(5)))
    with pytest.raises(DecodeError, match="no base_event"):
        d(ld(2, string(2, "m")))
    with pytest.raises(DecodeError, match="empty frame"):
        d(b"")
    # unknown fields, a wrong wire type, groups: ignored
    group = tag(41, 3) + tag(41, 4)
    noisy = ld(2, base(1), string(2, "m"), vi(3, 7), string(3, "d"), double(40, 1.0), group)
    assert d(noisy) == GOOD
    # not protobuf: field 0, wire types 6/7, an 11-byte varint, a length past the end
    for broken in (
        tag(0, 0) + varint(1),
        tag(40, 6),
        tag(40, 7),
        b"\x12" + b"\xff" * 10 + b"\x01",
        b"\x12\x05ab",
    ):
        with pytest.raises(DecodeError):
            d(broken)
    # what a later field replaces is still validated
    with pytest.raises(DecodeError):
        d(ld(2, base(1), ld(2, b"\xff"), string(2, "m")))
    # a merged occurrence must be a message on its own (a field may not straddle)
    # -- Cython: see tests/fuzz/test_regressions.py (strict xfail until _proto_reader.pxi agrees)


def test_big_int64_nan_and_unknown_op() -> None:
    out = decode_payload(ld(2, base(1), string(2, "m"), ld(1, vi(1, 1), vi(2, 2**62))))
    assert out["timestamp"] == 2**62
    with pytest.raises(EncodeError):
        encode_proto(out)
    snap = decode_payload(ld(7, base(6), ld(2, v_num(math.nan))))
    assert math.isnan(snap["snapshot"])
    delta = decode_payload(ld(8, base(7), ld(2, vi(1, 9), string(2, "/x"))))
    assert delta["delta"] == [{"op": "9", "path": "/x"}]


def test_sse_rows() -> None:
    assert decode(b'data: {"type":"A"}\r\n\r\n', SSE) == [{"type": "A"}]
    with pytest.raises(SSEError, match="infinity"):
        decode(b'data: {"type":"A","x":1e400}\n\n', SSE)
    # the sniffer: a first byte that is neither a frame length's nor text
    with pytest.raises(DecodeError, match="cannot tell the stream format"):
        decode(b"\x80abc")
    assert decode(b"") == []


def test_sse_reader_options() -> None:
    with pytest.raises(ValueError, match="max_depth"):
        SSEEventReader(max_depth=0)
    with pytest.raises(ValueError, match="max_event_size"):
        SSEParser(max_event_size=0)


def test_warnings_are_recorded_not_raised_by_default() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UnknownEventWarning):
            decode_proto(frame(ld(32, base(40))))


def test_payload_errors_count_from_the_payload() -> None:
    payload = ld(2, base(1), string(2, "m"), ld(3, b"\xff"))
    with pytest.raises(DecodeError) as info:
        decode_payload(payload)
    assert info.value.index is None
    assert info.value.offset == payload.index(b"\xff")


def test_sse_encoding_depth_is_what_the_readers_take() -> None:
    def deep(levels: int) -> Any:
        value: Any = 1
        for _ in range(levels):
            value = [value]
        return {"type": "STATE_SNAPSHOT", "snapshot": value}

    assert decode(encode_sse(deep(1023)))[0]["type"] == "STATE_SNAPSHOT"
    with pytest.raises(EncodeError, match="deeper than 1023"):
        encode_sse(deep(1024))
    assert encode_proto(deep(1024))  # the binary encoder takes up to max_depth


def test_one_long_string_is_fine() -> None:
    payload = ld(2, base(1), string(2, "m"), ld(3, b"x" * (1 << 20)))
    assert len(decode_proto(frame(payload))[0]["delta"]) == 1 << 20
