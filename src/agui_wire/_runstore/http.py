"""A run as an HTTP response: ``RunStore.response`` of every backend, and where a
request resumes.

Contract: the subscription is opened before the headers go out, so an unknown
run is a 404, a bad resume position a 400, the store unreachable (or draining:
``StoreDraining`` is a ``StoreUnavailable``) a 503 (with ``Retry-After``), and
the headers say where the body starts (``agui-after``, ``agui-snapshot-events``);
other faults, met opening or after the headers, become the ``RUN_ERROR`` events
docs/scaling.md lists (or a body without a terminal event, to resume), through
``EventStreamResponse``'s ``on_error``; a drain met after the headers ends the
body without a terminal event, quietly (the client resumes elsewhere). A backend
hands the response a ``Subscribe``: how to open a ``Reader`` of a run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, MutableMapping
from typing import Any, Protocol
from urllib.parse import parse_qs

from .._streaming import (
    AFTER_HEADER,
    SNAPSHOT_HEADER,
    EncodedEvents,
    HasHeaders,
    Receive,
    Scope,
    Send,
    default_error_event,
    scope_header,
)
from ..asgi import EventStreamResponse
from ..errors import (
    HistoryTrimmed,
    ResumePastEnd,
    RunLost,
    RunNotFound,
    RunReplaced,
    StoreCorrupted,
    StoreDraining,
    StoreUnavailable,
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

    async def _stream(self) -> AsyncIterator[EncodedEvents]:
        if self._failure is not None:
            raise self._failure  # the response's on_error turns it into the RUN_ERROR
        assert self._subscription is not None
        try:
            async for batch in self._subscription.batches():
                yield batch
        except StoreDraining:
            # The store hands its readers over: the body ends without a terminal
            # event, so the client resumes elsewhere (arun_agent, EventSource).
            return

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
        except RunNotFound as exc:
            return 404, f"{exc}\n", {}
        except ResumePastEnd as exc:
            return 400, f"{exc}\n", {}
        except StoreUnavailable as exc:
            return 503, f"{exc}\n", {"retry-after": "1"}
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
