"""Fault injection for the run store's fault tests, all against the real
``redis-server`` of tests/redis/harness.py.

* ``Proxy``: a TCP proxy on loopback, in a thread of its own, between the store's
  client and Redis. ``drop_reply(marker, times)``: the next client chunk holding
  ``marker`` (a script's SHA, a command name) is forwarded to Redis, which runs it,
  and the client's connection is then aborted before any reply reaches it: a lost
  reply, as a network cut right after a write does it. ``black_hole()`` stops
  forwarding in both directions, with every connection left open (a partition:
  no RST, no FIN, nothing) until ``heal()``.
* ``stopped(server, seconds)``: Redis SIGSTOPped (the kernel still accepts
  connections, nothing answers), SIGCONTed after ``seconds`` by a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class Proxy:
    """A loopback TCP proxy to ``port`` with lost replies and a black hole on demand."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.port = 0
        self.dropped = 0  # replies dropped so far
        self._drops: list[list[Any]] = []  # [marker, times left]
        self._holes = False
        self._healed = threading.Event()
        self._healed.set()
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._transports: set[Any] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> Proxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal()
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)

    def drop_reply(self, marker: bytes | str, times: int = 1) -> None:
        raw = marker.encode() if isinstance(marker, str) else marker
        self._drops.append([raw, times])

    def black_hole(self) -> None:
        self._healed.clear()

    def heal(self) -> None:
        self._healed.set()

    def _dropping(self, chunk: bytes) -> bool:
        for drop in self._drops:
            if drop[1] > 0 and drop[0] in chunk:
                drop[1] -= 1
                self.dropped += 1
                return True
        return False

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        healed = asyncio.Event()
        healed.set()

        async def watch() -> None:  # mirror the thread-safe flag into the loop
            while True:
                if self._healed.is_set():
                    healed.set()
                else:
                    healed.clear()
                await asyncio.sleep(0.01)

        async def handle(reader: Any, writer: Any) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
            except OSError:
                writer.transport.abort()
                return
            self._transports |= {writer.transport, up_writer.transport}
            cut = asyncio.Event()

            async def down() -> None:  # Redis -> client
                with contextlib.suppress(OSError, ConnectionError):
                    while data := await up_reader.read(65536):
                        await healed.wait()
                        if cut.is_set():
                            continue  # the reply is dropped; keep reading until Redis is done
                        writer.write(data)
                        await writer.drain()
                writer.transport.abort()

            async def up() -> None:  # client -> Redis
                with contextlib.suppress(OSError, ConnectionError):
                    while data := await reader.read(65536):
                        await healed.wait()
                        dropping = self._dropping(data)
                        up_writer.write(data)
                        await up_writer.drain()
                        if dropping:  # Redis runs it; the client never hears back
                            cut.set()
                            writer.transport.abort()
                            await asyncio.sleep(0.5)
                            break
                up_writer.transport.close()

            with contextlib.suppress(asyncio.CancelledError):  # (asyncio logs a cancelled handler)
                await asyncio.gather(up(), down(), return_exceptions=True)

        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            watcher = asyncio.ensure_future(watch())
            await self._stop.wait()
            server.close()
            for transport in self._transports:
                transport.abort()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, watcher, return_exceptions=True)

        self._loop.run_until_complete(main())
        self._loop.close()


@contextlib.contextmanager
def stopped(server: Any, seconds: float) -> Iterator[threading.Thread]:
    """Redis SIGSTOPped now and SIGCONTed ``seconds`` later (by a thread), and in any
    case when the block exits (never left stopped)."""
    process = server.process
    assert process is not None
    process.send_signal(signal.SIGSTOP)
    resumed = threading.Event()

    def resume() -> None:
        resumed.wait(seconds)
        process.send_signal(signal.SIGCONT)

    thread = threading.Thread(target=resume, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        resumed.set()
        thread.join(5)
        process.send_signal(signal.SIGCONT)
