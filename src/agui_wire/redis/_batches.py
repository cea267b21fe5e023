"""Stored events as the read side hands them out: ``Batch`` (consecutive stored
events, maybe with the run's end) and ``Prefix`` (a compact snapshot standing for
events 1..n).

Contract: a batch is one object shared by every local reader of a run. It decodes
its payloads at most once and builds its SSE bytes (``id: n-g`` on every event) and
its binary frames (the stored bytes, length-prefixed, never re-encoded) at most
once each, whatever the number of readers; a response writes it in one ASGI send.
``entries`` turns stream entries into a batch and checks that they follow on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._codec.backend import frame
from .._decoder import decode_proto
from .._encoder import EventEncoder, encode_sse
from .._mediatypes import PROTO_MEDIA_TYPE
from .._runstore.ids import EventId, generation_of
from .._streaming import EncodedEvents
from ..errors import DecodeError, HistoryTrimmed, RunLost, RunReplaced, StoreCorrupted
from ._keys import END, PAYLOAD, RunKeys, parse_id

PROTO: Final = EventEncoder(PROTO_MEDIA_TYPE)


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
    )

    def __init__(
        self,
        keys: RunKeys,
        generation: int | None,
        first: int,
        payloads: list[bytes],
        end: str | None,
    ) -> None:
        self.keys = keys
        self.generation = generation
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
            try:
                events = decode_proto(self.data(True), unknown_events="raw")
            except DecodeError as exc:
                raise self._corrupt(exc) from None
            if len(events) != len(self.payloads):  # pragma: no cover - a decoder bug
                raise RuntimeError("a stored payload did not decode to one event")
            self._events = events
        return self._events

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

    def items(self) -> Iterable[tuple[EventId, dict[str, Any]]]:
        generation = self.generation
        return (
            (EventId(n, generation), event) for n, event in enumerate(self.events(), self.first)
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
        part = Batch(self.keys, self.generation, cursor + 1, self.payloads[cut:], self.end)
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

    @property
    def last_id(self) -> EventId:
        return EventId(self.last, self.generation)

    @property
    def last_type(self) -> str | None:
        t = self.events[-1].get("type")
        return t if isinstance(t, str) else None


def entries(keys: RunKeys, cursor: int, generation: int | None, stream: Any) -> tuple[Batch, bool]:
    """Stream entries after ``cursor`` as one batch of the run's ``generation``
    (``None``: learnt from the first entry). Checks that they follow on and are
    entries the store writes: ``HistoryTrimmed`` for a first event past the
    cursor, ``RunLost`` for a gap, ``RunReplaced`` for an event of another
    generation, ``StoreCorrupted`` (naming the entry) for anything else. An
    entry's fields are a mapping (redis-py's XRANGE/XREAD) or a flat list (a
    script's reply, or a raw reply)."""
    payloads: list[bytes] = []
    end: str | None = None
    expected = cursor + 1
    fast = None if generation is None else b"%d-%d" % (expected, generation)
    for raw_id, raw_fields in stream:
        # the usual entry, ``n-<gen>`` with one payload, without a dict (replays of
        # long runs read hundreds of thousands)
        if (
            raw_id == fast
            and type(raw_fields) is list
            and len(raw_fields) == 2
            and raw_fields[0] == PAYLOAD
        ):
            payloads.append(raw_fields[1])
            expected += 1
            fast = b"%d-%d" % (expected, generation or 0)
            continue
        entry = bytes(raw_id).decode("ascii", "replace")
        try:
            n, seq = parse_id(raw_id)
            fields = raw_fields if isinstance(raw_fields, Mapping) else _pairs(raw_fields)
        except (ValueError, TypeError) as exc:  # pragma: no cover - Redis checks ids
            raise StoreCorrupted(keys.run_id, keys.stream, entry, f"not an entry: {exc}") from None
        gen = generation_of(seq)
        if generation is None:
            generation = gen
        if gen != generation:
            if seq % 2 == 0:
                raise RunReplaced(
                    keys.run_id,
                    f"the stream holds another run under this id now (generation {gen}, "
                    f"not {generation}): Redis lost the run and it was produced again",
                )
            raise StoreCorrupted(
                keys.run_id, keys.stream, entry, "an end marker of no generation of this run"
            )
        if seq % 2:
            if n != expected - 1 or END not in fields or not set(fields) <= _END_FIELDS:
                raise StoreCorrupted(
                    keys.run_id,
                    keys.stream,
                    entry,
                    f"not an end marker the store writes (after event {expected - 1}: "
                    f"{_shown(fields)})",
                )
            end = bytes(fields[END]).decode("utf-8", "replace")
            break
        if n != expected:
            if not payloads and n > expected:
                raise HistoryTrimmed(keys.run_id, cursor, n)
            raise RunLost(keys.run_id, f"event {expected} is missing from the stream")
        if len(fields) != 1 or PAYLOAD not in fields:
            raise StoreCorrupted(
                keys.run_id,
                keys.stream,
                entry,
                f"an event entry holds one field {PAYLOAD.decode()!r}, not {_shown(fields)}",
            )
        payloads.append(bytes(fields[PAYLOAD]))
        expected += 1
        fast = b"%d-%d" % (expected, generation)
    return Batch(keys, generation, cursor + 1, payloads, end), end is not None


_END_FIELDS: Final = frozenset({END, b"by"})


def _shown(fields: Mapping[Any, Any]) -> str:
    text = repr(sorted(bytes(k) for k in fields))
    return text if len(text) <= 80 else f"{text[:77]}..."


def fields_of(raw: Any) -> dict[bytes, Any]:
    """An entry's fields as a mapping, from redis-py's mapping or a flat list."""
    return dict(raw) if isinstance(raw, Mapping) else _pairs(raw)


def _pairs(flat: list[Any]) -> dict[bytes, Any]:
    return dict(zip(flat[::2], flat[1::2], strict=True))
