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
  JSON; over protobuf, after the documented normalisation). Decoding errors are
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
* Streams are read to their end (a response may carry several runs). Leaving
  the loop early closes the response, which the server sees as a disconnect;
  for ``arun_agent`` wrap it in ``contextlib.aclosing`` to make that prompt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from ._decoder import EventDecoder, media_type
from ._negotiation import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
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
    "AgentHTTPError",
    "IncompleteRun",
    "SequenceError",
    "UnexpectedContentType",
    "arun_agent",
    "run_agent",
]

DEFAULT_ACCEPT: Final = f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.9"
BODY_EXCERPT: Final = 2048  # bytes of an error response's body kept in the error

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

    def end(self, decoder: EventDecoder) -> None:
        if self.state == _OPEN or self.state == _IDLE:
            reason = "the stream ended inside a run"
            if not self.count:
                reason = "the stream ended before any event"
            raise IncompleteRun(reason, events_read=self.count, last_event_id=decoder.last_event_id)

    def broken(self, decoder: EventDecoder, exc: BaseException) -> IncompleteRun:
        err = IncompleteRun(
            f"the stream broke off: {type(exc).__name__}: {exc}",
            events_read=self.count,
            last_event_id=decoder.last_event_id,
        )
        err.__cause__ = exc
        return err


def _body(input: Mapping[str, Any] | Any) -> bytes:
    if not isinstance(input, Mapping):
        dump = getattr(input, "model_dump", None)
        if dump is None:
            raise TypeError(
                f"input must be a RunAgentInput or a mapping, not {type(input).__name__}"
            )
        input = dump(mode="json", by_alias=True, exclude_none=True)
    return orjson.dumps(input, default=dict)


def _headers(
    accept: str, last_event_id: str | None, extra: Mapping[str, str] | None
) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": accept}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    if extra:
        headers.update({k.lower(): v for k, v in extra.items()})
    return headers


def _decoder(url: str, response: httpx.Response, options: Mapping[str, Any]) -> EventDecoder:
    content_type = response.headers.get("content-type")
    try:
        kind = media_type(content_type or "")
    except ValueError:
        raise UnexpectedContentType(url, content_type) from None
    return EventDecoder(kind, **options)


def _transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is httpx's "the connection failed" (not a bug of ours)."""
    import httpx

    return isinstance(exc, httpx.TransportError)


def _excerpt(chunks: Iterator[bytes]) -> bytes:
    out = bytearray()
    for chunk in chunks:
        out += chunk
        if len(out) >= BODY_EXCERPT:
            break
    return bytes(out[:BODY_EXCERPT])


def run_agent(
    client: httpx.Client,
    url: str,
    input: Mapping[str, Any] | Any,
    *,
    accept: str = DEFAULT_ACCEPT,
    headers: Mapping[str, str] | None = None,
    last_event_id: str | None = None,
    check_sequence: bool = True,
    **decoder_options: Any,
) -> Iterator[Event]:
    """Run the agent at ``url`` and yield its events as they arrive (see module doc)."""
    body = _body(input)
    request_headers = _headers(accept, last_event_id, headers)
    with client.stream("POST", url, content=body, headers=request_headers) as response:
        if not response.is_success:
            raise AgentHTTPError(url, response.status_code, _excerpt(response.iter_bytes()))
        decoder = _decoder(url, response, decoder_options)
        run = _Run(check_sequence, last_event_id is not None)
        try:
            for chunk in response.iter_bytes():
                for event in decoder.feed(chunk):
                    run.see(event)
                    yield event
            for event in decoder.close():
                run.see(event)
                yield event
        except TruncatedStream as exc:
            raise run.broken(decoder, exc) from exc
        except Exception as exc:
            if _transport_error(exc):
                raise run.broken(decoder, exc) from exc
            raise
        run.end(decoder)


async def arun_agent(
    client: httpx.AsyncClient,
    url: str,
    input: Mapping[str, Any] | Any,
    *,
    accept: str = DEFAULT_ACCEPT,
    headers: Mapping[str, str] | None = None,
    last_event_id: str | None = None,
    check_sequence: bool = True,
    **decoder_options: Any,
) -> AsyncIterator[Event]:
    """``run_agent`` for an ``httpx.AsyncClient``, as an async generator."""
    body = _body(input)
    request_headers = _headers(accept, last_event_id, headers)
    async with client.stream("POST", url, content=body, headers=request_headers) as response:
        if not response.is_success:
            excerpt = bytearray()
            async for chunk in response.aiter_bytes():
                excerpt += chunk
                if len(excerpt) >= BODY_EXCERPT:
                    break
            raise AgentHTTPError(url, response.status_code, bytes(excerpt[:BODY_EXCERPT]))
        decoder = _decoder(url, response, decoder_options)
        run = _Run(check_sequence, last_event_id is not None)
        try:
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    run.see(event)
                    yield event
            for event in decoder.close():
                run.see(event)
                yield event
        except TruncatedStream as exc:
            raise run.broken(decoder, exc) from exc
        except Exception as exc:
            if _transport_error(exc):
                raise run.broken(decoder, exc) from exc
            raise
        run.end(decoder)
