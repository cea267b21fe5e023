"""Running an AG-UI agent over HTTP from Python: ``run_agent`` / ``arun_agent``.

Strategy: POST the ``RunAgentInput`` as JSON with the caller's ``httpx.Client``
or ``httpx.AsyncClient``, asking for protobuf with SSE as the fallback; check the
status and the content type before reading a byte of body; then feed each chunk
of ``response.iter_bytes()`` to one ``EventDecoder`` (chosen by
``decoder.media_type`` of the response's content type) and yield the events it
completes, so events reach the caller as they arrive and memory stays bounded by
the largest event. A small tracker watches the run's shape. httpx is imported
only when a run fails mid-stream (to recognise its transport errors); the
caller brings the client, so ``import agui_wire.client`` never needs httpx.

Contract:

* Request: ``POST url``, body ``input`` as JSON (a dict as given; an
  ``ag_ui.core.RunAgentInput`` dumped by alias without ``None`` fields, as the
  official SDK does), ``Content-Type: application/json``, ``Accept: accept``
  (default ``DEFAULT_ACCEPT``: protobuf, SSE at q=0.9), ``Last-Event-ID`` when
  ``last_event_id`` is given, plus ``headers``.
* A non-2xx answer raises ``AgentHTTPError`` (status, URL, the first
  ``BODY_EXCERPT`` bytes of the body); a content type that is not an AG-UI
  stream (or none) raises ``UnexpectedContentType``. Neither yields anything.
* The events are yielded in order, as decoded (dicts shaped as ``@ag-ui/core``
  JSON; over protobuf, after the documented normalisation), except the binary
  keep-alive (``agui_wire.asgi.KEEPALIVE_EVENT``), which is transport, not run:
  dropped (and not counted). Decoding errors are
  the decoder's (``DecodeError`` and subclasses). ``decoder_options`` go to
  ``EventDecoder``.
* The stream must end a run: if it ends (or the connection breaks, or a binary
  frame is cut off) while a run is open or before any event, ``IncompleteRun``
  is raised after the events received, carrying how many there were and the
  last SSE id (to resume with ``last_event_id``). A ``RUN_ERROR`` event ends the
  run: it is yielded like any other event, not raised.
* With ``check_sequence`` (default) the run lifecycle is checked with the rules
  of the reference client's ``verifyEvents``: the first event is ``RUN_STARTED``
  (or ``RUN_ERROR``); no ``RUN_STARTED`` inside a run; after ``RUN_FINISHED``
  only ``RUN_STARTED`` or ``RUN_ERROR``; after ``RUN_ERROR`` only
  ``RUN_STARTED``. A violation raises ``SequenceError`` (the offending event is
  not yielded). A resumed run (``last_event_id`` given) may start anywhere.
  (Message, tool call and step nesting is left to the application.)
* Reconnect and resume: a response that says where it stands in a stored run
  (the ``agui-after`` and ``agui-snapshot-events`` headers of
  ``agui_wire.redis.RunStore.response``) is resumable. When such a stream
  breaks (transport error, cut frame, end inside the run), the same request is
  sent again with ``Last-Event-ID: n-<gen>``, n being the last event received
  (counted from the headers, so it works for binary frames, which carry no id)
  and ``<gen>`` the run's generation as ``agui-after`` gave it, and the run
  continues with event n+1: no gap, no duplicate, and never another run stored
  under the same id meanwhile (that is a ``RUN_ERROR``, ``RUN_REPLACED``). Up to ``retries``
  consecutive attempts without a new event (reconnects that fail with a
  transport error or HTTP 502/503/504 count), waiting ``backoff`` seconds
  before the first and doubling up to ``MAX_BACKOFF``; then ``IncompleteRun``.
  A stream that breaks inside a compact prefix (before its last snapshot event)
  has no position to resume from: ``IncompleteRun``. Other servers are never
  re-requested (the request may not be idempotent).
* Streams are read to their end (a response may carry several runs). Leaving
  the loop early closes the response, which the server sees as a disconnect;
  for ``arun_agent`` wrap it in ``contextlib.aclosing`` to make that prompt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from ._decoder import EventDecoder
from ._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, media_type
from ._streaming import AFTER_HEADER, SNAPSHOT_HEADER, is_keepalive
from .errors import (
    AgentHTTPError,
    IncompleteRun,
    SequenceError,
    TruncatedStream,
    UnexpectedContentType,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "BODY_EXCERPT",
    "DEFAULT_ACCEPT",
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRIES",
    "MAX_BACKOFF",
    "AgentHTTPError",
    "IncompleteRun",
    "SequenceError",
    "UnexpectedContentType",
    "arun_agent",
    "run_agent",
]

DEFAULT_ACCEPT: Final = f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.9"
BODY_EXCERPT: Final = 2048  # bytes of an error response's body kept in the error
DEFAULT_RETRIES: Final = 5  # consecutive reconnects without progress
DEFAULT_BACKOFF: Final = 0.25  # seconds before the first reconnect, doubled each time
MAX_BACKOFF: Final = 5.0
_RETRY_STATUS: Final = frozenset({502, 503, 504})

Event = dict[str, Any]


_IDLE, _OPEN, _FINISHED, _ERRORED = range(4)


class _Run:
    """Tracks run boundaries over the stream (the lifecycle rules of ``verifyEvents``)."""

    __slots__ = ("check", "count", "state")

    def __init__(self, check: bool, resumed: bool) -> None:
        self.check = check
        self.state = _OPEN if resumed else _IDLE  # a resumed run is in progress
        self.count = 0

    def see(self, event: Event) -> None:
        etype = event.get("type")
        state = self.state
        if etype == "RUN_STARTED":
            if state == _OPEN and self.check:
                self._fail("RUN_STARTED while a run is active", etype)
            self.state = _OPEN
        elif etype == "RUN_ERROR":
            if state == _ERRORED and self.check:
                self._fail("event after RUN_ERROR ended the run", etype)
            self.state = _ERRORED
        elif etype == "RUN_FINISHED":
            if state != _OPEN and self.check:
                self._fail(self._outside(state), etype)
            self.state = _FINISHED
        elif state != _OPEN:
            if self.check:
                self._fail(self._outside(state), etype)
            self.state = _OPEN  # unchecked: the stream must still end a run
        self.count += 1

    @staticmethod
    def _outside(state: int) -> str:
        if state == _IDLE:
            return "the first event must be RUN_STARTED"
        if state == _ERRORED:
            return "event after RUN_ERROR ended the run"
        return "event after RUN_FINISHED ended the run"

    def _fail(self, reason: str, etype: Any) -> None:
        raise SequenceError(reason, index=self.count, event_type=etype)

    def end(self, decoder: EventDecoder) -> IncompleteRun | None:
        """The error for a stream that ended now, or ``None`` if it ended a run."""
        if self.state == _OPEN or self.state == _IDLE:
            reason = "the stream ended inside a run"
            if not self.count:
                reason = "the stream ended before any event"
            return IncompleteRun(
                reason, events_read=self.count, last_event_id=decoder.last_event_id
            )
        return None

    def broken(self, decoder: EventDecoder, exc: BaseException) -> IncompleteRun:
        err = IncompleteRun(
            f"the stream broke off: {type(exc).__name__}: {exc}",
            events_read=self.count,
            last_event_id=decoder.last_event_id,
        )
        err.__cause__ = exc
        return err


class _Resume:
    """Where a resumable stream stands, and whether (and when) to reconnect."""

    __slots__ = (
        "after",
        "attempts",
        "backoff",
        "generation",
        "last_event_id",
        "position",
        "received",
        "resumable",
        "retries",
        "snapshot",
    )

    def __init__(self, retries: int, backoff: float, last_event_id: str | None) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, not {retries!r}")
        if not backoff >= 0:
            raise ValueError(f"backoff must be >= 0 seconds, not {backoff!r}")
        self.retries = retries
        self.backoff = backoff
        self.last_event_id = last_event_id
        self.attempts = 0  # consecutive reconnects without a new event
        self.position: int | None = None  # the last event received, when known
        self.resumable = False  # the current response says where it stands
        self.after = 0
        self.generation = ""  # "-<gen>" of the run's ids, when they carry one
        self.snapshot = 0
        self.received = 0

    @property
    def reconnecting(self) -> bool:
        return self.position is not None

    def opened(self, response: httpx.Response) -> None:
        after = response.headers.get(AFTER_HEADER, "")
        snapshot = response.headers.get(SNAPSHOT_HEADER, "0")
        # ``n`` or ``n-<generation>``: the index counts on, the run's generation is
        # sent back as it came (a run replaced meanwhile is refused, not spliced)
        index, dash, generation = after.partition("-")
        self.resumable = (
            index.isdigit()
            and index.isascii()
            and (not dash or (generation.isdigit() and generation.isascii()))
            and snapshot.isdigit()
        )
        self.received = 0
        if not self.resumable:
            self.position = None
            return
        self.generation = dash + generation
        self.after = int(index)
        self.snapshot = int(snapshot)
        # Inside a compact prefix there is no position to resume from.
        self.position = self.after if self.snapshot == 0 else None

    def seen(self) -> None:
        if self.resumable:
            self.received += 1
            if self.received >= self.snapshot:
                self.position = self.after + self.received - self.snapshot
                self.attempts = 0

    def retry(self, failure: IncompleteRun) -> float:
        """Seconds to wait before reconnecting; raises ``failure`` when not to."""
        if self.position is None or self.attempts >= self.retries:
            if self.position is not None:
                failure.last_event_id = f"{self.position}{self.generation}"
            raise failure
        self.attempts += 1
        self.last_event_id = f"{self.position}{self.generation}"
        return min(self.backoff * 2.0 ** (self.attempts - 1), MAX_BACKOFF)


def _body(input: Mapping[str, Any] | Any) -> bytes:
    if not isinstance(input, Mapping):
        dump = getattr(input, "model_dump", None)
        if dump is None:
            raise TypeError(
                f"input must be a RunAgentInput or a mapping, not {type(input).__name__}"
            )
        input = dump(mode="json", by_alias=True, exclude_none=True)
    return orjson.dumps(input, default=dict)


def _transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is httpx's "the connection failed" (not a bug of ours)."""
    import httpx

    return isinstance(exc, httpx.TransportError)


