"""What a streamed response records: events by type, bytes, how it ended, its span.

Strategy: ``EventStreamResponse`` calls ``observe()`` once per response; ``None``
(nothing records: ``_telemetry.current()``) and it does nothing more, so its
per-event loop and its encoder are untouched. Otherwise an ``Observation``
wraps the response's encode function (per event: its type counted in a dict,
the ids of ``RUN_STARTED`` and the code of ``RUN_ERROR`` noted), counts a
pre-encoded batch's events from ``EncodedEvents.decoded()``, and after each send
that returned adds the bytes it carried (compressed when compressed: what the
client receives) and its events to the running totals (``_telemetry.Totals``, one
update per event type, with attribute sets built once per process), which the
SDK reads when it collects. Its end judges how the stream ended (the outcome),
records the duration and ends the ``agui.run`` span.

``counting_encoder`` does the same per event for ``compat.SDKEventEncoder``
(``install()``): the framework owns the response, so each ``encode`` call is
counted as it is made, and no span or outcome is known.

Contract: counts are of what was sent. Events encoded but never sent (the client
left mid-batch) are not counted; bytes are body bytes after compression
(no headers, no chunked framing), keep-alives included; the binary keep-alive is
not an event of the run and is counted in bytes only. Telemetry never fails a
stream: a batch whose events cannot be read for counting is sent uncounted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Final

from . import _telemetry as otel
from ._streaming import EncodedEvents, Scope, event_type

logger = logging.getLogger("agui_wire.asgi")

Encode = Callable[[Any], Any]

_NOTED: Final = frozenset({"RUN_STARTED", "RUN_ERROR"})
_OTHER: Final = "_OTHER"  # an event type past the bound of distinct types
_MAX_TYPES: Final = 256  # distinct event types per attribute table (the protocol has 31)

# attribute sets, built once and kept (the running totals know them by identity): per
# (transport, coding) the base set and the set per event type
_BASE: dict[tuple[str, str | None], Mapping[str, Any]] = {}
_BY_TYPE: dict[tuple[str, str | None], dict[Any, Mapping[str, Any]]] = {}


def _base(transport: str, coding: str | None) -> Mapping[str, Any]:
    key = (transport, coding)
    attrs = _BASE.get(key)
    if attrs is None:
        made: dict[str, Any] = {otel.TRANSPORT: transport}
        if coding is not None:
            made[otel.CONTENT_ENCODING] = (coding,)
        attrs = _BASE.setdefault(key, made)  # the first one made, whatever the thread
    return attrs


def _type_table(transport: str, coding: str | None) -> dict[Any, Mapping[str, Any]]:
    return _BY_TYPE.setdefault((transport, coding), {})


def _with_type(
    table: dict[Any, Mapping[str, Any]], base: Mapping[str, Any], kind: Any
) -> Mapping[str, Any]:
    """The attribute set of ``kind`` events (the official SDK's types are str enums)."""
    attrs = table.get(kind)
    if attrs is None:
        name = kind.value if isinstance(kind, Enum) else kind
        if not isinstance(name, str) or len(table) >= _MAX_TYPES:
            name = _OTHER
            kind = _OTHER  # one set for every type past the bound
            attrs = table.get(_OTHER)
        if attrs is None:
            attrs = table.setdefault(kind, {**base, otel.EVENT_TYPE: name})
    return attrs


def _field(event: Any, key: str, attr: str) -> str | None:
    value = event.get(key) if isinstance(event, Mapping) else getattr(event, attr, None)
    return None if value is None else str(value)


def refused(status: int) -> None:
    """A request answered without a stream (``406``; the run store's ``400``/``404``/``503``)."""
    instruments = otel.current()
    if instruments is not None:
        instruments.meters.refusals.add(1, {otel.STATUS_CODE: status})


def observe(scope: Scope, binary: bool, coding: str | None) -> Observation | None:
    """What one streamed response records, or ``None`` when nothing records."""
    instruments = otel.current()
    if instruments is None:
        return None
    return Observation(instruments, scope, binary, coding)


class Observation:
    """One response's telemetry (see the module doc)."""

    def __init__(
        self, instruments: otel.Instruments, scope: Scope, binary: bool, coding: str | None
    ) -> None:
        self.instruments = instruments
        self.transport = transport = otel.PROTOBUF if binary else otel.SSE
        self.base = base = _base(transport, coding)
        self.types = _type_table(transport, coding)
        self.tally: dict[Any, int] = {}  # events encoded since the last send, by type
        self.events = 0  # sent
        self.bytes = 0
        self.thread_id: str | None = None
        self.run_id: str | None = None
        self.code: str | None = None  # of the last RUN_ERROR encoded
        self.failure: BaseException | None = None
        self.ended = False
        self.started = time.monotonic()
        self.meters = meters = instruments.meters
        meters.streams_active.add(1, {otel.TRANSPORT: transport})
        self.span = instruments.start_run(scope.get("headers") or (), base)

    # -- per event ---------------------------------------------------------------------

    def counting(self, encode: Encode) -> Encode:
        """``encode``, counting each event it encodes."""
        tally, note = self.tally, self._note

        def counted(event: Any) -> Any:
            data = encode(event)
            kind = event.get("type") if type(event) is dict else event_type(event)
            tally[kind] = tally.get(kind, 0) + 1
            if kind in _NOTED:
                note(kind, event)
            return data

        return counted

    def _note(self, kind: Any, event: Any) -> None:
        if kind == "RUN_ERROR":
            self.code = _field(event, "code", "code")
        elif self.run_id is None:  # the first RUN_STARTED names the run
            self.thread_id = _field(event, "threadId", "thread_id")
            self.run_id = _field(event, "runId", "run_id")

    def batch(self, encoded: EncodedEvents) -> None:
        """Count the events of a pre-encoded batch about to be sent."""
        try:
            events = encoded.decoded()
        except Exception as exc:
            logger.debug("the events of a batch could not be read for telemetry", exc_info=exc)
            return
        tally, note = self.tally, self._note
        for event in events:
            kind = event.get("type")
            tally[kind] = tally.get(kind, 0) + 1
            if kind in _NOTED:
                note(kind, event)

    # -- per send ----------------------------------------------------------------------

    def sent(self, nbytes: int) -> None:
        """A send returned: its bytes, and the events encoded since the last one."""
        meters = self.meters
        if nbytes:
            self.bytes += nbytes
            meters.bytes.add(nbytes, self.base)
        tally = self.tally
        if tally:
            add, types, base = meters.events.add, self.types, self.base
            for kind, n in tally.items():
                add(n, types.get(kind) or _with_type(types, base, kind))
                self.events += n
            tally.clear()

    def pinged(self, nbytes: int) -> None:
        """A keep-alive went out: bytes only."""
        self.bytes += nbytes
        self.meters.bytes.add(nbytes, self.base)

    def failed(self, exc: BaseException) -> None:
        """The producer failed; ``on_error``'s event (if any) is encoded next."""
        self.failure = exc
        self.code = None

    # -- the producer's context ----------------------------------------------------------

    def activate(self) -> object | None:
        """The run's span as the current one (the producer's task is created in it,
        so the agent's own spans are its children); ``deactivate`` the result."""
        return None if self.span is None else otel.activate(self.span)

    def deactivate(self, token: object | None) -> None:
        if token is not None:
            otel.deactivate(token)

    # -- the end -------------------------------------------------------------------------

    def end(self, disconnected: bool, cancelled: bool, last: Any = None) -> None:
        """The stream is over (``last``: the last event it encoded): its outcome,
        its duration, the span. Events encoded and never sent are dropped."""
        if self.ended:
            return
        self.ended = True
        try:
            last_type = event_type(last)
        except Exception:  # a batch whose type cannot be read: not a terminal event
            last_type = None
        error: str | None = None
        if disconnected:
            outcome = "disconnected"
        elif self.failure is not None:
            outcome = "failed"  # by on_error's RUN_ERROR code, else by the exception
            error = self.code or otel.error_type(self.failure)
        elif cancelled:
            outcome = "cancelled"
        elif last_type == "RUN_FINISHED":
            outcome = "finished"
        elif last_type == "RUN_ERROR":
            outcome = "run_error"
            error = self.code or "RUN_ERROR"
        else:
            outcome = "incomplete"
        attrs: dict[str, Any] = {otel.TRANSPORT: self.transport, otel.OUTCOME: outcome}
        if error is not None:
            attrs[otel.ERROR_TYPE] = error
        meters = self.meters
        meters.stream_duration.record(time.monotonic() - self.started, attrs)
        meters.streams_active.add(-1, {otel.TRANSPORT: self.transport})
        if self.span is not None:
            attrs[otel.STREAM_EVENTS] = self.events
            attrs[otel.STREAM_BYTES] = self.bytes
            if self.thread_id is not None:
                attrs[otel.THREAD_ID] = self.thread_id
            if self.run_id is not None:
                attrs[otel.RUN_ID] = self.run_id
            otel.end_run(self.span, attrs, error, self.failure)


def counting_encoder(instruments: otel.Instruments | None, encode: Encode, binary: bool) -> Encode:
    """``encode`` (one event to ``bytes``, or to ``str`` for SSE), counting each
    event and its bytes as it is encoded (``encode`` itself when ``instruments`` is
    ``None``). For ``compat.SDKEventEncoder``: the framework writes what it returns."""
    if instruments is None:
        return encode
    base = _base(otel.PROTOBUF if binary else otel.SSE, None)
    types = _type_table(otel.PROTOBUF if binary else otel.SSE, None)
    events, body = instruments.meters.events.add, instruments.meters.bytes.add

    def counted(event: Any) -> Any:
        data = encode(event)
        kind = event.get("type") if type(event) is dict else event_type(event)
        events(1, types.get(kind) or _with_type(types, base, kind))
        if type(data) is str:
            body(len(data) if data.isascii() else len(data.encode()), base)
        else:
            body(len(data), base)
        return data

    return counted
