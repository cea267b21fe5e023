"""The data every contender is timed on, built once and deterministically.

Everything derives from ``agui_wire._sample.realistic_run(n, seed)`` (about 86%
TEXT_MESSAGE_CONTENT with a few words each) plus a generated ~50 KB
STATE_SNAPSHOT of realistic nested state. Wire forms (protobuf frames, SSE) are
produced by agui_wire and checked to decode back to the same events, so every
decoder reads the same bytes and every encoder gets the same dicts.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import struct
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import agui_wire
from agui_wire._sample import realistic_run

Event = dict[str, Any]

ROOT = Path(__file__).resolve().parent.parent

RUN_EVENTS = 20_004  # the workload size
QUICK_RUN_EVENTS = 2_004
SEED = 20_004
SNAPSHOT_BYTES = 50_000  # JSON size of the state snapshot
TYPE_EVENTS = 2_000  # events per type in the by-type workloads
QUICK_TYPE_EVENTS = 500
FRAMER_BYTES = 100_000_000
FRAMER_CHUNK = 1 << 20  # "large chunks": 1 MiB reads
CAPTURE_CHUNK = 1 << 16  # what a socket or file read typically hands over

_TEXT = (
    "quarterly revenue forecast supplier delay region north backlog review plan figures "
    "summary budget contract renewal churn pipeline signed pending escalation latency "
    "dashboard migration invoice customer account owner weekly report draft approved"
)
_WORDS = tuple(_TEXT.split())


def _sse(events: list[Event]) -> bytes:
    return agui_wire.EventEncoder().encode_many(events)


def _proto(events: list[Event]) -> bytes:
    return agui_wire.EventEncoder(agui_wire.PROTO_MEDIA_TYPE).encode_many(events)


def split_frames(stream: bytes) -> list[bytes]:
    """Payloads of a stream of whole frames (a plain loop, independent of agui_wire)."""
    out, pos, n = [], 0, len(stream)
    unpack = struct.Struct(">I").unpack_from
    while pos < n:
        (size,) = unpack(stream, pos)
        out.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return out


@dataclass(frozen=True)
class Workload:
    """One set of events with its wire forms."""

    name: str
    events: list[Event]
    proto: bytes  # the framed protobuf stream
    sse: bytes  # the SSE stream
    frames: list[bytes]  # one framed event each
    payloads: list[bytes]  # one ag_ui.Event each, unframed
    sse_events: list[bytes]  # one "data: ...\n\n" each

    @property
    def count(self) -> int:
        return len(self.events)


def make_workload(name: str, events: list[Event]) -> Workload:
    proto = _proto(events)
    sse = _sse(events)
    payloads = split_frames(proto)
    frames = [struct.pack(">I", len(p)) + p for p in payloads]
    sse_events = [chunk + b"\n\n" for chunk in sse.split(b"\n\n")[:-1]]
    assert len(payloads) == len(sse_events) == len(events), name
    assert agui_wire.decode_proto(proto) == events, f"{name}: protobuf round trip differs"
    assert agui_wire.decode(sse, agui_wire.SSE_MEDIA_TYPE) == events, f"{name}: SSE differs"
    return Workload(name, events, proto, sse, frames, payloads, sse_events)


@functools.cache
def run(n: int = RUN_EVENTS, seed: int = SEED) -> Workload:
    """The realistic run: ``realistic_run(n, seed)``."""
    return make_workload(f"realistic_run({n}, seed={seed})", realistic_run(n, seed))


@functools.cache
def hot(n: int = RUN_EVENTS, seed: int = SEED) -> Workload:
    """The hot event: every TEXT_MESSAGE_CONTENT of the run (distinct dicts, not one
    event repeated, so caches see what a server sees)."""
    events = [e for e in run(n, seed).events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    return make_workload(f"TEXT_MESSAGE_CONTENT x{len(events)}", events)


def _plain(event: Event) -> bool:
    """Whether the one-line orjson writer writes ``event`` as the encoders do, and it
    round-trips through protobuf unchanged (no None to omit, no key protobuf drops)."""
    try:
        same = agui_wire.encode_sse(event) == b"data: " + orjson.dumps(event) + b"\n\n"
        return same and agui_wire.decode_proto(agui_wire.encode_proto(event)) == [event]
    except (agui_wire.EncodeError, agui_wire.DecodeError, TypeError):
        return False


@functools.cache
def by_type(
    n: int = RUN_EVENTS, per_type: int = TYPE_EVENTS, seed: int = SEED
) -> dict[str, Workload]:
    """One workload per event type, each of the 31: that type's events of the run,
    then the test corpus's events of the type (tests/support/corpus.py: minimal,
    full and every variant), those a one-line orjson writer writes exactly as the
    encoders do, cycled to ``per_type`` events."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.corpus import corpus_by_type

    run_events = run(n, seed).events
    out: dict[str, Workload] = {}
    for kind, corpus in corpus_by_type().items():
        distinct = [e for e in run_events if e["type"] == kind][:per_type]
        distinct += [e for e in corpus if _plain(e)]
        events = list(itertools.islice(itertools.cycle(distinct), max(per_type, len(distinct))))
        out[kind] = make_workload(f"{kind} x{len(events)} ({len(distinct)} distinct)", events)
    return out


