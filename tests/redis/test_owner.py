"""Runs between users (issue 23 items 1 and 2), against a real redis-server: the
owner is part of the key, so two owners never share a run whatever ids they pick;
the wrong owner gets exactly what an unknown run gets (``RunNotFound``, HTTP 404);
run ids are validated (``ValueError``, HTTP 400) and any owner string is safe.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from agui_wire.errors import RunNotFound
from agui_wire.redis import RunStore
from agui_wire.redis._keys import SLOTS, Layout, RunKeys, key_slot
from examples.script import scripted_run
from tests.redis.conftest import run

ALICE_RUN = scripted_run("thread-a", "shared-id")
BOB_RUN = [dict(e, threadId="thread-b") if "threadId" in e else e for e in ALICE_RUN]


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[dict[str, Any]]:
    return [event async for _, event in store.subscribe(run_id, **kwargs)]


async def refusal(store: RunStore, run_id: str, owner: str | None) -> str:
    with pytest.raises(RunNotFound) as caught:
        await collect(store, run_id, owner=owner)
    return str(caught.value)


def test_two_owners_never_share_a_run(redis_server, run_id) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)
        assert await store.publish(run_id, ALICE_RUN, owner="alice") == len(ALICE_RUN)
        # Bob picks Alice's run id: he produces a run of his own, not a continuation
        assert await store.publish(run_id, BOB_RUN, owner="bob") == len(BOB_RUN)
        assert await collect(store, run_id, owner="alice") == ALICE_RUN
        assert await collect(store, run_id, owner="bob") == BOB_RUN
        # the shared namespace (owner=None) and the empty owner are namespaces of their own
        unknown = await refusal(store, run_id, None)
        assert await refusal(store, run_id, "") == unknown
        assert await refusal(store, run_id, "mallory") == unknown
        assert await refusal(store, run_id, "alice ") == unknown
        for kwargs in ({"compact": True}, {"after": 3}):  # compact joiners, resumes too
            with pytest.raises(RunNotFound):
                await collect(store, run_id, owner="eve", **kwargs)
        assert store.stream_key(run_id, owner="alice") != store.stream_key(run_id, owner="bob")
        await r.aclose()

    run(main())


@pytest.mark.parametrize(
    "owner",
    ["a}b{c", "{alice}", "x" * 10_000, "\ud800 lone", "line\nbreak\x00", "ünïcødé", ":lease"],
)
def test_any_owner_string_is_safe(redis_server, owner) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)
        key = store.stream_key("r1", owner=owner)
        assert "{" not in key.split("}", 1)[1]  # one hash tag, ours
        assert owner not in key
        assert await store.publish("r1", ALICE_RUN, owner=owner) == len(ALICE_RUN)
        assert await collect(store, "r1", owner=owner) == ALICE_RUN
        with pytest.raises(RunNotFound):
            await collect(store, "r1", owner=owner + "x")
        await r.aclose()

    run(main())


BAD_IDS = [123, None, b"run", "\ud800", "x" * 257, "é" * 129, "", 10**30]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_run_ids_are_validated_everywhere(redis_server, bad) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)
        before = await r.dbsize()
        closed = []

        def events():
            try:
                yield ALICE_RUN[0]
            finally:
                closed.append(True)

        for call in (
            lambda: store.publish(bad, [ALICE_RUN[0]]),
            lambda: store.start(bad, [ALICE_RUN[0]]),
            lambda: collect(store, bad),
        ):
            with pytest.raises(ValueError, match="1 to 256 UTF-8 bytes"):
                await call()
        generator = events()
        next(generator)  # started: closing it runs the finally
        with pytest.raises(ValueError, match="256 UTF-8 bytes"):
            await store.start(bad, generator)
        assert closed == [True]  # the producer is closed, not left open
        with pytest.raises(ValueError, match="256 UTF-8 bytes"):
            store.stream_key(bad)
        assert await r.dbsize() == before  # nothing was stored
        await r.aclose()

    run(main())


def test_valid_run_ids_at_the_limit(redis_server) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)
        for run_id in ("x" * 256, "é" * 128, "a{b}c", "1", " "):
            assert await store.publish(run_id, ALICE_RUN) == len(ALICE_RUN)
            assert await collect(store, run_id) == ALICE_RUN
        await r.aclose()

    run(main())


def test_http_wrong_owner_is_an_unknown_run_and_bad_ids_are_400(redis_server, run_id) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)
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
        await r.aclose()

    run(main())


def test_a_runs_keys_share_one_slot_and_shards_spread_evenly() -> None:
    layout = Layout("agui:", 16)
    slots = sorted(key_slot("{" + tag + "}") for tag in layout.tags)
    for i, slot in enumerate(slots):  # shard i's slot lies in the i-th sixteenth
        assert i * SLOTS // 16 <= slot < (i + 1) * SLOTS // 16
    shards = [0] * 16
    for n in range(4000):
        keys = RunKeys(layout, "tenant", f"run-{n}")
        assert key_slot(keys.stream) == key_slot(keys.lease) == slots[keys.shard]
        shards[keys.shard] += 1
    assert min(shards) > 4000 / 16 * 0.7  # the hash spreads runs over the shards
    for bad in ("a{b", "c}"):
        with pytest.raises(ValueError, match="braces"):
            Layout(bad, 16)
    with pytest.raises(ValueError, match="shards"):
        Layout("agui:", 0)


def test_concurrent_owners_of_one_id_stay_apart_while_live(redis_server, run_id) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)

        async def paced(events: list[dict[str, Any]]) -> Any:
            for event in events:
                await asyncio.sleep(0.005)
                yield event

        owners = [f"user-{i}" for i in range(20)]
        runs = {o: scripted_run(f"thread-{o}", run_id) for o in owners}
        for owner in owners:
            await store.start(run_id, paced(runs[owner]), owner=owner)
        got = await asyncio.gather(*(collect(store, run_id, owner=o) for o in owners))
        for owner, events in zip(owners, got, strict=True):
            assert events == runs[owner]
        await r.aclose()

    run(main())
