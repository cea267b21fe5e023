"""A store's drain, for any backend: when its process shuts down, refuse new runs,
let live ones finish within a grace, then have each backend do with the rest what
it can (Redis hands them over to another replica; one process ends them), end the
readers; and the signal that starts it.

Strategy: ``Producers`` is what a store's producers share: the live ones (each
with a future done once its run is), ``draining`` (a claim is refused:
``StoreDraining``) and ``handed_over`` (a producer that starts now lets its run go
at once). ``drain`` sets ``draining``, waits for the live producers for up to
``grace`` seconds, then calls ``release()`` on each left and waits for them up to
``limit`` seconds, and only then ends the store's readers (``hand_over``), so that
each reader sees what became of the run before it is told to go elsewhere.

``on_signal`` starts the drain from a signal handler, before a server's own
shutdown waits for open responses: the handler installed before (uvicorn's,
installed before the app's lifespan starts) is called right after, so the server
stops accepting connections and waits for the responses the drain is about to
end. With the default action installed before (no server's handler), the
default action (terminate) is taken once the drain is done.

Contract: ``drain`` returns once every producer finished or let its run go and the
readers are ended, within ``grace + limit`` seconds, and logs what it did (INFO);
telemetry counts it (``agui.store.drains``) and traces it (``agui.store.drain``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from . import observe

#: Why a draining store refuses a claim (``StoreDraining``).
DRAINING = "the store is draining (its process is shutting down): it takes no new run"


class Live(Protocol):
    """A producer as the drain sees it."""

    #: Done once its ``run`` is (``None``: not running yet).
    finished: asyncio.Future[None] | None

    def release(self) -> None:
        """Let the run go (the store drains): the backend's hand-over."""


class Readers(Protocol):
    def hand_over(self) -> None:
        """End every reader of the store (``StoreDraining``)."""


class Producers:
    """What the producers of one store share for its drain (see the module doc)."""

    __slots__ = ("draining", "handed_over", "live")

    def __init__(self) -> None:
        self.live: set[Any] = set()
        self.draining = False
        self.handed_over = False

    def finished(self) -> list[asyncio.Future[None]]:
        return [p.finished for p in self.live if p.finished is not None]


async def drain(
    producers: Producers,
    readers: Readers,
    grace: float,
    limit: float,
    logger: logging.Logger,
    gone: str,
) -> None:
    """Refuse new runs, let live ones finish within ``grace`` s, let the rest go
    (``gone``: what became of them, for the log), end the readers."""
    observe.drained()
    with observe.span(observe.DRAIN):
        await _drain(producers, readers, grace, limit, logger, gone)


async def _drain(
    producers: Producers,
    readers: Readers,
    grace: float,
    limit: float,
    logger: logging.Logger,
    gone: str,
) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    producers.draining = True
    deadline = started + grace
    before = len(producers.live)
    while producers.live and (remaining := deadline - loop.time()) > 0:
        await asyncio.wait(producers.finished(), timeout=remaining)
    producers.handed_over = True
    left: list[Live] = list(producers.live)
    for producer in left:
        producer.release()
    if left:
        await asyncio.wait(producers.finished(), timeout=limit)
    readers.hand_over()
    logger.info(
        "run store drained in %.2f s: %d of %d live runs finished within the grace of %g s, %d %s",
        loop.time() - started,
        before - len(left),
        before,
        grace,
        len(left),
        gone,
    )


def check_grace(grace: object) -> float:
    """``grace`` as seconds, else ``ValueError``."""
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace < 1e9:
        raise ValueError(f"grace must be a number of seconds >= 0, not {grace!r}")
    return float(grace)


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
