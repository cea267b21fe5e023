"""No splice, ever, on every backend: a run has a *generation*, fixed when it is
first stored and carried in every id a client is given (SSE ``id:``, the
``agui-after`` header, ``subscribe``'s ids). A run forgotten (its ``ttl`` past)
and produced again under the same id is another generation: a resume with an id
of the old one is ``RunReplaced`` (HTTP: a 200 whose body is one ``RUN_ERROR``,
code ``RUN_REPLACED``), never the new run's events as a continuation.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import RunNotFound, RunReplaced
from agui_wire.memory import AFTER_HEADER
from tests.runstore.kit import Kit, RunStore, call, collect, sse_ids

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
RUN_A = [STARTED, *({"type": "CUSTOM", "name": "a", "value": i} for i in range(5)), FINISHED]
RUN_B = [STARTED, *({"type": "CUSTOM", "name": "b", "value": i} for i in range(30)), FINISHED]


async def http(store: RunStore, run_id: str, accept: str, **headers: str) -> Any:
    start, bodies = await call(
        store.response(run_id), headers=[("accept", accept), *headers.items()]
    )
    return start["status"], dict(start["headers"]), b"".join(bodies)


@pytest.mark.cluster
async def test_ids_carry_the_generation_on_every_path(kit: Kit, run_id: str) -> None:
    store = kit.store()
    await store.publish(run_id, RUN_A)
    _, _, body = await http(store, run_id, SSE_MEDIA_TYPE)
    ids = sse_ids(body)
    assert len(ids) == len(RUN_A) == len(set(ids))
    generation = ids[0].split("-")[1]
    assert ids == [f"{n}-{generation}" for n in range(1, len(RUN_A) + 1)]
    _, headers, _ = await http(store, run_id, PROTO_MEDIA_TYPE, **{"last-event-id": ids[3]})
    assert headers[AFTER_HEADER.encode()].decode() == ids[3]  # the event before the body
    _, headers, _ = await http(store, run_id, PROTO_MEDIA_TYPE)
    assert headers[AFTER_HEADER.encode()].decode() == f"0-{generation}"
    python_ids = [i for i, _ in await collect(store, run_id)]
    assert python_ids == list(range(1, len(RUN_A) + 1))  # ints
    assert [str(i) for i in python_ids] == ids  # carrying the generation
    other = [str(i) for i, _ in await collect(kit.replica(store), run_id)]
    assert other == ids  # the same on every replica


async def test_a_resume_of_a_forgotten_run_produced_again_is_refused(kit: Kit, run_id: str) -> None:
    store = kit.store(ttl=0.3)
    await store.publish(run_id, RUN_A)
    _, _, body = await http(store, run_id, SSE_MEDIA_TYPE)
    ids = sse_ids(body)
    python_ids = [i for i, _ in await collect(store, run_id)]
    await asyncio.sleep(0.6)  # past its ttl: forgotten
    with pytest.raises(RunNotFound):
        await collect(store, run_id, after=ids[3])
    assert (await http(store, run_id, SSE_MEDIA_TYPE, **{"last-event-id": ids[3]}))[0] == 404
    await store.publish(run_id, RUN_B)  # the same run id produced again: B
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        for position in (ids[3], ids[-1]):
            status, _, body = await http(store, run_id, accept, **{"last-event-id": position})
            got = decode(body, accept)
            assert status == 200
            assert [e["type"] for e in got] == ["RUN_ERROR"], got[:3]
            assert got[0]["code"] == "RUN_REPLACED"
    with pytest.raises(RunReplaced):
        await collect(store, run_id, after=python_ids[3])
    with pytest.raises(RunReplaced):
        await collect(store, run_id, after=ids[3])  # the id string, as HTTP has it
    assert len(await collect(store, run_id, after=3)) == len(RUN_B) - 3  # a plain index: B's
    # a fresh reader (no position) reads B, with ids of its own
    status, _, body = await http(store, run_id, SSE_MEDIA_TYPE)
    assert decode(body, SSE_MEDIA_TYPE) == RUN_B
    assert not set(sse_ids(body)) & set(ids)
