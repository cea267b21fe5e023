"""Every decoder entry takes any contiguous buffer, at what a ``bytes`` chunk costs.

Strategy. The buffer types a client reads into (``bytes``, ``bytearray``, a
``memoryview`` of bytes, one at a non-zero offset, a read-only one, an ``mmap``)
are fed to every entry (``EventDecoder.feed``, sniffed or not, ``RecordReader.feed``,
``iter_decode``, ``read_records``, ``decode``, ``decode_proto``, ``decode_sse``) on
both transports:

* memory: one large chunk holding an event over its limit costs at most
  2x the limit of peak RSS growth whatever its type, on both backends. Measured in
  a fresh interpreter per backend, transport and type (the input is allocated
  first; the kernel's peak, ``VmHWM``, is reset before each entry through
  ``/proc/self/clear_refs``, so one process measures every entry);
* results: for any stream cut anywhere, each type gives what ``bytes`` gives
  (events, error class, text and position), call by call (hypothesis);
* a strided view or a non-buffer is a ``TypeError`` naming the problem, and the
  caller's buffer is never left pinned (a ``bytearray`` can be resized, an
  ``mmap`` closed) even while the decoder holds an error.
"""

from __future__ import annotations

import itertools
import json
import mmap
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agui_wire
from agui_wire import EventDecoder, decode, decode_proto, iter_decode
from agui_wire._codec import selected as codec_backend
from agui_wire._codec.sse_reader import SSEParser
from agui_wire._reader import RecordReader, read_records
from agui_wire.errors import DecodeError
from agui_wire.schema import DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE
from tests.support import captures

SSE = agui_wire.SSE_MEDIA_TYPE
PROTO = agui_wire.PROTO_MEDIA_TYPE
ROOT = Path(__file__).resolve().parents[2]


def anon_mmap(data: bytes) -> mmap.mmap:
    m = mmap.mmap(-1, len(data))
    m.write(data)
    return m


# name -> a buffer of that type holding the bytes (never empty: mmap cannot be)
KINDS: dict[str, Callable[[bytes], Any]] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "offset_view": lambda b: memoryview(bytearray(b"<<" + b + b">>"))[2:-2],
    "readonly_view": lambda b: memoryview(bytearray(b)).toreadonly(),
    "mmap": anon_mmap,
}

# -- memory --------------------------------------------------------------------------

# Run in a fresh interpreter: argv[1] is JSON {transport, kind, size}. Prints JSON
# {entry: [peak RSS growth in KiB, outcome]}.
PROBE = r"""
import json, mmap, sys
args = json.loads(sys.argv[1])
import agui_wire
from agui_wire import EventDecoder
from agui_wire._reader import RecordReader, read_records
from agui_wire._codec import selected as codec_backend
from agui_wire.schema import DEFAULT_MAX_FRAME_SIZE

transport, kind, size = args["transport"], args["kind"], args["size"]
if transport == "sse":
    # one data line, no line end: over max_event_size from its first 10 MiB
    raw = bytearray(b"x") * size
    raw[:6] = b"data: "
    ct = agui_wire.SSE_MEDIA_TYPE
else:
    # an event, then a frame declaring more than max_frame_size, its body the rest
    good = agui_wire.encode_proto({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    raw = bytearray(size)
    raw[: len(good)] = good
    raw[len(good) : len(good) + 4] = (DEFAULT_MAX_FRAME_SIZE + 1).to_bytes(4, "big")
    ct = agui_wire.PROTO_MEDIA_TYPE
if kind == "bytes":
    buf = bytes(raw)
elif kind == "bytearray":
    buf = raw
elif kind == "memoryview":
    buf = memoryview(bytes(raw))
elif kind == "offset_view":
    raw[:0] = b"<<"
    buf = memoryview(raw)[2:]
elif kind == "readonly_view":
    buf = memoryview(raw).toreadonly()
else:
    buf = mmap.mmap(-1, len(raw))
    buf.write(raw)
if kind not in ("bytearray", "offset_view", "readonly_view"):
    del raw

def hwm():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

def reset():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")

def feed(make):
    def run():
        d = make()
        out = d.feed(buf)
        err = d.pending_error
        if err is not None:
            raise err
        return out
    return run

def records(read):
    def run():
        out = read()
        err = out[-1].error if out else None
        if err is not None:
            raise err
        return out
    return run

entries = {
    "EventDecoder.feed": feed(lambda: EventDecoder(ct)),
    "EventDecoder.feed (sniffed)": feed(lambda: EventDecoder()),
    "RecordReader.feed": records(lambda: RecordReader(ct).feed(buf)),
    "iter_decode": lambda: list(agui_wire.iter_decode(buf, ct)),
    "read_records": records(lambda: list(read_records(buf, ct))),
    "read_records (keep_going)": records(lambda: list(read_records(buf, ct, keep_going=True))),
    "decode": lambda: agui_wire.decode(buf, ct),
    "decode (sniffed)": lambda: agui_wire.decode(buf),
}
if transport == "sse":
    entries["decode_sse"] = lambda: codec_backend.decode_sse(buf)
else:
    entries["decode_proto"] = lambda: agui_wire.decode_proto(buf)
result = {}
for name, run in entries.items():
    reset()
    before = hwm()
    try:
        run()
        outcome = "no error"
    except agui_wire.DecodeError as exc:
        outcome = f"{type(exc).__name__} at {exc.offset}"
    result[name] = [hwm() - before, outcome]
print(json.dumps(result))
"""