class _Unavailable(Exception):
    """A reconnect answered 502/503/504: retried like a transport error."""

    def __init__(self, error: AgentHTTPError) -> None:
        self.error = error


class _Attempts:
    """One ``run_agent``/``arun_agent`` call, sans I/O: the request of each attempt,
    what each response and each way a stream ends means, and when to reconnect.
    The two functions are its drivers (one with ``httpx.Client``, one with
    ``httpx.AsyncClient``) and do the I/O only, so they cannot drift apart."""

    __slots__ = ("accept", "body", "extra", "options", "resume", "run", "url")

    def __init__(
        self,
        url: str,
        input: Mapping[str, Any] | Any,
        accept: str,
        headers: Mapping[str, str] | None,
        last_event_id: str | None,
        check_sequence: bool,
        retries: int,
        backoff: float,
        decoder_options: Mapping[str, Any],
    ) -> None:
        self.url = url
        self.body = _body(input)
        self.accept = accept
        self.extra = headers
        self.options = decoder_options
        self.run = _Run(check_sequence, last_event_id is not None)
        self.resume = _Resume(retries, backoff, last_event_id)

    def headers(self) -> dict[str, str]:
        """This attempt's request headers (``Last-Event-ID`` on a reconnect)."""
        headers = {"content-type": "application/json", "accept": self.accept}
        if self.resume.last_event_id is not None:
            headers["last-event-id"] = self.resume.last_event_id
        if self.extra:
            headers.update({k.lower(): v for k, v in self.extra.items()})
        return headers

    def refused(self, response: httpx.Response, excerpt: bytes) -> Exception:
        """What to raise for a non-2xx answer (whose body starts with ``excerpt``)."""
        error = AgentHTTPError(self.url, response.status_code, excerpt)
        if self.resume.reconnecting and response.status_code in _RETRY_STATUS:
            return _Unavailable(error)
        return error

    def start(self, response: httpx.Response) -> EventDecoder:
        """The decoder of a 2xx response; ``UnexpectedContentType`` if it is not a stream."""
        content_type = response.headers.get("content-type")
        try:
            kind = media_type(content_type or "")
        except ValueError:
            raise UnexpectedContentType(self.url, content_type) from None
        self.resume.opened(response)
        return EventDecoder(kind, **self.options)

    def keep(self, event: Event) -> bool:
        """Whether to yield ``event``: a binary keep-alive is dropped (and not counted
        for resume); any other is checked against the run (``SequenceError`` if it
        breaks it) and counted."""
        if is_keepalive(event):
            return False
        self.run.see(event)
        self.resume.seen()
        return True

    def ended(self, decoder: EventDecoder) -> IncompleteRun | None:
        """The stream ended: ``None`` if it ended a run, else the failure."""
        return self.run.end(decoder)

    def broke(self, decoder: EventDecoder, exc: Exception) -> IncompleteRun | None:
        """The stream broke off with ``exc``: the failure, or ``None`` if ``exc`` is
        not a broken stream (a cut frame, a transport error) and is the caller's."""
        if isinstance(exc, TruncatedStream) or _transport_error(exc):
            return self.run.broken(decoder, exc)
        return None

    def unreachable(self, exc: Exception) -> IncompleteRun | None:
        """A reconnect failed with ``exc``: the failure, or ``None`` if ``exc`` is
        the caller's (any error of a first attempt, or one that is not the server's)."""
        if isinstance(exc, _Unavailable):
            cause: BaseException = exc.error
        elif self.resume.reconnecting and _transport_error(exc):
            cause = exc
        else:
            return None
        err = IncompleteRun(
            f"reconnecting failed: {type(cause).__name__}: {cause}",
            events_read=self.run.count,
            last_event_id=self.resume.last_event_id or "",
        )
        err.__cause__ = cause
        return err

    def wait(self, failure: IncompleteRun) -> float:
        """Seconds to wait before reconnecting; raises ``failure`` when not to."""
        return self.resume.retry(failure)


