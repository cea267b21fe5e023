"""``RunStore``'s public methods, the same on every backend: arguments checked at
once, a run claimed then produced (in the caller's task, or in a background task
the store owns), read as ``(EventId, event)`` pairs or as an HTTP response.

Contract: a backend subclasses ``Store`` and gives it its ``Reading`` (the
readers' ``Source``, which opens a ``Subscription`` of a run), ``_locate`` (its
name for ``owner``'s run; ``ValueError`` for an owner or a run id that is not
one), ``_claim`` (the run's producer, or the number of events of a run that has
ended; a claim is refused while ``_producers.draining``), ``_drain_runs`` (its
drain), ``_stop`` (closing: its readers end, every later call fails) and maybe
``_closed`` (what to release once the runs ended) and ``_close_grace``. Every
method documented here behaves alike on every backend; the tests in tests/runstore
hold it. Telemetry (``observe``) is recorded here for every backend: a claim's
span, a produced run counted live (``agui.store.runs.active``) while it runs,
and a ``StoreError`` that leaves ``publish``, ``start`` or a background run
counted as a fault.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import logging
import signal
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from .._streaming import HasHeaders
from ..asgi import EventStreamResponse
from ..errors import StoreDraining, StoreError
from . import observe
from .batches import Batch, Prefix, RunRef
from .drain import Producers, check_grace, on_signal
from .http import RunResponse, log_fault
from .ids import EventId, check_owner, parse_position
from .produce import close_now
from .read import Source, Subscription

R = TypeVar("R", bound=RunRef)


class Reading(Source[R], Protocol[R]):
    """A backend's ``Source``, which opens its subscriptions."""

    def subscription(
        self, owner: str | None, run_id: str, after: EventId | None, compact: bool
    ) -> Subscription[R]:
        """A reader of ``owner``'s run (``http.Subscribe``)."""


class Producer(Protocol):
    """A claimed run, ready to be produced."""

    #: The task running ``run``, once it runs (``None``: not yet).
    main: asyncio.Task[Any] | None

    async def run(self) -> int: ...

    async def end_unstarted(self) -> None:
        """End the run of a task cancelled before it ran: as ``run`` ends a cancelled
        one (``RUN_ERROR``, code ``CANCELLED``), its events closed unstarted."""


