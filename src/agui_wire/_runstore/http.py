"""A run as an HTTP response: ``RunStore.response`` of every backend, where a
request resumes, and what a client may know of the store's errors.

Contract: the subscription is opened before the headers go out, so an unknown
run is a 404, a bad resume position a 400, the store unreachable a 503 (with
``Retry-After``), and the headers say where the body starts (``agui-after``,
``agui-snapshot-events``); other faults, met opening or after the headers,
become the ``RUN_ERROR`` events docs/scaling.md lists (or a body without a
terminal event, to resume), through the response's ``on_error``; the store
draining (``StoreDraining``, a ``StoreUnavailable``) is a 503 too, and ends a body
without a terminal event, quietly (the client resumes elsewhere). A backend hands
the response a ``Subscribe``: how to open a ``Reader`` of a run.

What a client is told of a ``StoreError`` (``refusal``; ``store_error_response``
is the same as a Starlette or FastAPI exception handler, for the errors of
``start``/``publish`` in an app's routes): a status by the error's class, the
most specific row of ``REFUSALS`` in its MRO, and a body that is either the
error's own words (what the request asked for: a run id, a position) or a fixed
text, never an error that may name a host, a port, a key or an errno. The log
has those (``log_fault``): one line per fault, no traceback (the store's faults
are typed and expected; an outage is logged once where it is met, so a request
that meets it logs at DEBUG), the client's mistakes at DEBUG too.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import parse_qs

from .._mediatypes import SSE_MEDIA_TYPE
from .._streaming import (
    AFTER_HEADER,
    SNAPSHOT_HEADER,
    TERMINAL,
    EncodedEvents,
    HasHeaders,
    Receive,
    Scope,
    Send,
    default_error_event,
    event_type,
    scope_header,
)
from ..asgi import EventStreamResponse
from ..errors import (
    HistoryTrimmed,
    ResumePastEnd,
    RunAbandoned,
    RunInProgress,
    RunLost,
    RunNotFound,
    RunReplaced,
    StoreCorrupted,
    StoreDraining,
    StoreError,
    StoreFull,
    StoreUnavailable,
    UnknownGeneration,
)
from .ids import (
    RUN_LOST,
    RUN_REPLACED,
    STORE_CORRUPTED,
    EventId,
    check_owner,
    check_run_id,
    parse_position,
)

if TYPE_CHECKING:
    from starlette.responses import Response

logger = logging.getLogger("agui_wire.asgi")

#: Seconds a client is told to wait (``Retry-After``) before trying again.
RETRY_AFTER: Final = 1

#: What a client is told of a store's error: the status, the body (``None``: the
#: error's own words, about what the request asked; else this fixed text) and
#: whether it says when to try again. The most specific class of an error's MRO
#: picks the row: a subclass maps with its base unless it has a row of its own.
REFUSALS: Final[dict[type[StoreError], tuple[int, str | None, bool]]] = {
    StoreError: (500, "the run store failed", False),
    StoreUnavailable: (503, "the run store is unavailable: try again", True),
    StoreDraining: (503, "this server is draining (shutting down): try again", True),
    StoreFull: (503, "the run store is full: try again later", True),
    RunNotFound: (404, None, False),
    ResumePastEnd: (400, None, False),
    UnknownGeneration: (400, None, False),
    HistoryTrimmed: (410, None, False),
    RunInProgress: (409, None, False),
    RunAbandoned: (409, "the run's producer vanished: the run was ended", False),
}

#: How ``log_fault`` logs a store's error, by the same MRO rule: what the request
#: asked for (a client's mistake) and an outage (logged once by the store where it
#: is met) at DEBUG; events lost at WARNING; the store's own faults at ERROR.
LEVELS: Final[dict[type[StoreError], int]] = {
    StoreError: logging.ERROR,
    StoreUnavailable: logging.DEBUG,
    RunNotFound: logging.DEBUG,
    ResumePastEnd: logging.DEBUG,
    UnknownGeneration: logging.DEBUG,
    HistoryTrimmed: logging.DEBUG,
    RunInProgress: logging.DEBUG,
    RunLost: logging.WARNING,
    RunAbandoned: logging.WARNING,
}


def _row(table: dict[type[StoreError], Any], exc: StoreError) -> Any:
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    raise AssertionError("StoreError has a row")  # pragma: no cover


def refusal(exc: StoreError) -> tuple[int, str, dict[str, str]]:
    """The status, plain-text body and headers answering ``exc`` (see ``REFUSALS``)."""
    status, text, retry = _row(REFUSALS, exc)
    body = f"{exc if text is None else text}\n"
    return status, body, {"retry-after": str(RETRY_AFTER)} if retry else {}


def log_fault(exc: StoreError, doing: str, log: logging.Logger = logger) -> None:
    """``exc`` met ``doing`` something, logged on one line at its level (``LEVELS``)."""
    level = _row(LEVELS, exc)
    if log.isEnabledFor(level):
        log.log(level, "%s: %s: %s", doing, type(exc).__name__, exc)


async def store_error_response(request: Any, exc: Exception) -> Response:
    """A Starlette (or FastAPI) exception handler for ``StoreError``: the
    ``refusal`` as a plain-text response, the error logged by ``log_fault``.
    ``Starlette(exception_handlers={StoreError: store_error_response})`` or
    ``app.add_exception_handler(StoreError, store_error_response)``. Needs
    Starlette (the ``asgi`` extra)."""
    from starlette.responses import PlainTextResponse

    if not isinstance(exc, StoreError):
        raise exc
    log_fault(exc, f"{request.method} {request.url.path}")
    status, body, headers = refusal(exc)
    return PlainTextResponse(body, status_code=status, headers=headers)


class Reader(Protocol):
    """One subscriber's view of a run, as a response reads it."""

    @property
    def position(self) -> EventId:
        """Where the body starts (the ``agui-after`` header): after this event."""

    @property
    def snapshot_events(self) -> int:
        """Events of the compact prefix the body starts with (0: none)."""

    async def open(self) -> None:
        """Check the run exists (and fold its prefix): ``RunNotFound``,
        ``ResumePastEnd``, ``StoreUnavailable``... before the headers go out."""

    def batches(self) -> AsyncIterator[EncodedEvents]:
        """The prefix, if any, then the run's batches until its end."""