def _can_reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


# the backends, each in its own interpreter; a pass of the suite for one backend
# (AGUI_WIRE_PURE=1 or AGUI_WIRE_REQUIRE_FAST=1) measures that one only
BACKENDS = {"cython": {"AGUI_WIRE_REQUIRE_FAST": "1"}, "pure": {"AGUI_WIRE_PURE": "1"}}


def run_probe(backend: str, script: str, *args: str) -> Any:
    """What ``script`` prints (JSON), run with ``args`` in a fresh interpreter on
    ``backend`` (its peak memory is its own)."""
    this_pass = {k for k in ("AGUI_WIRE_PURE", "AGUI_WIRE_REQUIRE_FAST") if os.environ.get(k)}
    if this_pass and this_pass != set(BACKENDS[backend]):
        pytest.skip(f"the {backend} backend is measured in its own pass of the suite")
    env = {
        k: v for k, v in os.environ.items() if k not in ("AGUI_WIRE_PURE", "AGUI_WIRE_REQUIRE_FAST")
    }
    env.update(BACKENDS[backend])
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


CHUNK = 48 << 20  # several times either limit: a copy of it shows at once
EXPECTED = {
    # SSE: the line's first byte past max_event_size
    "sse": f"SSELimitExceeded at {DEFAULT_MAX_EVENT_SIZE}",
    # binary: the length prefix after the first frame (16 bytes)
    "proto": "FrameTooLarge at 16",
}


@pytest.mark.skipif(not _can_reset_peak(), reason="needs Linux /proc/self/clear_refs")
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("transport", ["sse", "proto"])
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_oversized_event_costs_the_same_in_any_buffer(
    backend: str, transport: str, kind: str
) -> None:
    args = json.dumps({"transport": transport, "kind": kind, "size": CHUNK})
    result = run_probe(backend, PROBE, args)
    limit = DEFAULT_MAX_EVENT_SIZE if transport == "sse" else DEFAULT_MAX_FRAME_SIZE
    bound_kib = 2 * limit // 1024
    for entry, (growth_kib, outcome) in result.items():
        assert outcome == EXPECTED[transport], (entry, outcome)
        assert growth_kib <= bound_kib, f"{entry}: peak RSS grew {growth_kib} KiB"


