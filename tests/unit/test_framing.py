"""The length-prefix framer, pure Python and Cython side by side."""

from __future__ import annotations

import mmap
import os
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_wire import schema
from agui_wire._codec import framing
from agui_wire.errors import EncodeError, FrameTooLarge, StreamClosed, TruncatedStream
from tests.support.twins import fast, needs_fast, twins

_fast = fast("FrameReader")
_need_fast = needs_fast("FrameReader")
IMPLS = twins(framing, "FrameReader")


@pytest.fixture(params=IMPLS)
def impl(request):
    return request.param


def prefix(n: int) -> bytes:
    return struct.pack(">I", n)


# A realistic stream: small event-sized payloads, empty frames, frames at and
# around the zero-copy threshold, and a large one.
Z = framing.ZERO_COPY_MIN
PAYLOADS = [
    b"\x0a\x02\x0a\x00",
    b"",
    bytes(range(256)) * 3,
    b"x" * (Z - 1),
    b"y" * Z,
    b"",
    b"z" * 40_000,
    b"\x00\x00\x00\x05tail",
]
STREAM = b"".join(framing.frame(p) for p in PAYLOADS)
BOUNDARIES = [0]
for _p in PAYLOADS:
    BOUNDARIES.append(BOUNDARIES[-1] + 4 + len(_p))


def feed_all(reader, chunks):
    out = []
    for c in chunks:
        out += reader.feed(c)
    reader.close()
    return out


def split(data: bytes, cuts) -> list[bytes]:
    cuts = sorted(set(c for c in cuts if 0 <= c <= len(data)))
    out, last = [], 0
    for c in cuts:
        out.append(data[last:c])
        last = c
    out.append(data[last:])
    return out


# -- frame() -------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"a",
        b"\x00" * 300,
        bytearray(b"abc"),
        memoryview(b"hello"),
        memoryview(b"0123456789")[::2],  # not contiguous
        memoryview(struct.pack("<4I", 1, 2, 3, 4)).cast("I"),  # itemsize 4
    ],
)
def test_frame(impl, payload):
    raw = bytes(payload)
    assert impl.frame(payload) == struct.pack(">I", len(raw)) + raw
    assert type(impl.frame(payload)) is bytes


def test_frame_refuses_non_buffer(impl):
    with pytest.raises(TypeError):
        impl.frame("text")


def test_frame_refuses_more_than_4_gib(impl):
    try:
        mm = mmap.mmap(-1, 2**32)  # lazily mapped: nothing is touched
    except (OSError, OverflowError, MemoryError, ValueError):
        pytest.skip("cannot map 4 GiB of address space here")
    try:
        with pytest.raises(EncodeError, match="4294967296"):
            impl.frame(memoryview(mm))
    finally:
        mm.close()


def test_same_constants():
    assert schema.DEFAULT_MAX_FRAME_SIZE == 10 * 1024 * 1024 - 4 == 10_485_756
    assert schema.MAX_FRAME_PAYLOAD == 0xFFFFFFFF
    if _fast is not None and hasattr(_fast, "FrameReader"):
        assert _fast.FrameReader().max_frame_size == schema.DEFAULT_MAX_FRAME_SIZE


# -- reading: chunking -----------------------------------------------------------


def test_whole_stream(impl):
    r = impl.FrameReader()
    out = r.feed(STREAM)
    assert [bytes(p) for p in out] == PAYLOADS
    r.close()
    assert r.frames_read == len(PAYLOADS)
    assert r.offset == r.bytes_fed == len(STREAM)
    assert r.buffered == 0


def test_every_single_split_point(impl):
    for i in range(len(STREAM) + 1):
        out = feed_all(impl.FrameReader(), [STREAM[:i], STREAM[i:]])
        assert [bytes(p) for p in out] == PAYLOADS, i


def test_byte_at_a_time(impl):
    r = impl.FrameReader()
    out = []
    for i in range(len(STREAM)):
        out += r.feed(STREAM[i : i + 1])
        assert r.bytes_fed == i + 1
        assert r.offset + r.buffered == i + 1
    r.close()
    assert [bytes(p) for p in out] == PAYLOADS


def test_every_split_pair_of_a_small_stream(impl):
    small = b"".join(framing.frame(p) for p in [b"ab", b"", b"cde", b"\x00" * 9])
    want = [b"ab", b"", b"cde", b"\x00" * 9]
    for i in range(len(small) + 1):
        for j in range(i, len(small) + 1):
            out = feed_all(impl.FrameReader(), [small[:i], small[i:j], small[j:]])
            assert [bytes(p) for p in out] == want, (i, j)


