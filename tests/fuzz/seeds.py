"""Seed corpora for the fuzz targets, generated from real streams and known bad input.

Strategy: every event of the shared corpus (tests/support/corpus.py: all 31 types,
minimal, full and edge cases) and of ``agui_wire._sample.realistic_run`` is
encoded both ways -- as a protobuf payload (by the byte-identical direct encoder
and by upb, whose map order differs) and as SSE -- then assembled into inputs of
each target's shape: single payloads, binary streams, SSE streams (LF, CRLF and
CR line ends, BOM, comments, ids, retries), captures of either kind, and for the
encoder target programs over the corpus events (``_graphs``). The
malformed cases the unit tests pin down (truncations, bad tags and wire types,
oversized and partial frames, merged occurrences that straddle, deep nesting,
invalid UTF-8, broken JSON) are added, so the fuzzer starts at the edges.

Nothing is stored in the repository: tests/fuzz/run.py writes the seeds into
its scratch directory on every run, so they follow the corpus and the encoders.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agui_wire import EncodeError
from agui_wire._codec import proto_writer, upb
from agui_wire._codec.sse_writer import encode_sse
from agui_wire._sample import realistic_run
from tests.support.corpus import CORPUS
from tests.support.wire import (
    base,
    double,
    entry,
    ld,
    string,
    tag,
    v_list,
    v_null,
    v_num,
    v_str,
    v_struct,
    varint,
    vi,
)

__all__ = ["KINDS", "seeds", "write"]

MAX_SEED = 8192  # libFuzzer's -max_len in run.py; larger events are left out


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def _events() -> list[dict[str, Any]]:
    return list(CORPUS) + realistic_run(300, seed=7)


def _payloads() -> Iterator[bytes]:
    for event in _events():
        yield proto_writer.encode_payload(event)
        with contextlib.suppress(EncodeError):  # upb has no lossy_numbers leniency to skip
            yield upb.encode_payload(event)


def _deep(levels: int, alternate: bool = True) -> bytes:
    value = v_null()
    for i in range(levels):
        value = v_list(value) if alternate and i % 2 else v_struct(entry("k", value))
    return value


def malformed_payloads() -> list[bytes]:
    """Broken and adversarial payloads (the shapes tests/unit/test_proto_reader.py and
    tests/contract/test_limits.py pin down)."""

    def snapshot(value: bytes) -> bytes:
        return ld(7, base(6), ld(2, value))

    def tmc(*fields: bytes) -> bytes:
        return ld(2, base(1), *fields)

    user = ld(9, base(8), ld(2, string(1, "1"), string(2, "user"), ld(8, ld(1, string(1, "t")))))
    return [
        b"",
        ld(2),
        ld(2, string(2, "m")),
        ld(2, base(5)),
        ld(2, base(99)),
        ld(1, base(0)) + tmc(),
        vi(2, 5),
        vi(40, 5),
        tag(0, 0) + varint(1),
        tag(40, 6),
        tag(40, 7),
        b"\x12\x05ab",
        b"\x12\x80",
        b"\x12" + b"\xff" * 10 + b"\x01",
        tag(40, 3) + tag(41, 4),
        tag(40, 3) + tmc(string(2, "m")) + tag(40, 4),
        tag(40, 1) + b"\x00" * 7,
        tag(40, 5) + b"\x00" * 3,
        ld(32, base(40), string(2, "x")),
        tmc(string(2, "m"), string(3, "hello")) + ld(32, base(40)),
        ld(2, base(1), string(2, "m")) + ld(2, string(3, "hello")),
        ld(2, base(1), string(2, "m"), ld(1, vi(2, 7)), ld(1, vi(2, 8))),
        tmc(ld(2, b"\xff"), string(2, "m")),
        tmc(string(2, "m"), ld(3, b"ok\xc3(")),
        tmc(string(2, "m"), vi(3, 5), string(3, "hello"), vi(2, 1)),
        tmc(string(2, "m"), double(40, 1.0), tag(41, 5) + b"abcd"),
        # a field straddling two occurrences of a merged message
        ld(2, ld(1, b"\x08"), ld(1, b"\x01"), string(2, "m")),
        snapshot(v_struct(ld(1, ld(1, b"\xfe"), ld(2, v_null())))),
        snapshot(v_str("x") + v_num(3)),
        snapshot(v_struct(entry("a", v_null())) + v_num(3) + v_struct(entry("b", v_null()))),
        snapshot(v_list(v_num(1)) + v_list(v_num(2))),
        snapshot(v_struct(entry("a", v_num(1)), entry("a", v_num(2)), entry("a", b""))),
        snapshot(v_struct(ld(1, ld(2, v_null())))),
        snapshot(v_list(v_num(float("nan")), v_num(-0.0), v_num(2.0**53 + 2), b"")),
        snapshot(_deep(40)),
        snapshot(_deep(40, alternate=False) + v_num(1)),
        ld(8, base(7), ld(2, vi(1, 9), string(2, "/x")), ld(2, vi(1, -1))),
        user,
        user[:-3] + ld(2),
        ld(9, base(8), ld(2, string(1, "1"), string(2, "hologram"), string(3, "x"), ld(13))),
        ld(9, base(8), ld(2, string(2, "user"), ld(8, ld(9, string(1, "x"))))),
        ld(9, base(8), ld(2, string(2, "user"), ld(8, ld(2, ld(1, ld(7)))))),
        ld(22, base(21), string(3, "m"), string(5, "x"), ld(7, ld(1, string(1, "t")))),
        ld(13, base(12), string(5, "interrupt"), ld(6, string(1, "i")), string(8, "p")),
        tmc(string(2, "m"), ld(1, vi(1, 1), vi(2, -1))),
    ]


def _streams() -> Iterator[bytes]:
    frames = [_frame(p) for p in _payloads()]
    for i in range(0, len(frames), 7):
        yield b"".join(frames[i : i + 7])
    bad = [_frame(p) for p in malformed_payloads()]
    good = frames[:3]
    for f in bad:
        yield b"".join(good) + f + frames[3]
    yield b"".join(good) + b"\x00\x00\x00"  # partial prefix
    yield b"".join(good) + b"\x00\x00\x01\x00abc"  # partial body
    yield b"".join(good) + b"\xff\xff\xff\xff"  # declared 4 GiB
    yield b"".join(good) + b"\x00\xa0\x00\x01" + b"x" * 64  # above the default limit
    yield b"\x00\x00\x00\x00" * 16  # empty frames


def _sse_streams() -> Iterator[bytes]:
    chunks = [encode_sse(e) for e in _events()]
    for i in range(0, len(chunks), 5):
        group = b"".join(chunks[i : i + 5])
        yield group
        if i % 15 == 0:
            yield group.replace(b"\n", b"\r\n")
            yield group.replace(b"\n", b"\r")
            yield b"\xef\xbb\xbf: comment\nretry: 1500\nid: 7\n" + group
    yield b'data: {"type":"X"}\n\ndata: {"type"\ndata: :"Y"}\n\n'
    yield b'data:{"type":"X"}\r\n\r\nevent: e\nid: a\x00b\ndata: {"type":"Z"}\n\n'
    yield b'data: {"type": 1}\n\ndata: []\n\ndata: \n\ndata: {"type":"A","x":1e400}\n\n'
    yield b'data: {"type":"A","s":"\xff"}\n\n'
    yield b'data: {"type":"A","d":' + b"[" * 40 + b"]" * 40 + b"}\n\n"
    yield b"id\nretry: 99999999999999999999\ndata\n\n:\r\r\r\n\n"
    yield b'data: {"type":"A"}'  # no blank line at the end


def _graphs() -> Iterator[bytes]:
    """Programs for fuzz_encode.py (tests/fuzz/graphs.py): every corpus event as it
    is, plain and through the SDK (mode byte 0 / 1), and each one with its root
    turned odd, given a generated entry, nested, repeated or put inside itself."""
    for i in range(len(CORPUS)):
        event = bytes([i >> 8, i & 0xFF])
        yield b"\x00" + event
        yield b"\x01" + event
        if i % 8 == 0:
            yield b"\x00" + event + b"\x90\x01"  # the event as another mapping kind
            yield b"\x00" + event + b"\x92\x00\x00\x05\x01\x12"  # plus an entry
            yield b"\x00" + event + b"\x00\x95\x08\x02\x00"  # its first value nested
            yield b"\x00" + event + b"\x00\x93\x00"  # its first value: the event again


KINDS = ("payloads", "streams", "sse", "captures", "graphs")


def seeds(kind: str) -> list[bytes]:
    """The seed inputs of one kind of target, deduplicated, at most MAX_SEED bytes."""
    if kind == "payloads":
        items: Iterable[bytes] = [*_payloads(), *malformed_payloads()]
    elif kind == "streams":
        items = _streams()
    elif kind == "sse":
        items = _sse_streams()
    elif kind == "captures":
        items = [*_streams(), *_sse_streams()]
    elif kind == "graphs":
        items = _graphs()
    else:
        raise ValueError(f"unknown seed kind {kind!r} (one of {', '.join(KINDS)})")
    out = dict.fromkeys(s for s in items if len(s) <= MAX_SEED)
    return list(out)


def write(kind: str, directory: Path) -> int:
    """Write the seeds of ``kind`` into ``directory`` (one file each); their count."""
    directory.mkdir(parents=True, exist_ok=True)
    items = seeds(kind)
    for data in items:
        (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(items)
