"""No splice, ever, when Redis itself loses a run: restarted without persistence,
the run produced again under its id is another generation, so a resume of the
lost one (SSE ``id:``, the ``agui-after`` header, ``subscribe``'s ids) is
``RunReplaced`` (HTTP: a ``RUN_ERROR`` with code ``RUN_REPLACED``), and a live
reader of it never reads the next generation's events as a continuation.
(Generations on every store, a run forgotten after its ``ttl`` and produced
again, and takeovers: tests/runstore/test_generations.py, test_leases.py.)
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import LeaseLost, RunLost, RunReplaced
from agui_wire.redis import AFTER_HEADER, RunStore
from tests.runstore.kit import call
from tests.support.stores import Opened

# also on Valkey 8: explicit entry ids and what the server keeps of them
pytestmark = [pytest.mark.valkey, pytest.mark.anyio]

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


async def test_a_resume_of_a_lost_generation_is_refused_not_continued(
    opened: Opened, fresh_redis, run_id
) -> None:
    server = fresh_redis(persistent=False)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=2))
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


async def test_a_live_reader_never_reads_the_next_generation(
    opened: Opened, fresh_redis, run_id
) -> None:
    server = fresh_redis(persistent=False)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=2, reconnect=5))
    other = opened.store(RunStore(opened.redis(server.url), lease=2, reconnect=5))
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
