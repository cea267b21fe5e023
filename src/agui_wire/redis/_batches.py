"""Stored events as the read side hands them out: ``Batch`` (consecutive stored
events, maybe with the run's end) and ``Prefix`` (a compact snapshot standing for
events 1..n).

Contract: a batch is one object shared by every local reader of a run. It decodes
its payloads at most once and builds its SSE bytes (``id: n`` on every event) and
its binary frames (the stored bytes, length-prefixed, never re-encoded) at most
once each, whatever the number of readers; a response writes it in one ASGI send.
``entries`` turns stream entries into a batch and checks that they follow on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._codec.framing import frame
from .._decoder import decode_proto
from .._encoder import EventEncoder, encode_sse
from .._mediatypes import PROTO_MEDIA_TYPE
from .._streaming import EncodedEvents
from ..errors import HistoryTrimmed, RunLost
from ._keys import END, PAYLOAD, parse_id

PROTO: Final = EventEncoder(PROTO_MEDIA_TYPE)


class Batch(EncodedEvents):
    """Consecutive events ``first..first+len-1`` of a run (and maybe its end),
    shared by every subscriber of a replica: decoded, framed and SSE-encoded at
    most once each."""

    __slots__ = ("_events", "_proto", "_sse", "end", "first", "nbytes", "payloads")

    def __init__(self, first: int, payloads: list[bytes], end: str | None) -> None:
        self.first = first
        self.payloads = payloads
        self.end = end  # the end marker follows the last event
        self.nbytes = sum(map(len, payloads))
        self._events: list[dict[str, Any]] | None = None
        self._proto: bytes | None = None
        self._sse: bytes | None = None

    @property
    def last(self) -> int:
        """The index of the last event (``first - 1`` for an end marker alone)."""
        return self.first + len(self.payloads) - 1

    def events(self) -> list[dict[str, Any]]:
        if self._events is None:
            # "raw": an event of a later protocol keeps its place (ids stay 1:1).
            events = decode_proto(self.data(True), unknown_events="raw")
            if len(events) != len(self.payloads):  # pragma: no cover - a decoder bug
                raise RuntimeError("a stored payload did not decode to one event")
            self._events = events
        return self._events

    def items(self) -> Iterable[tuple[int, dict[str, Any]]]:
        return enumerate(self.events(), self.first)

    def data(self, binary: bool) -> bytes:
        if binary:
            if self._proto is None:
                self._proto = b"".join(map(frame, self.payloads))
            return self._proto
        if self._sse is None:
            self._sse = b"".join(encode_sse(e, id=str(n)) for n, e in self.items())
        return self._sse

    @property
    def last_type(self) -> str | None:
        if not self.payloads:
            return None
        t = self.events()[-1].get("type")
        return t if isinstance(t, str) else None

    def after(self, cursor: int) -> Batch:
        """This batch without the events up to ``cursor``."""
        if cursor < self.first:
            return self
        cut = cursor - self.first + 1
        part = Batch(cursor + 1, self.payloads[cut:], self.end)
        if self._events is not None:
            part._events = self._events[cut:]
        return part


class Prefix(EncodedEvents):
    """The compact prefix: events standing for the run's events 1..``last``. In SSE
    only the last carries an id (``last``): a reconnect inside it starts over."""

    __slots__ = ("_data", "events", "last")

    def __init__(self, events: list[dict[str, Any]], last: int) -> None:
        self.events = events
        self.last = last
        self._data: dict[bool, bytes] = {}  # shared by the joiners of one fold

    def data(self, binary: bool) -> bytes:
        data = self._data.get(binary)
        if data is None:
            if binary:
                data = PROTO.encode_many(self.events)
            else:
                head = b"".join(encode_sse(e) for e in self.events[:-1])
                data = head + encode_sse(self.events[-1], id=str(self.last))
            self._data[binary] = data
        return data

    @property
    def last_type(self) -> str | None:
        t = self.events[-1].get("type")
        return t if isinstance(t, str) else None


def entries(run_id: str, cursor: int, stream: Any) -> tuple[Batch, bool]:
    """Stream entries after ``cursor`` as one batch; checks they follow on. An
    entry's fields are a mapping (redis-py's XRANGE/XREAD) or a flat list (a
    script's reply)."""
    payloads: list[bytes] = []
    end: str | None = None
    expected = cursor + 1
    for raw_id, raw_fields in stream:
        # the usual entry, ``n-0`` with one payload, without a dict (replays of
        # long runs read hundreds of thousands)
        if (
            raw_id == b"%d-0" % expected
            and type(raw_fields) is list
            and len(raw_fields) == 2
            and raw_fields[0] == PAYLOAD
        ):
            payloads.append(raw_fields[1])
            expected += 1
            continue
        fields = raw_fields if isinstance(raw_fields, Mapping) else _pairs(raw_fields)
        n, seq = parse_id(raw_id)
        if seq:
            end = bytes(fields.get(END, b"")).decode("utf-8", "replace")
            break
        if n != expected:
            if not payloads and n > expected:
                raise HistoryTrimmed(run_id, cursor, n)
            raise RunLost(run_id, f"event {expected} is missing from the stream")
        payloads.append(bytes(fields[PAYLOAD]))
        expected += 1
    return Batch(cursor + 1, payloads, end), end is not None


def _pairs(flat: list[Any]) -> dict[bytes, Any]:
    return dict(zip(flat[::2], flat[1::2], strict=True))