def _words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _document(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": _uid(rng),
        "rank": i + 1,
        "title": _words(rng, 3, 9).capitalize(),
        "url": f"https://docs.example.com/{_words(rng, 1, 3).replace(' ', '-')}/{i}",
        "score": round(rng.random(), 6),
        "pinned": rng.random() < 0.2,
        "archived": False,
        "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 4))],
        "author": {"name": _words(rng, 2, 2).title(), "verified": rng.random() < 0.5},
        "chunks": [
            {"start": s, "end": s + rng.randint(40, 400), "text": _words(rng, 4, 14)}
            for s in sorted(rng.sample(range(10_000), rng.randint(1, 3)))
        ],
        "updatedAt": 1_760_000_000_000 + rng.randrange(10**9),
        "summary": None if rng.random() < 0.3 else _words(rng, 8, 20),
    }


def state_snapshot(target_bytes: int = SNAPSHOT_BYTES, seed: int = SEED) -> Event:
    """A STATE_SNAPSHOT of about ``target_bytes`` of JSON: an agent's working state
    with lists of objects holding strings, ints, floats, bools and nulls."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = []
    state: dict[str, Any] = {
        "status": "working",
        "progress": 37,
        "confidence": 0.82,
        "user": {"id": _uid(rng), "locale": "en-GB", "plan": "team", "beta": True},
        "steps": [
            {"name": f"step_{i}", "done": i < 5, "ms": rng.randint(20, 4000)} for i in range(8)
        ],
        "filters": {"region": ["north", "south"], "since": "2025-01-01", "limit": 50},
        "documents": docs,
    }
    while len(orjson.dumps(state)) < target_bytes:
        docs.append(_document(rng, len(docs)))
    return {"type": "STATE_SNAPSHOT", "snapshot": state, "timestamp": 1_760_000_000_000}


@functools.cache
def snapshot(target_bytes: int = SNAPSHOT_BYTES) -> Workload:
    event = state_snapshot(target_bytes)
    return make_workload(f"STATE_SNAPSHOT ~{target_bytes // 1000} KB", [event])


def deep_snapshot(depth: int) -> Event:
    """A snapshot nested ``depth`` JSON levels deep (alternating objects and lists),
    to show which contenders cope with deep state (upb caps message nesting)."""
    value: Any = {"leaf": True}
    for i in range(depth - 1):
        value = {"level": i, "child": value} if i % 2 else [value]
    return {"type": "STATE_SNAPSHOT", "snapshot": value}


def deep_workload(depth: int) -> Workload:
    """``deep_snapshot(depth)`` with its wire forms; the SSE comes from the stdlib
    json module (orjson refuses deep nesting, and this must not depend on it)."""
    event = deep_snapshot(depth)
    proto = agui_wire.encode_proto(event)
    sse = b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"
    return Workload(f"deep snapshot {depth}", [event], proto, sse, [proto], [proto[4:]], [sse])


@functools.cache
def framer_stream(
    total_bytes: int = FRAMER_BYTES, chunk: int = FRAMER_CHUNK, n: int = RUN_EVENTS
) -> tuple[list[bytes], int, int]:
    """(chunks, frames, bytes): the run's protobuf stream repeated to ``total_bytes``
    and cut into ``chunk``-sized reads, frames straddling the cuts as on a socket."""
    one = run(n).proto
    copies = max(1, total_bytes // len(one))
    stream = one * copies
    chunks = [stream[i : i + chunk] for i in range(0, len(stream), chunk)]
    return chunks, copies * run(n).count, len(stream)


def frame_all(reader_cls: Any, chunks: list[bytes]) -> int:
    """Feed every chunk to a new ``reader_cls()`` (a FrameReader); frames split."""
    reader = reader_cls()
    feed = reader.feed
    n = 0
    for chunk in chunks:
        n += len(feed(chunk))
    reader.close()
    return n


def write_capture(
    path: Path, total_bytes: int, *, big_frame_bytes: int = 2_000_000
) -> dict[str, int]:
    """Write a ~``total_bytes`` protobuf capture streaming (never held in memory):
    the realistic run over and over, with a ~2 MB STATE_SNAPSHOT frame every ~100 MB
    so "the largest frame" is a real one. Returns counts for the checks."""
    one = run().proto
    big = agui_wire.encode_proto(state_snapshot(big_frame_bytes, seed=7))
    written = events = bigs = 0
    since_big = 1 << 62  # start with a big frame
    with path.open("wb") as fh:
        while written < total_bytes:
            if since_big >= 100_000_000:
                fh.write(big)
                written += len(big)
                events += 1
                bigs += 1
                since_big = 0
            fh.write(one)
            written += len(one)
            since_big += len(one)
            events += run().count
    return {"bytes": written, "events": events, "largest_frame": len(big) - 4, "big_frames": bigs}


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]