payloads_st = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.integers(0, 5000).map(lambda n: bytes([n % 251]) * n),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(payloads=payloads_st, data=st.data())
def test_hypothesis_chunking_both_impls(payloads, data):
    stream = b"".join(framing.frame(p) for p in payloads)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
    kinds = data.draw(st.lists(st.sampled_from(["bytes", "bytearray", "memoryview"]), min_size=1))
    chunks = split(stream, cuts)
    wrapped = []
    for k, c in enumerate(chunks):
        kind = kinds[k % len(kinds)]
        wrapped.append(
            c if kind == "bytes" else bytearray(c) if kind == "bytearray" else memoryview(c)
        )
    results = []
    for impl in (framing, _fast):
        if impl is None or not hasattr(impl, "FrameReader"):
            continue
        r = impl.FrameReader()
        out = feed_all(r, wrapped)
        assert [bytes(p) for p in out] == payloads
        assert r.frames_read == len(payloads)
        assert r.offset == len(stream)
        results.append([type(p) for p in out])
    assert all(x == results[0] for x in results)  # same payload types


def test_zero_copy_rule(impl):
    big = b"B" * Z
    small = b"s" * (Z - 1)
    chunk = framing.frame(big) + framing.frame(small)
    out = impl.FrameReader().feed(chunk)
    assert type(out[0]) is memoryview
    assert out[0].obj is chunk
    assert out[0].readonly
    assert type(out[1]) is bytes
    # a mutable chunk is never viewed: payloads survive its reuse
    buf = bytearray(chunk)
    out = impl.FrameReader().feed(buf)
    assert [type(p) for p in out] == [bytes, bytes]
    buf[:] = b"\xff" * len(buf)
    assert out == [big, small]
    # assembled across chunks: a copy
    r = impl.FrameReader()
    assert r.feed(chunk[:100]) == []
    out = r.feed(chunk[100:])
    assert type(out[0]) is bytes
    assert out[0] == big


def test_views_independent_of_later_feeds(impl):
    r = impl.FrameReader()
    first = r.feed(framing.frame(b"a" * Z) + b"\x00\x00")
    r.feed(b"\x00\x02xy")
    assert bytes(first[0]) == b"a" * Z


def test_zero_length_frames(impl):
    r = impl.FrameReader()
    assert r.feed(b"\x00\x00\x00\x00" * 3) == [b"", b"", b""]
    assert r.frames_read == 3
    assert r.offset == 12
    assert r.feed(b"\x00\x00") == []
    assert r.feed(b"\x00\x00") == [b""]
    r.close()


def test_counters(impl):
    r = impl.FrameReader()
    assert (r.frames_read, r.offset, r.bytes_fed, r.buffered) == (0, 0, 0, 0)
    r.feed(framing.frame(b"abc") + b"\x00\x00\x00")
    assert (r.frames_read, r.offset, r.bytes_fed, r.buffered) == (1, 7, 10, 3)
    r.feed(b"\x05ab")
    assert (r.frames_read, r.offset, r.bytes_fed, r.buffered) == (1, 7, 13, 6)
    assert r.feed(b"cde") == [b"abcde"]
    assert (r.frames_read, r.offset, r.bytes_fed, r.buffered) == (2, 16, 16, 0)


# -- limits -------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 4])
def test_limit_at_and_past_the_bound(impl, cut):
    ok = prefix(10) + b"0123456789"
    r = impl.FrameReader(max_frame_size=10)
    assert feed_all(r, [ok[:cut], ok[cut:]]) == [b"0123456789"]

    bad = prefix(11)  # no body: refused as soon as the prefix is complete
    r = impl.FrameReader(max_frame_size=10)
    if cut < 4:
        assert r.feed(bad[:cut]) == []
    with pytest.raises(FrameTooLarge) as info:
        r.feed(bad[cut:] if cut < 4 else bad)
    err = info.value
    assert (err.index, err.offset, err.frame_offset) == (0, 0, 0)
    assert str(err) == "frame 0, byte 0: frame declares 11 bytes, above max_frame_size 10"


def test_default_limit_matches_reference_client(impl):
    limit = 10 * 1024 * 1024 - 4
    r = impl.FrameReader()
    assert r.feed(prefix(limit)) == []  # accepted: waits for the body
    with pytest.raises(FrameTooLarge):
        impl.FrameReader().feed(prefix(limit + 1))
    payload = b"\x07" * limit
    out = feed_all(impl.FrameReader(), [framing.frame(payload)])
    assert len(out) == 1
    assert len(out[0]) == limit


def test_declared_max_u32_costs_nothing(impl):
    with pytest.raises(FrameTooLarge) as info:
        impl.FrameReader().feed(b"\xff\xff\xff\xff" + b"x" * 10)
    assert "4294967295" in str(info.value)
    # with the limit lifted to the maximum, only what arrives is held
    r = impl.FrameReader(max_frame_size=0xFFFFFFFF)
    assert r.feed(b"\xff\xff\xff\xff" + b"x" * 100) == []
    assert r.buffered == 104
    with pytest.raises(TruncatedStream, match="104 trailing bytes"):
        r.close()


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "10", None])
def test_bad_limit(impl, bad):
    with pytest.raises(ValueError, match="max_frame_size"):
        impl.FrameReader(max_frame_size=bad)