class Store(Generic[R]):
    """The public methods of a ``RunStore`` (see the module doc)."""

    _reading: Reading[R]
    _logger: logging.Logger

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()  # background runs, ends of runs
        self._producers = Producers()
        self._drain: asyncio.Task[None] | None = None
        self._restore_signal: Callable[[], None] | None = None

    def _locate(self, owner: str | None, run_id: str) -> R:
        raise NotImplementedError

    async def _claim(
        self, run: R, events: Iterable[Any] | AsyncIterable[Any], replay: bool
    ) -> Producer | int:
        raise NotImplementedError

    def _stop(self) -> None:
        """Close the store: its readers end, every later call is ``StoreUnavailable``."""
        raise NotImplementedError

    async def _drain_runs(self, grace: float) -> None:
        """The backend's drain (``drain.drain`` with what it does with a run left)."""
        raise NotImplementedError

    def _closed(self) -> None:
        """Once the store's background runs ended (or were given up): what is left to
        release (nothing, by default)."""

    #: Seconds ``aclose`` gives the cancelled runs to end.
    _close_grace: float = 4.0

    # -- producing -------------------------------------------------------------------

    async def publish(
        self,
        run_id: str,
        events: Iterable[Any] | AsyncIterable[Any],
        *,
        owner: str | None = None,
        replay: bool = False,
    ) -> int:
        """Store the run's events as they come; returns the number of events in the
        run once it has ended. Raises ``RunInProgress`` if a live producer holds the
        run; a run that has ended already is not produced again (``events`` is closed
        unstarted). If ``events`` raises, the run ends with a ``RUN_ERROR`` and the
        exception propagates.

        A run whose producer vanished without ending it (its lease expired) is
        continued only with ``replay=True``: the caller replays the same run
        deterministically (a retried job), so the events the store holds are skipped
        and the rest appended. Otherwise the old run is ended (``RUN_ERROR``,
        ``LEASE_EXPIRED``) and ``RunAbandoned`` raised, now and on every retry: a
        reader never gets two producers' events as one run."""
        run = self._run(owner, run_id, events)
        try:
            producer = await self._claimed(run, events, replay)
            if isinstance(producer, int):
                return producer
            return await _produced(producer)
        except StoreError as exc:
            observe.fault(exc)
            raise

    async def start(
        self,
        run_id: str,
        events: Iterable[Any] | AsyncIterable[Any],
        *,
        owner: str | None = None,
        replay: bool = False,
    ) -> asyncio.Task[int] | None:
        """``publish`` in a background task, detached from the caller (a request
        that ends, or a client that leaves, does not stop it). Returns once the run
        is claimed, so a ``subscribe``/``response`` right after finds it; returns
        ``None`` (and closes ``events``) if the run has ended already. Raises
        ``RunInProgress`` and ``RunAbandoned`` like ``publish`` (``replay`` too). A
        failure of the task is logged."""
        run = self._run(owner, run_id, events)
        try:
            producer = await self._claimed(run, events, replay)
        except StoreError as exc:
            observe.fault(exc)
            raise
        if isinstance(producer, int):
            return None
        task = asyncio.ensure_future(_produced(producer))
        self._track(task)
        task.add_done_callback(functools.partial(self._unstarted, producer))
        return task

    async def _claimed(
        self, run: R, events: Iterable[Any] | AsyncIterable[Any], replay: bool
    ) -> Producer | int:
        with observe.span(observe.CLAIM, run.run_id):
            return await self._claim(run, events, replay)

    def _run(self, owner: str | None, run_id: str, events: object) -> R:
        try:
            return self._locate(owner, run_id)
        except ValueError:
            close_now(events)
            raise

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        observe.fault(error)
        if isinstance(error, StoreDraining):  # let go by a drain: not a failure
            self._logger.info("background run handed over: %s", error)
        elif isinstance(error, StoreError):  # typed, expected: one line (an outage once)
            log_fault(error, "background run", self._logger)
        elif error is not None:  # the agent's own failure, or a bug
            self._logger.error("background run failed", exc_info=error)

    def _unstarted(self, producer: Producer, task: asyncio.Task[Any]) -> None:
        if task.cancelled() and producer.main is None:  # cancelled before it ran
            self._track(asyncio.ensure_future(producer.end_unstarted()))

    # -- shutting down ---------------------------------------------------------------

    @property
    def draining(self) -> bool:
        """Whether the store drains (or drained): it takes no new run. A readiness
        probe answers 503 then."""
        return self._producers.draining

    async def drain(self, grace: float) -> None:
        """For a shutdown that does not cut runs (a rolling deploy; docs/scaling.md).
        At once, ``publish``/``start`` of a new run raise ``StoreDraining`` (a
        ``StoreUnavailable``: HTTP 503 with ``Retry-After``). Runs this store
        produces that end within ``grace`` seconds end as usual; each other one is
        let go as the store can (see its class), its ``publish`` raising
        ``StoreDraining`` (a ``start`` task ends with it, logged at INFO). Then the
        store's readers end (``subscribe``: ``StoreDraining``; a response: its body
        ends without a terminal event) and responses opened later are 503s. A
        second call waits for the first drain."""
        await asyncio.shield(self._draining(check_grace(grace)))

    def _draining(self, grace: float) -> asyncio.Task[None]:
        if self._drain is None:
            self._drain = asyncio.ensure_future(self._drain_runs(grace))
        return self._drain

    def drain_on_signal(self, grace: float, sig: int = signal.SIGTERM) -> None:
        """``drain(grace)`` when the process gets ``sig`` (default ``SIGTERM``, what
        Kubernetes and ``docker stop`` send). Call it in the startup of your app's
        lifespan under uvicorn: it runs the handler uvicorn installed right
        after starting the drain, so uvicorn stops accepting connections and
        waits for the open responses the drain ends (set uvicorn's
        ``--timeout-graceful-shutdown`` above ``grace``); the lifespan's shutdown
        then calls ``aclose()``, which waits for the drain. Without a handler
        installed before (no uvicorn), the signal's default action follows the
        drain. Must be called in the main thread, with the loop running."""
        grace = check_grace(grace)
        if self._restore_signal is not None:
            self._restore_signal()
        self._restore_signal = on_signal(sig, lambda: self._draining(grace))

    async def aclose(self) -> None:
        """Stop this store. A drain in progress is waited for first (so a drained run
        is let go, not cancelled). Its background runs are cancelled and end with
        ``RUN_ERROR`` (code ``CANCELLED``); its readers, and every later call, get
        ``StoreUnavailable`` ("the store was closed"; an HTTP body ends without a
        terminal event). Returns within twice the store's close grace after the
        drain, whatever the runs' sources do: a run's task that outlives its
        cancellation is logged, with what it awaits, and left. Call it on shutdown."""
        if self._restore_signal is not None:
            self._restore_signal()
            self._restore_signal = None
        if self._drain is not None and not self._drain.done():
            await asyncio.wait({self._drain})
        for task in self._tasks:
            task.cancel()
        self._stop()
        loop = asyncio.get_running_loop()
        grace = self._close_grace
        deadline = loop.time() + grace
        while (tasks := self._running()) and loop.time() < deadline:  # (unstarted ends join)
            await asyncio.wait(tasks, timeout=deadline - loop.time())
        if tasks:
            self._logger.warning(
                "%d run(s) not ended within %g s of closing the store: their leases end them",
                len(tasks),
                grace,
            )
            for task in tasks:
                task.cancel()
        self._closed()
        # Cancelled twice, the store's calls closed: a run that still runs awaits
        # something of its own (its events' source), not the store. Named in the
        # log and left, so that a shutdown always finishes.
        deadline = loop.time() + grace
        while (tasks := self._running()) and loop.time() < deadline:
            await asyncio.wait(tasks, timeout=deadline - loop.time())
        for task in tasks:
            self._logger.error(
                "a run's task did not end within %g s of its cancellation, left running:\n%s",
                2 * grace,
                _stack(task),
            )

    def _running(self) -> set[asyncio.Task[Any]]:
        return {task for task in self._tasks if not task.done()}

    # -- reading ---------------------------------------------------------------------

    async def subscribe(
        self,
        run_id: str,
        after: int | str | None = None,
        *,
        compact: bool = False,
        owner: str | None = None,
    ) -> AsyncIterator[tuple[EventId, dict[str, Any]]]:
        """``(event_id, event)`` for the run's events after ``after`` (all when
        ``None``), stored ones first, then live ones, until the run ends. An
        ``EventId`` is the event's index (an ``int``, 1-based) carrying the run's
        generation: its ``str()``, ``n-<generation>``, is the SSE id a client gets.
        ``after`` is one of these, its string, or a plain index (then the
        generation is not checked). With ``compact`` (and no ``after``) a snapshot
        stands for the events so far (``agui_wire._apply``); its events carry the id
        of the last event they stand for. Raises ``RunNotFound``,
        ``ResumePastEnd`` (``after`` past the run's last stored event, ended or
        live), ``UnknownGeneration`` (``after`` names a generation the run never
        had; both ``ValueError``s), ``RunReplaced`` (``after`` is of a run that was
        lost and produced again), ``HistoryTrimmed``, ``RunLost``,
        ``StoreCorrupted``, ``StoreUnavailable``."""
        position = check_after(after)
        subscription = self._reading.subscription(owner, run_id, position, compact)
        async for batch in subscription.batches():
            if isinstance(batch, Prefix):
                for event in batch.events:
                    yield batch.last_id, event
            else:
                assert isinstance(batch, Batch)
                # (no generator per batch: at token speed a batch is one event)
                n, generation = batch.first, batch.generation
                for event in batch.events():
                    yield EventId(n, generation), event
                    n += 1

    def response(
        self,
        run_id: str,
        request: HasHeaders | None = None,
        *,
        after: int | str | None = None,
        compact: bool = False,
        owner: str | None = None,
        **options: Any,
    ) -> EventStreamResponse:
        """An ``EventStreamResponse`` streaming the run: transport negotiated from
        ``request`` (else the scope), resumed after ``after``, else after the
        request's ``Last-Event-ID`` or ``?after=`` (read when the response runs): an
        id as the store gives them (``n-<generation>``) or a plain index ``n``.
        ``options`` go to ``EventStreamResponse`` (``keepalive``, ``strict``,
        ``headers``...). Statuses (docs/scaling.md has the whole table): an unknown
        run 404; a run id that is not one, a position that is not one, past the
        run's last stored event (ended or live) or of a generation the run never
        had 400 (nothing of the run is sent); the store unreachable 503 (with
        ``Retry-After``; the body names no host, port or error). A position the
        store cannot continue from is a 200 whose body is one ``RUN_ERROR``:
        trimmed (``HISTORY_TRIMMED``), of a run that was lost and produced again
        (``RUN_REPLACED``), lost (``RUN_LOST``); a key holding what the store never
        wrote, ``STORE_CORRUPTED`` (also when met later in the body). ``owner`` not
        a string: ``ValueError``. Errors of ``start``/``publish`` in an app's routes
        get the same answers from ``store_error_response``, an exception handler."""
        position = check_after(after)
        check_owner(owner)  # a caller's mistake now; a run id that is not one is a 400
        return RunResponse(
            self._reading.subscription, owner, run_id, request, position, compact, options
        )


async def _produced(producer: Producer) -> int:
    """``producer.run()``, the run counted live (telemetry) while it runs."""
    live = observe.run_started()
    try:
        return await producer.run()
    finally:
        observe.ended(live)


def _stack(task: asyncio.Task[Any]) -> str:
    """What ``task`` awaits, outermost first (``Task.print_stack`` shows one frame)."""
    lines = [repr(task)]
    step: Any = task.get_coro()
    while step is not None:
        if type(step).__name__ in ("async_generator_asend", "async_generator_athrow"):
            # an async generator's step: the generator itself says where it is
            step = next((r for r in gc.get_referents(step) if inspect.isasyncgen(r)), step)
        frame = getattr(step, "cr_frame", None) or getattr(step, "ag_frame", None)
        if frame is None:
            lines.append(f"  awaits {step!r}")
            break
        lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        step = getattr(step, "cr_await", None) or getattr(step, "ag_await", None)
    return "\n".join(lines)


def check_after(after: int | str | None) -> EventId | None:
    """``after`` as a resume position, else ``ValueError`` saying what it may be."""
    if after is None:
        return None
    try:
        return parse_position(after)
    except ValueError as exc:
        raise ValueError(f"after must be an event id, an index >= 0 or None: {exc}") from None