def run_agent(
    client: httpx.Client,
    url: str,
    input: Mapping[str, Any] | Any,
    *,
    accept: str = DEFAULT_ACCEPT,
    headers: Mapping[str, str] | None = None,
    last_event_id: str | None = None,
    check_sequence: bool = True,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    **decoder_options: Any,
) -> Iterator[Event]:
    """Run the agent at ``url`` and yield its events as they arrive (see module doc)."""
    attempts = _Attempts(
        url,
        input,
        accept,
        headers,
        last_event_id,
        check_sequence,
        retries,
        backoff,
        decoder_options,
    )
    failure: IncompleteRun | None
    while True:
        try:
            with client.stream(
                "POST", url, content=attempts.body, headers=attempts.headers()
            ) as response:
                if not response.is_success:
                    excerpt = bytearray()
                    for chunk in response.iter_bytes():
                        excerpt += chunk
                        if len(excerpt) >= BODY_EXCERPT:
                            break
                    raise attempts.refused(response, bytes(excerpt[:BODY_EXCERPT]))
                decoder = attempts.start(response)
                try:
                    for chunk in response.iter_bytes():
                        for event in decoder.feed(chunk):
                            if attempts.keep(event):
                                yield event
                    for event in decoder.close():
                        if attempts.keep(event):
                            yield event
                except Exception as exc:
                    failure = attempts.broke(decoder, exc)
                    if failure is None:
                        raise
                else:
                    failure = attempts.ended(decoder)
                    if failure is None:
                        return
        except Exception as exc:
            failure = attempts.unreachable(exc)
            if failure is None:
                raise
        time.sleep(attempts.wait(failure))


