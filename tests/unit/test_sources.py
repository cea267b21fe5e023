"""agui_wire._codec.sources: what a decoder reads from (``chunks``), the format of a
capture from its first bytes (``sniff``), and text that is no stream (``not_a_stream``,
``StreamHead``)."""

from __future__ import annotations

import io
import mmap
from pathlib import Path
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, DecodeError
from agui_wire._codec.sources import (
    HEAD_SIZE,
    READ_SIZE,
    StreamHead,
    chunks,
    not_a_stream,
    sniff,
)

pytestmark = pytest.mark.once  # pure helpers of both backends


# -- chunks ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_a_buffer_is_one_chunk_as_it_is(kind: Any) -> None:
    data = kind(b"data: x\n\n")
    assert [c for c in chunks(data)] == [data]
    assert next(iter(chunks(data))) is data


def test_an_mmap_is_one_chunk(tmp_path: Path) -> None:
    path = tmp_path / "capture"
    path.write_bytes(b"\x00\x00\x00\x00")
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        (chunk,) = chunks(m)
        assert chunk is m


def test_a_binary_file_is_read_in_pieces() -> None:
    data = bytes(range(256)) * (READ_SIZE // 128 + 3)
    got = list(chunks(io.BytesIO(data)))
    assert b"".join(got) == data
    assert [len(c) for c in got[:-1]] == [READ_SIZE] * (len(got) - 1)


def test_an_iterable_is_its_chunks() -> None:
    parts = [b"a", bytearray(b"b"), memoryview(b"c")]
    assert list(chunks(iter(parts))) == parts


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("events.sse", "to decode the file 'events.sse', pass its bytes"),
        (Path("events.sse"), "to decode the file 'events.sse'"),
        ("data: {}\n\n", "pass bytes (text.encode('utf-8'))"),
        (io.StringIO("data: {}\n\n"), "opened in text mode: open it with 'rb'"),
        (5, "source must be a bytes-like object, a binary file or an iterable of chunks"),
        (iter(["data: {}\n\n"]), "chunk must be a bytes-like object"),
    ],
    ids=["a path as str", "a Path", "text", "a text file", "an int", "str chunks"],
)
def test_what_is_not_bytes_is_a_type_error_saying_what_to_pass(source: Any, says: str) -> None:
    with pytest.raises(TypeError) as got:
        list(chunks(source))
    assert says in str(got.value)


# -- sniff -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"", None),
        (b"\x00\x00\x00\x05", PROTO_MEDIA_TYPE),
        (b"data: {}", SSE_MEDIA_TYPE),
        (b": ping", SSE_MEDIA_TYPE),
        (b"\xef\xbb\xbfdata", SSE_MEDIA_TYPE),
        (b"\n", SSE_MEDIA_TYPE),
        (b"\r\n", SSE_MEDIA_TYPE),
        (b"\tx", SSE_MEDIA_TYPE),
    ],
)
def test_the_first_byte_names_the_transport(head: bytes, kind: str | None) -> None:
    assert sniff(head) == kind
    assert sniff(memoryview(head)) == kind


def test_gzip_is_named_and_a_lone_first_byte_waits_for_the_next() -> None:
    with pytest.raises(DecodeError, match="gzip-compressed, so decompress it first") as got:
        sniff(b"\x1f\x8b\x08")
    assert (got.value.index, got.value.offset) == (0, 0)
    assert sniff(b"\x1f", final=False) is None  # a stream fed in pieces: not yet
    with pytest.raises(DecodeError, match="first byte is 0x1f"):
        sniff(b"\x1f")


@pytest.mark.parametrize("first", [0x01, 0x7F, 0x80, 0xFF])
def test_another_first_byte_is_an_error_asking_for_the_content_type(first: int) -> None:
    with pytest.raises(DecodeError, match=f"first byte is 0x{first:02x}.*pass content_type"):
        sniff(bytes([first, 0]))


# -- text that is no stream -------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n\n",
        b": keep-alive\n\n: keep-alive\n\n",
        b"event: ping\nid: 7\nretry: 100\ndata\n\n",
        b"\xef\xbb\xbf: hi\r\n\r\n",
        b": " + b"x" * 5000,  # a comment longer than the head
        b"data: " + b"x" * 5000,
    ],
)
def test_blank_lines_comments_and_fields_are_a_stream(data: bytes) -> None:
    assert not_a_stream(data[:HEAD_SIZE], len(data)) is None


@pytest.mark.parametrize(
    ("data", "offset", "line"),
    [
        (b"hello world", 0, "line 1 ('hello world')"),
        (b": ok\r\n<html>\r\n", 6, "line 2 ('<html>')"),
        (b"\xef\xbb\xbfGET / HTTP/1.1\n", 3, "line 1 ('GET / HTTP/1.1')"),
        (b"data: x\n\nsomething else\n", 9, "line 3 ('something else')"),
        (b"x" * 5000, 0, "line 1 ('" + "x" * 40 + "'...)"),  # judged by its start
        (b"dat", 0, "line 1 ('dat')"),  # the whole stream: a field no stream has
    ],
)
def test_any_other_line_is_an_error_at_its_offset(data: bytes, offset: int, line: str) -> None:
    error = not_a_stream(data[:HEAD_SIZE], len(data))
    assert isinstance(error, DecodeError)
    assert error.offset == offset
    assert str(error) == (
        f"byte {offset}: not an AG-UI stream: no event in {len(data):,} bytes, and {line} "
        "is neither an SSE field (data:, event:, id:, retry:) nor a comment"
    )


def test_a_line_the_head_cuts_is_judged_by_its_start() -> None:
    for start in (b"d", b"da", b"retr", b"data"):  # may still become a field
        assert not_a_stream(start, 10_000) is None
    assert not_a_stream(b"datum", 10_000) is None  # five bytes: too few to tell
    assert not_a_stream(b"datums", 10_000) is not None


def test_the_head_keeps_the_first_bytes_and_counts_all() -> None:
    head = StreamHead()
    for chunk in (b"hel", bytearray(b"lo "), memoryview(b"world"), b"!" * 2000):
        head.add(chunk)
    assert head.size == 2011
    assert head.data == (b"hello world" + b"!" * 2000)[:HEAD_SIZE]
    head.add("not bytes")  # the decoder says what is wrong with it
    assert head.size == 2011
    assert head.error(PROTO_MEDIA_TYPE) is None  # binary has no lines to judge
    assert head.error(SSE_MEDIA_TYPE) is not None
    assert StreamHead().error(SSE_MEDIA_TYPE) is None  # nothing read
