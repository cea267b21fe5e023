"""The server side of ``server_cost.py``: one uvicorn process serving every contender.

Run by ``server_cost.py`` (``python benchmarks/server_app.py --port P --http h11``);
prints ``ready`` once listening. Everything per event is built before the server
starts (events, pydantic events, pre-encoded frames), so a request only streams.

``GET /<contender>?t=sse|proto&m=burst|paced[&n=N][&z=gzip|br|zstd]`` streams the
realistic run (``agui_wire._sample.realistic_run``, first ``n`` events):

* ``official``: the SDK's pattern, pydantic event -> ``ag_ui.encoder.EventEncoder.encode``
  -> Starlette ``StreamingResponse`` (SSE only: the SDK has no binary encoder);
* ``esr``: ``agui_wire.asgi.EventStreamResponse`` of the event dicts (``z``: offers that
  coding, negotiated from the request's ``Accept-Encoding``);
* ``esr_pydantic``: the same, fed the SDK's pydantic events;
* ``floor1``: pre-encoded frames, one ASGI send per event, nothing else;
* ``floor64``: pre-encoded frames joined 64 to a send (burst only);
* ``idle``: the producer run to its end, nothing sent (paced: the pacing's own cost).

Modes: ``burst``, the producer has every event ready (an async generator that
never suspends: a replay, a fast model); ``paced``, the producer sleeps
``PACE`` seconds after each event (the event loop goes idle between events, as
with a model streaming tokens), so each event is sent alone.

``GET /delay?c=...&t=...&m=...`` runs a stream to a null sink inside the server,
stamping when each event became ready (the producer's yield) and when the send
carrying it returned, and answers JSON with the delays' percentiles (µs).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import orjson
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, encode_proto, encode_sse
from agui_wire._sample import realistic_run
from agui_wire.asgi import EventStreamResponse

EVENTS = 20_004
SEED = 20_004
PACE = 0.0002  # seconds a paced producer sleeps after each event (~1 ms with timer slack)
BURSTY = (8, 0.001)  # /delay's "bursty" mode: up to 8 events at once, then 1 ms idle


def _sdk_events(events: list[dict[str, Any]]) -> list[Any]:
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    adapter = TypeAdapter(Event)
    return [adapter.validate_python(e) for e in events]


class Data:
    def __init__(self, n: int) -> None:
        self.events = realistic_run(n, SEED)
        self.pydantic = _sdk_events(self.events)
        self.frames = {
            "sse": [encode_sse(e) for e in self.events],
            "proto": [encode_proto(e) for e in self.events],
        }


async def burst(items: list[Any], stamps: list[int] | None = None) -> AsyncIterator[Any]:
    if stamps is None:
        for item in items:
            yield item
    else:
        clock = time.perf_counter_ns
        for item in items:
            stamps.append(clock())
            yield item


async def paced(items: list[Any], stamps: list[int] | None = None) -> AsyncIterator[Any]:
    sleep = asyncio.sleep
    clock = time.perf_counter_ns
    for item in items:
        if stamps is not None:
            stamps.append(clock())
        yield item
        await sleep(PACE)


async def bursty(items: list[Any], stamps: list[int] | None = None) -> AsyncIterator[Any]:
    """Groups of 1..8 events ready at once (a fixed pattern), then an idle wait."""
    most, idle = BURSTY
    clock = time.perf_counter_ns
    i = 0
    k = 0
    while i < len(items):
        k = k % most + 1
        for item in items[i : i + k]:
            if stamps is not None:
                stamps.append(clock())
            yield item
        i += k
        await asyncio.sleep(idle)


PRODUCERS: dict[str, Callable[..., AsyncIterator[Any]]] = {
    "burst": burst,
    "paced": paced,
    "bursty": bursty,
}


def _start(ctype: str, extra: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    headers = [(b"content-type", ctype.encode()), *(extra or [])]
    return {"type": "http.response.start", "status": 200, "headers": headers}


async def floor(items: AsyncIterator[bytes], ctype: str, send: Any) -> None:
    await send(_start(ctype))
    async for body in items:
        await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def app_for(data: Data) -> Any:
    from ag_ui.encoder import EventEncoder as SdkEncoder
    from starlette.responses import StreamingResponse

    def stream_app(q: dict[str, str], stamps: list[int] | None) -> Any:
        """The ASGI app streaming one contender (scope/receive/send as given)."""
        c, t, m = q["c"], q.get("t", "sse"), q.get("m", "burst")
        n = int(q.get("n", len(data.events)))
        produce = PRODUCERS[m]
        ctype = PROTO_MEDIA_TYPE if t == "proto" else SSE_MEDIA_TYPE
        if c == "official":
            encoder = SdkEncoder(accept=SSE_MEDIA_TYPE)

            async def sdk() -> AsyncIterator[str]:
                async for event in produce(data.pydantic[:n], stamps):
                    yield encoder.encode(event)

            return StreamingResponse(sdk(), media_type=encoder.get_content_type())
        if c in ("esr", "esr_pydantic"):
            events = data.events if c == "esr" else data.pydantic
            codings = [q["z"]] if "z" in q else False
            return EventStreamResponse(produce(events[:n], stamps), accept=ctype, compress=codings)
        frames = data.frames[t][:n]
        if c == "idle":

            async def idle(scope: Any, receive: Any, send: Any) -> None:
                await send(_start(ctype))
                async for _ in produce(frames, stamps):
                    pass
                await send({"type": "http.response.body", "body": b"", "more_body": False})

            return idle
        if c == "floor64":
            frames = [b"".join(frames[i : i + 64]) for i in range(0, len(frames), 64)]

        async def raw(scope: Any, receive: Any, send: Any) -> None:
            await floor(produce(frames, stamps), ctype, send)

        return raw

    async def delay(q: dict[str, str], send: Any) -> None:
        """Run a stream into a null sink; answer the delay percentiles."""
        stamps: list[int] = []
        sent: list[int] = []
        binary = q.get("t") == "proto"
        clock = time.perf_counter_ns

        async def sink(message: dict[str, Any]) -> None:
            if message["type"] != "http.response.body":
                return
            body = message.get("body", b"")
            count = _count_frames(body) if binary else body.count(b"\n\n")
            now = clock()
            sent.extend([now] * count)

        async def receive() -> dict[str, Any]:
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        scope = {"type": "http", "method": "GET", "http_version": "1.1", "headers": []}
        await stream_app(q, stamps)(scope, receive, sink)
        if len(sent) != len(stamps):
            raise RuntimeError(f"{len(stamps)} events made, {len(sent)} sent")
        delays = sorted((s - a) / 1000 for a, s in zip(stamps, sent, strict=True))
        result = {
            "events": len(delays),
            "p50_us": statistics.median(delays),
            "p99_us": delays[min(len(delays) - 1, int(len(delays) * 0.99))],
            "max_us": delays[-1],
        }
        body = orjson.dumps(result)
        await send(_start("application/json"))
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        q = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        path = scope["path"].strip("/")
        if path == "delay":
            await delay(q, send)
            return
        q["c"] = path
        await stream_app(q, None)(scope, receive, send)

    return app


def _count_frames(body: bytes) -> int:
    n = 0
    i = 0
    while i < len(body):
        i += 4 + int.from_bytes(body[i : i + 4], "big")
        n += 1
    return n


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--http", choices=["h11", "httptools"], default="h11")
    p.add_argument("--events", type=int, default=EVENTS)
    args = p.parse_args()
    data = Data(args.events)
    config = uvicorn.Config(
        app_for(data),
        host="127.0.0.1",
        port=args.port,
        http=args.http,
        loop="asyncio",
        lifespan="on",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        print("ready", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