def test_good_frames_before_an_oversized_one_are_handed_out(impl):
    r = impl.FrameReader(max_frame_size=100)
    chunk = framing.frame(b"one") + framing.frame(b"two") + prefix(101) + b"rest"
    assert r.feed(chunk) == [b"one", b"two"]
    err = r.pending_error
    assert isinstance(err, FrameTooLarge)
    assert (err.index, err.offset, err.frame_offset) == (2, 14, 14)
    with pytest.raises(FrameTooLarge) as info:
        r.feed(b"more")
    assert info.value is err
    with pytest.raises(FrameTooLarge):
        r.close()


def test_oversized_prefix_split_after_a_frame(impl):
    r = impl.FrameReader(max_frame_size=100)
    assert r.feed(framing.frame(b"one") + b"\x00\x00") == [b"one"]
    with pytest.raises(FrameTooLarge) as info:
        r.feed(b"\x01\x00")
    assert (info.value.index, info.value.frame_offset) == (1, 7)


# -- truncation --------------------------------------------------------------------


def test_every_truncation_length(impl):
    for k in range(len(STREAM) + 1):
        r = impl.FrameReader()
        out = r.feed(STREAM[:k])
        complete = max(i for i, b in enumerate(BOUNDARIES) if b <= k)
        assert len(out) == complete
        if k in BOUNDARIES:
            r.close()
            continue
        with pytest.raises(TruncatedStream) as info:
            r.close()
        err = info.value
        start = BOUNDARIES[complete]
        assert (err.index, err.frame_offset, err.offset) == (complete, start, k)
        assert f"{k - start} trailing bytes" in str(err)


def test_truncation_messages(impl):
    r = impl.FrameReader()
    r.feed(b"\x00\x00")
    with pytest.raises(TruncatedStream, match=r"length prefix incomplete: 2 of 4 bytes"):
        r.close()
    r = impl.FrameReader()
    r.feed(b"\x00\x00\x00\x09abc")
    with pytest.raises(TruncatedStream, match=r"declares 9 bytes, 3 received"):
        r.close()


def test_empty_stream(impl):
    r = impl.FrameReader()
    assert r.feed(b"") == []
    r.close()
    r.close()  # idempotent


def test_feed_after_close(impl):
    r = impl.FrameReader()
    r.close()
    with pytest.raises(StreamClosed):
        r.feed(b"")


def test_feed_refuses_non_buffers(impl):
    with pytest.raises(TypeError, match="bytes-like"):
        impl.FrameReader().feed("text")
    with pytest.raises(TypeError, match="contiguous"):
        impl.FrameReader().feed(memoryview(b"abcdef")[::2])


@_need_fast
def test_identical_errors_between_impls():
    cases = [
        [framing.frame(b"a") + prefix(50)],
        [b"\x00", b"\x00\x00\x02a"],
        [b"\x00\x00"],
    ]
    for chunks in cases:
        got = []
        for impl in (framing, _fast):
            r = impl.FrameReader(max_frame_size=20)
            try:
                feed_all(r, chunks)
                got.append(None)
            except Exception as e:
                got.append((type(e), str(e), getattr(e, "index", None), getattr(e, "offset", None)))
        assert got[0] == got[1], chunks


# -- backend -------------------------------------------------------------------------


def _backend_name(env: dict[str, str]) -> str:
    code = (
        "from agui_wire._codec import selected; "
        "print(selected.NAME, selected.IMPLEMENTATIONS['FrameReader'], "
        "selected.FrameReader.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_backend_forced_pure():
    assert _backend_name({"AGUI_WIRE_PURE": "1"}) == "python python agui_wire._codec.framing"


@_need_fast
def test_backend_default_is_cython():
    assert _backend_name({"AGUI_WIRE_PURE": "0"}) == "cython cython agui_wire._fast"


def test_backend_exports():
    from agui_wire._codec import selected

    assert selected.NAME in ("cython", "python")
    assert selected.frame(b"ab") == b"\x00\x00\x00\x02ab"
    assert selected.FrameReader().feed(b"\x00\x00\x00\x01z") == [b"z"]
    assert set(selected.IMPLEMENTATIONS.values()) <= {"cython", "python"}
    if os.environ.get("AGUI_WIRE_PURE", "") not in ("", "0"):
        assert selected.NAME == "python"
        assert set(selected.IMPLEMENTATIONS.values()) == {"python"}
