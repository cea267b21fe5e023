"""Runs between users, on every backend: a run is named by its owner and its id
together, so two owners never share a run whatever ids they pick; the wrong
owner gets exactly what an unknown run gets (``RunNotFound``, HTTP 404, the same
text); any owner string is safe; ``owner=None`` is a namespace of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from agui_wire.errors import RunNotFound
from examples.script import scripted_run
from tests.runstore.kit import Kit, RunStore, paced

pytestmark = pytest.mark.anyio

ALICE_RUN = scripted_run("thread-a", "shared-id")
BOB_RUN = [dict(e, threadId="thread-b") if "threadId" in e else e for e in ALICE_RUN]


async def events(store: RunStore, run_id: str, **kwargs: Any) -> list[dict[str, Any]]:
    return [event async for _, event in store.subscribe(run_id, **kwargs)]


async def refusal(store: RunStore, run_id: str, owner: str | None) -> str:
    with pytest.raises(RunNotFound) as caught:
        await events(store, run_id, owner=owner)
    return str(caught.value)


async def test_two_owners_never_share_a_run(kit: Kit, run_id: str) -> None:
    store = kit.store()
    assert await store.publish(run_id, ALICE_RUN, owner="alice") == len(ALICE_RUN)
    # Bob picks Alice's run id: he produces a run of his own, not a continuation
    assert await store.publish(run_id, BOB_RUN, owner="bob") == len(BOB_RUN)
    assert await events(store, run_id, owner="alice") == ALICE_RUN
    assert await events(store, run_id, owner="bob") == BOB_RUN
    # the shared namespace (owner=None) and the empty owner are namespaces of their own
    unknown = await refusal(store, run_id, None)
    assert await refusal(store, run_id, "") == unknown
    assert await refusal(store, run_id, "mallory") == unknown
    assert await refusal(store, run_id, "alice ") == unknown
    for kwargs in ({"compact": True}, {"after": 3}):  # compact joiners, resumes too
        with pytest.raises(RunNotFound):
            await events(store, run_id, owner="eve", **kwargs)


@pytest.mark.parametrize(
    "owner",
    ["a}b{c", "{alice}", "x" * 10_000, "\ud800 lone", "line\nbreak\x00", "ünïcødé", ":lease"],
)
async def test_any_owner_string_is_safe(kit: Kit, owner: str) -> None:
    store = kit.store()
    assert await store.publish("r1", ALICE_RUN, owner=owner) == len(ALICE_RUN)
    assert await events(store, "r1", owner=owner) == ALICE_RUN
    with pytest.raises(RunNotFound):
        await events(store, "r1", owner=owner + "x")


async def test_http_wrong_owner_is_an_unknown_run_and_bad_ids_are_400(
    kit: Kit, run_id: str
) -> None:
    store = kit.store()
    await store.publish(run_id, ALICE_RUN, owner="alice")

    async def get(run_id: Any, owner: str | None) -> httpx.Response:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            await store.response(run_id, owner=owner)(scope, receive, send)

        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get("/", headers={"accept": "text/event-stream"})

    ok = await get(run_id, "alice")
    assert ok.status_code == 200
    assert ok.text.count("data:") == len(ALICE_RUN)
    wrong, unknown = await get(run_id, "bob"), await get(run_id, "nobody")
    assert wrong.status_code == unknown.status_code == 404
    assert wrong.text == unknown.text  # existence never leaks
    assert (await get(run_id, None)).text == unknown.text
    for bad in ("\ud800", "x" * 10_000, 123):
        refused = await get(bad, "alice")
        assert refused.status_code == 400
        assert "256 UTF-8 bytes" in refused.text
    with pytest.raises(ValueError, match="owner"):
        store.response(run_id, owner=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="owner"):
        await store.publish(run_id, ALICE_RUN, owner=42)  # type: ignore[arg-type]


async def test_concurrent_owners_of_one_id_stay_apart_while_live(kit: Kit, run_id: str) -> None:
    store = kit.store()
    owners = [f"user-{i}" for i in range(20)]
    runs = {o: scripted_run(f"thread-{o}", run_id) for o in owners}
    for owner in owners:
        await store.start(run_id, paced(runs[owner], 0.005), owner=owner)
    got = await asyncio.gather(*(events(store, run_id, owner=o) for o in owners))
    for owner, events_of in zip(owners, got, strict=True):
        assert events_of == runs[owner]
