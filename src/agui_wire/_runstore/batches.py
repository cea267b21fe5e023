"""Stored events as the read side hands them out: ``Batch`` (consecutive stored
events, maybe with the run's end) and ``Prefix`` (a compact snapshot standing for
events 1..n).

Contract: a batch is one object shared by every local reader of a run. It decodes
its payloads at most once and builds its SSE bytes (``id: n-g`` on every event) and
its binary frames (the stored bytes, length-prefixed, never re-encoded) at most
once each, whatever the number of readers; a response writes it in one ASGI send.
A backend builds batches of what it stores (``agui_wire.redis._entries``: of
stream entries, checked to follow on; ``agui_wire.memory``: of an append), with
the stamps of the entries that end an append (``stamps``: telemetry's delivery
lag, ``observe.delivered``). Telemetry
counts a batch's events from its decoded events (``decoded``), decoded once for
every response.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from .._codec.selected import frame
from .._decoder import decode_proto
from .._encoder import EventEncoder, encode_sse
from .._mediatypes import PROTO_MEDIA_TYPE
from .._streaming import EncodedEvents
from ..errors import DecodeError, StoreCorrupted
from .ids import EventId

PROTO: Final = EventEncoder(PROTO_MEDIA_TYPE)


class RunRef(Protocol):
    """A run as a batch names it in a ``StoreCorrupted``: its id and where it is stored."""

    @property
    def run_id(self) -> str: ...

    @property
    def stream(self) -> str: ...


class Batch(EncodedEvents):
    """Consecutive events ``first..first+len-1`` of a run (and maybe its end),
    shared by every subscriber of a replica: decoded, framed and SSE-encoded at
    most once each. ``generation`` is the run's (``None``: an end marker alone of a
    run whose generation the reader did not know)."""

    __slots__ = (
        "_events",
        "_proto",
        "_sse",
        "end",
        "first",
        "generation",
        "keys",
        "nbytes",
        "payloads",
        "stamps",
    )

    def __init__(
        self,
        keys: RunRef,
        generation: int | None,
        first: int,
        payloads: list[bytes],
        end: str | None,
        stamps: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.keys = keys
        self.generation = generation
        self.first = first
        self.payloads = payloads
        self.end = end  # the end marker follows the last event
        # (index, ms since the epoch) of the entries that end an append, in order
        self.stamps = stamps
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
            self._events = self._decode(self.data(True), len(self.payloads))
        return self._events

    def chunk(self, start: int, size: int) -> list[dict[str, Any]]:
        """Events ``start..start+size-1`` (counted from 0; fewer at the end),
        decoded for the caller alone and not kept (unless ``events()`` decoded them
        already): a fold feeds a step and drops it, so its decoded events die young,
        before the cyclic GC's first generation fills and would carry a page of
        them into the old generations (each full collection of the replica's heap
        a pause of ~15 ms for every run on the event loop)."""
        if self._events is not None:
            return self._events[start : start + size]
        part = self.payloads[start : start + size]
        return self._decode(b"".join(map(frame, part)), len(part))

    def _decode(self, framed: bytes, count: int) -> list[dict[str, Any]]:
        # "raw": an event of a later protocol keeps its place (ids stay 1:1).
        try:
            events = decode_proto(framed, unknown_events="raw")
        except DecodeError as exc:
            raise self._corrupt(exc) from None
        if len(events) != count:  # pragma: no cover - a decoder bug
            raise RuntimeError("a stored payload did not decode to one event")
        return events

    def decoded(self) -> list[dict[str, Any]]:
        return self.events()

    def _corrupt(self, exc: DecodeError) -> StoreCorrupted:
        """The stored payload that does not decode, named (found one at a time)."""
        n = self.first
        for i, payload in enumerate(self.payloads):
            try:
                decode_proto(frame(payload), unknown_events="raw")
            except DecodeError as err:
                n, exc = self.first + i, err
                break
        return StoreCorrupted(
            self.keys.run_id,
            self.keys.stream,
            f"{n}-{self.generation}",
            f"the stored payload of event {n} does not decode: {exc}",
        )

    def data(self, binary: bool) -> bytes:
        if binary:
            if self._proto is None:
                self._proto = b"".join(map(frame, self.payloads))
            return self._proto
        if self._sse is None:
            tag = "" if self.generation is None else f"-{self.generation}"
            self._sse = b"".join(
                encode_sse(e, id=f"{n}{tag}") for n, e in enumerate(self.events(), self.first)
            )
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
        part = Batch(
            self.keys, self.generation, cursor + 1, self.payloads[cut:], self.end, self.stamps
        )
        if self._events is not None:
            part._events = self._events[cut:]
        return part


class Prefix(EncodedEvents):
    """The compact prefix: events standing for the run's events 1..``last``. In SSE
    only the last carries an id (``last``): a reconnect inside it starts over."""

    __slots__ = ("_data", "events", "generation", "last")

    def __init__(self, events: list[dict[str, Any]], last: int, generation: int | None) -> None:
        self.events = events
        self.last = last
        self.generation = generation
        self._data: dict[bool, bytes] = {}  # shared by the joiners of one fold

    def data(self, binary: bool) -> bytes:
        data = self._data.get(binary)
        if data is None:
            if binary:
                data = PROTO.encode_many(self.events)
            else:
                head = b"".join(encode_sse(e) for e in self.events[:-1])
                data = head + encode_sse(self.events[-1], id=str(self.last_id))
            self._data[binary] = data
        return data

    def decoded(self) -> list[dict[str, Any]]:
        return self.events

    @property
    def last_id(self) -> EventId:
        return EventId(self.last, self.generation)

    @property
    def last_type(self) -> str | None:
        t = self.events[-1].get("type")
        return t if isinstance(t, str) else None