# An event of many short lines, or of a long line that is not ASCII: what the SSE
# parser keeps of it is its bytes, never a str per line (8-24x the bytes for short
# lines; 4x for a line whose str needs 4 bytes per character).
SHAPES_PROBE = r"""
import json, sys
import agui_wire
from agui_wire import EventDecoder
shape, limit = sys.argv[1], int(sys.argv[2])
if shape == "empty data lines":  # each counts 1 byte (its LF)
    buf = b"data:\n" * (limit + 1)
elif shape == "short data lines":  # each counts 3
    buf = b"data:ab\n" * (limit // 3 + 1)
elif shape == "a long line with an emoji":
    line = "data: \U0001F600".encode() + b"x" * (limit - 20) + b"\n"
    buf = line + b"data: " + b"y" * limit + b"\n\n"
else:
    buf = b":\xf0\x9f\x98\x80" + b"x" * (limit - 20) + b"\n" + b"data: " + b"y" * (2 * limit)
def hwm():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
before = hwm()
try:
    EventDecoder(agui_wire.SSE_MEDIA_TYPE, max_event_size=limit).feed(buf)
    outcome = "no error"
except agui_wire.DecodeError as exc:
    outcome = type(exc).__name__
print(json.dumps([hwm() - before, outcome]))
"""


@pytest.mark.skipif(not _can_reset_peak(), reason="needs Linux /proc/self/clear_refs")
@pytest.mark.parametrize(
    "shape",
    ["empty data lines", "short data lines", "a long line with an emoji", "a long comment"],
)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_what_an_sse_event_holds_is_its_bytes(backend: str, shape: str) -> None:
    limit = 2 << 20
    growth_kib, outcome = run_probe(backend, SHAPES_PROBE, shape, str(limit))
    assert outcome == "SSELimitExceeded"
    assert growth_kib <= 2 * limit // 1024, f"peak RSS grew {growth_kib} KiB"


# -- the same results --------------------------------------------------------------