async def arun_agent(
    client: httpx.AsyncClient,
    url: str,
    input: Mapping[str, Any] | Any,
    *,
    accept: str = DEFAULT_ACCEPT,
    headers: Mapping[str, str] | None = None,
    last_event_id: str | None = None,
    check_sequence: bool = True,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    **decoder_options: Any,
) -> AsyncIterator[Event]:
    """``run_agent`` for an ``httpx.AsyncClient``, as an async generator."""
    attempts = _Attempts(
        url,
        input,
        accept,
        headers,
        last_event_id,
        check_sequence,
        retries,
        backoff,
        decoder_options,
    )
    failure: IncompleteRun | None
    while True:
        try:
            async with client.stream(
                "POST", url, content=attempts.body, headers=attempts.headers()
            ) as response:
                if not response.is_success:
                    excerpt = bytearray()
                    async for chunk in response.aiter_bytes():
                        excerpt += chunk
                        if len(excerpt) >= BODY_EXCERPT:
                            break
                    raise attempts.refused(response, bytes(excerpt[:BODY_EXCERPT]))
                decoder = attempts.start(response)
                try:
                    async for chunk in response.aiter_bytes():
                        for event in decoder.feed(chunk):
                            if attempts.keep(event):
                                yield event
                    for event in decoder.close():
                        if attempts.keep(event):
                            yield event
                except Exception as exc:
                    failure = attempts.broke(decoder, exc)
                    if failure is None:
                        raise
                else:
                    failure = attempts.ended(decoder)
                    if failure is None:
                        return
        except Exception as exc:
            failure = attempts.unreachable(exc)
            if failure is None:
                raise
        await asyncio.sleep(attempts.wait(failure))
