"""No splice, ever (issue 23 item 3), against the real redis-server: a run has a
*generation*, fixed when it is first stored and carried in every id a client is
given (SSE ``id:``, the ``agui-after`` header, ``subscribe``'s ids); a resume, or a
live reader, of one generation never gets another generation's events as a
continuation: ``RunReplaced`` (HTTP: a ``RUN_ERROR`` with code ``RUN_REPLACED``).
A producer taking over a run whose producer vanished continues it only when it
says it replays the run deterministically (``replay=True``); otherwise the old
generation ends with ``RUN_ERROR`` (``LEASE_EXPIRED``) and the retry is refused
with ``RunAbandoned``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import LeaseLost, RunAbandoned, RunLost, RunReplaced
from agui_wire.redis import AFTER_HEADER, RunStore
from tests.redis.conftest import run
from tests.redis.test_store import call

# also on Valkey 8: explicit entry ids and what the server keeps of them
pytestmark = pytest.mark.valkey

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ticks(name: str, n: int) -> list[dict[str, Any]]:
    return [STARTED, *({"type": "CUSTOM", "name": name, "value": i} for i in range(n)), FINISHED]


RUN_A = ticks("a", 5)  # 7 events
RUN_B = ticks("b", 300)


async def paced(events: list[dict[str, Any]], delay: float) -> Any:
    for event in events:
        await asyncio.sleep(delay)
        yield event


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[Any, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


def sse_ids(body: bytes) -> list[str]:
    return [line[4:] for line in body.decode().splitlines() if line.startswith("id: ")]


async def http(store: RunStore, run_id: str, accept: str, **headers: str) -> Any:
    start, bodies = await call(
        store.response(run_id), headers=[("accept", accept), *headers.items()]
    )
    return start["status"], dict(start["headers"]), b"".join(bodies)


def test_a_resume_of_a_lost_generation_is_refused_not_continued(fresh_redis, run_id) -> None:
    server = fresh_redis(persistent=False)

    async def main() -> None:
        r = aioredis.from_url(server.url)
        store = RunStore(r, lease=2)
        await store.publish(run_id, RUN_A)
        # what clients of generation A hold: SSE ids, the binary header, Python ids
        _, headers, body = await http(store, run_id, SSE_MEDIA_TYPE)
        ids = sse_ids(body)
        assert len(ids) == len(RUN_A) == len(set(ids))
        _, headers, _ = await http(store, run_id, PROTO_MEDIA_TYPE, **{"last-event-id": ids[3]})
        binary_after = headers[AFTER_HEADER.encode()].decode()
        assert binary_after == ids[3]  # the header is the id of the event before the body
        python_ids = [i for i, _ in await collect(store, run_id)]
        assert python_ids == list(range(1, len(RUN_A) + 1))  # ints, as ever
        assert [str(i) for i in python_ids] == ids  # carrying the generation

        await asyncio.to_thread(server.restart)  # no persistence: generation A is gone
        await store.publish(run_id, RUN_B)  # the same run id produced again: B

        for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
            for position in (ids[3], binary_after, ids[-1]):
                status, _, body = await http(store, run_id, accept, **{"last-event-id": position})
                got = decode(body, accept)
                assert status == 200
                assert [e["type"] for e in got] == ["RUN_ERROR"], got[:3]
                assert got[0]["code"] == "RUN_REPLACED"
        with pytest.raises(RunReplaced):
            await collect(store, run_id, after=python_ids[3])
        with pytest.raises(RunReplaced):
            await collect(store, run_id, after=ids[3])  # the id string, as HTTP has it
        # a fresh reader (no position) reads B, with ids of its own
        status, _, body = await http(store, run_id, SSE_MEDIA_TYPE)
        assert decode(body, SSE_MEDIA_TYPE) == RUN_B
        assert not set(sse_ids(body)) & set(ids)
        await r.aclose()

    run(main())


def test_a_live_reader_never_reads_the_next_generation(fresh_redis, run_id) -> None:
    server = fresh_redis(persistent=False)

    async def main() -> None:
        r = aioredis.from_url(server.url)
        store = RunStore(r, lease=2, reconnect=5)
        other = RunStore(aioredis.from_url(server.url), lease=2, reconnect=5)
        task = await store.start(run_id, paced(RUN_A, 0.1))
        assert task is not None
        task.remove_done_callback(store._task_done)
        readers = [
            asyncio.ensure_future(collect(other, run_id)),
            asyncio.ensure_future(http(other, run_id, SSE_MEDIA_TYPE)),
            asyncio.ensure_future(http(other, run_id, PROTO_MEDIA_TYPE)),
        ]
        await asyncio.sleep(0.2)
        await asyncio.to_thread(server.restart)
        # the same run id again, at once, by a producer that produces fast
        for _ in range(100):
            try:
                await store.publish(run_id, RUN_B)
                break
            except Exception:
                await asyncio.sleep(0.02)
        with pytest.raises(RunLost):  # RunReplaced or RunLost: never B as a continuation
            await asyncio.wait_for(readers[0], 10)
        for reader, accept in zip(readers[1:], (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE), strict=True):
            status, _, body = await asyncio.wait_for(reader, 10)
            got = decode(body, accept)
            assert status == 200
            assert not any(e.get("name") == "b" for e in got)
            assert got[-1]["type"] == "RUN_ERROR"
            assert got[-1]["code"] in ("RUN_REPLACED", "RUN_LOST")
        with pytest.raises((LeaseLost, RunLost)):
            await task
        await r.aclose()
        await other.redis.aclose()

    run(main())


async def _vanish(store: RunStore, run_id: str, events: list[dict[str, Any]]) -> asyncio.Task[Any]:
    """A producer that stores ``events`` and then stops renewing its lease, without
    ending the run (its replica froze): nobody watches the run meanwhile."""

    async def freezes() -> Any:
        for event in events:
            yield event
        await asyncio.sleep(3600)

    task = await store.start(run_id, freezes())
    assert task is not None
    task.remove_done_callback(store._task_done)
    while True:
        stored = await store.redis.xlen(store.stream_key(run_id))
        if stored >= len(events):
            break
        await asyncio.sleep(0.01)
    for other in asyncio.all_tasks():
        if "_heartbeat" in repr(other.get_coro()):
            other.cancel()
    return task


def test_a_takeover_without_replay_ends_the_old_generation(redis_server, run_id) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        first = RunStore(r, lease=0.5)
        frozen = await _vanish(first, run_id, RUN_A[:4])
        await asyncio.sleep(0.8)  # the lease lapses; nobody reads the run
        second = RunStore(aioredis.from_url(redis_server.url), lease=0.5)
        with pytest.raises(RunAbandoned):
            await second.publish(run_id, RUN_B)
        got = [e for _, e in await collect(second, run_id)]
        assert got[:4] == RUN_A[:4]  # A's events, then A's end: nothing of B
        assert [e["type"] for e in got[4:]] == ["RUN_ERROR"]
        assert got[4]["code"] == "LEASE_EXPIRED"
        with pytest.raises(RunAbandoned):  # a retry is refused the same way
            await second.publish(run_id, RUN_B)
        frozen.cancel()
        with pytest.raises((LeaseLost, asyncio.CancelledError)):
            await frozen
        assert [e for _, e in await collect(second, run_id)] == got
        await r.aclose()
        await second.redis.aclose()

    run(main())


def test_a_takeover_with_replay_continues_the_run(redis_server, run_id) -> None:
    """The job-retry case: the producer replays the same run deterministically."""

    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        first = RunStore(r, lease=0.5)
        frozen = await _vanish(first, run_id, RUN_A[:4])
        await asyncio.sleep(0.8)
        second = RunStore(aioredis.from_url(redis_server.url), lease=0.5)
        assert await second.publish(run_id, RUN_A, replay=True) == len(RUN_A)
        got = await collect(second, run_id)
        assert [e for _, e in got] == RUN_A
        frozen.cancel()
        with pytest.raises((LeaseLost, asyncio.CancelledError)):
            await frozen
        await r.aclose()
        await second.redis.aclose()

    run(main())
