"""A store's drain: when its process shuts down (a rolling deploy), hand its runs
over instead of cutting them; and the signal that starts it.

Strategy: ``drain(grace)`` refuses new claims at once (``StoreDraining``, a
``StoreUnavailable``: HTTP 503 with ``Retry-After``), lets the runs this store
produces finish for up to ``grace`` seconds, then hands the rest over: each
producer stops, stores what it took and releases its lease without ending the
run (``_leases.RELEASE``), so a producer elsewhere that replays the run
(``replay=True``: a retried job, a client's resumed request) takes it at once,
and readers everywhere wait for it as for a live producer (a run nobody takes
ends by its lease, ``LEASE_EXPIRED``, within ``lease + poll`` of the release).
Only then are the store's own readers ended (``Reading.hand_over``), so each
resumes elsewhere after its last event and finds the run released already.

``on_signal`` starts the drain from a signal handler, before the server's own
shutdown waits for open responses: the handler installed before (uvicorn's,
installed before the app's lifespan starts) is called right after, so the
server stops accepting connections and waits for the responses the drain is
about to end. With the default action installed before (no server's handler),
the default action (terminate) is taken once the drain is done.

Contract: ``drain`` returns once every producer of the store finished or handed
its run over and its readers are ended, within ``grace`` plus
``handover_limit`` (``reconnect`` and a round trip's deadline: Redis
unreachable that long, a run not released ends by its lease). It logs what it
did (INFO).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from types import FrameType

from .._runstore import observe
from ._producer import Writing
from ._reading import Reading

logger = logging.getLogger("agui_wire.redis")


def handover_limit(writing: Writing) -> float:
    """Seconds the drain waits for its producers to hand their runs over: one
    retried call's window (``reconnect``) and a round trip's deadline."""
    settings = writing.settings
    return settings.reconnect + settings.command_timeout


async def drain(writing: Writing, reading: Reading, grace: float) -> None:
    """Refuse new runs, let live ones finish within ``grace`` s, hand the rest over,
    end the readers (see the module doc)."""
    observe.drained()
    with observe.span(observe.DRAIN):
        await _drain(writing, reading, grace)


async def _drain(writing: Writing, reading: Reading, grace: float) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    writing.draining = True
    deadline = started + grace
    before = len(writing.live)
    while writing.live and (remaining := deadline - loop.time()) > 0:
        await asyncio.wait(_finished(writing), timeout=remaining)
    writing.handed_over = True
    producers = list(writing.live)
    for producer in producers:
        producer.release()
    if producers:
        await asyncio.wait(_finished(writing), timeout=handover_limit(writing))
    reading.hand_over()
    logger.info(
        "run store drained in %.2f s: %d of %d live runs finished within the grace of "
        "%g s, %d handed over",
        loop.time() - started,
        before - len(producers),
        before,
        grace,
        len(producers),
    )


def _finished(writing: Writing) -> list[asyncio.Future[None]]:
    return [p.finished for p in writing.live if p.finished is not None]


def on_signal(sig: int, start: Callable[[], asyncio.Future[None]]) -> Callable[[], None]:
    """Call ``start`` (in the running loop) when the process gets ``sig``, then the
    handler installed before (see the module doc). Returns the function that puts
    the handler installed before back. Must be called in the main thread."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(sig)

    def begin() -> None:
        drained = start()
        if previous == signal.SIG_DFL:  # no server to stop: what the signal does, after
            drained.add_done_callback(then_default)

    def then_default(_: object) -> None:
        restore()
        signal.raise_signal(sig)

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(begin)
        if callable(previous):
            previous(signum, frame)

    def restore() -> None:
        if signal.getsignal(sig) is handler:
            signal.signal(sig, previous)

    try:
        signal.signal(sig, handler)
    except ValueError as exc:  # not the main thread
        raise ValueError(
            f"drain_on_signal needs the main thread (a lifespan's startup): {exc}"
        ) from None
    return restore