#: A backend's reader of ``owner``'s run: ``(owner, run_id, after, compact)``,
#: called with an owner and a run id already checked.
Subscribe = Callable[[str | None, str, EventId | None, bool], Reader]


def resume_after(request: HasHeaders | Scope) -> EventId | None:
    """Where a request resumes: its ``?after=`` query parameter, else its
    ``Last-Event-ID`` header, as an ``EventId`` (an ``int``; an id ``n-<generation>``
    as the store gives them, or a plain index ``n``); ``None`` when it has neither.
    A value that is not one raises ``ValueError``."""
    if isinstance(request, MutableMapping):
        query = bytes(request.get("query_string", b"")).decode("latin-1")
        header = scope_header(request, b"last-event-id")
    else:
        url = getattr(request, "url", None)
        query = getattr(url, "query", "") or ""
        header = request.headers.get("last-event-id")
    values = parse_qs(query).get("after")
    raw = values[-1] if values else header
    if raw is None or raw.strip() == "":
        return None
    return parse_position(raw)


class RunResponse(EventStreamResponse):
    """``RunStore.response``: opens the subscription before the headers go out,
    so an unknown run is a 404 and the resume position is in the headers."""

    def __init__(
        self,
        subscribe: Subscribe,
        owner: str | None,
        run_id: str,
        request: HasHeaders | None,
        after: EventId | None,
        compact: bool,
        options: dict[str, Any],
    ) -> None:
        self._subscribe = subscribe
        self._owner = owner
        self._run_id = run_id  # checked when the response runs: a 400 if it is not one
        self._after = after
        self._compact = compact
        self._subscription: Reader | None = None
        self._failure: Exception | None = None  # met opening: said in the body
        options.setdefault("on_error", _store_error_event)
        super().__init__(self._stream(), request, **options)

    async def _stream(self) -> AsyncIterator[EncodedEvents | dict[str, Any]]:
        last: Any = None
        try:
            if self._failure is not None:
                raise self._failure
            assert self._subscription is not None
            sse = self.content_type == SSE_MEDIA_TYPE
            async for batch in self._subscription.batches():
                if sse:  # built here (once, shared): a payload that does not decode is
                    batch.data(False)  # a StoreCorrupted met in this stream, typed
                last = batch
                yield batch
        except StoreError as exc:
            # The store's faults are typed and expected: said in the body as
            # ``on_error`` says, logged on one line, never with a traceback (any
            # other exception is a bug: the response logs it whole).
            log_fault(exc, f"reading run {self._run_id!r}")
            policy = self._on_error
            if policy == "raise":
                raise
            event = policy(exc) if callable(policy) else default_error_event(exc)
            if event is not None and event_type(last) not in TERMINAL:
                yield event

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.streams(scope):
            refusal = await self._open(scope)
            if refusal is not None:
                await self.refuse(send, *refusal)
                return
        await super().__call__(scope, receive, send)

    async def _open(self, scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        try:
            owner, run_id = check_owner(self._owner), check_run_id(self._run_id)
        except ValueError as exc:
            return 400, f"{exc}\n", {}
        after = self._after
        if after is None:
            try:
                after = resume_after(scope)
            except ValueError as exc:
                return 400, f"{exc}\n", {}
        subscription = self._subscribe(owner, run_id, after, self._compact)
        try:
            await subscription.open()
        except (RunNotFound, ResumePastEnd, UnknownGeneration, StoreUnavailable) as exc:
            log_fault(exc, f"opening run {run_id!r}")
            return refusal(exc)
        except Exception as exc:  # RunLost, HistoryTrimmed, a stored event that does not decode
            self._failure = exc  # a 200 whose body is the RUN_ERROR, as for the same fault later
        self._subscription = subscription
        self.raw_headers += [
            (AFTER_HEADER.encode(), str(subscription.position).encode()),
            (SNAPSHOT_HEADER.encode(), str(subscription.snapshot_events).encode()),
        ]
        return None


def _store_error_event(exc: Exception) -> dict[str, Any] | None:
    """``on_error`` of a run's response: the store's faults as the client sees them."""
    if isinstance(exc, StoreUnavailable):
        # Not the run's end: the body stops without a terminal event, so the
        # client sees an incomplete run and resumes (agui_wire.client does).
        return None
    if isinstance(exc, RunReplaced):
        return {
            "type": "RUN_ERROR",
            "message": "the run was lost and another run is stored under its id now",
            "code": RUN_REPLACED,
        }
    if isinstance(exc, RunLost):
        return {"type": "RUN_ERROR", "message": "the run's events were lost", "code": RUN_LOST}
    if isinstance(exc, StoreCorrupted):
        return {
            "type": "RUN_ERROR",
            "message": f"the run's stored events are corrupted ({exc.key}, entry {exc.entry_id})",
            "code": STORE_CORRUPTED,
        }
    if isinstance(exc, HistoryTrimmed):
        return {
            "type": "RUN_ERROR",
            "message": f"events after {exc.after} are no longer stored (oldest: {exc.first})",
            "code": "HISTORY_TRIMMED",
        }
    return default_error_event(exc)
