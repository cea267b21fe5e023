"""The SSE parser (WHATWG event-stream rules) and the AG-UI JSON layer on top."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_wire._codec.sse_reader import (
    SSEEventReader,
    SSEMessage,
    SSEParser,
    decode_sse_message,
)
from agui_wire._codec.sse_writer import encode_sse
from agui_wire.errors import DecodeError, LimitExceeded, SSEError, SSEUnknownEvent, StreamClosed
from agui_wire.schema import DEFAULT_MAX_EVENT_SIZE


def parse(data: bytes, **kw) -> list[SSEMessage]:
    p = SSEParser(**kw)
    return p.feed(data) + p.close()


def datas(data: bytes, **kw) -> list[str]:
    return [m.data for m in parse(data, **kw)]


def parse_split(data: bytes, cuts, **kw) -> list[SSEMessage]:
    p = SSEParser(**kw)
    out: list[SSEMessage] = []
    last = 0
    for c in sorted(cuts):
        out += p.feed(data[last:c])
        last = c
    out += p.feed(data[last:])
    return out + p.close()


# -- line endings -----------------------------------------------------------------


@pytest.mark.parametrize("nl", [b"\n", b"\r\n", b"\r"])
def test_line_endings(nl):
    stream = nl.join([b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert datas(stream) == ["a\nb", "c"]


def test_mixed_line_endings():
    assert datas(b"data: 1\r\ndata: 2\rdata: 3\n\r\ndata: 4\r\r") == ["1\n2\n3", "4"]


def test_cr_at_chunk_end_then_lf():
    p = SSEParser()
    assert p.feed(b"data: a\r") == []
    # the CR already ended the line; the LF that follows is part of that CRLF,
    # not a blank line
    assert p.feed(b"\ndata: b\r") == []
    assert [m.data for m in p.feed(b"\n\r\n")] == ["a\nb"]


def test_cr_at_chunk_end_then_cr_is_blank_line():
    p = SSEParser()
    assert p.feed(b"data: a\r") == []
    assert [m.data for m in p.feed(b"\r")] == ["a"]


def test_line_delivered_without_waiting_for_next_chunk():
    p = SSEParser()
    # the blank line ends with CR at the chunk end: dispatched now, not later
    assert [m.data for m in p.feed(b"data: x\r\r")] == ["x"]
    assert p.feed(b"\n") == []  # the LF of that CRLF
    assert p.feed(b"data: y\n\n")[0].data == "y"


def test_long_runs_of_cr_and_lf():
    n = 200_000
    assert datas(b"\r" * n + b"data: a\n\n" + b"\n" * n + b"\r\n" * n + b"data: b") == ["a", "b"]


def test_many_tiny_lines():
    stream = b"data:\n" * 50_000 + b"\n"
    [m] = parse(stream)
    assert m.data == "\n" * 49_999


# -- fields ---------------------------------------------------------------------------


def test_bom_is_stripped_once():
    assert datas(b"\xef\xbb\xbfdata: a\n\n") == ["a"]
    # a second BOM is data of the first line: an unknown field name
    assert datas(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n") == []
    assert datas(b"data: \xef\xbb\xbfa\n\n") == ["\ufeffa"]


@pytest.mark.parametrize("cut", [1, 2])
def test_bom_split_across_chunks(cut):
    p = SSEParser()
    s = b"\xef\xbb\xbfdata: a\n\n"
    out = p.feed(s[:cut]) + p.feed(s[cut:])
    assert [(m.data, m.offset) for m in out] == [("a", 3)]


def test_short_stream_that_looks_like_a_bom_start():
    assert datas(b"\xef\xbb\xbfdata:x") == ["x"]
    with pytest.raises(SSEError, match="invalid UTF-8"):
        parse(b"\xef\xbb")
    assert parse(b"\xef\xbb", errors="replace") == []  # "\ufffd" is an unknown field


def test_comments_and_unknown_fields():
    stream = b": keep-alive\n:\nfoo: bar\nDATA: no\ndata: yes\n: inside\n\n"
    assert datas(stream) == ["yes"]


def test_comment_only_blocks_are_not_events():
    assert parse(b": ping\n\n: ping\n\n") == []


def test_field_without_colon():
    # "data" alone is a data line with an empty value
    assert datas(b"data\ndata\n\n") == ["\n"]
    [m] = parse(b"event\ndata: x\n\n")
    assert m.event == "message"


def test_one_optional_space():
    assert datas(b"data:a\n\ndata: a\n\ndata:  a\n\ndata:\ta\n\n") == ["a", "a", " a", "\ta"]


def test_multiline_data_and_trailing_newline_removed():
    assert datas(b'data: {\ndata: "a": 1\ndata: }\n\n') == ['{\n"a": 1\n}']
    assert datas(b"data:\n\n") == [""]  # empty data is still an event
    assert datas(b"data: a\ndata:\n\n") == ["a\n"]


def test_colon_in_value():
    assert datas(b"data: a: b:c\n\n") == ["a: b:c"]


def test_event_type():
    msgs = parse(b"event: ping\ndata: 1\n\ndata: 2\n\nevent: x\nevent: y\ndata: 3\n\n")
    assert [(m.event, m.data) for m in msgs] == [("ping", "1"), ("message", "2"), ("y", "3")]


def test_event_without_data_is_dropped_and_type_reset():
    msgs = parse(b"event: lonely\n\ndata: 1\n\n")
    assert [(m.event, m.data) for m in msgs] == [("message", "1")]


def test_id_semantics():
    stream = (
        b"id: 1\ndata: a\n\n"  # id 1
        b"data: b\n\n"  # persists: 1
        b"id: 2\n\n"  # no data: no event, but the last id becomes 2
        b"data: c\n\n"  # 2
        b"id: bad\x00id\ndata: d\n\n"  # NUL: ignored, still 2
        b"id\ndata: e\n\n"  # "id" without colon: reset to ""
        b"id: 3\ndata: f\nid: 4\n\n"  # the last id field of a block wins
    )
    p = SSEParser()
    msgs = p.feed(stream)
    assert [(m.data, m.id) for m in msgs] == [
        ("a", "1"),
        ("b", "1"),
        ("c", "2"),
        ("d", "2"),
        ("e", ""),
        ("f", "4"),
    ]
    assert p.last_event_id == "4"


def test_id_without_dispatch_is_not_committed_until_blank_line():
    p = SSEParser()
    p.feed(b"id: 7\n")
    assert p.last_event_id == ""
    p.feed(b"\n")
    assert p.last_event_id == "7"


def test_retry():
    p = SSEParser()
    msgs = p.feed(b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry:\n\nretry: -1\n\n")
    assert [(m.data, m.retry) for m in msgs] == [("a", 1500), ("b", None)]
    assert p.retry == 1500
    p.feed(b"retry: 0042\n\n")
    assert p.retry == 42
    p.feed(b"retry: \xd9\xa3\n\n")  # ARABIC-INDIC DIGIT THREE is not an ASCII digit
    assert p.retry == 42
    p.feed(b"retry: " + b"9" * 5000 + b"\n\n")  # absurd: ignored, no crash
    assert p.retry == 42


def test_final_event_without_blank_line_delivered_at_close():
    p = SSEParser()
    assert p.feed(b"data: a\n\ndata: b") == [SSEMessage("a", index=0, offset=0)]
    assert p.close() == [SSEMessage("b", index=1, offset=9, cut=True)]  # no blank line
    p = SSEParser()
    assert p.feed(b"data: c\n") == []
    assert [m.data for m in p.close()] == ["c"]
    assert p.close() == []


def test_offsets_and_indexes():
    stream = b": hi\n\ndata: 1\n\n\n\nevent: e\ndata: 2\n\n"
    msgs = parse(stream)
    assert [(m.index, m.offset) for m in msgs] == [
        (0, stream.index(b"data: 1")),
        (1, stream.index(b"event: e")),
    ]


# -- UTF-8 ----------------------------------------------------------------------------------


def test_utf8_split_across_chunks():
    s = "data: héllo → 🎉\n\n".encode()
    for i in range(len(s) + 1):
        p = SSEParser()
        assert [m.data for m in p.feed(s[:i]) + p.feed(s[i:])] == ["héllo → 🎉"]


def test_invalid_utf8_good_events_first():
    stream = b"data: ok\n\ndata: ab\xffcd\n\n"
    p = SSEParser()
    msgs = p.feed(stream)
    assert [m.data for m in msgs] == ["ok"]
    err = p.pending_error
    assert isinstance(err, SSEError)
    assert (err.index, err.offset, err.frame_offset) == (1, stream.index(b"\xff"), 10)
    assert "invalid UTF-8" in str(err)
    assert "event 1" in str(err)
    with pytest.raises(SSEError) as info:
        p.feed(b"")
    assert info.value is err
    with pytest.raises(SSEError):
        p.close()


def test_invalid_utf8_anywhere_and_truncated_sequence():
    with pytest.raises(SSEError):
        parse(b": comment \xc3\n\n")
    with pytest.raises(SSEError):
        parse(b"data: \xe2\x82\n\n")  # sequence cut by the line end
    with pytest.raises(SSEError):
        parse(b"data: \xed\xa0\x80\n\n")  # encoded surrogate


def test_invalid_utf8_replace():
    assert datas(b"data: ab\xffcd\n\n", errors="replace") == ["ab\ufffdcd"]
    assert datas(b"data: \xe2\x82\n\n", errors="replace") == ["\ufffd"]


# -- limits --------------------------------------------------------------------------------


def test_limit_on_a_line_without_end():
    p = SSEParser(max_event_size=100)
    p.feed(b"data: " + b"x" * 90)
    with pytest.raises(LimitExceeded) as info:
        p.feed(b"x" * 20)
    assert (info.value.index, info.value.frame_offset, info.value.offset) == (0, 0, 100)
    assert str(info.value).startswith("event 0, byte 100: ")


def test_limit_on_accumulated_data_lines():
    p = SSEParser(max_event_size=100)
    with pytest.raises(LimitExceeded):
        p.feed(b"data: 0123456789\n" * 20)


def test_limit_counts_bytes_not_characters():
    value = "é" * 50  # 100 bytes; the line "data:" + value is 105
    p = SSEParser(max_event_size=105)
    assert [m.data for m in p.feed(f"data:{value}\n\n".encode())] == [value]
    p = SSEParser(max_event_size=105)
    with pytest.raises(LimitExceeded):
        p.feed(f"data:{value}x\n\n".encode())


@pytest.mark.parametrize("chunked", [False, True])
def test_limit_exact_bound(chunked):
    # data so far (49 bytes + 1 joining LF) plus the line being read (54 bytes)
    stream = b"data:" + b"a" * 49 + b"\ndata:" + b"b" * 49 + b"\n\n"
    chunks = [stream[i : i + 1] for i in range(len(stream))] if chunked else [stream]
    p = SSEParser(max_event_size=104)
    assert [m.data for c in chunks for m in p.feed(c)] == ["a" * 49 + "\n" + "b" * 49]
    # the first byte that does not fit is the last "b"; chunked, it is refused on arrival
    p = SSEParser(max_event_size=103)
    last = chunks[-3] if chunked else stream
    for c in chunks[:-3] if chunked else []:
        p.feed(c)
    with pytest.raises(LimitExceeded, match=f"event 0, byte {len(stream) - 3}:"):
        p.feed(last)


@pytest.mark.parametrize("end", [b"", b"\n\n"])
@pytest.mark.parametrize("cut", [None, 12, 30])
def test_invalid_utf8_before_the_limit_is_the_utf8_error(cut, end):
    # the first fault in the stream wins (docs/errors.md): a bad byte before the
    # first byte past max_event_size is an SSEError, on a whole line or a partial one
    stream = b"data: {}\n\ndata: ab\xffcd" + b"x" * 100 + end
    p = SSEParser(max_event_size=50)
    chunks = [stream] if cut is None else [stream[:cut], stream[cut:]]
    err = None
    for chunk in [*chunks, b""]:  # b"": raises what a feed held back behind a good event
        try:
            p.feed(chunk)
        except DecodeError as exc:
            err = exc
            break
    assert type(err) is SSEError
    assert "invalid UTF-8" in str(err)
    assert (err.index, err.frame_offset, err.offset) == (1, 10, 18)


def test_invalid_utf8_past_the_limit_is_not_read():
    p = SSEParser(max_event_size=50)
    with pytest.raises(LimitExceeded) as info:
        p.feed(b"data: " + b"x" * 60 + b"\xff\n\n")
    assert info.value.offset == 50
    # a character the limit cuts in two is not a fault: its end was never read
    p = SSEParser(max_event_size=10)
    with pytest.raises(LimitExceeded):
        p.feed(b"data: abc" + "é".encode() + b"xx\n\n")
    # with errors="replace" there is no UTF-8 fault to find
    p = SSEParser(max_event_size=10, errors="replace")
    with pytest.raises(LimitExceeded):
        p.feed(b"data: \xff" + b"x" * 20 + b"\n\n")


def test_limit_resets_per_event():
    p = SSEParser(max_event_size=50)
    for _ in range(100):
        assert len(p.feed(b"data: " + b"x" * 40 + b"\n\n")) == 1


def test_limit_on_endless_comment_line_fed_in_pieces():
    p = SSEParser(max_event_size=1000)
    p.feed(b":")
    for _ in range(99):
        p.feed(b"." * 10)
    assert p.pending_error is None
    with pytest.raises(LimitExceeded):
        p.feed(b"." * 10)


def test_default_limit():
    assert DEFAULT_MAX_EVENT_SIZE == 10 * 1024 * 1024
    with pytest.raises(ValueError, match="max_event_size"):
        SSEParser(max_event_size=0)
    with pytest.raises(ValueError, match="errors"):
        SSEParser(errors="ignore")  # type: ignore[arg-type]


def test_feed_after_close():
    p = SSEParser()
    p.close()
    with pytest.raises(StreamClosed):
        p.feed(b"data: x\n\n")


# -- splitting: every point -------------------------------------------------------------

TRICKY = (
    b"\xef\xbb\xbf: comment\r\n"
    b"retry: 250\r"
    b"id: 1\n"
    b"event: hi\r\n"
    b'data: {"type":"A",\n'
    b'data:"x":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x8e\x89"}\r\r'
    b"id: 2\n\n"
    b"\r\n\r\n"
    b'data: {"type":"B"}\r'
    b"\n\n"
    b"data:last"
)


def test_every_single_split_point():
    want = parse(TRICKY)
    assert [m.data for m in want] == ['{"type":"A",\n"x":"é€🎉"}', '{"type":"B"}', "last"]
    for i in range(len(TRICKY) + 1):
        assert parse_split(TRICKY, [i]) == want, i


def test_every_split_pair():
    want = parse(TRICKY)
    for i in range(len(TRICKY) + 1):
        for j in range(i, len(TRICKY) + 1):
            assert parse_split(TRICKY, [i, j]) == want, (i, j)


lines_st = st.lists(
    st.one_of(
        st.just(b""),
        st.just(b":c"),
        st.builds(lambda s: b"data:" + s.encode(), st.text(max_size=8)),
        st.builds(lambda s: b"data: " + s.encode(), st.text(max_size=8)),
        st.builds(lambda s: b"id: " + s.encode(), st.text(max_size=3)),
        st.builds(lambda s: b"event:" + s.encode(), st.text(max_size=3)),
        st.builds(lambda n: b"retry: %d" % n, st.integers(0, 10**6)),
    ).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    max_size=15,
)


@settings(max_examples=300, deadline=None)
@given(lines=lines_st, data=st.data())
def test_hypothesis_split_points(lines, data):
    ends = data.draw(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n"]), min_size=len(lines)))
    bom = data.draw(st.booleans())
    stream = (b"\xef\xbb\xbf" if bom else b"") + b"".join(
        line + ends[i] for i, line in enumerate(lines)
    )
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
    assert parse_split(stream, cuts) == parse(stream)


# -- the JSON layer -------------------------------------------------------------------------


STEP_A = {"type": "STEP_STARTED", "stepName": "A"}
STEP_B = {"type": "STEP_STARTED", "stepName": "B"}
DATA_A = b'data: {"type":"STEP_STARTED","stepName":"A"}'
DATA_B = b'data: {"type":"STEP_STARTED","stepName":"B"}'


def read(data: bytes, **kw):
    r = SSEEventReader(**kw)
    return r.feed(data) + r.close()


def test_events_from_our_writer():
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a\nb\r\u2028c"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"x": [1, 2.5, None, True]}},
    ]
    stream = b"".join(encode_sse(e) for e in events)
    assert read(stream) == events
    for i in range(len(stream) + 1):
        r = SSEEventReader()
        assert r.feed(stream[:i]) + r.feed(stream[i:]) + r.close() == events


def test_keepalives_and_unrelated_fields_are_skipped():
    stream = b": ping\n\nevent: x\n\nid: 3\n\nretry: 10\n\n" + DATA_A + b"\n\n"
    assert read(stream) == [STEP_A]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"[1,2]", "not a JSON object \\(a JSON array\\)"),
        (b'"s"', "a JSON string"),
        (b"null", "a JSON null"),
        (b"3", "a JSON number"),
        (b"{}", "no type"),
        (b'{"type":""}', "no type"),
        (b'{"type":3}', "no type"),
        (b"{nope", "not valid JSON"),
        (b"", "not valid JSON"),  # `data:` with an empty value
        (b"1e400", "not valid JSON"),
    ],
)
def test_bad_data(data, match):
    stream = DATA_A + b"\n\n: c\ndata: " + data + b"\n\n"
    r = SSEEventReader()
    assert r.feed(stream) == [STEP_A]  # the good event first
    err = r.pending_error
    assert isinstance(err, SSEError)
    at = len(DATA_A) + 2
    assert (err.index, err.offset, err.frame_offset) == (1, at, at)
    with pytest.raises(SSEError, match=match):
        r.feed(b"")
    with pytest.raises(SSEError, match=match):
        r.close()


def test_bad_data_first_raises_at_once():
    with pytest.raises(SSEError, match="event 0, byte 0"):
        SSEEventReader().feed(b"data: [1]\n\n")


def test_bad_final_event_at_close():
    r = SSEEventReader()
    assert r.feed(DATA_A + b"\n\ndata: {") == [STEP_A]
    with pytest.raises(SSEError) as info:
        r.close()
    assert info.value.index == 1


def test_decode_sse_message_alone():
    assert decode_sse_message(SSEMessage(DATA_A[6:].decode())) == STEP_A
    with pytest.raises(SSEError):
        decode_sse_message(SSEMessage("[]", index=4, offset=99))
    with pytest.raises(SSEUnknownEvent):  # a later protocol's: the caller's policy decides
        decode_sse_message(SSEMessage('{"type":"X","a":1}'))


def test_reader_exposes_parser_state():
    r = SSEEventReader()
    r.feed(b"id: 9\nretry: 5\n" + DATA_A + b"\n\n")
    assert r.parser.last_event_id == "9"
    assert r.parser.retry == 5
    assert r.parser.events_read == 1


def test_limit_through_reader():
    r = SSEEventReader(max_event_size=64)
    with pytest.raises(LimitExceeded):
        r.feed(b'data: {"type":"A","x":"' + b"y" * 100 + b'"}\n\n')


def test_crlf_stream_works_unlike_reference():
    # The reference splits on "\n\n" only; CRLF streams are valid SSE.
    assert read(DATA_A + b"\r\n\r\n" + DATA_B + b"\r\n\r\n") == [STEP_A, STEP_B]