def outcome(call: Callable[[], Any]) -> Any:
    """What ``call`` returns or raises, and the warnings it gives."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            result: Any = ("ok", call())
        except DecodeError as exc:
            result = (type(exc).__name__, str(exc), exc.index, exc.offset, exc.frame_offset)
    return result, [(w.category, str(w.message)) for w in record]


def split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    return [stream[a:b] for a, b in itertools.pairwise([0, *points, len(stream)]) if b > a]


def steps(make: Callable[[], Any], chunks: list[Any]) -> list[Any]:
    """What each feed() and the close() give (a failed reader stays failed)."""
    reader = make()
    out = [outcome(lambda c=c: reader.feed(c)) for c in chunks]
    out.append(outcome(reader.close))
    return out


def record_view(records: list[Any]) -> list[Any]:
    return [
        (r.index, r.offset, r.length, r.event, r.error and str(r.error), r.fatal) for r in records
    ]


STREAMS = {
    SSE: st.lists(st.sampled_from(captures.SSE_BLOCKS), max_size=8).map(b"".join),
    PROTO: st.lists(st.sampled_from(captures.FRAMES), max_size=8).map(b"".join),
}


def results(content_type: str, parts: list[Any], whole: Any) -> dict[str, Any]:
    """What each entry makes of the chunks ``parts`` (or of ``whole``, the stream)."""
    records = RecordReader(content_type, keep_going=True)
    one_shot = decode_proto if content_type == PROTO else codec_backend.decode_sse
    return {
        "feed": steps(lambda: EventDecoder(content_type), parts),
        "feed (sniffed)": steps(EventDecoder, parts),
        "records": [outcome(lambda p=p: record_view(records.feed(p))) for p in parts],
        "iter_decode": outcome(lambda: list(iter_decode(parts, content_type))),
        "read_records": outcome(lambda: record_view(list(read_records(whole, content_type)))),
        "decode": outcome(lambda: decode(whole, content_type)),
        "decode (sniffed)": outcome(lambda: decode(whole)),
        "one-shot": outcome(lambda: one_shot(whole)),
    }


@pytest.mark.parametrize("content_type", [SSE, PROTO])
@given(data=st.data(), cuts=st.lists(st.integers(0, 10**5), max_size=4))
def test_every_buffer_type_decodes_like_bytes(
    content_type: str, data: st.DataObject, cuts: list[int]
) -> None:
    stream = data.draw(STREAMS[content_type])
    chunks = split(stream, cuts)
    expected = results(content_type, chunks, stream)
    for name, kind in KINDS.items():
        whole = kind(stream) if stream else b""  # an mmap cannot be empty
        got = results(content_type, [kind(c) for c in chunks], whole)
        assert got == expected, name


@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))))
def test_replaced_invalid_utf8_is_each_line_decoded(values: list[bytes]) -> None:
    # the parser keeps an event's data as bytes and decodes it once: with
    # errors="replace" that must be each line decoded on its own, joined with LF
    if not values:
        return
    stream = b"".join(b"data: " + v + b"\n" for v in values) + b"\n"
    parser = SSEParser(errors="replace")
    (message,) = parser.feed(stream)
    assert message.data == "\n".join(v.decode("utf-8", "replace") for v in values)


# -- errors and the caller's buffer ------------------------------------------------

STRIDED = memoryview(b"data: x\n\n" * 2)[::2]
ENTRIES: dict[str, Callable[[Any], Any]] = {
    "EventDecoder(SSE).feed": lambda b: EventDecoder(SSE).feed(b),
    "EventDecoder(proto).feed": lambda b: EventDecoder(PROTO).feed(b),
    "EventDecoder().feed": lambda b: EventDecoder().feed(b),
    "RecordReader(SSE).feed": lambda b: RecordReader(SSE).feed(b),
    "RecordReader(proto).feed": lambda b: RecordReader(PROTO).feed(b),
    "RecordReader().feed": lambda b: RecordReader().feed(b),
    "SSEParser.feed": lambda b: SSEParser().feed(b),
    "iter_decode": lambda b: list(iter_decode(b, SSE)),
    "read_records": lambda b: list(read_records(b, SSE)),
    "decode": lambda b: decode(b, SSE),
    "decode (sniffed)": lambda b: decode(b),
    "decode_proto": lambda b: decode_proto(b),
    "decode_sse": lambda b: codec_backend.decode_sse(b),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_strided_view_is_a_type_error(entry: str) -> None:
    with pytest.raises(TypeError, match="contiguous"):
        ENTRIES[entry](STRIDED)


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_what_is_not_bytes_like_is_a_type_error(entry: str) -> None:
    with pytest.raises(TypeError, match="bytes-like"):
        ENTRIES[entry](12345)


BAD = {
    # a good event, then the error (held for the next call)
    (SSE, "after an event"): b'data: {"type":"CUSTOM"}\n\n' + b"data: {bad\n\n",
    (PROTO, "after an event"): captures.GOOD_FRAMES[0] + b"\x00\xff\xff\xff",
    # the error alone (raised at once, and held)
    (SSE, "at once"): b"data: {bad\n\n",
    (PROTO, "at once"): b"\x00\xff\xff\xff",
}


@pytest.mark.parametrize("kind", ["bytearray", "offset_view", "mmap"])
@pytest.mark.parametrize("case", list(BAD), ids=lambda c: f"{c[0].split('/')[1]}-{c[1]}")
@pytest.mark.parametrize("reader", ["EventDecoder", "EventDecoder (sniffed)", "RecordReader"])
def test_the_callers_buffer_is_not_pinned(reader: str, case: tuple[str, str], kind: str) -> None:
    # a client reusing its buffer (recv_into, a ring of bytearrays, an mmap it
    # closes) must be able to resize or close it after each feed, even when the
    # decoder holds the error that buffer's bytes caused (and its traceback)
    content_type, when = case
    data = BAD[case]
    owner = bytearray(data) if kind != "mmap" else anon_mmap(data)
    buf = memoryview(owner)[0:] if kind == "offset_view" else owner
    decoder: Any = {
        "EventDecoder": lambda: EventDecoder(content_type),
        "EventDecoder (sniffed)": EventDecoder,
        "RecordReader": lambda: RecordReader(content_type),
    }[reader]()
    try:
        got = decoder.feed(buf)
    except DecodeError:
        got = []
    held = decoder.stopped if reader == "RecordReader" else decoder.pending_error
    assert held is not None
    if reader == "RecordReader":
        assert len(got) == (2 if when == "after an event" else 1)  # the error is a record
    else:
        assert len(got) == (1 if when == "after an event" else 0)
    if isinstance(buf, memoryview):
        buf.release()  # the caller's own view: what it releases, we must not hold
    if isinstance(owner, bytearray):
        owner.clear()  # BufferError while any view of it is alive
        owner.extend(b"reused")
    else:
        owner.close()  # BufferError while any view of it is alive
    with pytest.raises(DecodeError):
        decoder.feed(b"more")
