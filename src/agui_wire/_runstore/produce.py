"""A claimed run produced: its events stored as they come and its end written, on
whichever backend holds its lease.

Strategy: ``produce`` iterates the events (``_streaming.Source``: an async
iterable as it is, a sync one in a worker thread), admits each
(``appends.admit``: encoded once, refused if no reader could take it) and hands
the payloads to ``Appends`` (one append in flight, bursts batched). A run taken
over (``replay=True``) skips the events its store holds already. The backend's
``Writer`` is the store's side: appends, the lease (renewed by a heartbeat of
its own, started and stopped around the run), the end.

Contract: ``produce`` returns the number of the run's events once
``Writer.finish`` stored its end. If the events raise, or the task is
cancelled, the run ends with a ``RUN_ERROR`` after what the store holds (none
after a terminal event the producer stored; ``Writer.fail``) and the error
propagates. When the backend takes the run from its producer (it sets
``Writer.lost`` and cancels the task: its lease lost, its store silent too long)
that error is raised and the run is not ended (its lease will end it). A
``StoreError`` of an append is raised alike, but for ``StoreFull``: the run is
then ended failed, if the store lets it. A draining store lets the run go
(``Writer.releasing`` set, the task cancelled; at once for a producer that starts
then): what was taken is stored and ``Writer.hand_over`` does the backend's part,
whose error is raised; a producer that took every event (``finishing``) ends its
run as usual. ``close_now`` closes the events of a run that will not be produced
(a run id that is not one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterable, Iterable
from typing import Any, Protocol

from .._codec.selected import encode_payload
from .._streaming import TERMINAL, Source, event_type
from ..errors import StoreError, StoreFull
from .appends import Appends, admit
from .ends import CANCELLED, FAILED, failure_event


class Writer(Protocol):
    """A backend's side of one producer, whose lease is its own."""

    run_id: str
    #: Events of the run its store acknowledged (the claim's count, then each append's).
    stored: int
    #: Set, before the producing task is cancelled, once the run is no longer its own.
    lost: StoreError | None
    #: Set (the task cancelled) when the store drains: the run is let go.
    releasing: bool
    #: Set by ``produce`` once every event was taken: nothing is left to let go.
    finishing: bool
    logger: logging.Logger

    def start(self, main: asyncio.Task[Any]) -> None:
        """The run starts in ``main``: heartbeat and watch it until ``stop``."""

    def stop(self) -> None:
        """No more heartbeat, no more watch (the run ends)."""

    def ended(self) -> None:
        """The run is over, its events' source closed (the drain waits for this)."""

    async def hand_over(self, appends: Appends, terminal: int) -> StoreError:
        """Let the run go as the store drains, after what was taken is stored
        (``appends``; ``terminal``: the producer's terminal event, 0: none): the
        error ``produce`` raises then."""

    def produced(self, event: Any) -> None:
        """Event ``stored + 1`` (or a later one) was produced, maybe not yet stored."""

    async def append(self, first: int, payloads: list[bytes], stamp: int | None) -> None:
        """Store ``payloads`` as the run's events ``first``... (an ``Appends`` send;
        ``stamp``, if not ``None``, kept with the last: the readers' delivery lag)."""

    async def finish(self) -> None:
        """The run's end, after its last event."""

    async def fail(self, reason: str, error: bytes, terminal: int) -> None:
        """End the run after a failure: the ``RUN_ERROR`` payload ``error`` after what
        the store holds (unless its last event is event ``terminal``, the producer's
        terminal one; 0: none), then the end with ``reason``."""


async def produce(
    writer: Writer,
    events: Iterable[Any] | AsyncIterable[Any],
    batch: int,
    page_bytes: int,
) -> int:
    """Store ``events`` as the run (see the module doc); the number of its events."""
    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()
    writer.start(main)
    source = Source(events, None, loop, writer.logger)
    skip = writer.stored  # a run taken over: these are stored already
    appends = Appends(writer.append, skip + 1, batch, page_bytes)
    count = 0
    terminal = 0  # the index of the producer's terminal event, once produced
    try:
        try:
            if writer.releasing:  # claimed as the store drained
                raise await writer.hand_over(appends, terminal)
            while True:
                try:
                    event = await source.next()
                except StopAsyncIteration:
                    break
                count += 1
                writer.produced(event)
                if count > skip and appends.add(admit(event, count)):
                    await appends.room()
                if event_type(event) in TERMINAL:
                    terminal = count
            writer.finishing = True
            await appends.drain()
            await writer.finish()
            return count
        except asyncio.CancelledError:
            if writer.lost is not None:
                raise writer.lost from None
            if writer.releasing:
                raise await writer.hand_over(appends, terminal) from None
            await _end_with(writer, appends, terminal, CANCELLED, None)
            raise
        except StoreFull as exc:  # the run ends failed, said so, if the store lets it
            await _end_with(writer, appends, terminal, FAILED, exc)
            raise
        except StoreError:
            raise
        except Exception as exc:
            await _end_with(writer, appends, terminal, FAILED, exc)
            raise
    finally:
        writer.finishing = True  # nothing left to let go
        writer.stop()
        appends.cancel()
        try:
            await source.close()
        finally:
            writer.ended()


async def _end_with(
    writer: Writer, appends: Appends, terminal: int, reason: str, exc: Exception | None
) -> None:
    """End the run after a failure: what was produced, a RUN_ERROR (unless the last
    event stored is the producer's terminal one), the end."""
    try:
        with contextlib.suppress(Exception):  # the RUN_ERROR follows what the store has
            await appends.drain()
        await writer.fail(reason, encode_payload(failure_event(exc)), terminal)
    except Exception as err:
        writer.logger.error("could not end run %r after a failure", writer.run_id, exc_info=err)


def close_now(events: object) -> None:
    """Close a sync generator that will not run (an async one is closed by the
    garbage collector's finaliser; it was never started)."""
    close = getattr(events, "close", None)
    if close is not None and not hasattr(events, "aclose"):
        close()
